/**
 * GET /metrics: the runtime's internals in the Prometheus text format (docs/metrics.md lists
 * every metric). Figures are read from the subsystems when scraped; only the HTTP layer's own
 * request counts are kept here. Labels are bounded: provider ids of the configuration, route
 * templates, status codes and fixed vocabularies -- never a device value or a raw path.
 */
import {
  ExpositionWriter,
  Histogram,
  type LifecycleState,
  type ProcessStats,
  RUNTIME_VERSION,
} from "../common/mod.ts";
import { RUNTIME_MODES } from "../config/mod.ts";
import type { AlarmState } from "../events/mod.ts";
import type { HttpServices, SparkplugMetricsView } from "./services.ts";
import type { SseHub } from "./sse_hub.ts";

/** The exposition's content type (text format 0.0.4). */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** The path the metrics are served on (outside /v0, where scrapers look by default). */
export const METRICS_PATH = "/metrics";

/** Route label of a path no route has (a 404), and of the operator console's files. */
export const UNMATCHED_ROUTE = "unmatched";
export const CONSOLE_ROUTE = "console";

/** Methods counted by name; any other method is counted as `other` (the label stays bounded). */
const COUNTED_METHODS = new Set(["GET", "HEAD", "POST", "OPTIONS"]);

const LIFECYCLE_STATES: readonly LifecycleState[] = [
  "RUNNING",
  "RECOVERING",
  "RESTARTING",
  "CIRCUIT_OPEN",
  "DOWN",
];
const ALARM_STATES: readonly AlarmState[] = ["normal", "active", "active_acked", "shelved"];

interface RequestSeries {
  readonly method: string;
  readonly route: string;
  readonly code: number;
  count: number;
}

/**
 * Requests by method, route template and status code, and their duration by route (until the
 * response starts: an event stream counts until its headers). Bounded: at most
 * (routes + 3) x 5 methods x the status codes the API answers with.
 */
export class HttpRequestMetrics {
  readonly #requests = new Map<string, RequestSeries>();
  readonly #durations = new Map<string, Histogram>();

  /** Records one answered request. */
  record(method: string, route: string, code: number, seconds: number): void {
    const m = COUNTED_METHODS.has(method) ? method : "other";
    const key = `${m} ${route} ${code}`;
    let series = this.#requests.get(key);
    if (!series) this.#requests.set(key, series = { method: m, route, code, count: 0 });
    series.count++;
    let h = this.#durations.get(route);
    if (!h) this.#durations.set(route, h = new Histogram());
    h.observe(seconds);
  }

  get requests(): ReadonlyMap<string, Readonly<RequestSeries>> {
    return this.#requests;
  }

  get durations(): ReadonlyMap<string, Histogram> {
    return this.#durations;
  }
}

/** What the exposition reads besides the services: the HTTP layer's own figures. */
export interface HttpMetricsSources {
  readonly requests: HttpRequestMetrics;
  readonly sse: SseHub;
  readonly inFlight: number;
  /** This process's RSS, heap and CPU time (services.processStats(), read before rendering). */
  readonly proc: ProcessStats;
}

