/**
 * TelemetryWriter against a real VictoriaMetrics (InfluxDB line protocol on /api/v2/write).
 * Skipped, loudly, when /usr/bin/victoria-metrics is missing.
 */
import { deepStrictEqual as deepEqual, match, ok, strictEqual as equal } from "node:assert/strict";
import type { Logger, ProviderHealthView, TypedValue } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import {
  type InfluxSettings,
  loadInfluxClient,
  TelemetryWriter,
  type TelemetryWriterOptions,
} from "../../src/telemetry/mod.ts";
import { freePort } from "../helpers/ports.ts";
import {
  LineRecorder,
  VictoriaMetrics,
  victoriaMetricsMissing,
} from "../helpers/victoria_metrics.ts";
import { waitFor } from "../helpers/kernel.ts";
import { parseLine } from "./line_protocol_check.ts";
import { deviceHealthView, providerHealthView } from "./_scripted_db.ts";

await loadInfluxClient(); // as the service does when telemetry is enabled

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

const dbl = (double: number): TypedValue => ({ type: "double", double });
// The producer side widens int64/uint64 to `number | bigint` (exact beyond 2^53).
const uint64 = (v: bigint) => ({ type: "uint64", uint64: v }) as unknown as TypedValue;
const int64 = (v: bigint) => ({ type: "int64", int64: v }) as unknown as TypedValue;

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

const HEALTH: ProviderHealthView[] = [providerHealthView({
  device_count: 1,
  devices: [deviceHealthView("dev0")],
})];

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
        "a health snapshot",
        () => snapshots >= 1 && w.status().last_health_snapshot_at_epoch_ms !== null,
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
      deepEqual(d!.metric, {
        __name__: "runtime_signal_value_double",
        runtime_name: "lab1",
        provider_id: "sim0",
        device_id: "dev0",
        signal_id: "d",
      });
      deepEqual(d!.values, [21.25]);
      deepEqual(d!.timestamps, [ts]);
      deepEqual((one("runtime_signal_value_int", { signal_id: "i" }))!.values, [-3]);
      deepEqual((one("runtime_signal_value_uint", { signal_id: "u" }))!.values, [9]);
      deepEqual((one("runtime_signal_value_bool", { signal_id: "b" }))!.values, [1]);
      one("runtime_signal_value_string", { signal_id: "s" });
      one("runtime_signal_quality", { signal_id: "n" });
      equal(byName("runtime_signal_value_double", { signal_id: "n" }).length, 0);
      deepEqual((one("runtime_mode_change_new_mode", {}))!.metric, {
        __name__: "runtime_mode_change_new_mode",
      });
      one("runtime_parameter_change_new_value", { parameter_name: "sp" });
      const opened = one("runtime_run_event_sequence", { category: "run_opened" });
      deepEqual(opened!.metric, {
        __name__: "runtime_run_event_sequence",
        runtime_name: "lab1",
        category: "run_opened",
      });
      ok(byName("runtime_provider_health_uptime_seconds", { provider_id: "sim0" }).length === 1);
      ok(
        (byName("runtime_provider_health_degraded", { provider_id: "sim0" })[0])!.values.every((
          v,
        ) => v === 0),
      );
      deepEqual(
        (one("runtime_device_health_staleness_ms", { device_id: "dev0" }))!.values.slice(0, 1),
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
      await waitFor("the first 20 rows", () => w.status().total_written === 20);
      equal(w.status().connected, true);

      // Outage: the database process is gone; rows arrive in two bursts while the writer
      // keeps retrying with backoff (each retry must neither lose nor double-count rows).
      await vm.pause();
      publishDoubles(bus, 100, 40);
      await waitFor("retries during the outage", () => w.status().write_failures >= 2);
      publishDoubles(bus, 140, 40);
      await waitFor("the outage rows to reach the retry buffer", () => {
        const s = w.status();
        return s.queue_depth === 0 && s.pending_batch === 0 && s.dropped_retry === 30 &&
          s.write_failures >= 4;
      });
      let s = w.status();
      equal(s.connected, false);
      equal(s.retry_buffer_depth, 50);
      equal(s.total_failed, 30);
      equal(s.dropped_events, 0);
      ok(s.last_error !== null && s.last_error.startsWith("write failed, will retry"));

      await vm.resume();
      await waitFor("the retry buffer to drain", () => w.status().retry_buffer_depth === 0, 15000);
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
  name:
    "TelemetryWriter reloaded (same database, new batch size and token) during an outage writes every row once it is back",
  ignore,
  async fn() {
    const vm = await VictoriaMetrics.start();
    const bus = new EventBus();
    const options = {
      enabled: true,
      runtimeName: "lab1",
      healthIntervalMs: 0,
      clock: systemClock,
      logger: quietLogger(),
      tuning: { retryInitialMs: 100, retryMaxMs: 400, writeTimeoutMs: 2000 },
      influx: settings(vm.url, { batchSize: 10 }),
    };
    const w = new TelemetryWriter(options);
    try {
      w.start(bus);
      publishDoubles(bus, 0, 10);
      await waitFor("the first rows", () => w.status().total_written === 10);
      await vm.pause();
      publishDoubles(bus, 100, 30);
      await waitFor(
        "the outage rows in the retry buffer",
        () => w.status().retry_buffer_depth === 30,
      );
      await w.retarget(
        { ...options, influx: settings(vm.url, { batchSize: 20, token: "rotated-token" }) },
        500,
      );
      publishDoubles(bus, 200, 10);
      await vm.resume();
      await waitFor("every row written", () => w.status().total_written === 50, 15000);
      equal(w.status().total_failed, 0);
      deepEqual(await exportedValues(vm), [...range(0, 10), ...range(100, 30), ...range(200, 10)]);
    } finally {
      await w.stop(1000);
      await vm.dispose();
    }
  },
});

