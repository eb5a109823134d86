/**
 * GET /metrics: a real scrape over HTTP of a runtime with simulated providers (real child
 * processes), read by the strict text-format parser of tests/helpers/prometheus_text.ts: names,
 * HELP and TYPE lines, histogram shape, counters moving after polls, calls, requests, an e-stop
 * and a provider crash; bounded labels; the same auth rules as /v0; http.metrics_enabled.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { simProvider } from "../helpers/sim_config.ts";
import {
  checkHistogram,
  type Family,
  parsePrometheusText,
  sampleValue,
} from "../helpers/prometheus_text.ts";
import { parse } from "yaml";
import { METRICS_CONTENT_TYPE } from "../../src/http/mod.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

/** Every family the runtime exposes with the services the fixture wires (docs/metrics.md). */
const FAMILIES: Record<string, Family["type"]> = {
  runtime_info: "gauge",
  runtime_uptime_seconds: "gauge",
  runtime_process_resident_memory_bytes: "gauge",
  runtime_process_heap_used_bytes: "gauge",
  runtime_process_heap_total_bytes: "gauge",
  runtime_process_cpu_seconds_total: "counter",
  runtime_provider_up: "gauge",
  runtime_provider_circuit_open: "gauge",
  runtime_provider_lifecycle_state: "gauge",
  runtime_provider_failures_total: "counter",
  runtime_provider_restarts_total: "counter",
  runtime_provider_devices: "gauge",
  runtime_provider_host_unmet: "gauge",
  runtime_provider_host_requirement_unmet: "gauge",
  runtime_poll_duration_seconds: "histogram",
  runtime_poll_errors_total: "counter",
  runtime_signal_samples_refused_total: "counter",
  runtime_calls_total: "counter",
  runtime_call_duration_seconds: "histogram",
  runtime_http_requests_total: "counter",
  runtime_http_request_duration_seconds: "histogram",
  runtime_http_requests_in_flight: "gauge",
  runtime_sse_clients: "gauge",
  runtime_sse_events_dropped_total: "counter",
  runtime_sse_queued_events: "gauge",
  runtime_sse_replay_events: "gauge",
  runtime_sse_replay_bytes: "gauge",
  runtime_sse_replay_omitted_total: "counter",
  runtime_events_published_total: "counter",
  runtime_telemetry_enabled: "gauge",
  runtime_telemetry_connected: "gauge",
  runtime_telemetry_rows_written_total: "counter",
  runtime_telemetry_rows_failed_total: "counter",
  runtime_telemetry_write_failures_total: "counter",
  runtime_telemetry_events_dropped_total: "counter",
  runtime_telemetry_queue_depth: "gauge",
  runtime_telemetry_batch_rows: "gauge",
  runtime_telemetry_retry_buffer_rows: "gauge",
  runtime_mode: "gauge",
  runtime_estop_latched: "gauge",
  runtime_estop_triggers_total: "counter",
  runtime_bt_ticks_total: "counter",
  runtime_bt_tick_errors_total: "counter",
  runtime_alarms: "gauge",
  runtime_interlocks_blocking: "gauge",
  runtime_runs_available: "gauge",
  runtime_runs_open: "gauge",
  runtime_runs_dropped_bus_events_total: "counter",
  runtime_audit_entries_total: "counter",
  runtime_audit_write_errors_total: "counter",
  runtime_audit_dropped_total: "counter",
  runtime_audit_gap_pending: "gauge",
  runtime_audit_write_ahead_late_total: "counter",
  runtime_audit_unreadable_lines_total: "counter",
  runtime_audit_for_runs_dropped_total: "counter",
  runtime_history_memory_bytes: "gauge",
  runtime_history_memory_max_bytes: "gauge",
  runtime_history_memory_reach_seconds: "gauge",
  runtime_history_memory_roomless_rings: "gauge",
  runtime_history_memory_values_not_kept_total: "counter",
  runtime_history_disk_up: "gauge",
  runtime_history_disk_rows_held: "gauge",
  runtime_history_disk_rows_written_total: "counter",
  runtime_history_disk_rows_dropped_total: "counter",
  runtime_history_disk_write_errors_total: "counter",
  runtime_history_disk_read_errors_total: "counter",
  runtime_history_disk_rows_unreadable_total: "counter",
  runtime_incidents: "gauge",
  runtime_incidents_bytes: "gauge",
  runtime_incidents_dropped_total: "counter",
  runtime_sparkplug_enabled: "gauge",
  runtime_config_reloads_total: "counter",
  runtime_config_last_reload_success_timestamp_seconds: "gauge",
};

const CALL = {
  provider_id: "sim0",
  device_id: "motorctl0",
  function_id: 10,
  args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.25 } },
};