/** Renders the whole exposition. */
export function renderMetrics(services: HttpServices, http: HttpMetricsSources): string {
  const w = new ExpositionWriter();
  const gauge1 = (name: string, help: string, value: number) =>
    w.family(name, "gauge", help).sample(name, value);

  // ---- process ----
  w.family("runtime_info", "gauge", "Runtime version (always 1).")
    .sample("runtime_info", 1, { version: RUNTIME_VERSION });
  gauge1("runtime_uptime_seconds", "Seconds since the runtime started.", services.uptimeSeconds());
  const proc = http.proc;
  gauge1(
    "runtime_process_resident_memory_bytes",
    "Resident set size of the runtime process in bytes (providers not included).",
    proc.rssBytes,
  );
  gauge1(
    "runtime_process_heap_used_bytes",
    "V8 JavaScript heap in use in bytes (a leak shows as a rising floor between collections).",
    proc.heapUsedBytes,
  );
  gauge1(
    "runtime_process_heap_total_bytes",
    "V8 JavaScript heap reserved in bytes.",
    proc.heapTotalBytes,
  );
  if (proc.cpuSeconds !== null) {
    w.family(
      "runtime_process_cpu_seconds_total",
      "counter",
      "User and system CPU time of the runtime process in seconds (providers not included).",
    ).sample("runtime_process_cpu_seconds_total", proc.cpuSeconds);
  }

  // ---- providers ----
  // Every configured provider, in the configuration file's order: one with no host listed (a
  // reload restarting or starting it, or one it failed to register) is down, as health lists it.
  const listed = services.inventory.providers();
  const byId = new Map(listed.map((h) => [h.id, h]));
  const ids = services.inventory.configuredIds?.() ?? listed.map((h) => h.id);
  const providers = ids.map((id) => ({ id, host: byId.get(id) }));
  const hosts = providers.flatMap((p) => p.host === undefined ? [] : [p.host]);
  w.family("runtime_provider_up", "gauge", "1 while the provider is AVAILABLE, else 0.");
  for (const p of providers) {
    w.sample("runtime_provider_up", p.host?.available === true ? 1 : 0, { provider: p.id });
  }
  w.family(
    "runtime_provider_circuit_open",
    "gauge",
    "1 once the provider's restart circuit is open (it is not restarted again), else 0.",
  );
  for (const p of providers) {
    w.sample("runtime_provider_circuit_open", p.host?.lifecycle === "CIRCUIT_OPEN" ? 1 : 0, {
      provider: p.id,
    });
  }
  w.family(
    "runtime_provider_lifecycle_state",
    "gauge",
    "1 for the provider's lifecycle state (RUNNING, RECOVERING, RESTARTING, CIRCUIT_OPEN, DOWN), 0 for the others.",
  );
  for (const p of providers) {
    // No host listed: DOWN, as GET /v0/providers/health says it.
    const now: LifecycleState = p.host?.lifecycle ?? "DOWN";
    for (const state of LIFECYCLE_STATES) {
      w.sample("runtime_provider_lifecycle_state", now === state ? 1 : 0, {
        provider: p.id,
        state,
      });
    }
  }
  // No host listed: nothing of it ran since (its supervision starts again with its next host).
  const counts = providers.map((p) => p.host?.counts() ?? { failures: 0, restart_attempts: 0 });
  w.family(
    "runtime_provider_failures_total",
    "counter",
    "Times the provider was declared down (crash, unresponsive, protocol error).",
  );
  providers.forEach((p, i) =>
    w.sample("runtime_provider_failures_total", counts[i]!.failures, { provider: p.id })
  );
  w.family("runtime_provider_restarts_total", "counter", "Restart attempts begun.");
  providers.forEach((p, i) =>
    w.sample("runtime_provider_restarts_total", counts[i]!.restart_attempts, { provider: p.id })
  );
  w.family("runtime_provider_devices", "gauge", "Devices the provider's last discovery gave.");
  for (const p of providers) {
    w.sample("runtime_provider_devices", p.host?.devices.length ?? 0, { provider: p.id });
  }
  w.family(
    "runtime_provider_host_unmet",
    "gauge",
    "1 while the provider reported unmet host requirements when it last came up, else 0.",
  );
  for (const p of providers) {
    w.sample("runtime_provider_host_unmet", p.host?.hostCheck()?.status === "unmet" ? 1 : 0, {
      provider: p.id,
    });
  }
  // Provider-owned texts as labels, bounded: at most 16 requirements a provider, each text cut
  // to 300 characters (providers/host_check.ts), and only while unmet.
  w.family(
    "runtime_provider_host_requirement_unmet",
    "gauge",
    "1 for each host requirement the provider reported unmet (id, detail and remedy as it words them).",
  );
  for (const h of hosts) {
    for (const r of h.hostCheck()?.unmet ?? []) {
      w.sample("runtime_provider_host_requirement_unmet", 1, {
        provider: h.id,
        requirement: r.id,
        detail: r.detail,
        remedy: r.remedy,
      });
    }
  }

  // ---- polling ----
  w.family(
    "runtime_poll_duration_seconds",
    "histogram",
    "Duration of one device poll (ReadSignals round-trip), answered or not.",
  );
  for (const h of hosts) {
    const m = services.cache.pollMetrics(h.id);
    if (m) w.histogram("runtime_poll_duration_seconds", m.duration, { provider: h.id });
  }
  w.family(
    "runtime_poll_errors_total",
    "counter",
    "Device polls that failed (no answer in time, an error status, provider down).",
  );
  for (const h of hosts) {
    const m = services.cache.pollMetrics(h.id);
    if (m) w.sample("runtime_poll_errors_total", m.errors, { provider: h.id });
  }
  w.family(
    "runtime_signal_samples_refused_total",
    "counter",
    "Signal samples not stored as good values, by kind (type_mismatch, non_finite, undeclared_signal).",
  );
  for (const h of hosts) {
    const f = services.cache.dataFaults(h.id);
    for (const kind of ["type_mismatch", "non_finite", "undeclared_signal"] as const) {
      w.sample("runtime_signal_samples_refused_total", f[kind], { provider: h.id, kind });
    }
  }

  // ---- calls ----
  const calls = services.router.callMetrics();
  w.family(
    "runtime_calls_total",
    "counter",
    "Device calls by provider and outcome code (OK or the error code).",
  );
  for (const c of calls) {
    w.sample("runtime_calls_total", c.duration.count, { provider: c.providerId, code: c.code });
  }
  w.family(
    "runtime_call_duration_seconds",
    "histogram",
    "Duration of a device call, validation to answer (post-call poll included).",
  );
  for (const c of calls) {
    w.histogram("runtime_call_duration_seconds", c.duration, {
      provider: c.providerId,
      code: c.code,
    });
  }

  // ---- HTTP and event streams ----
  w.family(
    "runtime_http_requests_total",
    "counter",
    "HTTP requests by method, route template and status code.",
  );
  for (const r of http.requests.requests.values()) {
    w.sample("runtime_http_requests_total", r.count, {
      method: r.method,
      route: r.route,
      code: String(r.code),
    });
  }
  w.family(
    "runtime_http_request_duration_seconds",
    "histogram",
    "Time from a request's arrival to its response headers, by route template.",
  );
  for (const [route, h] of http.requests.durations) {
    w.histogram("runtime_http_request_duration_seconds", h, { route });
  }
  gauge1("runtime_http_requests_in_flight", "Requests being handled now.", http.inFlight);
  gauge1("runtime_sse_clients", "Open event streams (GET /v0/events).", http.sse.clientCount);
  w.family(
    "runtime_sse_events_dropped_total",
    "counter",
    "Events dropped from a slow event-stream client's full queue, or left queued when its stalled stream ended.",
  ).sample("runtime_sse_events_dropped_total", http.sse.droppedTotal);
  gauge1(
    "runtime_sse_queued_events",
    "Events waiting in event-stream client queues.",
    http.sse.queuedFrames,
  );
  gauge1(
    "runtime_sse_replay_events",
    "Recent events held for resuming event streams (Last-Event-ID).",
    http.sse.replayEvents,
  );
  gauge1(
    "runtime_sse_replay_bytes",
    "Estimated bytes of the events held for resuming event streams.",
    http.sse.replayBytes,
  );
  w.family(
    "runtime_sse_replay_omitted_total",
    "counter",
    "Events larger than the resume ring's byte bound, kept only as their place (a replay says dropped).",
  ).sample("runtime_sse_replay_omitted_total", http.sse.replayOmittedTotal);
  w.family("runtime_events_published_total", "counter", "Events published on the event bus.")
    .sample("runtime_events_published_total", services.bus.publishedCount);

  // ---- telemetry ----
  const t = services.telemetry.status() as Record<string, unknown>;
  const num = (key: string) => (typeof t[key] === "number" ? t[key] as number : 0);
  gauge1("runtime_telemetry_enabled", "1 when telemetry is enabled.", t.enabled === true ? 1 : 0);
  gauge1(
    "runtime_telemetry_connected",
    "1 when the last write to the database succeeded.",
    t.connected === true ? 1 : 0,
  );
  const telemetryCounters: Array<[string, string, string]> = [
    ["runtime_telemetry_rows_written_total", "total_written", "Rows the database accepted."],
    [
      "runtime_telemetry_rows_failed_total",
      "total_failed",
      "Rows given up (retry buffer or batch overflow, refused, unformattable, unsent at shutdown).",
    ],
    [
      "runtime_telemetry_write_failures_total",
      "write_failures",
      "Write requests that failed (each retry counts).",
    ],
    [
      "runtime_telemetry_events_dropped_total",
      "dropped_events",
      "Events lost to the telemetry subscriber queue's overflow.",
    ],
  ];
  for (const [name, key, help] of telemetryCounters) {
    w.family(name, "counter", help).sample(name, num(key));
  }
  gauge1(
    "runtime_telemetry_queue_depth",
    "Events waiting in the telemetry queue.",
    num("queue_depth"),
  );
  gauge1("runtime_telemetry_batch_rows", "Rows in the current batch.", num("pending_batch"));
  gauge1(
    "runtime_telemetry_retry_buffer_rows",
    "Rows waiting for a retry.",
    num("retry_buffer_depth"),
  );

  // ---- modes, e-stop, automation, alarms ----
  const mode = services.modes.current();
  w.family("runtime_mode", "gauge", "1 for the current runtime mode, 0 for the others.");
  for (const m of RUNTIME_MODES) w.sample("runtime_mode", m === mode ? 1 : 0, { mode: m });
  const estop = services.estop;
  gauge1(
    "runtime_estop_latched",
    "1 while the software e-stop is latched.",
    (estop.latched ?? estop.status().latched) ? 1 : 0,
  );
  w.family(
    "runtime_estop_triggers_total",
    "counter",
    "Software e-stop triggers (API, alarms, Sparkplug NCMD).",
  )
    .sample("runtime_estop_triggers_total", estop.triggerCount ?? 0);
  const ticks = services.automation?.tickCounts?.() ?? { ticks: 0, errors: 0 };
  w.family("runtime_bt_ticks_total", "counter", "Behavior-tree ticks.")
    .sample("runtime_bt_ticks_total", ticks.ticks);
  w.family("runtime_bt_tick_errors_total", "counter", "Behavior-tree ticks that threw.")
    .sample("runtime_bt_tick_errors_total", ticks.errors);
  const byState = new Map<string, number>(ALARM_STATES.map((s) => [s, 0]));
  for (const a of services.alarms.alarms()) byState.set(a.state, (byState.get(a.state) ?? 0) + 1);
  w.family("runtime_alarms", "gauge", "Configured alarms by state.");
  for (const [state, n] of byState) w.sample("runtime_alarms", n, { state });
  gauge1(
    "runtime_interlocks_blocking",
    "Interlocks blocking calls now.",
    services.alarms.interlocks().filter((i) => i.blocking).length,
  );
  // ---- run records ----
  const runs = services.runs.info();
  gauge1(
    "runtime_runs_available",
    "1 while the run registry is available; 0 while its start failed (the runs API answers 503).",
    runs.available ? 1 : 0,
  );
  gauge1("runtime_runs_open", "1 while a run is open.", runs.open_run_id === null ? 0 : 1);
  w.family(
    "runtime_runs_dropped_bus_events_total",
    "counter",
    "Run events not journaled (too many waiting for the disk, or their write failed).",
  ).sample("runtime_runs_dropped_bus_events_total", runs.dropped_bus_events);
  // ---- audit trail ----
  const audit = services.audit.status();
  w.family("runtime_audit_entries_total", "counter", "Audit entries recorded (closed).")
    .sample("runtime_audit_entries_total", audit.entries_total);
  w.family("runtime_audit_write_errors_total", "counter", "Audit journal writes that failed.")
    .sample("runtime_audit_write_errors_total", audit.write_errors_total);
  w.family(
    "runtime_audit_dropped_total",
    "counter",
    "Audit entries not journaled (queue full or write failed).",
  ).sample("runtime_audit_dropped_total", audit.dropped_total);
  w.family(
    "runtime_audit_gap_pending",
    "gauge",
    "Audit entries lost since the journal last wrote, not yet recorded by a gap entry.",
  ).sample("runtime_audit_gap_pending", audit.gap_pending);
  w.family(
    "runtime_audit_write_ahead_late_total",
    "counter",
    "Actuating calls sent before their audit decision reached the OS (bounded wait passed).",
  ).sample("runtime_audit_write_ahead_late_total", audit.write_ahead_late_total);
  w.family(
    "runtime_audit_unreadable_lines_total",
    "counter",
    "Audit journal lines a read could not use (torn, damaged, too long).",
  ).sample("runtime_audit_unreadable_lines_total", audit.unreadable_lines_total);
  w.family(
    "runtime_audit_for_runs_dropped_total",
    "counter",
    "Calls recorded interrupted that no start of the runs took (a checkpoint or closing record " +
      "listed them), dropped past AUDIT_MAX_FOR_RUNS.",
  ).sample("runtime_audit_for_runs_dropped_total", audit.for_runs_dropped_total);

  // ---- history (memory ring, disk tier, incidents) ----
  const history = services.history?.status();
  if (history !== undefined) {
    gauge1(
      "runtime_history_memory_bytes",
      "Bytes the full-rate history ring holds now (typed arrays).",
      history.memoryBytes,
    );
    gauge1(
      "runtime_history_memory_max_bytes",
      "history.memory_max_bytes: the ring never holds more.",
      history.memoryMaxBytes,
    );
    gauge1(
      "runtime_history_memory_reach_seconds",
      "How far back the ring reaches now, for the device it reaches least far for.",
      history.memoryReachSeconds,
    );
    gauge1(
      "runtime_history_memory_roomless_rings",
      "History rings (a device's polls, a signal's changes) that keep nothing: " +
        "history.memory_max_bytes had no room for their first entries.",
      history.memoryRoomlessRings,
    );
    w.family(
      "runtime_history_memory_values_not_kept_total",
      "counter",
      "Values the history ring did not keep since start: too large for " +
        "history.memory_max_bytes even alone (a repeat of one is not counted).",
    ).sample("runtime_history_memory_values_not_kept_total", history.memoryValuesNotKept);
    gauge1(
      "runtime_history_disk_up",
      "1 while the disk tier writes; 0 when it stopped (a failed write, e.g. a full disk) or " +
        "is off (history.disk_max_bytes 0).",
      history.disk.state === "ok" ? 1 : 0,
    );
    gauge1(
      "runtime_history_disk_rows_held",
      "Disk tier rows kept while it fails (a full disk), to be written when it works again: at " +
        "most DISK_OUTAGE_ROWS, past it the oldest are dropped.",
      history.disk.rowsHeld,
    );
    w.family("runtime_history_disk_rows_written_total", "counter", "Disk tier rows written.")
      .sample("runtime_history_disk_rows_written_total", history.disk.rowsWritten);
    w.family(
      "runtime_history_disk_rows_dropped_total",
      "counter",
      "Disk tier rows not written (the tier stopped, its queue full, or the write failed).",
    ).sample("runtime_history_disk_rows_dropped_total", history.disk.rowsDropped);
    w.family(
      "runtime_history_disk_write_errors_total",
      "counter",
      "Disk tier writes and fsyncs that failed (a failed write stops the tier for a while).",
    ).sample("runtime_history_disk_write_errors_total", history.disk.writeErrors);
    w.family(
      "runtime_history_disk_read_errors_total",
      "counter",
      "History questions the disk tier failed part-way (answered incomplete: disk_unreadable).",
    ).sample("runtime_history_disk_read_errors_total", history.disk.readErrors);
    w.family(
      "runtime_history_disk_rows_unreadable_total",
      "counter",
      "Disk tier rows found unreadable (torn, damaged), each counted once however often it is " +
        "read (at most DISK_UNREADABLE_ROWS_KEPT in the files kept at a time).",
    ).sample("runtime_history_disk_rows_unreadable_total", history.disk.rowsUnreadable);
  }
  const incidents = services.incidents?.status();
  if (incidents !== undefined) {
    gauge1("runtime_incidents", "Incident records kept.", incidents.count);
    gauge1("runtime_incidents_bytes", "Bytes of the incident records kept.", incidents.bytes);
    w.family(
      "runtime_incidents_dropped_total",
      "counter",
      "Incidents not recorded: too many waiting for their window, or the write failed.",
    ).sample("runtime_incidents_dropped_total", incidents.dropped);
  }

  // ---- Sparkplug B edge node ----
  gauge1(
    "runtime_sparkplug_enabled",
    "1 when sparkplug.enabled (the edge node's figures follow).",
    services.config.sparkplug.enabled ? 1 : 0,
  );
  const sp = services.sparkplug?.() ?? null;
  if (sp !== null) renderSparkplug(w, sp);

  // ---- configuration reload (SIGHUP) ----
  const reloads = services.configReloads();
  w.family(
    "runtime_config_reloads_total",
    "counter",
    "Configuration reloads (SIGHUP) by result: success (the file was valid and applied) or failure (invalid or unreadable: the previous configuration kept running).",
  );
  w.sample("runtime_config_reloads_total", reloads.success, { result: "success" });
  w.sample("runtime_config_reloads_total", reloads.failure, { result: "failure" });
  gauge1(
    "runtime_config_last_reload_success_timestamp_seconds",
    "Unix time of the last successful configuration reload; 0 before the first.",
    reloads.lastSuccessEpochSeconds ?? 0,
  );
  return w.text();
}

