/**
 * A reload that changes polling.interval_ms and health.staleness together applies them one
 * section after the other; the state cache's no-WARNING-stage line (docs/http-api.md, the device
 * `health` table) is about the bounds the reload leaves in force, not the mix of the new interval
 * and the old stale bound in between. The runtime in process over the programmable provider as a
 * child process.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** Two devices at the default hint (polled every interval): their cycle is 2 x the interval. */
const INVENTORY: Inventory = {
  devices: {
    a: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] },
    b: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] },
  },
};

const noStageLines = (lines: readonly string[]) =>
  lines.filter((l) => l.includes("no WARNING stage"));

Deno.test("Kernel.reload of polling.interval_ms and health.staleness together says no WARNING stage only of the bounds it leaves in force", async () => {
  const file = await Deno.makeTempFile({ prefix: "nostage-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(INVENTORY));
  const { log, lines } = capturingLogger({ level: "warn" });
  // interval 500, stale 40000: cycle 1000, derived warn 3000 < 40000 -- a WARNING stage.
  const config = testConfig({
    providers: [programmableProvider("p0", file)],
    pollingIntervalMs: 500,
    health: { staleness: { warnAfterMs: 0, staleAfterMs: 40_000 } },
  });
  const rt = await startRuntime(config, { host: { log } });
  try {
    await waitFor("a polled", () => rt.cache.signal("p0", "a", "x") !== undefined);
    assert.deepEqual(noStageLines(lines), []);
    // To interval 7000, stale 80000: cycle 14000, derived warn 42000 < 80000 -- a WARNING stage
    // still (and the file check's least bound, 21000, is below 80000: nothing said of the file).
    // The new interval under the old stale bound (42000 >= 40000) is in force for no reload.
    const report = await rt.reload({
      ...rt.config,
      polling: { intervalMs: 7000 },
      health: { ...rt.config.health, staleness: { warnAfterMs: 0, staleAfterMs: 80_000 } },
    });
    assert.deepEqual([...report.applied].sort(), ["health", "polling"]);
    assert.deepEqual(rt.cache.livenessBounds("p0", "a"), {
      warnAfterMs: 42_000,
      staleAfterMs: 80_000,
    });
    assert.deepEqual(noStageLines(lines), []);
    // A reload whose bounds do leave them none says it, of each device, with the figures in force.
    await rt.reload({
      ...rt.config,
      health: { ...rt.config.health, staleness: { warnAfterMs: 0, staleAfterMs: 40_000 } },
    });
    const said = noStageLines(lines);
    assert.equal(said.length, 2, said.join("\n"));
    for (const [i, id] of ["a", "b"].entries()) {
      assert.match(said[i]!, /^WARN\b/);
      assert.ok(said[i]!.includes(`"p0/${id}" has no WARNING stage`), said[i]);
      assert.ok(said[i]!.includes("stale_after_ms is 40000"), said[i]);
      assert.ok(said[i]!.includes("= 42000 ms"), said[i]);
    }
  } finally {
    await rt.stop();
    await Deno.remove(file);
  }
});