async function scrape(base: string): Promise<{ text: string; families: Map<string, Family> }> {
  const res = await apiFetch(`${base}/metrics`);
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.equal(res.headers.get("content-type"), METRICS_CONTENT_TYPE);
  const families = parsePrometheusText(text);
  // Conventions: runtime_ prefix, HELP on every family, _total exactly on counters, base units.
  for (const f of families.values()) {
    assert.match(f.name, /^runtime_[a-z_]+$/, f.name);
    assert.ok(f.help.length > 0, `HELP of ${f.name}`);
    assert.equal(f.type === "counter", f.name.endsWith("_total"), f.name);
    assert.doesNotMatch(f.name, /_(ms|milliseconds|kb|mb)(_|$)/, f.name);
    if (f.type === "histogram") checkHistogram(f);
  }
  return { text, families };
}

Deno.test("GET /metrics exposes the runtime's internals in the Prometheus text format, and the counters move", async () => {
  const fx = await startHttpFixture({ providers: 2 });
  try {
    const server = await fx.serve();
    const base = `http://127.0.0.1:${server.port}`;
    const first = await scrape(base);
    assert.deepEqual(
      Object.fromEntries([...first.families.values()].map((f) => [f.name, f.type])),
      FAMILIES,
    );
    for (const p of ["sim0", "sim1"]) {
      assert.equal(sampleValue(first.families, "runtime_provider_up", { provider: p }), 1);
      assert.equal(sampleValue(first.families, "runtime_provider_devices", { provider: p }), 5);
      assert.equal(
        sampleValue(first.families, "runtime_provider_lifecycle_state", {
          provider: p,
          state: "RUNNING",
        }),
        1,
      );
    }
    assert.equal(sampleValue(first.families, "runtime_mode", { mode: "IDLE" }), 1);
    assert.ok(sampleValue(first.families, "runtime_process_resident_memory_bytes") > 1e6);
    const heapUsed = sampleValue(first.families, "runtime_process_heap_used_bytes");
    const heapTotal = sampleValue(first.families, "runtime_process_heap_total_bytes");
    assert.ok(heapUsed > 1e6 && heapUsed <= heapTotal, `heap ${heapUsed} of ${heapTotal}`);
    const polls0 = sampleValue(first.families, "runtime_poll_duration_seconds_count", {
      provider: "sim0",
    });
    const pollable = fx.runtime.cache.providerDevices("sim0").filter((d) => d.pollable.length > 0);
    assert.ok(polls0 >= pollable.length, `the priming poll of each device: ${polls0}`);

    // One call refused in IDLE, then one that runs in MANUAL; a request by path with ids; a 404.
    const post = (path: string, body: unknown) =>
      apiFetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const refused = await post("/v0/call", CALL);
    await refused.body?.cancel();
    assert.equal(refused.status, 409);
    await (await post("/v0/mode", { mode: "MANUAL" })).body?.cancel();
    const ok = await post("/v0/call", CALL);
    await ok.body?.cancel();
    assert.equal(ok.status, 200);
    await (await apiFetch(`${base}/v0/state/sim0/motorctl0?signal_id=motor1_duty`)).body?.cancel();
    await (await apiFetch(`${base}/v0/no/such/route`)).body?.cancel();
    await (await post("/v0/estop", {})).body?.cancel();
    await waitFor(
      "more polls of sim0",
      () => fx.runtime.cache.pollMetrics("sim0")!.duration.count > polls0 + 5,
    );

    const pollErrors = () => fx.runtime.cache.pollMetrics("sim0")!.errors;
    const errorsBefore = pollErrors();
    const { text, families } = await scrape(base);
    const errorsAfter = pollErrors();
    const v = (name: string, labels: Record<string, string> = {}) =>
      sampleValue(families, name, labels);
    assert.ok(v("runtime_poll_duration_seconds_count", { provider: "sim0" }) > polls0 + 5);
    // What the cache counted when it was scraped: none, unless a read got no answer within the
    // provider's timeout_ms (5 s), which a loaded machine can make happen.
    const errors = v("runtime_poll_errors_total", { provider: "sim0" });
    assert.ok(errors >= errorsBefore && errors <= errorsAfter, `${errors} poll errors`);
    assert.equal(v("runtime_calls_total", { provider: "sim0", code: "OK" }), 1);
    assert.equal(v("runtime_calls_total", { provider: "sim0", code: "FAILED_PRECONDITION" }), 1);
    assert.equal(v("runtime_call_duration_seconds_count", { provider: "sim0", code: "OK" }), 1);
    assert.equal(families.get("runtime_calls_total")!.samples.length, 2, "sim1 had no call");
    const req = (method: string, route: string, code: string) =>
      v("runtime_http_requests_total", { method, route, code });
    assert.equal(req("GET", "/metrics", "200"), 1, "the first scrape");
    assert.equal(req("POST", "/v0/call", "409"), 1);
    assert.equal(req("POST", "/v0/call", "200"), 1);
    assert.equal(req("GET", "/v0/state/:provider_id/:device_id", "200"), 1);
    assert.equal(req("GET", "unmatched", "404"), 1);
    assert.equal(req("POST", "/v0/estop", "200"), 1);
    assert.equal(
      v("runtime_http_request_duration_seconds_count", { route: "/v0/call" }),
      2,
      "by route, whatever the code",
    );
    // Bounded labels: never a device id, a signal id, a raw path or a query.
    for (const raw of ["motorctl0", "motor1_duty", "/no/such", "signal_id"]) {
      assert.equal(text.includes(raw), false, raw);
    }
    assert.equal(v("runtime_estop_latched"), 1);
    assert.equal(v("runtime_estop_triggers_total"), 1);
    assert.equal(v("runtime_mode", { mode: "FAULT" }), 1);
    assert.equal(v("runtime_mode", { mode: "MANUAL" }), 0);
    assert.ok(v("runtime_events_published_total") > 0);
    // Audit: the refused call, MANUAL, the call, the e-stop and FAULT (memory: no journal).
    assert.equal(v("runtime_audit_entries_total"), 5);
    assert.equal(v("runtime_audit_write_errors_total"), 0);
    assert.equal(v("runtime_audit_dropped_total"), 0);
    assert.equal(v("runtime_audit_gap_pending"), 0);
    // At most the one call sent: a loaded machine may stall the event loop past the write-ahead
    // bound (AUDIT_WRITE_AHEAD_TIMEOUT_MS, 100 ms) and send it late (CI once did).
    assert.ok([0, 1].includes(v("runtime_audit_write_ahead_late_total")));
    assert.equal(v("runtime_audit_unreadable_lines_total"), 0);
    assert.equal(v("runtime_audit_for_runs_dropped_total"), 0);

    // A provider that dies is counted down, restarted (backoff 100 ms) and counted back up.
    const sim1 = fx.runtime.registry.host("sim1")!;
    Deno.kill(sim1.session!.pid, "SIGKILL");
    await waitFor("sim1 down", () => !sim1.available);
    await waitFor("sim1 restarted", () => sim1.available);
    const after = (await scrape(base)).families;
    assert.equal(sampleValue(after, "runtime_provider_up", { provider: "sim1" }), 1);
    assert.equal(sampleValue(after, "runtime_provider_failures_total", { provider: "sim1" }), 1);
    assert.equal(sampleValue(after, "runtime_provider_restarts_total", { provider: "sim1" }), 1);
    assert.equal(
      sampleValue(after, "runtime_provider_lifecycle_state", {
        provider: "sim1",
        state: "RECOVERING",
      }),
      1,
    );
    assert.equal(sampleValue(after, "runtime_provider_circuit_open", { provider: "sim1" }), 0);
    assert.equal(sampleValue(after, "runtime_provider_failures_total", { provider: "sim0" }), 0);
    assert.equal(sampleValue(after, "runtime_provider_restarts_total", { provider: "sim0" }), 0);
  } finally {
    await fx.close();
  }
});