Deno.test({
  name:
    "TelemetryWriter retries a write that timed out after the database stored it with the same lines: each point is overwritten, not doubled",
  ignore,
  async fn() {
    // One sample per series and millisecond, as InfluxDB keeps one point per series and
    // timestamp (a later write of the same point overwrites it).
    const vm = await VictoriaMetrics.start({ extraArgs: ["-dedup.minScrapeInterval=1ms"] });
    const bodies: string[] = [];
    const stored: number[] = [];
    let failures = () => 0;
    // In front of the database: the first write reaches it and is stored, but its answer is
    // held until the writer has given up on it (its write timeout).
    const proxy = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (req) => {
        const u = new URL(req.url);
        const body = await req.text();
        bodies.push(body);
        const res = await fetch(`${vm.url}${u.pathname}${u.search}`, { method: "POST", body });
        await res.body?.cancel();
        stored.push(res.status);
        if (bodies.length === 1) {
          await waitFor("the writer to give up on its first write", () => failures() >= 1, 5000);
        }
        return new Response(null, { status: res.status });
      },
    );
    const bus = new EventBus();
    const w = writer({
      influx: settings(`http://127.0.0.1:${proxy.addr.port}`, { batchSize: 10 }),
      tuning: { retryInitialMs: 50, retryMaxMs: 100, writeTimeoutMs: 300 },
    });
    failures = () => w.status().write_failures;
    try {
      w.start(bus);
      publishDoubles(bus, 0, 10);
      await waitFor("the rows written after the retry", () => w.status().total_written === 10);
      const s = w.status();
      equal(s.write_failures, 1, "the first write timed out");
      equal(s.total_failed, 0);
      ok(bodies.length >= 2, `${bodies.length} requests`);
      equal(stored[0], 204, "the timed-out write was stored");
      // The retry sends the very same lines: same series, same timestamps (same point identity).
      const first = bodies[0]!.trimEnd().split("\n");
      const retried = new Set(bodies.slice(1).join("").trimEnd().split("\n"));
      for (const line of first) ok(retried.has(line), `not resent as it was: ${line}`);
      // Each point is in the database once, with its value.
      const series = await vm.export('runtime_signal_value_double{signal_id="temp"}');
      const timestamps = series.flatMap((x) => x.timestamps);
      equal(new Set(timestamps).size, timestamps.length, `timestamps: ${timestamps}`);
      deepEqual(await exportedValues(vm), range(0, 10));
    } finally {
      await w.stop(1000);
      await proxy.shutdown();
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
      await waitFor("the queue to drain into the batch", () => w.status().queue_depth === 0);
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
    pending_batch_bytes: 0,
    queue_depth: 0,
    dropped_events: 0,
    retry_buffer_depth: 0,
    dropped_retry: 0,
    write_failures: 0,
    dropped_rejected: 0,
    dropped_unformattable: 0,
    dropped_overflow: 0,
    omitted_values: 0,
    run_payload_errors: 0,
    last_error: null,
    last_error_at_epoch_ms: null,
    last_flush_at_epoch_ms: null,
    last_health_snapshot_at_epoch_ms: null,
  });
});

