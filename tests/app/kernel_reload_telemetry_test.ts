/**
 * Kernel.reload of the `telemetry` section next to sections it depends on: the writer is
 * retargeted with what of the new configuration is in effect, never with a section the reload
 * reports as needing a restart. Real kernel, simulated provider, a stand-in InfluxDB on loopback.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { FakeInflux } from "../helpers/fake_influx.ts";

function telemetry(url: string, flushIntervalMs: number): Config["telemetry"] {
  const base = testConfig().telemetry;
  return {
    ...base,
    enabled: true,
    healthIntervalMs: 0,
    influxdb: { ...base.influxdb, url, token: "t0k3n", flushIntervalMs },
  };
}

Deno.test("Kernel.reload of telemetry together with runtime.name (restart-only): rows keep the runtime_name in effect", async () => {
  const db = new FakeInflux();
  try {
    const rt = await startRuntime(
      testConfig({ runtime: { name: "line1" }, telemetry: telemetry(db.url, 100) }),
    );
    try {
      await waitFor("signal rows", () => db.lines.some((l) => l.startsWith("runtime_signal,")));
      const next: Config = {
        ...rt.config,
        runtime: { ...rt.config.runtime, name: "line2" },
        telemetry: telemetry(db.url, 50),
      };
      const report = await rt.reload(next);
      assert.deepEqual(report.applied, ["telemetry"]);
      assert.ok(report.needsRestart.includes("runtime.name"), JSON.stringify(report.needsRestart));
      assert.equal(rt.config.runtime.name, "line1", "runtime.name stays until a restart");
      const before = db.lines.length;
      await waitFor(
        "signal rows after the reload",
        () => db.lines.slice(before).some((l) => l.startsWith("runtime_signal,")),
      );
      const names = new Set(
        db.lines.slice(before).flatMap((l) => /,runtime_name=([^,]+),/.exec(l)?.[1] ?? []),
      );
      assert.deepEqual([...names], ["line1"]);
    } finally {
      await rt.stop();
    }
  } finally {
    await db.close();
  }
});
