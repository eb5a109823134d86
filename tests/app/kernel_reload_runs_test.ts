/**
 * Kernel.reload and the run registry: a run opened after a reload records the configuration then
 * in effect (the real kernel over the simulated provider).
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("Kernel.reload of polling.interval_ms: a run opened afterwards records the interval in effect", async () => {
  const dir = await Deno.makeTempDir({ prefix: "reload_runs_" });
  const base = testConfig({ runtime: { dataDir: dir } });
  const rt = await startRuntime(base);
  try {
    const before = (await rt.runs.open({})).run;
    assert.equal(before.polling_interval_ms, base.polling.intervalMs);
    await rt.runs.close(before.run_id, {});
    const slower: Config = { ...rt.config, polling: { intervalMs: base.polling.intervalMs * 2 } };
    const report = await rt.reload(slower);
    assert.deepEqual(report.applied, ["polling"]);
    assert.equal(rt.cache.intervalMs, base.polling.intervalMs * 2);
    const after = (await rt.runs.open({})).run;
    assert.equal(after.polling_interval_ms, rt.cache.intervalMs);
    await rt.runs.close(after.run_id, {});
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