// ---- one bad id or one refused row must not cost the other devices their rows ----------------

/** VictoriaMetrics' count of InfluxDB lines it could not parse (and skipped). */
async function invalidLines(vm: VictoriaMetrics): Promise<number> {
  const text = await (await fetch(`${vm.url}/metrics`)).text();
  const m = text.match(/^vm_rows_invalid_total\{type="influx"\} (\d+)$/m);
  if (!m) throw new Error('vm_rows_invalid_total{type="influx"} not found in /metrics');
  return Number(m[1]);
}

function publishSignal(
  bus: EventBus,
  device: string,
  signal: string,
  value: TypedValue | null,
  ts: number,
  quality: "OK" | "FAULT" | "UNAVAILABLE" = "OK",
): void {
  bus.publish({
    kind: "state_update",
    provider_id: "sim0",
    device_id: device,
    signal_id: signal,
    // The producer side types this as `TypedValue | null` (a declared signal without a value).
    value: value as TypedValue,
    quality,
    timestamp_ms: ts,
  });
}

/**
 * `{device_id: [distinct values, sorted]}` of one exported metric. Distinct: like InfluxDB 1.x, a
 * VictoriaMetrics that refuses a write may already have stored the rows before the refused one,
 * which isolation then sends again (same series, timestamp and value: a duplicate point).
 */
async function valuesByDevice(
  vm: VictoriaMetrics,
  match: string,
): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const s of await vm.export(match)) {
    (out[s.metric.device_id!] ??= []).push(...s.values);
  }
  for (const [k, v] of Object.entries(out)) out[k] = [...new Set(v)].sort((a, b) => a - b);
  return out;
}

const HEALTHY = ["dev0", "dev1", "dev2", "dev3"];
const T0 = 1760000000000;

Deno.test({
  name:
    "TelemetryWriter writes a device with a control-character-only id next to healthy devices, every line valid",
  ignore,
  async fn() {
    const vm = await VictoriaMetrics.start();
    const recorder = new LineRecorder(vm.url);
    const bus = new EventBus();
    const w = writer({ influx: settings(recorder.url, { batchSize: 100 }) });
    try {
      w.start(bus);
      let ts = T0;
      // One batch: healthy devices around a device and a signal whose ids are control characters.
      for (const device of HEALTHY) {
        for (let i = 0; i < 5; i++) publishSignal(bus, device, "temp", dbl(i), ts++);
      }
      for (let i = 0; i < 3; i++) publishSignal(bus, "\x01\x02", "temp", dbl(100 + i), ts++);
      publishSignal(bus, "dev0", "\x03", dbl(7), ts++);
      // The value changes made in parallel: exact 64-bit integers, no value, a non-finite double.
      publishSignal(bus, "dev1", "count", uint64(2n ** 64n - 1n), ts++);
      publishSignal(bus, "dev1", "offset", int64(-(2n ** 63n)), ts++);
      publishSignal(bus, "dev2", "ph", null, ts++, "UNAVAILABLE");
      publishSignal(bus, "dev3", "temp", dbl(NaN), ts++, "FAULT");
      const published = ts - T0;
      await w.stop(5000);

      const s = w.status();
      equal(s.total_written, published);
      equal(s.total_failed, 0);
      equal(s.dropped_rejected, 0);
      equal(s.dropped_unformattable, 0);
      equal(s.omitted_values, 1);
      equal(recorder.lines.length, published);
      for (const l of recorder.lines) parseLine(l);
      equal(await invalidLines(vm), 0, "VictoriaMetrics skipped a line");

      const sigTags = "runtime_signal,runtime_name=lab1,provider_id=sim0";
      for (
        const expected of [
          `${sigTags},device_id=%01%02,signal_id=temp value_double=100,quality="OK" ${T0 + 20}`,
          `${sigTags},device_id=dev0,signal_id=%03 value_double=7,quality="OK" ${T0 + 23}`,
          `${sigTags},device_id=dev1,signal_id=count value_uint=18446744073709551615u,quality="OK" ${
            T0 + 24
          }`,
          `${sigTags},device_id=dev1,signal_id=offset value_int=-9223372036854775808i,quality="OK" ${
            T0 + 25
          }`,
          `${sigTags},device_id=dev2,signal_id=ph quality="UNAVAILABLE" ${T0 + 26}`,
          `${sigTags},device_id=dev3,signal_id=temp quality="FAULT" ${T0 + 27}`,
        ]
      ) {
        ok(recorder.lines.includes(expected), `missing line: ${expected}`);
      }
      // Every row is queryable: the healthy devices and the one with the encoded id.
      deepEqual(await valuesByDevice(vm, 'runtime_signal_value_double{signal_id="temp"}'), {
        dev0: [0, 1, 2, 3, 4],
        dev1: [0, 1, 2, 3, 4],
        dev2: [0, 1, 2, 3, 4],
        dev3: [0, 1, 2, 3, 4],
        "%01%02": [100, 101, 102],
      });
      deepEqual(await valuesByDevice(vm, 'runtime_signal_value_double{signal_id="%03"}'), {
        dev0: [7],
      });
      equal((await vm.export('runtime_signal_quality{device_id="dev2",signal_id="ph"}')).length, 1);
    } finally {
      await w.stop(0);
      await recorder.close();
      await vm.dispose();
    }
  },
});

