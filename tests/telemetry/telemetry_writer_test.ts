/**
 * TelemetryWriter against a real VictoriaMetrics (InfluxDB line protocol on /api/v2/write).
 * Skipped, loudly, when /usr/bin/victoria-metrics is missing.
 */
import { deepEqual, equal, match, ok } from "node:assert/strict";
import type { Logger, ProviderHealthView } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import {
  type InfluxSettings,
  TelemetryWriter,
  type TelemetryWriterOptions,
} from "../../src/telemetry/mod.ts";
import {
  freePort,
  LineRecorder,
  VictoriaMetrics,
  victoriaMetricsMissing,
  waitFor,
} from "../helpers/victoria_metrics.ts";

const ignore = victoriaMetricsMissing();

function quietLogger(lines: string[] = []): Logger {
  const l: Logger = {
    debug: (m) => lines.push(`debug ${m}`),
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
    child: () => l,
  };
  return l;
}

function settings(url: string, over: Partial<InfluxSettings> = {}): InfluxSettings {
  return {
    url,
    org: "lab",
    bucket: "telemetry",
    token: "secret-token",
    batchSize: 10,
    flushIntervalMs: 50,
    maxRetryBufferSize: 1000,
    queueSize: 10000,
    ...over,
  };
}

function writer(over: Partial<TelemetryWriterOptions> & { influx: InfluxSettings }) {
  return new TelemetryWriter({
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock: systemClock,
    logger: quietLogger(),
    tuning: { retryInitialMs: 100, retryMaxMs: 400, writeTimeoutMs: 2000 },
    ...over,
  });
}

function publishDoubles(bus: EventBus, from: number, count: number, signal = "temp"): void {
  for (let i = from; i < from + count; i++) {
    bus.publish({
      kind: "state_update",
      provider_id: "sim0",
      device_id: "dev0",
      signal_id: signal,
      value: { type: "double", double: i },
      quality: "OK",
      // distinct timestamps: VictoriaMetrics keeps one sample per series and millisecond
      timestamp_ms: 1760000000000 + i,
    });
  }
}

async function exportedValues(vm: VictoriaMetrics, signal = "temp"): Promise<number[]> {
  const series = await vm.export(`runtime_signal_value_double{signal_id="${signal}"}`);
  return series.flatMap((s) => s.values).sort((a, b) => a - b);
}

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

const HEALTH: ProviderHealthView[] = [{
  provider_id: "sim0",
  state: "AVAILABLE",
  lifecycle_state: "RUNNING",
  last_seen_ago_ms: 10,
  uptime_seconds: 12,
  device_count: 1,
  degraded: false,
  failed_device_count: 0,
  reported: null,
  supervision: {
    enabled: false,
    attempt_count: 0,
    max_attempts: 0,
    crash_detected: false,
    circuit_open: false,
    next_restart_in_ms: null,
  },
  devices: [{
    device_id: "dev0",
    health: "OK",
    last_poll_ms: 1760000000000,
    staleness_ms: 40,
    registered: true,
    stale_signal_count: 0,
    fault_signal_count: 0,
    reported: null,
  }],
}];

