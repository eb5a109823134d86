/**
 * The runtime as a child process on a free port: a port is free only until someone binds it. On a
 * loaded machine the runtime takes seconds to bind its port, and another test's server (or the
 * local end of any outgoing connection) can take it first: the start is tried again on another
 * port (a stranger's server that never answers included: its readiness read ends with the
 * runtime).
 */
import assert from "node:assert/strict";
import { listeningPorts } from "./ports.ts";
import { type RuntimeChildOptions, startRuntimeChildOnFreePort } from "./runtime_process.ts";
import { simRuntimeConfig } from "./sim_config.ts";

/** The options for a runtime on `port`; the first start is given `taken` instead (the race). */
function racedOptions(dir: string, taken: number, tried: number[]) {
  return async (port: number) => {
    const p = tried.length === 0 ? taken : port;
    tried.push(p);
    const config = `${dir}/runtime-${tried.length}.yaml`;
    await Deno.writeTextFile(
      config,
      `runtime: {name: port-race, data_dir: ${dir}/data-${tried.length}}
http: {port: ${p}}
${simRuntimeConfig()}`,
    );
    return { config, port: p };
  };
}

Deno.test("startRuntimeChildOnFreePort starts the runtime again on another port when a silent stranger took the first", async () => {
  await racedStart({});
});

Deno.test("startRuntimeChildOnFreePort starts the runtime again on another port when a stranger that answers HTTP took the first", async () => {
  // Another test's server on the port (a plain-text answer): not the runtime's answer, no failure
  // of the API's contract -- before, its answer to the readiness read failed the start.
  await racedStart({}, () => {}, () => {
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response("answered"),
    );
    return { port: server.addr.port, close: () => server.shutdown() };
  });
});

Deno.test("startRuntimeChildOnFreePort starts the runtime again on another port when a stranger took the first while its stderr is read only later", async () => {
  const readLater = Promise.withResolvers<void>();
  await racedStart({ stderrReadAfter: readLater.promise }, () => readLater.resolve());
});

/**
 * Starts the runtime with `more` options, the first start on a port a stranger holds (`strange`
 * makes it: silent by default); `started` runs once it is up (before it is stopped).
 */
async function racedStart(
  more: Partial<RuntimeChildOptions>,
  started: () => void = () => {},
  strange: () => { port: number; close: () => unknown } = silentStranger,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "runtime-port-race-" });
  const stranger = strange();
  const taken = stranger.port;
  const tried: number[] = [];
  try {
    const options = racedOptions(dir, taken, tried);
    const rt = await startRuntimeChildOnFreePort(async (port) => ({
      ...(await options(port)),
      ...more,
    }));
    started();
    try {
      assert.equal(tried.length, 2, `ports tried: ${tried}`);
      assert.notEqual(rt.port, taken);
      assert.ok(listeningPorts(rt.pid).includes(rt.port), "the runtime itself listens");
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
    }
  } finally {
    await stranger.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** A server that accepts (the kernel does) and never answers: the readiness read would wait. */
function silentStranger(): { port: number; close: () => void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  return { port: (listener.addr as Deno.NetAddr).port, close: () => listener.close() };
}