Deno.test({
  name:
    "TelemetryWriter writes ids with backslashes so that VictoriaMetrics and InfluxDB read the same tags",
  ignore,
  async fn() {
    const vm = await VictoriaMetrics.start();
    const recorder = new LineRecorder(vm.url);
    const bus = new EventBus();
    const w = writer({ influx: settings(recorder.url, { batchSize: 100 }) });
    // [device id, as written, as both databases read it]. InfluxDB (models/points.go) keeps `\\`
    // as two backslashes where VictoriaMetrics reads one, and a trailing backslash escapes the
    // separator after it (InfluxDB refuses the point): such a backslash is written %5C.
    const ids: [string, string, string][] = [
      ["dev0", "dev0", "dev0"],
      ["C:\\data", "C:\\data", "C:\\data"],
      ["C:\\", "C:%5C", "C:%5C"],
      ["\\\\srv\\x", "%5C\\srv\\x", "%5C\\srv\\x"],
      ["a\\,b", "a%5C\\,b", "a%5C,b"],
      ["a,b c=d", "a\\,b\\ c\\=d", "a,b c=d"],
      ['q"x', 'q"x', 'q"x'],
      ["x\ny", "x\\ny", "x\\ny"],
    ];
    try {
      w.start(bus);
      ids.forEach(([id], i) => publishSignal(bus, id, "temp", dbl(i), T0 + i));
      await w.stop(5000);

      equal(w.status().total_written, ids.length);
      equal(await invalidLines(vm), 0, "VictoriaMetrics skipped a line");
      const sigTags = "runtime_signal,runtime_name=lab1,provider_id=sim0";
      deepEqual(
        recorder.lines,
        ids.map(([, written], i) =>
          `${sigTags},device_id=${written},signal_id=temp value_double=${i},quality="OK" ${T0 + i}`
        ),
      );
      // InfluxDB's reading (line_protocol_check.ts follows models/points.go) ...
      const influx = recorder.lines.map((l) => parseLine(l).tags.find(([k]) => k === "device_id"));
      deepEqual(influx.map((t) => t?.[1]), ids.map(([, , read]) => read));
      // ... is VictoriaMetrics' reading.
      deepEqual(
        await valuesByDevice(vm, 'runtime_signal_value_double{signal_id="temp"}'),
        Object.fromEntries(ids.map(([, , read], i) => [read, [i]])),
      );
    } finally {
      await w.stop(0);
      await recorder.close();
      await vm.dispose();
    }
  },
});

/**
 * A string value at the writer's own bound (MAX_STRING_FIELD_BYTES, written whole): its line is 4
 * times the 16 KiB line limit these tests give VictoriaMetrics (LINE_LIMIT; it checks the limit
 * per read block, so a line only just over it may pass), which refuses the write with 400 "too
 * long line". The writer bounds ids (MAX_TAG_VALUE_BYTES) and string values (64 KiB) itself, so
 * only a line limit below those bounds makes a row the database refuses.
 */