Deno.test({
  name: "TelemetryWriter writes every measurement with the right tags and field types",
  ignore,
  async fn() {
    const vm = await VictoriaMetrics.start();
    const recorder = new LineRecorder(vm.url);
    const bus = new EventBus();
    let snapshots = 0;
    const w = writer({
      influx: settings(recorder.url),
      healthIntervalMs: 50,
      healthSnapshot: () => {
        snapshots++;
        return Promise.resolve(HEALTH);
      },
    });
    try {
      w.start(bus);
      const ts = 1760000000000;
      const base = { kind: "state_update", provider_id: "sim0", device_id: "dev0" } as const;
      bus.publish({
        ...base,
        signal_id: "d",
        value: { type: "double", double: 21.25 },
        quality: "OK",
        timestamp_ms: ts,
      });
      bus.publish({
        ...base,
        signal_id: "i",
        value: { type: "int64", int64: -3 },
        quality: "OK",
        timestamp_ms: ts,
      });
      bus.publish({
        ...base,
        signal_id: "u",
        value: { type: "uint64", uint64: 9 },
        quality: "OK",
        timestamp_ms: ts,
      });
      bus.publish({
        ...base,
        signal_id: "b",
        value: { type: "bool", bool: true },
        quality: "STALE",
        timestamp_ms: ts,
      });
      bus.publish({
        ...base,
        signal_id: "s",
        value: { type: "string", string: "on" },
        quality: "OK",
        timestamp_ms: ts,
      });
      bus.publish({
        ...base,
        signal_id: "x",
        value: { type: "bytes", base64: "AQI=" },
        quality: "OK",
        timestamp_ms: ts,
      });
      bus.publish({
        ...base,
        signal_id: "n",
        value: { type: "double", double: NaN },
        quality: "FAULT",
        timestamp_ms: ts,
      });
      bus.publish({
        kind: "mode_change",
        previous_mode: "IDLE",
        new_mode: "MANUAL",
        timestamp_ms: ts + 1,
      });
      bus.publish({
        kind: "parameter_change",
        parameter_name: "sp",
        old_value: "1",
        new_value: "2",
        timestamp_ms: ts + 2,
      });
      bus.publish({ kind: "bt_error", node: "", error: "not written", timestamp_ms: ts });
      w.recordRunEvent({
        run_id: "lab1-01JB0Z8Q6M5S2K7T9V3W4X5Y6Z",
        sequence: 1,
        category: "run_opened",
        type: "",
        occurred_at_epoch_ms: ts + 3,
        payload: {},
      }, "trial-3");
      await waitFor(
        () => snapshots >= 1 && w.status().last_health_snapshot_at_epoch_ms !== null,
        "a health snapshot",
      );
      await w.stop(3000);

      const st = w.status();
      equal(st.total_failed, 0);
      equal(st.total_written, recorder.lines.length);
      equal(st.connected, true);
      deepEqual(st.backend, { url: recorder.url, org: "lab", bucket: "telemetry" });
      ok(!JSON.stringify(st).includes("secret-token"), "status never carries the token");
      ok(recorder.requests.length > 0);
      for (const r of recorder.requests) {
        equal(r.path, "/api/v2/write?org=lab&bucket=telemetry&precision=ms");
        equal(r.headers.get("authorization"), "Token secret-token");
        equal(r.headers.get("content-type"), "text/plain; charset=utf-8");
      }
      for (const body of recorder.bodies) ok(body.endsWith("\n"), "rows are newline-terminated");

      const lines = recorder.lines;
      const sigTags = "runtime_signal,runtime_name=lab1,provider_id=sim0,device_id=dev0";
      for (
        const expected of [
          `${sigTags},signal_id=d value_double=21.25,quality="OK" ${ts}`,
          `${sigTags},signal_id=i value_int=-3i,quality="OK" ${ts}`,
          `${sigTags},signal_id=u value_uint=9u,quality="OK" ${ts}`,
          `${sigTags},signal_id=b value_bool=true,quality="STALE" ${ts}`,
          `${sigTags},signal_id=s value_string="on",quality="OK" ${ts}`,
          `${sigTags},signal_id=x value_string="AQI=",quality="OK" ${ts}`,
          `${sigTags},signal_id=n quality="FAULT" ${ts}`,
          `runtime_mode_change previous_mode="IDLE",new_mode="MANUAL" ${ts + 1}`,
          `runtime_parameter_change,parameter_name=sp old_value="1",new_value="2" ${ts + 2}`,
          'runtime_run_event,runtime_name=lab1,category=run_opened run_id="lab1-01JB0Z8Q6M5S2K7T9V3W4X5Y6Z",' +
          `type="",sequence=1i,experiment_label="trial-3" ${ts + 3}`,
        ]
      ) ok(lines.includes(expected), `missing line: ${expected}\n got:\n${lines.join("\n")}`);
      ok(!lines.some((l) => l.includes("not written")), "bt_error is not written");
      const healthLine = lines.find((l) => l.startsWith("runtime_provider_health,"));
      match(
        healthLine ?? "",
        /^runtime_provider_health,runtime_name=lab1,provider_id=sim0 state="AVAILABLE",lifecycle_state="RUNNING",degraded=false,failed_device_count=0i,device_count=1i,uptime_seconds=12i,supervision_enabled=false,crash_detected=false,circuit_open=false,attempt_count=0i \d+$/,
      );
      const hts = healthLine?.split(" ").pop();
      ok(
        lines.includes(
          `runtime_device_health,runtime_name=lab1,provider_id=sim0,device_id=dev0 health="OK",registered=true,staleness_ms=40i,stale_signal_count=0i,fault_signal_count=0i ${hts}`,
        ),
        "device row shares the snapshot timestamp",
      );

      // What the database made of it: one series per numeric/bool/string field, tags as labels.
      const series = await vm.export('{__name__=~"runtime_.*"}');
      const byName = (name: string, labels: Record<string, string> = {}) =>
        series.filter((s) =>
          s.metric.__name__ === name &&
          Object.entries(labels).every(([k, v]) => s.metric[k] === v)
        );
      const one = (name: string, labels: Record<string, string>) => {
        const found = byName(name, labels);
        equal(found.length, 1, `${name} ${JSON.stringify(labels)}`);
        return found[0];
      };
      const d = one("runtime_signal_value_double", { signal_id: "d" });
      deepEqual(d.metric, {
        __name__: "runtime_signal_value_double",
        runtime_name: "lab1",
        provider_id: "sim0",
        device_id: "dev0",
        signal_id: "d",
      });
      deepEqual(d.values, [21.25]);
      deepEqual(d.timestamps, [ts]);
      deepEqual(one("runtime_signal_value_int", { signal_id: "i" }).values, [-3]);
      deepEqual(one("runtime_signal_value_uint", { signal_id: "u" }).values, [9]);
      deepEqual(one("runtime_signal_value_bool", { signal_id: "b" }).values, [1]);
      one("runtime_signal_value_string", { signal_id: "s" });
      one("runtime_signal_quality", { signal_id: "n" });
      equal(byName("runtime_signal_value_double", { signal_id: "n" }).length, 0);
      deepEqual(one("runtime_mode_change_new_mode", {}).metric, {
        __name__: "runtime_mode_change_new_mode",
      });
      one("runtime_parameter_change_new_value", { parameter_name: "sp" });
      const opened = one("runtime_run_event_sequence", { category: "run_opened" });
      deepEqual(opened.metric, {
        __name__: "runtime_run_event_sequence",
        runtime_name: "lab1",
        category: "run_opened",
      });
      ok(byName("runtime_provider_health_uptime_seconds", { provider_id: "sim0" }).length === 1);
      ok(
        byName("runtime_provider_health_degraded", { provider_id: "sim0" })[0].values.every((v) =>
          v === 0
        ),
      );
      deepEqual(
        one("runtime_device_health_staleness_ms", { device_id: "dev0" }).values.slice(0, 1),
        [40],
      );
    } finally {
      await w.stop(0);
      await recorder.close();
      await vm.dispose();
    }
  },
});

