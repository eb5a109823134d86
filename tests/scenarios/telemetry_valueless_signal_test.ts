/**
 * A declared signal the provider answers without a value from its first poll on (the scripted
 * provider's `missing/absent`: no value, quality UNKNOWN -> UNAVAILABLE) still shows its quality in
 * telemetry: a signal row with `quality` and no value field (docs/telemetry.md, "Every line is
 * valid line protocol"), once per quality it goes through, not once per poll.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { LineRecorder } from "../helpers/victoria_metrics.ts";
import { dataProvider } from "./_data_helpers.ts";

Deno.test("Telemetry writes a quality-only row for a signal that never had a value", async () => {
  const recorder = new LineRecorder(null); // answers every write with 204, as InfluxDB does
  const config = testConfig({
    providers: [dataProvider("p0", "values")],
    pollingIntervalMs: 50,
    telemetry: {
      enabled: true,
      healthIntervalMs: 0,
      measurementNames: "runtime",
      influxdb: {
        url: recorder.url,
        org: "lab",
        bucket: "telemetry",
        token: "t",
        batchSize: 100,
        flushIntervalMs: 50,
        maxRetryBufferSize: 1000,
        queueSize: 10000,
      },
    },
  });
  const runtime = await startRuntime(config);
  const series = "runtime_signal,runtime_name=test,provider_id=p0,device_id=missing";
  try {
    assert.equal(runtime.cache.signal("p0", "missing", "absent")?.quality, "UNAVAILABLE");
    // `fading` has a value: its row shows the writer is writing this device's rows.
    await waitFor(
      "the fading signal's row",
      () => recorder.lines.some((l) => l.startsWith(`${series},signal_id=fading `)),
      5000,
    );
    const polls = runtime.cache.device("p0", "missing")!.lastPollMs;
    await waitFor(
      "two more polls written",
      () => {
        const st = runtime.telemetry.status();
        return runtime.cache.device("p0", "missing")!.lastPollMs >= polls + 100 &&
          st.queue_depth === 0 && st.pending_batch === 0 &&
          st.total_written === recorder.lines.length;
      },
      5000,
    );
    const absent = recorder.lines.filter((l) => l.startsWith(`${series},signal_id=absent `));
    assert.equal(
      absent.length,
      1,
      `rows of the value-less signal (one expected, for its one quality):\n${
        recorder.lines.join("\n")
      }`,
    );
    assert.match(absent[0]!, / quality="UNAVAILABLE" \d+$/);
  } finally {
    await runtime.stop();
    await recorder.close();
  }
});