/** The Sparkplug B edge node's connection, births, store and forward and commands. */
function renderSparkplug(w: ExpositionWriter, sp: SparkplugMetricsView): void {
  const gauge = (name: string, help: string, value: number) =>
    w.family(name, "gauge", help).sample(name, value);
  const counter = (name: string, help: string, value: number) =>
    w.family(name, "counter", help).sample(name, value);
  const c = sp.counts;
  gauge(
    "runtime_sparkplug_connected",
    "1 while the MQTT broker connection is up.",
    sp.connected ? 1 : 0,
  );
  gauge(
    "runtime_sparkplug_online",
    "1 while the births of the current connection are out (data is published, not stored).",
    sp.online ? 1 : 0,
  );
  if (sp.primaryHostOnline !== null) {
    gauge(
      "runtime_sparkplug_primary_host_online",
      "1 while the primary host's last STATE says online (sparkplug.primary_host_id).",
      sp.primaryHostOnline ? 1 : 0,
    );
  }
  gauge("runtime_sparkplug_bdseq", "bdSeq of the current (or next) session.", sp.bdSeq);
  counter("runtime_sparkplug_connects_total", "Broker connections made.", c.connects);
  counter(
    "runtime_sparkplug_births_total",
    "Birth sequences published (NBIRTH and every DBIRTH: connects and rebirths).",
    c.births,
  );
  counter(
    "runtime_sparkplug_messages_published_total",
    "MQTT messages the client wrote (QoS 0) or the broker acknowledged (QoS 1).",
    c.published,
  );
  counter(
    "runtime_sparkplug_publish_failures_total",
    "Messages not published: the client failed them, or the in-flight bound was full.",
    c.publishFailures,
  );
  gauge(
    "runtime_sparkplug_store_queued_messages",
    "DDATA kept by store and forward now (sparkplug.store_forward.max_messages at most; " +
      "0 when the history ring is the store).",
    sp.stored.messages,
  );
  gauge(
    "runtime_sparkplug_store_queued_bytes",
    "Payload bytes kept by store and forward now (sparkplug.store_forward.max_bytes at most).",
    sp.stored.bytes,
  );
  gauge(
    "runtime_sparkplug_store_replay_pending",
    "1 while data not published waits in the history ring for a replay, or is being replayed " +
      "(store and forward from the on-board history; always 0 with the queue).",
    sp.replayPending ? 1 : 0,
  );
  counter(
    "runtime_sparkplug_store_kept_total",
    "DDATA kept for later: the broker unreachable, the primary host offline, or too many in flight.",
    c.stored,
  );
  counter(
    "runtime_sparkplug_store_dropped_total",
    "Kept DDATA dropped: oldest first at the store's bounds, or its device gone on reconnect " +
      "(with the history ring: devices whose outage data the ring no longer held, one per outage).",
    c.storeDropped,
  );
  counter(
    "runtime_sparkplug_store_replayed_total",
    "DDATA published after a reconnect with is_historical (kept ones, or from the history ring).",
    c.replayed,
  );
  w.family(
    "runtime_sparkplug_commands_total",
    "counter",
    "NCMD/DCMD metrics by result: accepted (carried out), refused (published back and logged), " +
      "failed (a DCMD call the provider got that then failed: it may have acted), " +
      "ignored (undecodable, retained, no command of this node, or a node control written " +
      "to do nothing).",
  );
  w.sample("runtime_sparkplug_commands_total", c.commandsAccepted, { result: "accepted" });
  w.sample("runtime_sparkplug_commands_total", c.commandsRefused, { result: "refused" });
  w.sample("runtime_sparkplug_commands_total", c.commandsFailed, { result: "failed" });
  w.sample("runtime_sparkplug_commands_total", c.commandsIgnored, { result: "ignored" });
  counter(
    "runtime_sparkplug_primary_host_offline_disconnects_total",
    "Sessions ended (after NDEATH) because the primary host went offline.",
    c.hostOfflineDisconnects,
  );
  counter(
    "runtime_sparkplug_state_ignored_total",
    "STATE messages of the primary host ignored: older than one already seen, or unreadable.",
    c.hostStatesIgnored,
  );
  counter(
    "runtime_sparkplug_internal_errors_total",
    "Errors of the edge node's own code, contained where it was entered (logged at ERROR); " +
      "the runtime goes on.",
    c.internalErrors,
  );
  counter(
    "runtime_sparkplug_too_large_dropped_total",
    "DDATA/NDATA metrics left out because one alone makes a message over " +
      "sparkplug.max_message_bytes (larger messages of several are split instead).",
    c.tooLargeDropped,
  );
  counter(
    "runtime_sparkplug_foreign_births_total",
    "NBIRTHs of this node's group and edge node id that it did not publish: another client " +
      "publishes as this edge node (the first WARNed).",
    c.foreignBirths,
  );
  w.family(
    "runtime_sparkplug_device_birth_too_large_bytes",
    "gauge",
    "Devices not born because their DBIRTH is over sparkplug.max_message_bytes: the DBIRTH's " +
      "size in bytes, as the bound counts it (one sample per such device; none when all are born).",
  );
  for (const u of sp.unbornTooLarge) {
    w.sample("runtime_sparkplug_device_birth_too_large_bytes", u.bytes, { device: u.deviceId });
  }
}
