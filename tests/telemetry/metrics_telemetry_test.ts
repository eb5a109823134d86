/**
 * GET /metrics exposes the telemetry writer's counters: a real TelemetryWriter writing to a real
 * VictoriaMetrics (InfluxDB line protocol), then through an outage of it. Skipped, loudly, when
 * /usr/bin/victoria-metrics is missing.
 */
import assert from "node:assert/strict";
import { systemClock } from "../../src/host/mod.ts";
import { loadInfluxClient, TelemetryWriter } from "../../src/telemetry/mod.ts";
import { parsePrometheusText, sampleValue } from "../helpers/prometheus_text.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { VictoriaMetrics, victoriaMetricsMissing } from "../helpers/victoria_metrics.ts";

await loadInfluxClient(); // as the service does when telemetry is enabled

Deno.test({
  name:
    "GET /metrics runtime_telemetry_* follow the writer: rows written, then failures while the database is down",
  ignore: victoriaMetricsMissing(),
  async fn() {
    const vm = await VictoriaMetrics.start();
    const w = new TelemetryWriter({
      enabled: true,
      runtimeName: "lab1",
      healthIntervalMs: 0,
      clock: systemClock,
      logger: testLogger(),
      tuning: { retryInitialMs: 100, retryMaxMs: 400, writeTimeoutMs: 2000 },
      influx: {
        url: vm.url,
        org: "lab",
        bucket: "telemetry",
        token: "t",
        batchSize: 10,
        flushIntervalMs: 50,
        maxRetryBufferSize: 1000,
        queueSize: 10000,
      },
    });
    const fx = await startHttpFixture({ start: false, services: { telemetry: w } });
    const publish = (from: number, count: number) => {
      for (let i = from; i < from + count; i++) {
        fx.services.bus.publish({
          kind: "state_update",
          provider_id: "sim0",
          device_id: "tempctl0",
          signal_id: "temp",
          value: { type: "double", double: i },
          quality: "OK",
          timestamp_ms: 1_700_000_000_000 + i,
        });
      }
    };
    const scrape = async () => parsePrometheusText((await fx.request("GET", "/metrics")).text);
    try {
      w.start(fx.services.bus);
      publish(0, 20);
      await waitFor("20 rows written", () => w.status().total_written === 20);
      let m = await scrape();
      assert.equal(sampleValue(m, "runtime_telemetry_enabled"), 1);
      assert.equal(sampleValue(m, "runtime_telemetry_connected"), 1);
      assert.equal(sampleValue(m, "runtime_telemetry_rows_written_total"), 20);
      assert.equal(sampleValue(m, "runtime_telemetry_write_failures_total"), 0);

      await vm.pause();
      publish(20, 5);
      await waitFor("retries during the outage", () => w.status().write_failures >= 2);
      m = await scrape();
      const s = w.status();
      assert.equal(sampleValue(m, "runtime_telemetry_connected"), 0);
      assert.equal(sampleValue(m, "runtime_telemetry_rows_written_total"), 20);
      const failures = sampleValue(m, "runtime_telemetry_write_failures_total");
      assert.ok(failures >= 2 && failures <= s.write_failures, `${failures}`);
      assert.equal(
        sampleValue(m, "runtime_telemetry_retry_buffer_rows") +
          sampleValue(m, "runtime_telemetry_batch_rows") +
          sampleValue(m, "runtime_telemetry_queue_depth"),
        5,
        "the 5 outage rows wait somewhere",
      );
    } finally {
      await w.stop(500);
      await fx.close();
      await vm.dispose();
    }
  },
});