Deno.test("GET /metrics follows the /v0 auth rules: loopback exemption and bearer token", async () => {
  const TOKEN = "metrics-token";
  const fx = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authToken: TOKEN } },
    api: { apiToken: TOKEN },
  });
  try {
    const remote = "192.0.2.7";
    const refused = await fx.request("GET", "/metrics", { remoteAddr: remote });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get("www-authenticate"), "Bearer");
    assert.equal(refused.text.includes("runtime_"), false, "nothing of the exposition leaks");
    const wrong = await fx.request("GET", "/metrics", {
      remoteAddr: remote,
      headers: { authorization: "Bearer nope" },
    });
    assert.equal(wrong.status, 401);
    const withToken = await fx.request("GET", "/metrics", {
      remoteAddr: remote,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(withToken.status, 200);
    parsePrometheusText(withToken.text);
    assert.equal((await fx.request("GET", "/metrics", { remoteAddr: "127.0.0.1" })).status, 200);
  } finally {
    await fx.close();
  }
  const strict = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authToken: TOKEN, authExemptLoopback: false } },
    api: { apiToken: TOKEN },
  });
  try {
    assert.equal((await strict.request("GET", "/metrics")).status, 401, "loopback not exempt");
  } finally {
    await strict.close();
  }
});

Deno.test("http.metrics_enabled false answers GET /metrics 404, with or without the console", async () => {
  for (const consoleEnabled of [true, false]) {
    const fx = await startHttpFixture({
      start: false,
      config: { http: { metricsEnabled: false, consoleEnabled } },
    });
    try {
      const r = await fx.request("GET", "/metrics");
      assert.equal(r.status, 404, `console ${consoleEnabled}`);
      assert.equal(r.text.includes("# TYPE"), false);
    } finally {
      await fx.close();
    }
  }
});

