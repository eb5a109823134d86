/**
 * The kernel forwards run events to telemetry (`runtime_run_event` rows, Grafana annotations):
 * also the run_closed of a run that the previous process left open, which the run registry's start
 * closes as `abandoned`. Real kernel, simulated provider, a stand-in InfluxDB on loopback.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { FakeInflux } from "../helpers/fake_influx.ts";

function telemetry(url: string): Config["telemetry"] {
  const base = testConfig().telemetry;
  return {
    ...base,
    enabled: true,
    healthIntervalMs: 0,
    influxdb: { ...base.influxdb, url, token: "t0k3n", flushIntervalMs: 50 },
  };
}

Deno.test("Kernel start: the run_closed of a run left open by the previous process reaches telemetry", async () => {
  const db = new FakeInflux();
  const dir = await Deno.makeTempDir({ prefix: "runs_telemetry_" });
  const config = testConfig({ runtime: { dataDir: dir }, telemetry: telemetry(db.url) });
  const runRows = (id: string) =>
    db.lines.filter((l) => l.startsWith("runtime_run_event,") && l.includes(`run_id="${id}"`));
  try {
    const first = await startRuntime(config);
    let runId: string;
    try {
      runId = (await first.runs.open({})).run.run_id;
      await waitFor("the run_opened row", () => runRows(runId).length === 1);
    } finally {
      await first.stop(); // the run stays open: the next start closes it as abandoned
    }
    const second = await startRuntime(config);
    try {
      assert.deepEqual(second.runs.startupReport().abandonedRunIds, [runId]);
      // Before: no row -- the event was handed to telemetry before it started, and dropped.
      await waitFor(
        "the abandoned run's run_closed row",
        () => runRows(runId).some((l) => l.includes("category=run_closed")),
        5000,
      );
      assert.match(runRows(runId).at(-1)!, /type="abandoned"/);
    } finally {
      await second.stop();
    }
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