const TOO_LONG = "x".repeat(64 * 1024);
/** VictoriaMetrics' line limit in the tests that need a refused row (see TOO_LONG). */
const LINE_LIMIT = "-influx.maxLineSize=16384";

Deno.test({
  name:
    "TelemetryWriter isolates the row a database refuses and writes every other row of the write",
  ignore,
  async fn() {
    const vm = await VictoriaMetrics.start({ extraArgs: [LINE_LIMIT] });
    const recorder = new LineRecorder(vm.url);
    const bus = new EventBus();
    // Nothing leaves before stop(): all rows go in one write.
    const w = writer({
      influx: settings(recorder.url, { batchSize: 1000, flushIntervalMs: 60000 }),
    });
    try {
      w.start(bus);
      let ts = T0;
      for (const device of HEALTHY) {
        for (let i = 0; i < 5; i++) {
          publishSignal(bus, device, "temp", dbl(i), ts++);
          if (device === "dev2" && i === 2) {
            publishSignal(bus, "dev2", "log", { type: "string", string: TOO_LONG }, ts++);
          }
        }
      }
      await w.stop(10000);

      const s = w.status();
      equal(s.total_written, 20);
      equal(s.total_failed, 1);
      equal(s.dropped_rejected, 1);
      equal(s.retry_buffer_depth, 0);
      equal(s.write_failures, 0);
      equal(s.connected, true);
      match(
        s.last_error ?? "",
        /^write refused \(HTTP 400: .*\): 1 of 21 rows dropped, 20 written, 0 to retry, after \d+ isolating requests; first dropped row: runtime_signal,runtime_name=lab1,provider_id=sim0,device_id=dev2,signal_id=log /,
      );
      // Halving: at most two requests per level of a 21-row write, plus the write itself.
      const requests = recorder.requests.length;
      ok(requests >= 3 && requests <= 1 + 2 * Math.ceil(Math.log2(21)), `requests: ${requests}`);
      deepEqual(await valuesByDevice(vm, 'runtime_signal_value_double{signal_id="temp"}'), {
        dev0: [0, 1, 2, 3, 4],
        dev1: [0, 1, 2, 3, 4],
        dev2: [0, 1, 2, 3, 4],
        dev3: [0, 1, 2, 3, 4],
      });
      deepEqual(await vm.export('{signal_id="log"}'), []);
    } finally {
      await w.stop(0);
      await recorder.close();
      await vm.dispose();
    }
  },
});

Deno.test({
  name:
    "TelemetryWriter spends at most isolationMaxRequests on a refused write and counts every row",
  ignore,
  async fn() {
    // A 16 KiB line limit: the 4 refused rows (64 KiB strings) and the others fit one write's
    // MAX_WRITE_BYTES, so the isolation starts from one write of all 16 rows.
    const vm = await VictoriaMetrics.start({ extraArgs: [LINE_LIMIT] });
    const recorder = new LineRecorder(vm.url);
    const bus = new EventBus();
    const w = writer({
      influx: settings(recorder.url, { batchSize: 1000, flushIntervalMs: 60000 }),
      tuning: { isolationMaxRequests: 6, writeTimeoutMs: 5000 },
    });
    try {
      w.start(bus);
      // 16 rows, every fourth refused (positions 1, 5, 9, 13).
      for (let i = 0; i < 16; i++) {
        if (i % 4 === 1) {
          publishSignal(bus, "dev9", "log", { type: "string", string: TOO_LONG }, T0 + i);
        } else publishSignal(bus, "dev0", "temp", dbl(i), T0 + i);
      }
      await w.stop(10000);

      const s = w.status();
      equal(recorder.requests.length, 1 + 6, "the write plus the whole isolation budget");
      // Depth first: [0-7] refused, [0-3] refused, [0-1] refused and dropped whole (no budget
      // left to split it), [2-3] written, [4-7] and [8-15] refused and dropped whole.
      equal(s.total_written, 2);
      equal(s.dropped_rejected, 14);
      equal(s.total_failed, 14);
      equal(s.retry_buffer_depth, 0);
      const stored = await valuesByDevice(vm, 'runtime_signal_value_double{signal_id="temp"}');
      ok(stored.dev0!.includes(2) && stored.dev0!.includes(3), `stored: ${stored.dev0}`);
    } finally {
      await w.stop(0);
      await recorder.close();
      await vm.dispose();
    }
  },
});