Deno.test("GET /metrics answers other methods 404 and HEAD without a body", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    assert.equal((await fx.request("POST", "/metrics", { body: {} })).status, 404);
    const head = await fx.request("HEAD", "/metrics");
    assert.equal(head.status, 200);
    assert.equal(head.text, "");
    assert.equal(head.headers.get("content-type"), METRICS_CONTENT_TYPE);
  } finally {
    await fx.close();
  }
});

Deno.test("GET /metrics counts events dropped from a slow event-stream client's full queue", async () => {
  const fx = await startHttpFixture({ start: false, api: { sseQueueSize: 2 } });
  try {
    const stream = await fx.api.handle(new Request("http://localhost/v0/events"), {
      remoteAddr: "127.0.0.1",
    });
    assert.equal(stream.status, 200);
    try {
      // Nothing reads the stream: 5 events into a queue of 2 drop the 3 oldest.
      for (let i = 0; i < 5; i++) {
        fx.services.bus.publish({ kind: "bt_error", node: "n", error: "e", timestamp_ms: i });
      }
      const families = parsePrometheusText((await fx.request("GET", "/metrics")).text);
      assert.equal(sampleValue(families, "runtime_sse_clients"), 1);
      assert.equal(sampleValue(families, "runtime_sse_events_dropped_total"), 3);
      assert.equal(sampleValue(families, "runtime_sse_queued_events"), 2);
      // All 5 are held for a client that resumes (Last-Event-ID), each estimated by its frame.
      assert.equal(sampleValue(families, "runtime_sse_replay_events"), 5);
      const bytes = sampleValue(families, "runtime_sse_replay_bytes")!;
      assert.ok(bytes >= 5 * 60 && bytes <= 5 * 400, `${bytes}`);
      assert.equal(sampleValue(families, "runtime_events_published_total"), 5);
      assert.equal(sampleValue(families, "runtime_provider_up", { provider: "sim0" }), 0);
    } finally {
      await stream.body?.cancel();
    }
  } finally {
    await fx.close();
  }
});

Deno.test("examples/prometheus: the scrape config targets /metrics and the Grafana dashboard queries only metrics the runtime exposes", async () => {
  const dir = new URL("../../examples/prometheus/", import.meta.url);
  const scrapeConfig = parse(await Deno.readTextFile(new URL("prometheus.yml", dir))) as {
    scrape_configs: { metrics_path: string; static_configs: { targets: string[] }[] }[];
  };
  assert.equal(scrapeConfig.scrape_configs[0]!.metrics_path, "/metrics");
  const dashboard = JSON.parse(await Deno.readTextFile(new URL("grafana-dashboard.json", dir)));
  const exprs: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        if (k === "expr" && typeof x === "string") exprs.push(x);
        else walk(x);
      }
    }
  };
  walk(dashboard.panels);
  assert.ok(exprs.length >= 14, `${exprs.length} queries`);
  const used = new Set(
    exprs.flatMap((e) => [...e.matchAll(/\bruntime_[a-z_]+/g)].map((m) => m[0])).map((n) =>
      n.replace(/_(bucket|sum|count)$/, "")
    ),
  );
  for (const name of used) assert.ok(name in FAMILIES, `the dashboard queries ${name}`);
  for (const e of exprs) {
    for (const m of e.matchAll(/(\w+)_bucket\b/g)) {
      assert.equal(FAMILIES[m[1]!], "histogram", `${m[0]} in ${e}`);
    }
    for (const m of e.matchAll(/(?:rate|increase)\((runtime_[a-z_]+?)(?:_bucket)?[{[]/g)) {
      const type = FAMILIES[m[1]!];
      assert.ok(type === "counter" || type === "histogram", `rate of a ${type}: ${e}`);
    }
  }
});

Deno.test("GET /metrics escapes a provider id holding a quote, a backslash and a line feed", async () => {
  // Provider ids are free text in the configuration (only uniqueness is checked).
  const id = 'rig "A"\\bay\n2';
  const fx = await startHttpFixture({ config: { providers: [simProvider(id)] } });
  try {
    const r = await fx.request("GET", "/metrics");
    assert.ok(r.text.includes('provider="rig \\"A\\"\\\\bay\\n2"'), "escaped as the format says");
    const families = parsePrometheusText(r.text);
    assert.equal(sampleValue(families, "runtime_provider_up", { provider: id }), 1);
    assert.ok(sampleValue(families, "runtime_poll_duration_seconds_count", { provider: id }) > 0);
  } finally {
    await fx.close();
  }
});