Deno.test({
  name:
    "TelemetryWriter loses nothing within the retry buffer during an outage and counts the rest",
  ignore,
  async fn() {
    const vm = await VictoriaMetrics.start();
    const bus = new EventBus();
    const w = writer({ influx: settings(vm.url, { batchSize: 10, maxRetryBufferSize: 50 }) });
    try {
      w.start(bus);
      publishDoubles(bus, 0, 20);
      await waitFor(() => w.status().total_written === 20, "the first 20 rows");
      equal(w.status().connected, true);

      // Outage: the database process is gone; rows arrive in two bursts while the writer
      // keeps retrying with backoff (each retry must neither lose nor double-count rows).
      await vm.pause();
      publishDoubles(bus, 100, 40);
      await waitFor(() => w.status().write_failures >= 2, "retries during the outage");
      publishDoubles(bus, 140, 40);
      await waitFor(() => {
        const s = w.status();
        return s.queue_depth === 0 && s.pending_batch === 0 && s.dropped_retry === 30 &&
          s.write_failures >= 4;
      }, "the outage rows to reach the retry buffer");
      let s = w.status();
      equal(s.connected, false);
      equal(s.retry_buffer_depth, 50);
      equal(s.total_failed, 30);
      equal(s.dropped_events, 0);
      ok(s.last_error !== null && s.last_error.startsWith("write failed, will retry"));

      await vm.resume();
      await waitFor(() => w.status().retry_buffer_depth === 0, "the retry buffer to drain", 15000);
      s = w.status();
      equal(s.total_written, 70);
      equal(s.total_failed, 30);
      equal(s.connected, true);
      // Exactly the 50 newest outage rows survived; the 30 oldest were dropped.
      deepEqual(await exportedValues(vm), [...range(0, 20), ...range(130, 50)]);
    } finally {
      await w.stop(1000);
      await vm.dispose();
    }
  },
});

Deno.test({
  name: "TelemetryWriter counts subscriber-queue overflow and flushes the rest on stop",
  ignore,
  async fn() {
    const vm = await VictoriaMetrics.start();
    const bus = new EventBus();
    // A long flush interval and a big batch: nothing leaves before stop().
    const w = writer({
      influx: settings(vm.url, { batchSize: 1000, flushIntervalMs: 60000, queueSize: 5 }),
    });
    try {
      w.start(bus);
      publishDoubles(bus, 0, 20); // synchronous: the flush loop cannot run in between
      let s = w.status();
      equal(s.queue_depth, 5);
      equal(s.dropped_events, 15);
      await w.stop(3000);
      s = w.status();
      equal(s.running, false);
      equal(s.total_written, 5);
      equal(s.total_failed, 0);
      equal(s.pending_batch, 0);
      deepEqual(await exportedValues(vm), range(15, 5));
    } finally {
      await w.stop(0);
      await vm.dispose();
    }
  },
});

