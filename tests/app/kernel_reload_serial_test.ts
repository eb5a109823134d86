/**
 * Kernel.reload runs one reload at a time (its `reloading` state is one flag): the process's only
 * caller, the ConfigReloader (SIGHUP), serializes them; a second direct call while one applies is
 * refused naming the running one, instead of ending that one's state early.
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

Deno.test("Kernel.reload refuses a second reload while one is applying, and the first completes", async () => {
  const rt = await startRuntime(testConfig());
  try {
    const base = rt.config;
    // Its start takes a process spawn and handshake: the first reload awaits it.
    const first = rt.reload({ ...base, providers: [...base.providers, simProvider("sim1")] });
    await assert.rejects(
      rt.reload({ ...base, polling: { ...base.polling, intervalMs: base.polling.intervalMs * 2 } }),
      (e: unknown) => {
        assert.ok(e instanceof RuntimeError, String(e));
        assert.equal(e.code, "FAILED_PRECONDITION");
        assert.match(e.message, /a configuration reload is already running/);
        return true;
      },
    );
    const report = await first;
    assert.deepEqual(report.providers.added, ["sim1"]);
    assert.equal(
      rt.config.polling.intervalMs,
      base.polling.intervalMs,
      "the refused one applied nothing",
    );
  } finally {
    await rt.stop();
  }
});
