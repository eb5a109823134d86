/**
 * A second SIGINT/SIGTERM hurries shutdown but never orphans a provider: the runtime (a child
 * process of the test) kills its providers at once and exits only after they are gone.
 */
import assert from "node:assert/strict";
import {
  killLeftovers,
  processAlive,
  providerYaml,
  readScriptedLog,
  runtimeStatus,
  scriptedCommand,
  startRuntimeOnFreePort,
  waitFor,
  within,
  writeRuntimeConfig,
} from "./process_helpers.ts";

Deno.test("a second stop signal kills a provider that ignores stdin EOF and SIGTERM, and the runtime exits only once it is gone", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-signals-" });
  const log = `${dir}/provider.log`;
  // A long shutdown budget: without the second signal the stop ladder would wait 9 s for it.
  const { port, rt } = await startRuntimeOnFreePort(async (port) => {
    await Deno.remove(log).catch(() => {}); // a try that lost its port to a stranger
    return await writeRuntimeConfig(dir, {
      port,
      runtime: "  shutdown_timeout_ms: 10000\n",
      providers: providerYaml(
        "stubborn",
        scriptedCommand(["--log", log, "--ignore-sigterm", "--ignore-stdin-eof", "--spawn-helper"]),
      ),
    });
  });
  try {
    assert.ok(await runtimeStatus(port), "API answering");
    const { pids, helpers } = readScriptedLog(log);
    assert.equal(pids.length, 1);
    assert.equal(helpers.length, 1);
    rt.child.kill("SIGINT");
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(processAlive(pids[0]), "the provider is still being stopped after the first signal");
    rt.child.kill("SIGTERM");
    const exit = await within(rt.exit, 5000);
    if (exit === "timeout") assert.fail("the second signal must hurry shutdown");
    assert.equal(exit.code, 0, exit.stderr);
    assert.equal(processAlive(pids[0]), false, "the provider is gone when the runtime has exited");
    await waitFor("helper gone", () => !processAlive(helpers[0]), 2000);
  } finally {
    await rt.dispose();
    const { pids, helpers } = readScriptedLog(log);
    killLeftovers([...pids, ...helpers]);
    await Deno.remove(dir, { recursive: true });
  }
});