Deno.test({
  name: "TelemetryWriter flushes the pending batch on stop",
  ignore,
  async fn() {
    const vm = await VictoriaMetrics.start();
    const bus = new EventBus();
    const w = writer({
      influx: settings(vm.url, { batchSize: 1000, flushIntervalMs: 60000 }),
    });
    try {
      w.start(bus);
      publishDoubles(bus, 0, 300);
      await waitFor(() => w.status().queue_depth === 0, "the queue to drain into the batch");
      equal(w.status().pending_batch, 300);
      equal(w.status().total_written, 0);
      await w.stop(5000);
      equal(w.status().total_written, 300);
      deepEqual(await exportedValues(vm), range(0, 300));
    } finally {
      await w.stop(0);
      await vm.dispose();
    }
  },
});

Deno.test("TelemetryWriter aborts a hanging write when the stop budget ends", async () => {
  let release = () => {};
  const released = new Promise<void>((r) => release = r);
  let received = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.text();
    received++;
    await released; // a database that accepts the request and never answers
    return new Response(null, { status: 204 });
  });
  const bus = new EventBus();
  const w = writer({
    influx: settings(`http://127.0.0.1:${server.addr.port}`, { batchSize: 2 }),
    tuning: { writeTimeoutMs: 60000 },
  });
  try {
    w.start(bus);
    publishDoubles(bus, 0, 2);
    await waitFor(() => received === 1, "the write to reach the server");
    await w.stop(200);
    const s = w.status();
    equal(s.total_written, 0);
    equal(s.total_failed, 2);
    equal(s.retry_buffer_depth, 0);
  } finally {
    release();
    await w.stop(0);
    await server.shutdown();
  }
});

Deno.test("TelemetryWriter counts rows it cannot write at shutdown as failed", async () => {
  const bus = new EventBus();
  const logs: string[] = [];
  // Nothing listens on this port: every write is refused immediately.
  const w = writer({
    influx: settings(`http://127.0.0.1:${freePort()}`, { batchSize: 1000, flushIntervalMs: 60000 }),
    logger: quietLogger(logs),
  });
  w.start(bus);
  publishDoubles(bus, 0, 7);
  await w.stop(2000);
  const s = w.status();
  equal(s.total_written, 0);
  equal(s.total_failed, 7);
  equal(s.connected, false);
  ok(logs.some((l) => l.startsWith("warn shutdown: 7 telemetry rows")));
});

Deno.test("TelemetryWriter drops rows the database refuses with HTTP 400", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.text();
    return new Response("unable to parse", { status: 400 });
  });
  const bus = new EventBus();
  const w = writer({ influx: settings(`http://127.0.0.1:${server.addr.port}`, { batchSize: 4 }) });
  try {
    w.start(bus);
    publishDoubles(bus, 0, 4);
    await waitFor(() => w.status().total_failed === 4, "the refused batch");
    const s = w.status();
    equal(s.retry_buffer_depth, 0);
    equal(s.total_written, 0);
    match(s.last_error ?? "", /^write refused, rows dropped: HTTP 400: unable to parse/);
  } finally {
    await w.stop(500);
    await server.shutdown();
  }
});

Deno.test("TelemetryWriter does not start without a token and reports why", async () => {
  const bus = new EventBus();
  const w = writer({ influx: settings("http://127.0.0.1:8086", { token: "" }) });
  w.start(bus);
  equal(bus.subscriberCount, 0);
  const s = w.status();
  equal(s.enabled, true);
  equal(s.running, false);
  match(s.last_error ?? "", /INFLUXDB_TOKEN/);
  deepEqual(s.backend, { url: "http://127.0.0.1:8086", org: "lab", bucket: "telemetry" });
  await w.stop(100);
});

Deno.test("TelemetryWriter reports zeros and no backend when disabled", () => {
  const bus = new EventBus();
  const w = writer({ enabled: false, influx: settings("http://127.0.0.1:8086") });
  w.start(bus);
  equal(bus.subscriberCount, 0);
  deepEqual(w.status(), {
    enabled: false,
    running: false,
    connected: false,
    total_written: 0,
    total_failed: 0,
    pending_batch: 0,
    queue_depth: 0,
    dropped_events: 0,
    retry_buffer_depth: 0,
    dropped_retry: 0,
    write_failures: 0,
    last_error: null,
    last_error_at_epoch_ms: null,
    last_flush_at_epoch_ms: null,
    last_health_snapshot_at_epoch_ms: null,
  });
});
