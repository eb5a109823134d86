/**
 * Kernel.reload enabling telemetry (its first use loads the InfluxDB client, a dynamic import)
 * racing Kernel.stop: whichever ends first, the writer is not running once stop() has returned
 * (no flush timer, no bus subscription after the runtime stopped). The writer's own refusal of a
 * retarget after stop(): tests/telemetry/telemetry_retarget_test.ts.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("Kernel.reload enabling telemetry, stop() at once: the writer is not running after stop, the section applied or interrupted", async () => {
  const rt = await startRuntime(testConfig({ providers: [], http: { enabled: false } }));
  const base = rt.config;
  const next: Config = {
    ...base,
    telemetry: {
      ...base.telemetry,
      enabled: true,
      healthIntervalMs: 0,
      // Nothing listens there: no row is ever written.
      influxdb: { ...base.telemetry.influxdb, url: "http://127.0.0.1:9", token: "t0k3n" },
    },
  };
  const reloading = rt.reload(next);
  await rt.stop();
  const report = await reloading;
  const running = rt.telemetry.running;
  if (running) await rt.telemetry.stop(0); // the test must not leak its timers
  assert.equal(running, false, "telemetry writer running after stop() returned");
  // Applied before the writer stopped, or cut short by the stop: never failed for another reason.
  const failed = report.failed.find((f) => f.section === "telemetry");
  if (failed !== undefined) {
    assert.equal(failed.why, "the runtime is stopping");
    assert.equal(report.interrupted, true);
  } else {
    assert.ok(report.applied.includes("telemetry"), JSON.stringify(report));
  }
});
