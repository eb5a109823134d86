/**
 * The runtime as a child process on a free port: a port is free only until someone binds it. On a
 * loaded machine the runtime takes seconds to bind its port, and another test's server (or the
 * local end of any outgoing connection) can take it first: the start is tried again on another
 * port (a stranger's server that never answers included: its readiness read ends with the
 * runtime).
 */
import assert from "node:assert/strict";
import { listeningPorts } from "./ports.ts";
import { startRuntimeChildOnFreePort } from "./runtime_process.ts";
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
  const dir = await Deno.makeTempDir({ prefix: "runtime-port-race-" });
  // A server that accepts (the kernel does) and never answers: the readiness read would wait.
  const stranger = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const taken = (stranger.addr as Deno.NetAddr).port;
  const tried: number[] = [];
  try {
    const rt = await startRuntimeChildOnFreePort(racedOptions(dir, taken, tried));
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
});