Deno.test({
  name:
    "TelemetryWriter puts the unsettled rows of an isolation back when the database fails midway",
  ignore,
  async fn() {
    const vm = await VictoriaMetrics.start({ extraArgs: [LINE_LIMIT] });
    // In front of the real database: the second request (the first isolating one) gets a 503.
    let requests = 0;
    const proxy = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (req) => {
        const body = await req.text();
        const u = new URL(req.url);
        if (++requests === 2) return new Response("busy", { status: 503 });
        const res = await fetch(`${vm.url}${u.pathname}${u.search}`, { method: "POST", body });
        return new Response(res.status === 204 ? null : await res.text(), { status: res.status });
      },
    );
    const bus = new EventBus();
    const w = writer({
      influx: settings(`http://127.0.0.1:${proxy.addr.port}`, { batchSize: 9 }),
    });
    try {
      w.start(bus);
      for (let i = 0; i < 9; i++) {
        if (i === 6) {
          publishSignal(bus, "dev9", "log", { type: "string", string: TOO_LONG }, T0 + i);
        } else publishSignal(bus, "dev0", "temp", dbl(i), T0 + i);
      }
      await waitFor("the refused row to be isolated", () => w.status().dropped_rejected === 1);
      const s = w.status();
      equal(s.write_failures, 1);
      equal(s.total_written, 8);
      equal(s.total_failed, 1);
      equal(s.retry_buffer_depth, 0);
      equal(s.connected, true);
      deepEqual(await valuesByDevice(vm, 'runtime_signal_value_double{signal_id="temp"}'), {
        dev0: [0, 1, 2, 3, 4, 5, 7, 8],
      });
    } finally {
      await w.stop(0);
      await proxy.shutdown();
      await vm.dispose();
    }
  },
});

Deno.test({
  name:
    "TelemetryWriter writes run events whatever their payload and counts payloads it cannot serialise",
  ignore,
  async fn() {
    const vm = await VictoriaMetrics.start();
    const recorder = new LineRecorder(vm.url);
    const bus = new EventBus();
    const logs: string[] = [];
    const w = writer({ influx: settings(recorder.url), logger: quietLogger(logs) });
    try {
      w.start(bus);
      const event = { run_id: "r1", category: "annotation", type: "note" };
      let deep: Record<string, unknown> = { leaf: 1 };
      for (let i = 0; i < 10000; i++) deep = { a: deep };
      w.recordRunEvent({ ...event, sequence: 2, occurred_at_epoch_ms: T0 + 2, payload: deep });
      w.recordRunEvent({
        ...event,
        sequence: 3,
        occurred_at_epoch_ms: T0 + 3,
        payload: { n: 10n },
      });
      // A row that cannot be a valid line (timestamp out of range) is counted, never sent.
      publishSignal(bus, "dev0", "temp", dbl(1), NaN);
      await w.stop(3000);

      const s = w.status();
      equal(s.total_written, 2);
      equal(s.run_payload_errors, 1);
      equal(s.dropped_unformattable, 1);
      equal(s.total_failed, 1);
      const lines = recorder.lines;
      equal(lines.length, 2);
      for (const l of lines) parseLine(l);
      match(lines[0]!, /,payload="\{\\"a\\":.*",payload_truncated=true 1760000000002$/);
      match(
        lines[1]!,
        /^runtime_run_event,runtime_name=lab1,category=annotation run_id="r1",type="note",sequence=3i,payload_error="payload: .*BigInt.*" 1760000000003$/,
      );
      ok(
        logs.some((l) => /^error run event r1 #3: payload: .*BigInt/.test(l)),
        `logged: ${logs.join("\n")}`,
      );
      equal(await invalidLines(vm), 0);
      equal(
        ((await vm.export('runtime_run_event_sequence{category="annotation"}'))[0])!.values.length,
        2,
      );
    } finally {
      await w.stop(0);
      await recorder.close();
      await vm.dispose();
    }
  },
});
