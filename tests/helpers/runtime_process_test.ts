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

Deno.test("startRuntimeChildOnFreePort starts the runtime again on another port when a stranger took the first while its stderr is read only later", async () => {
  const readLater = Promise.withResolvers<void>();
  await racedStart({ stderrReadAfter: readLater.promise }, () => readLater.resolve());
});

/**
 * Starts the runtime with `more` options, the first start on a port a silent stranger holds;
 * `started` runs once it is up (before it is stopped).
 */
async function racedStart(
  more: Partial<RuntimeChildOptions>,
  started: () => void = () => {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "runtime-port-race-" });
  // A server that accepts (the kernel does) and never answers: the readiness read would wait.
  const stranger = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const taken = (stranger.addr as Deno.NetAddr).port;
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
    stranger.close();
    await Deno.remove(dir, { recursive: true });
  }
}
