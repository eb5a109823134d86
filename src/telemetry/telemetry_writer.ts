/**
 * The InfluxDB telemetry writer (docs/telemetry.md, "Write path" and "Status counters"): event bus
 * -> bounded queue -> batch -> HTTP write, with a bounded retry buffer, retry timer with backoff,
 * periodic health snapshots and a status view for GET /v0/telemetry/status.
 *
 * Transport: we use the client's fetch-based `Transport.request` for one POST per write rather
 * than its `WriteApi`. The WriteApi batches, retries and drops rows on its own schedule and only
 * reports failures through callbacks, which makes exact per-row accounting (written / failed /
 * dropped) impossible; with one request per batch we know the fate of every row.
 *
 * Bounds (nothing grows without limit, nothing blocks the publisher):
 * - queue: `queue_size` events and {@link MAX_QUEUE_BYTES}; the bus listener only pushes,
 *   evicting (and counting) the oldest.
 * - batch: filled from the queue up to `batch_size` rows and {@link MAX_WRITE_BYTES}; health rows are appended directly and
 *   the batch is hard-capped at `batch_size + BATCH_HEALTH_ALLOWANCE` rows (oldest dropped,
 *   counted in `dropped_overflow`).
 * - retry buffer: `max_retry_buffer_size` rows and {@link MAX_RETRY_BUFFER_BYTES}; failed rows go
 *   back to its front, and while the writer backs off, due batches are parked in it without a
 *   write attempt, so an outage loses exactly the rows that do not fit (oldest first), all
 *   counted in `total_failed`/`dropped_retry`.
 * - one write in flight at a time, aborted after `writeTimeoutMs`; a write carries at most
 *   max(batch_size, 1000) retry rows plus the current batch, and {@link MAX_WRITE_BYTES} of
 *   lines (one longer row alone).
 * - back-off: doubles per failed write; it starts over only after a write whose every row was
 *   settled (accepted, or refused and dropped), not after parts of an isolation were accepted.
 * - an answer's body: at most {@link MAX_ANSWER_BODY_BYTES} read (influxTransport), the rest
 *   cancelled unread.
 *
 * A refused write (400, 413, 422: the database refused the data itself) must not cost the rows of
 * other devices: the writer isolates the refused rows by splitting the write in halves and sending
 * each half again, recursively, in order, at most `isolationMaxRequests` (default
 * {@link MAX_ISOLATION_REQUESTS}) extra requests per refused write. Accepted parts count in
 * `total_written`; a single refused row is dropped and counted in `dropped_rejected` (and
 * `total_failed`); a part still refused when the budget is spent is dropped and counted the same
 * way. Any other failure (network, timeout, 401/403/404, 429, 5xx) is retried, during isolation
 * too: the rows not yet settled go back to the front of the retry buffer. A failure whose answer
 * carries `Retry-After` (a 429 rate limit, a 503) is not retried before that delay is over (at most
 * {@link MAX_RETRY_AFTER_MS}), whatever the back-off would allow. A refusal that says the
 * database stored the other rows (InfluxDB's `partial write: ... dropped=N`, see
 * partialWriteDropped) is not isolated: N rows count in `dropped_rejected`, the rest as written.
 *
 * Rows are valid line protocol by construction (line_protocol.ts); a row that cannot be made into
 * a valid line is dropped and counted in `dropped_unformattable`, never sent.
 */
import type { InfluxDB } from "@influxdata/influxdb-client";
import {
  type Clock,
  errorMessage,
  type GridInterval,
  gridInterval,
  httpUrlProblem,
  type Logger,
  neverThrowing,
  type ProviderHealthView,
  type Quality,
  quoteUrl,
  RuntimeError,
  type TimerId,
  urlWithoutPassword,
  utf8Length,
} from "../common/mod.ts";
import {
  type Config,
  type InfluxConfig,
  type MeasurementNaming,
  MIN_FLUSH_INTERVAL_MS,
} from "../config/mod.ts";
import type { EventBus, RuntimeEvent } from "../events/mod.ts";
import { type DeviceState, outcomeArrivedMs, type StateCache } from "../state/mod.ts";
import { formatRow, type Row } from "./line_protocol.ts";
import {
  type BuiltRow,
  healthRows,
  MEASUREMENT_NAMES,
  type MeasurementNames,
  rowForEvent,
  type RunEventRecord,
  runEventRow,
  signalRow,
} from "./rows.ts";
import { LineBatch, lineBytes } from "./_line_batch.ts";
import { RingBuffer } from "./_ring_buffer.ts";
import { PointSequencer } from "./_point_sequencer.ts";

/**
 * Target and buffer sizes (config `telemetry.influxdb`) with the token already resolved: config
 * value, else INFLUXDB_TOKEN. An empty token means the writer does not start.
 */
export type InfluxSettings = InfluxConfig;

/** Timing knobs and the isolation bound, with production defaults; tests shorten them. */
export interface TelemetryTuning {
  /** Abort a write after this long ({@link WRITE_TIMEOUT_MS}). */
  readonly writeTimeoutMs: number;
  /** First retry delay after a failed write; doubles per failure up to `retryMaxMs`. */
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  /** At most one error log line per this period (10 s, as anolis). */
  readonly errorLogIntervalMs: number;
  /** Housekeeping tick (100 ms: the flush loop wakes at least this often, as anolis's). */
  readonly tickMs: number;
  /** Extra write requests spent isolating the refused rows of one refused write. */
  readonly isolationMaxRequests: number;
}

/**
 * Default bound on the extra requests that isolate the refused rows of one refused write. Halving
 * costs up to 2|log2(n) requests per refused row (fewer when they share halves): 64 isolates any
 * 3 refused rows in a write of 2,000 rows (the defaults write at most 1,000 retry rows + a batch
 * of 100), 2 in 10,000, 5 in 100.
 */
export const MAX_ISOLATION_REQUESTS = 64;

/**
 * How long one write request may wait for its answer before it is aborted (and its rows retried):
 * 5 s, as anolis's connect/read/write timeouts. A stop or a reload cuts it to what its budget has
 * left.
 */
export const WRITE_TIMEOUT_MS = 5000;

/**
 * Most the event queue holds, in bytes (beside `queue_size` events): a flood of large values (a
 * 64 KiB string signal changing often) while a write is slow or the database is down evicts the
 * oldest events past it, counted in `dropped_events`. An event counts
 * {@link QUEUE_EVENT_OVERHEAD_BYTES} plus the UTF-8 bytes of its strings, as they are written (a
 * string of 3-byte characters counts 3 per character); an ordinary event counts about 300, so the
 * default 10,000 ordinary events take about 3 MB and never meet it.
 */
export const MAX_QUEUE_BYTES = 16 * 1024 * 1024;

/** What one queued event counts towards {@link MAX_QUEUE_BYTES} besides its strings. */
export const QUEUE_EVENT_OVERHEAD_BYTES = 256;

/**
 * Most the retry buffer holds, in bytes (beside `max_retry_buffer_size` rows): the UTF-8 bytes of
 * its lines, as they are sent (a row of 3-byte characters counts 3 per character). Past it the
 * oldest rows are evicted, counted in `dropped_retry`; the default 1,000 ordinary rows (about 200
 * bytes each) never meet it.
 */
export const MAX_RETRY_BUFFER_BYTES = 16 * 1024 * 1024;

/** Nesting depth to which queueEventBytes counts an event's strings (events are shallower). */
const EVENT_BYTES_DEPTH = 6;

/** The UTF-8 bytes of the strings in `v`, to {@link EVENT_BYTES_DEPTH} levels deep. */
function stringBytes(v: unknown, depth: number): number {
  // UTF-8 bytes, not UTF-16 code units: an ASCII string (the usual one) costs one regex test.
  if (typeof v === "string") return utf8Length(v);
  if (v === null || typeof v !== "object" || depth <= 0) return 0;
  let n = 0;
  // No array of the values made per event (an object's own keys walked in place).
  if (Array.isArray(v)) { for (const x of v) n += stringBytes(x, depth - 1); }
  else for (const k in v) n += stringBytes((v as Record<string, unknown>)[k], depth - 1);
  return n;
}

/** What a queued event counts towards {@link MAX_QUEUE_BYTES}. */
function queueEventBytes(item: QueueItem): number {
  return QUEUE_EVENT_OVERHEAD_BYTES + stringBytes(item, EVENT_BYTES_DEPTH);
}

/** A new event queue of `queueSize` events and {@link MAX_QUEUE_BYTES}. */
function newQueue(queueSize: number): RingBuffer<QueueItem> {
  return new RingBuffer<QueueItem>(Math.max(1, queueSize), {
    maxBytes: MAX_QUEUE_BYTES,
    sizeOf: queueEventBytes,
  });
}

/** A new retry buffer of `maxRows` rows and {@link MAX_RETRY_BUFFER_BYTES}. */
function newRetryBuffer(maxRows: number): RingBuffer<string> {
  return new RingBuffer<string>(Math.max(0, maxRows), {
    maxBytes: MAX_RETRY_BUFFER_BYTES,
    // UTF-8 bytes, not UTF-16 code units: an ASCII line (the usual one) costs one regex test.
    sizeOf: utf8Length,
  });
}

/** Production defaults of {@link TelemetryTuning}. */
export const DEFAULT_TELEMETRY_TUNING: TelemetryTuning = {
  writeTimeoutMs: WRITE_TIMEOUT_MS,
  retryInitialMs: 1000,
  retryMaxMs: 30000,
  errorLogIntervalMs: 10000,
  tickMs: 100,
  isolationMaxRequests: MAX_ISOLATION_REQUESTS,
};

/**
 * Longest wait a database's `Retry-After` imposes before the next write: a longer one (or a date
 * far ahead) is cut to this, so a wrong header cannot stall telemetry for hours. Rows wait in the
 * retry buffer meanwhile (bounded by max_retry_buffer_size and MAX_RETRY_BUFFER_BYTES).
 */
export const MAX_RETRY_AFTER_MS = 300_000;

/**
 * The delay in ms a `Retry-After` header value asks for (delta-seconds or an HTTP-date, RFC 9110
 * 10.2.3), cut to {@link MAX_RETRY_AFTER_MS}; 0 when absent or unreadable. An HTTP-date is a
 * time on the database's clock, as is the answer's `Date` (`dateHeader`, RFC 9110 6.6.1): the
 * delay is the one minus the other when both read as dates (as RFC 9111 4.2.1 measures Expires
 * against Date), so a wall clock far off the database's (a Raspberry Pi without a real-time
 * clock, before NTP) does not change it; else the date minus `nowMs`, the runtime's wall clock.
 */
export function retryAfterMs(header: unknown, nowMs: number, dateHeader?: unknown): number {
  const text = firstHeader(header);
  if (text === null) return 0;
  const value = text.trim();
  if (/^[0-9]+$/.test(value)) return Math.min(Number(value) * 1000, MAX_RETRY_AFTER_MS);
  const sent = Date.parse(firstHeader(dateHeader) ?? "");
  const ms = Date.parse(value) - (Number.isFinite(sent) ? sent : nowMs);
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS) : 0;
}

/** A header's value as the client keeps it (a header repeated: an array, the first); else null. */
function firstHeader(header: unknown): string | null {
  const text = Array.isArray(header) ? header[0] : header;
  return typeof text === "string" ? text : null;
}

/**
 * What a refusal of the writer's credentials (401, 403) or target (404: no such org or bucket, or
 * no write endpoint at the URL) asks the operator to check. Such a write is retried like any
 * other (at most every retryMaxMs): its rows wait in the retry buffer for a reload that fixes the
 * setting, which keeps them when the database stays the same (see retarget).
 */
const SETTINGS_TO_CHECK: Readonly<Record<number, string>> = {
  401: "; check telemetry.influxdb.token (or INFLUXDB_TOKEN)",
  403:
    "; check telemetry.influxdb.token (or INFLUXDB_TOKEN) and its write permission on the bucket",
  404: "; check telemetry.influxdb.url, .org and .bucket",
};

/** Extra rows the batch may hold beyond batch_size (health snapshots bypass the queue). */
export const BATCH_HEALTH_ALLOWANCE = 10000;
/** Lower bound of the number of retry-buffer rows one write may carry. */
const MIN_ROWS_PER_WRITE = 1000;
/**
 * Most line protocol one write's body carries, in UTF-8 bytes (beside its row bounds): a batch of
 * large string rows (up to MAX_STRING_FIELD_BYTES each) is written in several requests of at most
 * 1 MiB, not as one huge body. A single row longer than that is written alone.
 */
export const MAX_WRITE_BYTES = 1024 * 1024;

/**
 * How many of `lines`, from the front, fit in `bytes` more bytes of body (at least one when
 * `atLeastOne`, however long), and the bytes they take.
 */
function fitting(
  lines: readonly string[],
  bytes: number,
  atLeastOne: boolean,
): { count: number; bytes: number } {
  let count = 0;
  let used = 0;
  for (const line of lines) {
    const n = lineBytes(line);
    if (used + n > bytes && !(atLeastOne && count === 0)) break;
    used += n;
    count++;
  }
  return { count, bytes: used };
}
/**
 * Value-less signals whose last written quality is remembered (see `polls`); on overflow all are
 * forgotten, which costs one more row per value-less signal.
 */
export const MAX_VALUELESS_SIGNALS = 100_000;

/** Everything the writer needs; build it from the config with {@link telemetryOptionsFromConfig}. */
export interface TelemetryWriterOptions {
  readonly enabled: boolean;
  /** `runtime.name`; "" is written as "default". */
  readonly runtimeName: string;
  /** `telemetry.measurement_names`; default `runtime`. */
  readonly measurementNames?: MeasurementNaming;
  readonly influx: InfluxSettings;
  /** 0 disables health snapshots. */
  readonly healthIntervalMs: number;
  /** A live health snapshot (the runtime does a GetHealth round-trip per provider). */
  readonly healthSnapshot?: (() => Promise<ProviderHealthView[]>) | undefined;
  /**
   * Every poll of every device (the state cache). A signal without a value has no `state_update`
   * event: from its polls the writer writes a signal row with only its quality, at each quality
   * it goes through.
   */
  readonly polls?: Pick<StateCache, "onDevicePolled"> | undefined;
  /** The time, and every timer of the writer (flush tick, health, write timeout). */
  readonly clock: Clock;
  /** The writer's lines; taken wrapped in neverThrowing (a line it fails to write is lost). */
  readonly logger: Logger;
  readonly tuning?: Partial<TelemetryTuning> | undefined;
  /**
   * Where writes go; default the InfluxDB client's HTTP transport for `influx.url` (loaded by
   * loadInfluxClient()). Tests pass their own to drive the retry and isolation logic without a
   * database.
   */
  readonly transport?: TelemetryTransport;
}

/** Body of GET /v0/telemetry/status without `status` (docs/telemetry.md, "Status counters"). */
export interface TelemetryStatus {
  enabled: boolean;
  running: boolean;
  /** The last write attempt succeeded (false until the first successful write). */
  connected: boolean;
  /** Rows accepted by the database since start. */
  total_written: number;
  /**
   * Rows given up: retry-buffer overflow, batch overflow, refused by the database (4xx), not
   * formattable, or unsent at shutdown.
   */
  total_failed: number;
  /** Rows in the current batch (excludes the retry buffer). */
  pending_batch: number;
  /**
   * The UTF-8 bytes the batch's rows take in a write's body (a newline each): the batch is due at
   * {@link MAX_WRITE_BYTES}.
   */
  pending_batch_bytes: number;
  /** Events waiting in the subscriber queue. */
  queue_depth: number;
  /**
   * Events lost to subscriber-queue overflow, or queued for a reload's new target that did not
   * start.
   */
  dropped_events: number;
  /** Omitted when telemetry is disabled; never carries the token (nor a password in the URL). */
  backend?: { url: string; org: string; bucket: string };
  /** Rows waiting for a retry. */
  retry_buffer_depth: number;
  /** Rows evicted from the full retry buffer (a subset of total_failed). */
  dropped_retry: number;
  /** Write requests that failed (each retry counts); rising while connected=false = retrying. */
  write_failures: number;
  /**
   * Rows the database refused (HTTP 400/413/422) and that were dropped after isolating them from
   * the rest of their write (a subset of total_failed).
   */
  dropped_rejected: number;
  /**
   * Rows that could not be made into a valid line (no writable field, timestamp out of range, the
   * row builder failed) and were never sent (a subset of total_failed).
   */
  dropped_unformattable: number;
  /**
   * Rows dropped, oldest first, from a batch past its hard cap (batch_size +
   * BATCH_HEALTH_ALLOWANCE: health snapshots appended while writes cannot keep up; a subset of
   * total_failed).
   */
  dropped_overflow: number;
  /**
   * Signal rows written without their value field because line protocol cannot carry the value
   * (a NaN/+/-Infinity double, an integer outside int64/uint64); the row keeps its quality. A
   * signal without a value (null) is not counted here.
   */
  omitted_values: number;
  /**
   * Run-event rows written with `payload_error` instead of their payload because the payload
   * could not be serialised (each one is also logged).
   */
  run_payload_errors: number;
  last_error: string | null;
  last_error_at_epoch_ms: number | null;
  /** Wall time of the last successful write. */
  last_flush_at_epoch_ms: number | null;
  /** Wall time of the last health snapshot written into the batch. */
  last_health_snapshot_at_epoch_ms: number | null;
}

/** Builds writer options from the config; `envToken` is INFLUXDB_TOKEN as read by the host. */
export function telemetryOptionsFromConfig(
  config: Config,
  deps: {
    envToken?: string;
    clock: Clock;
    logger: Logger;
    healthSnapshot?: (() => Promise<ProviderHealthView[]>) | undefined;
    polls?: Pick<StateCache, "onDevicePolled"> | undefined;
    tuning?: Partial<TelemetryTuning> | undefined;
  },
): TelemetryWriterOptions {
  const t = config.telemetry;
  return {
    enabled: t.enabled,
    runtimeName: config.runtime.name,
    measurementNames: t.measurementNames,
    influx: { ...t.influxdb, token: t.influxdb.token || deps.envToken || "" },
    healthIntervalMs: t.healthIntervalMs,
    healthSnapshot: deps.healthSnapshot,
    polls: deps.polls,
    clock: deps.clock,
    logger: deps.logger,
    tuning: deps.tuning,
  };
}

/** The database a writer's rows go to (url, org, bucket), as PointSequencer.useDatabase keys it. */
function databaseKey(o: TelemetryWriterOptions): string {
  return JSON.stringify([o.influx.url, o.influx.org, o.influx.bucket]);
}

/**
 * Whether two settings write to the same database (url, org, bucket and transport). The token is
 * not part of it: a new token (a rotated one, the old revoked) writes the same rows there.
 */
function sameTarget(a: TelemetryWriterOptions, b: TelemetryWriterOptions): boolean {
  return a.influx.url === b.influx.url && a.influx.org === b.influx.org &&
    a.influx.bucket === b.influx.bucket && a.transport === b.transport;
}

/** The InfluxDB client's constructor, once loadInfluxClient() has run. */
let influxClient: typeof InfluxDB | null = null;

/**
 * Most of an answer's body the writer reads, in bytes: a database or a proxy answering a write with
 * a huge body (an HTML error page, a runaway message) costs this much at most, the rest is
 * cancelled unread. 64 KiB holds any InfluxDB error message whole (`partial write: ... dropped=N`
 * included); the error line shows its first 200 characters.
 */
export const MAX_ANSWER_BODY_BYTES = 64 * 1024;

/**
 * Why `url` cannot be the writer's target, or null: httpUrlProblem (the configuration check's
 * rule and words), with the setting named. Checked where a url enters the writer (start, retarget,
 * influxTransport), not only by the config validation: a direct caller gets this one refusal
 * instead of a failed write per flush.
 */
function influxUrlProblem(url: string): string | null {
  const problem = httpUrlProblem(url);
  return problem === null ? null : `telemetry.influxdb.url: ${problem}`;
}

/**
 * The InfluxDB client's HTTP transport for `url` and `token` (loadInfluxClient() first), reading
 * at most {@link MAX_ANSWER_BODY_BYTES} of any answer's body: the client itself reads an error
 * answer's body whole (its `throwOnErrorResponse` awaits `text()`), and a successful write's too.
 * The bound sits where the client fetches (its transport's `fetch`, which the client calls for
 * every request and whose answer it then reads); a client without that method is refused. Each
 * error names what is wrong: a url that is not http(s) (INVALID_ARGUMENT), the url the client
 * refuses, or the client pinned in deno.json.
 */
export function influxTransport(url: string, token: string): TelemetryTransport {
  if (influxClient === null) {
    throw new RuntimeError("FAILED_PRECONDITION", "the InfluxDB client is not loaded");
  }
  const problem = influxUrlProblem(url);
  if (problem !== null) throw new RuntimeError("INVALID_ARGUMENT", problem);
  let client: InfluxDB;
  try {
    client = new influxClient({ url, token });
  } catch (err) {
    throw new RuntimeError(
      "INVALID_ARGUMENT",
      `telemetry.influxdb.url: ${quoteUrl(url)}: ${errorMessage(err)}`,
      { cause: err },
    );
  }
  const transport = client.transport as unknown as
    & TelemetryTransport
    & { fetch?: (...args: unknown[]) => Promise<Response> };
  const fetchAnswer = transport.fetch;
  if (typeof fetchAnswer !== "function") {
    throw new RuntimeError(
      "INTERNAL",
      "the pinned InfluxDB client (@influxdata/influxdb-client in deno.json) lacks its " +
        "transport's fetch method: its answers cannot be bounded (MAX_ANSWER_BODY_BYTES)",
    );
  }
  transport.fetch = async (...args: unknown[]) =>
    boundedBody(await fetchAnswer.apply(transport, args), MAX_ANSWER_BODY_BYTES);
  return transport;
}

/**
 * The transport a writer with options `o` writes through: the injected one, else the client's for
 * `influx.url` and `influx.token` (influxTransport; it throws naming what is wrong). Building it
 * sends nothing: retarget builds one to check a new target before it switches to it.
 */
function transportFor(o: TelemetryWriterOptions): TelemetryTransport {
  return o.transport ?? influxTransport(o.influx.url, o.influx.token);
}

/** `answer` with a body that ends after `maxBytes` bytes (the rest of the original is cancelled). */
function boundedBody(answer: Response, maxBytes: number): Response {
  const body = answer.body;
  if (body === null) return answer;
  const reader = body.getReader();
  let left = maxBytes;
  const bounded = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = left > 0 ? await reader.read() : { value: undefined, done: true };
      if (value !== undefined) {
        const chunk = value.byteLength > left ? value.subarray(0, left) : value;
        left -= chunk.byteLength;
        controller.enqueue(chunk);
      }
      if (done || left <= 0) {
        controller.close();
        if (!done) await reader.cancel(`answer body cut at ${maxBytes} bytes`).catch(() => {});
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(bounded, {
    status: answer.status,
    statusText: answer.statusText,
    headers: answer.headers,
  });
}

/**
 * Loads the InfluxDB client. The composition root calls it before start() only when telemetry is
 * enabled, so a runtime without telemetry never loads the client (~2 MiB of RSS, bench/README.md
 * "Footprint"). Idempotent.
 */
export async function loadInfluxClient(): Promise<void> {
  influxClient ??= (await import("@influxdata/influxdb-client")).InfluxDB;
}

/**
 * A bus event, a recorded run event, or the quality of a polled signal without a value: each is
 * formatted when batched, with the names (measurement names, runtime name) then in effect.
 */
type QueueItem =
  | RuntimeEvent
  | { kind: "recorded_run_event"; event: RunEventRecord; experimentLabel: string | null }
  | {
    kind: "valueless_signal";
    provider_id: string;
    device_id: string;
    signal_id: string;
    quality: Quality;
    timestamp_ms: number;
  };

type WriteOutcome = "ok" | "rejected" | "failed";

/**
 * When the requests of a write must have ended: by `mono` (monotonic ms), the end of the budget
 * `budget` names (`budgetMs` long: a stop's or a reload's flush), else only by the write timeout.
 */
interface WriteDeadline {
  readonly mono: number;
  readonly budget: string;
  readonly budgetMs: number;
}

/** The writes of the flush loop: only the write timeout ends them. */
const NO_DEADLINE: WriteDeadline = { mono: Infinity, budget: "", budgetMs: Infinity };

/** The error line of a write cut by the end of a stop's or a reload's budget. */
function budgetEnded(deadline: WriteDeadline): string {
  return `write aborted: no answer within ${deadline.budget} (${deadline.budgetMs} ms)`;
}

/**
 * What one POST came to; `refused` is the database refusing the data (400/413/422). `dropped`: the
 * database said it stored the rest (InfluxDB's `partial write: ... dropped=N`), else null.
 */
type PostResult =
  | { kind: "ok" }
  | { kind: "refused"; status: number; detail: string; dropped: number | null }
  | { kind: "failed" };

/**
 * How many rows a refusal says the database dropped when it stored the others: InfluxDB 1.x
 * (400) and 2.x (422) answer a write with lines it could not take (a field type conflict, points
 * beyond the retention policy) with `partial write: <why> dropped=N` and store the other lines.
 * Null for any other refusal (the write may have been refused whole).
 */
export function partialWriteDropped(body: string): number | null {
  const m = /partial write\b[\s\S]*?\bdropped=(\d+)/.exec(body);
  return m === null ? null : Number(m[1]);
}

/** A contiguous part of a refused write during isolation; `refused`: known to hold refused rows. */
interface Segment {
  rows: string[];
  refused: boolean;
}

/**
 * One HTTP request to the database (the InfluxDB client's `Transport.request`): resolves when it
 * was accepted; rejects with `{ statusCode, body, headers? }` for an HTTP error (the client's
 * HttpError; `headers` lower-case, `retry-after` and `date` read from it), or any other error for
 * a network failure or an abort.
 */
export interface TelemetryTransport {
  request(path: string, body: string, options: {
    method: string;
    headers?: Record<string, string>;
    signal?: AbortSignal;
  }): Promise<unknown>;
}

/** Streams runtime events and health snapshots to InfluxDB; never throws, never blocks. */
export class TelemetryWriter {
  #opts: TelemetryWriterOptions;
  #tuning: TelemetryTuning;
  #runtimeName: string;
  #names: MeasurementNames;
  #batchSize: number;
  #flushIntervalMs: number;
  /**
   * The options' logger, its lines never throwing: they are said from the flush loop's timers and
   * a write's catch, before the rows are kept for retry, where a logger that throws lost the rows
   * uncounted and rejected the loop's write (an unhandled rejection ends the runtime).
   */
  #log: Logger;
  #queue: RingBuffer<QueueItem>;
  #retry: RingBuffer<string>;
  #batch = new LineBatch();
  /**
   * Tags same-millisecond rows of one series apart (event, run-event and health rows), per
   * database (databaseKey).
   */
  #points = new PointSequencer();
  /** The retarget in progress (stop() waits for it). */
  #retargeting: Promise<void> | null = null;
  /** Set by stop(): final, no retarget or start runs the writer again. */
  #stopped = false;
  /** The bus start() subscribed to (retarget subscribes again). */
  #bus: EventBus | null = null;

  #transport: TelemetryTransport | null = null;
  #writePath = "";
  #running = false;
  #unsubscribe: (() => void) | null = null;
  #unsubscribePolls: (() => void) | null = null;
  /** Per device ("provider\0device"): the quality last written of each signal without a value. */
  #valueless = new Map<string, Map<string, Quality>>();
  #valuelessCount = 0;
  #tickTimer: GridInterval | undefined;
  #kickTimer: TimerId | undefined;
  #healthTimer: GridInterval | undefined;
  /**
   * The health timer's grid as a retarget halted it (its next due instant and its interval): the
   * retarget's restart goes on from it, so a reload neither delays nor skips a snapshot.
   */
  #healthGrid: { readonly dueMs: number; readonly periodMs: number } | null = null;
  #healthBusy = false;

  #inFlight: Promise<void> | null = null;
  #abort: AbortController | null = null;
  #lastFlushAttemptMono = 0;
  #backoffMs = 0;
  #backoffUntilMono = 0;
  /** The `Retry-After` (ms) of the last failed request's answer; 0 when it had none. */
  #retryAfterMs = 0;

  #connected = false;
  #totalWritten = 0;
  #totalFailed = 0;
  #droppedEvents = 0;
  /** Events evicted from the full queue since it last drained (its stretch is logged once). */
  #queueDrops = 0;
  #droppedRetry = 0;
  /**
   * Rows evicted from the full retry buffer since the last accepted write, or since a flush
   * (reload, stop) emptied it (logged once: its first eviction, then its count).
   */
  #retryDrops = 0;
  #droppedRejected = 0;
  #droppedUnformattable = 0;
  /** Rows dropped from the batch past its hard cap (#appendRows). */
  #droppedOverflow = 0;
  #omittedValues = 0;
  #runPayloadErrors = 0;
  /** Set when stop() aborts the write in flight: an isolation in progress sends nothing more. */
  #abortWrites = false;
  /**
   * Set when a stop's budget ended during a reload's flush (stop() cut it short): that flush sends
   * nothing more, whatever is left of the reload's own budget.
   */
  #stopCut = false;
  #writeFailures = 0;
  #lastError: string | null = null;
  #lastErrorAt: number | null = null;
  #lastFlushAt: number | null = null;
  #lastHealthAt: number | null = null;
  /** The once-per-errorLogIntervalMs limit of each kind of error line (see #reportError). */
  #errorLines: Record<ErrorKind, ErrorLineLimit> = {
    failure: { lastLogMono: -Infinity, suppressed: 0, held: null },
    loss: { lastLogMono: -Infinity, suppressed: 0, held: null },
  };

  constructor(opts: TelemetryWriterOptions) {
    this.#opts = opts;
    this.#points.useDatabase(databaseKey(opts));
    this.#tuning = { ...DEFAULT_TELEMETRY_TUNING, ...opts.tuning };
    this.#runtimeName = opts.runtimeName || "default";
    this.#names = MEASUREMENT_NAMES[opts.measurementNames ?? "runtime"];
    this.#batchSize = Math.max(1, Math.floor(opts.influx.batchSize));
    this.#flushIntervalMs = Math.max(
      MIN_FLUSH_INTERVAL_MS,
      Math.floor(opts.influx.flushIntervalMs),
    );
    this.#log = neverThrowing(opts.logger);
    this.#queue = newQueue(opts.influx.queueSize);
    this.#retry = newRetryBuffer(opts.influx.maxRetryBufferSize);
  }

  /**
   * Points the writer at new settings (the `telemetry` section of a configuration reload), in
   * place: the new target is checked first -- a target that cannot start (no token, the client not
   * loaded, a URL that does not parse, is not http(s) or that the client refuses: its transport is
   * built as start() builds it) throws FAILED_PRECONDITION naming the setting and the writer goes
   * on as it was, so the section keeps its old value and the next reload tries again. Otherwise
   * what the old target holds (the queue, the batch, the retry buffer) is flushed to it within
   * `budgetMs`, and writing starts on the new one; when the database (url, org, bucket) is the
   * same, whatever the token, nothing is flushed: the rows keep their place (a smaller
   * `max_retry_buffer_size` evicts the oldest, counted), the back-off goes on and the batch is
   * written when it was due (the flush interval counted from the last attempt). The writer stays
   * subscribed meanwhile: what is published (and the run events recorded) during the flush waits in
   * a new queue, of the new `queue_size`, for the new target. The health snapshots keep their
   * schedule (#firstHealthDueMs); the PointSequencer tells the databases apart.
   */
  async retarget(next: TelemetryWriterOptions, budgetMs: number): Promise<void> {
    // A reload's section that reaches the writer after the runtime stopped it (its first await,
    // loading the client, outlasted the whole stop): nothing may run once stop() was called.
    if (this.#stopped) {
      throw new RuntimeError("UNAVAILABLE", "the telemetry writer has stopped: not retargeted");
    }
    if (next.enabled) {
      const problem = !next.influx.token
        ? "telemetry.influxdb.token is empty and INFLUXDB_TOKEN is not set"
        : next.transport === undefined && influxClient === null
        ? "the InfluxDB client is not loaded"
        : influxUrlProblem(next.influx.url);
      if (problem !== null) {
        throw new RuntimeError("FAILED_PRECONDITION", `${problem}: telemetry left as it was`);
      }
      // What start() will build on it (no request is sent): a url the client refuses is refused
      // here, not after the old database was flushed, with the new target's rows then lost.
      try {
        transportFor(next);
      } catch (err) {
        throw new RuntimeError(
          "FAILED_PRECONDITION",
          `${errorMessage(err)}: telemetry left as it was`,
          { cause: err },
        );
      }
    }
    const done = this.#retargetNow(next, budgetMs);
    this.#retargeting = done;
    try {
      await done;
    } finally {
      this.#retargeting = null;
    }
  }

  async #retargetNow(next: TelemetryWriterOptions, budgetMs: number): Promise<void> {
    const bus = this.#bus;
    const queue = newQueue(next.influx.queueSize);
    // The same database (a reload of batch sizes, intervals, names): the rows waiting keep their
    // place and the back-off goes on; nothing is flushed, so a database that is down costs none.
    const same = this.#running && next.enabled && sameTarget(this.#opts, next);
    let kept: string[] = [];
    if (this.#running) {
      this.#halt();
      // What was published before the reload goes to the old target; from now on, to the new.
      this.#fillBatch(Infinity);
      this.#queue = queue;
      if (!next.enabled) this.#unsubscribeBus();
      if (same) {
        if (this.#inFlight) {
          const deadline = this.#deadline(budgetMs, "the reload's budget");
          await this.#awaitInFlight(deadline, `${budgetEnded(deadline)}; its rows will be retried`);
        }
        kept = this.#retry.peek(this.#retry.length);
      } else {
        await this.#flushOut(this.#deadline(budgetMs, "the reload's budget"), "reload");
      }
    }
    const batch = same ? this.#batch : new LineBatch();
    this.#opts = next;
    this.#tuning = { ...DEFAULT_TELEMETRY_TUNING, ...next.tuning };
    this.#runtimeName = next.runtimeName || "default";
    this.#names = MEASUREMENT_NAMES[next.measurementNames ?? "runtime"];
    this.#batchSize = Math.max(1, Math.floor(next.influx.batchSize));
    this.#flushIntervalMs = Math.max(
      MIN_FLUSH_INTERVAL_MS,
      Math.floor(next.influx.flushIntervalMs),
    );
    this.#log = neverThrowing(next.logger);
    // A new database holds none of the old one's points: its rows start untagged. The same one
    // (a new token, back after telemetry was off or after another database) keeps them apart
    // from what it holds.
    if (next.enabled) this.#points.useDatabase(databaseKey(next));
    this.#queue = queue;
    this.#retry = newRetryBuffer(next.influx.maxRetryBufferSize);
    this.#park(kept); // a smaller max_retry_buffer_size evicts (and counts) the oldest
    this.#batch = batch;
    this.#transport = null;
    if (!same) {
      this.#forgetValueless(); // a new database gets their rows too
      this.#backoffMs = 0;
      this.#backoffUntilMono = 0;
      this.#connected = false;
    }
    const lastFlushAttemptMono = this.#lastFlushAttemptMono;
    if (bus !== null) this.start(bus);
    if (bus !== null && next.enabled && !this.#running) this.#dropUnstarted();
    // The same database: the rows kept are written when they were due, not a flush interval
    // after the reload (reloads more frequent than flush_interval_ms held a partial batch back).
    if (same) this.#lastFlushAttemptMono = lastFlushAttemptMono;
    this.#healthGrid = null; // only this restart goes on from the halted health timer
    if (!this.#running) this.#unsubscribeBus(); // disabled, or the new target did not start
  }

  /**
   * After a reload whose new target did not start (start() logged why: the client refused it):
   * what waits for it -- the events published during the reload, the rows kept for the same
   * database -- would be neither written nor counted. The events count in `dropped_events`, the
   * rows in `total_failed`, said in one line.
   */
  #dropUnstarted(): void {
    const events = this.#queue.clear();
    const rows = this.#retry.clear() + this.#batch.clear();
    if (events === 0 && rows === 0) return;
    this.#droppedEvents += events;
    this.#totalFailed += rows;
    this.#log.warn(
      `reload: the telemetry writer did not start for ${this.#databaseName()}: ${events} ` +
        `queued events dropped (dropped_events)` +
        (rows > 0 ? `, ${rows} rows lost (total_failed)` : ""),
    );
  }

  /** True while the writer accepts events (enabled, token present, started, not stopped). */
  get running(): boolean {
    return this.#running;
  }

  /**
   * Subscribes to the bus and starts the flush loop and health timer. Does nothing when disabled
   * or once stop() was called; with an empty token or a url that is not http(s) it stays stopped
   * and reports why in `last_error` and one ERROR line (WARN for the token).
   */
  start(bus: EventBus): void {
    this.#bus = bus;
    if (!this.#opts.enabled || this.#running || this.#stopped) return;
    const { url, org, bucket, token } = this.#opts.influx;
    if (!token) {
      this.#setError(
        "telemetry.influxdb.token is empty and INFLUXDB_TOKEN is not set: telemetry writer not started",
      );
      this.#log.warn(this.#lastError ?? "");
      return;
    }
    if (this.#opts.transport === undefined && influxClient === null) {
      this.#setError(
        "the InfluxDB client is not loaded (loadInfluxClient() before start()): " +
          "telemetry writer not started",
      );
      this.#log.error(this.#lastError ?? "");
      return;
    }
    // Whatever the transport: the url is the target the writer reports and keys its rows by.
    const urlProblem = influxUrlProblem(url);
    if (urlProblem !== null) {
      this.#setError(`${urlProblem}: telemetry writer not started`);
      this.#log.error(this.#lastError ?? "");
      return;
    }
    try {
      this.#transport = transportFor(this.#opts);
    } catch (err) {
      // The error names what is wrong (the url, or the client pinned in deno.json).
      this.#setError(`${errorMessage(err)}: telemetry writer not started`);
      this.#log.error(this.#lastError ?? "");
      return;
    }
    // anolis inserts org/bucket unencoded; encoding is identical for ordinary names and keeps
    // names with `&` or spaces from corrupting the query string.
    this.#writePath = `/api/v2/write?org=${encodeURIComponent(org)}&bucket=${
      encodeURIComponent(bucket)
    }&precision=ms`;
    this.#running = true;
    this.#lastFlushAttemptMono = this.#opts.clock.monoMs();
    // Still subscribed after a retarget (what came meanwhile is in the queue).
    this.#unsubscribe ??= bus.subscribe((published) => this.#onEvent(published.event));
    this.#unsubscribePolls ??= this.#opts.polls?.onDevicePolled(this.#onPolled) ?? null;
    const tickMs = Math.max(1, Math.min(this.#tuning.tickMs, this.#flushIntervalMs));
    const clock = this.#opts.clock;
    this.#tickTimer = gridInterval(() => this.#tick(), tickMs, clock);
    if (this.#opts.healthIntervalMs > 0 && this.#opts.healthSnapshot) {
      this.#healthTimer = gridInterval(
        () => void this.#takeHealthSnapshot(),
        this.#opts.healthIntervalMs,
        clock,
        this.#firstHealthDueMs(this.#opts.healthIntervalMs),
      );
    }
    this.#log.info(`writing to ${urlWithoutPassword(url)} org=${org} bucket=${bucket}`);
  }

  /**
   * Queues a run open/close/marker row (connected to the run registry's telemetry sink, which
   * hands over a copy: the event is kept as given until batched). Like the other rows it is
   * formatted when batched, so a reload that changes the runtime name or the measurement names
   * meanwhile writes it under the new ones; a payload that cannot be serialised is counted in
   * `run_payload_errors` and logged, and the row is still written.
   */
  recordRunEvent(event: RunEventRecord, experimentLabel: string | null = null): void {
    if (this.#unsubscribe === null) return; // not started, or stopped (not during a retarget)
    this.#enqueue({ kind: "recorded_run_event", event, experimentLabel });
  }

  /** A recorded run event's row; a payload left out is counted and reported. */
  #runEventRow(event: RunEventRecord, experimentLabel: string | null): BuiltRow {
    const row = runEventRow(this.#runtimeName, event, experimentLabel, this.#names);
    if (row.omission?.kind === "payload") {
      this.#runPayloadErrors++;
      this.#reportError(
        `run event ${event.run_id} #${event.sequence}: ${row.omission.reason}; written with payload_error instead of its payload`,
        "loss",
      );
    }
    return row;
  }

  /** The status body for GET /v0/telemetry/status (without the `status` envelope). */
  status(): TelemetryStatus {
    const enabled = this.#opts.enabled;
    const s: TelemetryStatus = {
      enabled,
      running: this.#running,
      connected: this.#connected,
      total_written: this.#totalWritten,
      total_failed: this.#totalFailed,
      pending_batch: this.#batch.length,
      pending_batch_bytes: this.#batch.bytes,
      queue_depth: this.#queue.length,
      dropped_events: this.#droppedEvents,
      retry_buffer_depth: this.#retry.length,
      dropped_retry: this.#droppedRetry,
      write_failures: this.#writeFailures,
      dropped_rejected: this.#droppedRejected,
      dropped_unformattable: this.#droppedUnformattable,
      dropped_overflow: this.#droppedOverflow,
      omitted_values: this.#omittedValues,
      run_payload_errors: this.#runPayloadErrors,
      last_error: this.#lastError,
      last_error_at_epoch_ms: this.#lastErrorAt,
      last_flush_at_epoch_ms: this.#lastFlushAt,
      last_health_snapshot_at_epoch_ms: this.#lastHealthAt,
    };
    if (enabled) {
      const { url, org, bucket } = this.#opts.influx;
      s.backend = { url: urlWithoutPassword(url), org, bucket };
    }
    return s;
  }

  /**
   * Stops health snapshots and the subscription, then flushes queue, batch and retry buffer
   * within `budgetMs`. Rows still unsent when the budget ends (or after a failed final write)
   * are counted in `total_failed`. During a retarget, first waits for it, within the same budget:
   * a reload's flush still under way when the budget ends is cut short. `hurried`: resolves, when
   * the stop is hurried (a second stop signal), with what is left of the budget then (ms): the
   * flush ends by then when that is sooner -- the write in flight aborted, nothing more sent.
   */
  async stop(budgetMs: number, hurried?: Promise<number>): Promise<void> {
    // One deadline for the whole stop, the wait for a reload's flush included: the runtime hands
    // telemetry what is left of its own stop budget, and a reload's flush has a budget of its own
    // that may end later.
    const deadline = this.#deadline(budgetMs, "the stop's budget");
    const clock = this.#opts.clock;
    let ended = false;
    let cutTimer: TimerId | undefined;
    void hurried?.then((leftMs) => {
      const cut = this.#deadline(leftMs, "the stop's hurried budget");
      if (ended || cut.mono >= deadline.mono) return;
      cutTimer = clock.setTimer(() => {
        this.#stopCut = true;
        this.#abort?.abort(budgetEnded(cut));
      }, cut.budgetMs);
    });
    try {
      // A reload retargeting the writer ends first: then this stops the writer it started and
      // flushes what came during it. From then on nothing restarts it.
      if (this.#retargeting !== null) await this.#endRetarget(this.#retargeting, deadline);
      this.#stopped = true;
      if (!this.#running) return;
      this.#halt();
      this.#unsubscribeBus();
      this.#fillBatch(Infinity);
      await this.#flushOut(deadline, "stop");
    } finally {
      ended = true;
      if (cutTimer !== undefined) clock.clearTimer(cutTimer);
    }
  }

  /**
   * Waits for the retarget under way until `deadline` (the stop's); then cuts its flush short: the
   * request in flight is aborted (its error line names the stop's budget) and nothing more is
   * sent, so the flush ends at once and counts (and says) the rows it could not write.
   */
  async #endRetarget(retargeting: Promise<void>, deadline: WriteDeadline): Promise<void> {
    const settled = retargeting.then(() => true, () => true);
    const clock = this.#opts.clock;
    let timer: TimerId | undefined;
    const expired = new Promise<boolean>((resolve) => {
      timer = clock.setTimer(() => resolve(false), Math.max(0, deadline.mono - clock.monoMs()));
    });
    const done = await Promise.race([settled, expired]);
    clock.clearTimer(timer);
    if (done) return;
    this.#stopCut = true;
    this.#abort?.abort(budgetEnded(deadline));
    await settled;
  }

  /** The database written to, as log lines name it: url (no password), org and bucket. */
  #databaseName(): string {
    const { url, org, bucket } = this.#opts.influx;
    return `${urlWithoutPassword(url)} org=${org} bucket=${bucket}`;
  }

  /**
   * When the first health snapshot of a start is due (monotonic ms): after a retarget halted the
   * health timer, on its grid when the interval is the same (the phase kept; a snapshot due while
   * the reload flushed is taken at once), else the new interval after the last one was due (at
   * once when that is past); otherwise undefined, one interval from now.
   */
  #firstHealthDueMs(periodMs: number): number | undefined {
    const grid = this.#healthGrid;
    if (grid === null) return undefined;
    if (grid.periodMs === periodMs) return grid.dueMs;
    return Math.max(grid.dueMs - grid.periodMs + periodMs, this.#opts.clock.monoMs());
  }

  /** Stops the timers: nothing is written from now on but by #flushOut. */
  #halt(): void {
    this.#running = false;
    if (this.#healthTimer !== undefined) {
      this.#healthGrid = { dueMs: this.#healthTimer.dueMs, periodMs: this.#opts.healthIntervalMs };
    }
    this.#healthTimer?.stop();
    this.#tickTimer?.stop();
    if (this.#kickTimer !== undefined) this.#opts.clock.clearTimer(this.#kickTimer);
    this.#healthTimer = this.#tickTimer = this.#kickTimer = undefined;
  }

  #unsubscribeBus(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#unsubscribePolls?.();
    this.#unsubscribePolls = null;
  }

  /**
   * Writes the batch and the retry buffer (after the write in flight) by `deadline` (a stop's or a
   * reload's, or sooner when a stop cuts a reload's flush short); what is still unsent then is
   * counted in `total_failed` and said in one WARN naming what flushed (`by`) and the database.
   * The queue is left alone.
   */
  async #flushOut(deadline: WriteDeadline, by: "stop" | "reload"): Promise<void> {
    // A stop's line says "shutdown:" (as it always has); a reload's says "reload:", and "reload cut
    // short by the stop:" when a stop ended its flush. Both name the database: a stop during a
    // reload can say two such lines (the old database's rows, then the new one's).
    const db = (by === "reload" ? "the old database " : "") + this.#databaseName();
    const mono = () => this.#opts.clock.monoMs();
    try {
      if (this.#inFlight) await this.#awaitInFlight(deadline, budgetEnded(deadline));
      while (this.#retry.length + this.#batch.length > 0) {
        const remaining = deadline.mono - mono();
        if (remaining <= 0 || this.#stopCut) break;
        const outcome = await this.#writeOnce(deadline);
        if (outcome === "failed") break;
      }
    } catch (err) {
      this.#reportError(`${by === "stop" ? "shutdown" : "reload"} flush: ${errorMessage(err)}`);
    }
    const lost = this.#retry.clear() + this.#batch.clear();
    const what = by === "stop"
      ? "shutdown"
      : this.#stopCut
      ? "reload cut short by the stop"
      : "reload";
    // The retry buffer's stretch of evictions ends with the buffer: said now with its count (no
    // write succeeded to say it), so the next database's (or the next enabling's) first eviction
    // is said again, and its count is its own.
    if (this.#retryDrops > 0) {
      this.#log.warn(
        `${what}: ${this.#retryDrops} telemetry rows were dropped from the full retry buffer ` +
          `for ${db} since its last successful write (dropped_retry)`,
      );
      this.#retryDrops = 0;
    }
    if (lost > 0) {
      this.#totalFailed += lost;
      this.#log.warn(`${what}: ${lost} telemetry rows could not be written to ${db} and are lost`);
    }
    this.#sayHeldErrors(true); // nothing ticks from here on: what was held back is said now
  }

  // ---- event intake ---------------------------------------------------------------------------

  #onEvent(event: RuntimeEvent): void {
    // Only the kinds that become rows take queue space (docs/telemetry.md lists them).
    if (
      event.kind === "state_update" || event.kind === "mode_change" ||
      event.kind === "parameter_change" || event.kind === "alarm"
    ) {
      this.#enqueue(event);
    }
  }

  /**
   * After every poll: a signal without a value (it never had one) gets a quality-only row when
   * its quality differs from the one last written for it (the first time too), dated as the
   * cache's quality_change of it.
   */
  readonly #onPolled = (dev: DeviceState): void => {
    if (this.#unsubscribe === null) return;
    const key = `${dev.providerId}\0${dev.deviceId}`;
    let written = this.#valueless.get(key);
    let now: number | undefined;
    for (const id of dev.pollable) {
      const s = dev.signals.get(id);
      if (s === undefined) continue;
      if (s.value !== null) {
        if (written?.delete(id)) this.#valuelessCount--;
        continue;
      }
      const last = written?.get(id);
      if (last === s.quality) continue;
      if (last === undefined) {
        if (this.#valuelessCount >= MAX_VALUELESS_SIGNALS) this.#forgetValueless();
        if (written === undefined || !this.#valueless.has(key)) {
          this.#valueless.set(key, written = new Map());
        }
        this.#valuelessCount++;
      }
      written!.set(id, s.quality);
      // Dated as the cache dates this poll's changes (their quality_change): by the arrival of its
      // answer or of its failed read (one held behind another device's hung read is applied
      // later).
      now ??= outcomeArrivedMs(dev, this.#opts.clock.nowMs());
      this.#enqueue({
        kind: "valueless_signal",
        provider_id: dev.providerId,
        device_id: dev.deviceId,
        signal_id: id,
        quality: s.quality,
        timestamp_ms: now,
      });
    }
  };

  #forgetValueless(): void {
    this.#valueless.clear();
    this.#valuelessCount = 0;
  }

  #enqueue(item: QueueItem): void {
    try {
      const evicted = this.#queue.push(item);
      if (evicted > 0) {
        this.#droppedEvents += evicted;
        if (this.#queueDrops === 0) {
          this.#log.warn(
            `event queue full (queue_size ${this.#queue.capacity} events or MAX_QUEUE_BYTES ` +
              `${this.#queue.maxBytes} bytes): dropping the oldest events until it drains ` +
              `(counted in dropped_events)`,
          );
        }
        this.#queueDrops += evicted;
      }
      if (this.#queue.length >= this.#batchSize) this.#kick();
    } catch (err) {
      this.#reportError(`enqueue: ${errorMessage(err)}`);
    }
  }

  /** Runs the flush loop soon (batch full or more work after a write) without waiting a tick. */
  #kick(): void {
    if (this.#kickTimer !== undefined || !this.#running || this.#inFlight) return;
    this.#kickTimer = this.#opts.clock.setTimer(() => {
      this.#kickTimer = undefined;
      this.#tick();
    }, 0);
  }

  /**
   * Formats queued events into the batch until it holds `limit` rows or, when `limit` is finite
   * (the flush loop's), {@link MAX_WRITE_BYTES} of lines.
   */
  #fillBatch(limit: number): void {
    const maxBytes = limit === Infinity ? Infinity : MAX_WRITE_BYTES;
    while (this.#batch.length < limit && this.#batch.bytes < maxBytes && this.#queue.length > 0) {
      const item = this.#queue.shift() as QueueItem;
      let line: string | null;
      try {
        const row = item.kind === "recorded_run_event"
          ? this.#runEventRow(item.event, item.experimentLabel)
          : item.kind === "valueless_signal"
          ? signalRow(
            this.#runtimeName,
            item.provider_id,
            item.device_id,
            item.signal_id,
            null,
            item.quality,
            item.timestamp_ms,
            this.#names,
          )
          : rowForEvent(this.#runtimeName, item, this.#names);
        if (row === null) continue; // an event kind that is not written
        if (row.omission?.kind === "value") this.#omittedValues++;
        line = this.#format(row);
      } catch (err) {
        this.#unformattable(
          item.kind === "recorded_run_event"
            ? `run event ${item.event.run_id} #${item.event.sequence}: ${errorMessage(err)}`
            : `${item.kind}: ${errorMessage(err)}`,
        );
        continue;
      }
      if (line === null) continue;
      this.#batch.push(this.#points.distinct(line));
    }
    if (this.#queueDrops > 0 && this.#queue.length === 0) {
      this.#log.warn(
        `event queue drained; ${this.#queueDrops} events dropped while it was full ` +
          `(dropped_events)`,
      );
      this.#queueDrops = 0;
    }
  }

  /** One row as a line, or null (counted and reported) when it cannot be a valid line. */
  #format(row: Row): string | null {
    const line = formatRow(row);
    if (line === null) {
      this.#unformattable(
        `${row.measurement} row at ${row.timestampMs}: no writable field or timestamp out of range`,
      );
    }
    return line;
  }

  #unformattable(reason: string): void {
    this.#droppedUnformattable++;
    this.#totalFailed++;
    this.#reportError(`row dropped, cannot be formatted: ${reason}`, "loss");
  }

  #appendRows(rows: readonly Row[]): void {
    for (const row of rows) {
      const line = this.#format(row);
      if (line !== null) this.#batch.push(this.#points.distinct(line));
    }
    const cap = this.#batchSize + BATCH_HEALTH_ALLOWANCE;
    if (this.#batch.length > cap) {
      const excess = this.#batch.length - cap;
      this.#batch.take(excess);
      this.#totalFailed += excess;
      this.#droppedOverflow += excess;
      this.#reportError(
        `batch overflow: ${excess} oldest rows dropped (the batch holds at most ${cap} rows, ` +
          `batch_size + BATCH_HEALTH_ALLOWANCE; counted in dropped_overflow)`,
        "loss",
      );
    }
  }

  // ---- flush loop -----------------------------------------------------------------------------

  #tick(): void {
    if (!this.#running) return;
    this.#sayHeldErrors();
    try {
      this.#fillBatch(this.#batchSize);
      if (this.#inFlight) return;
      const now = this.#opts.clock.monoMs();
      const batchDue = () =>
        this.#batchFull() ||
        (this.#batch.length > 0 && now - this.#lastFlushAttemptMono >= this.#flushIntervalMs);
      if (now < this.#backoffUntilMono) {
        // Backing off after a failure: due batches go straight to the retry buffer, so an outage
        // costs exactly the rows that do not fit there (and the queue keeps draining).
        while (batchDue()) {
          this.#park(this.#batch.take(this.#batch.length));
          this.#lastFlushAttemptMono = now;
          this.#fillBatch(this.#batchSize);
        }
        return;
      }
      if (this.#retry.length > 0 || batchDue()) {
        this.#inFlight = this.#writeOnce(NO_DEADLINE).then(() => {}).finally(
          () => {
            this.#inFlight = null;
            if (this.#hasUrgentWork()) this.#kick();
          },
        );
      }
    } catch (err) {
      this.#reportError(`flush loop: ${errorMessage(err)}`);
    }
  }

  #hasUrgentWork(): boolean {
    const now = this.#opts.clock.monoMs();
    if (now < this.#backoffUntilMono) return false;
    return this.#retry.length > 0 || this.#batchFull() ||
      this.#queue.length >= this.#batchSize;
  }

  /** The batch holds `batch_size` rows or {@link MAX_WRITE_BYTES} of lines: it is due. */
  #batchFull(): boolean {
    return this.#batch.length >= this.#batchSize || this.#batch.bytes >= MAX_WRITE_BYTES;
  }

  /** Moves rows into the retry buffer, counting the oldest rows it evicts. */
  #park(rows: readonly string[]): void {
    const evicted = this.#retry.pushAll(rows);
    if (evicted > 0) {
      this.#totalFailed += evicted;
      this.#droppedRetry += evicted;
      if (this.#retryDrops === 0) {
        this.#log.warn(
          `retry buffer full (max_retry_buffer_size ${this.#retry.capacity} rows or ` +
            `MAX_RETRY_BUFFER_BYTES ${this.#retry.maxBytes} bytes): dropping the oldest rows ` +
            `until a write succeeds (counted in dropped_retry)`,
        );
      }
      this.#retryDrops += evicted;
    }
  }

  /**
   * One write: the oldest retry rows, plus the current batch once the retry buffer fits, in one
   * POST; if the database refuses it, the isolation requests that follow (see the module comment).
   * Every request ends by `deadline` (NO_DEADLINE: only the write timeout applies).
   */
  async #writeOnce(deadline: WriteDeadline): Promise<WriteOutcome> {
    const maxRetryRows = Math.max(this.#batchSize, MIN_ROWS_PER_WRITE);
    const waiting = this.#retry.peek(maxRetryRows);
    const old = fitting(waiting, MAX_WRITE_BYTES, true);
    const retried = old.count === waiting.length ? waiting : waiting.slice(0, old.count);
    // The batch follows once the retry buffer fits, as far as MAX_WRITE_BYTES allows; the rest
    // of it is written next (#batchFull).
    const fresh = retried.length === this.#retry.length
      ? this.#batch.take(
        fitting(this.#batch.lines, MAX_WRITE_BYTES - old.bytes, retried.length === 0).count,
      )
      : [];
    const rows = retried.concat(fresh);
    if (rows.length === 0) return "ok";
    const writtenBefore = this.#totalWritten;
    this.#lastFlushAttemptMono = this.#opts.clock.monoMs();
    const result = await this.#post(rows, deadline);
    if (result.kind === "failed") {
      // The retried rows are still the retry buffer's oldest entries (nothing else touches it
      // while a write is in flight, see #tick); the fresh ones join them.
      this.#park(fresh);
      this.#writeFailed();
      return "failed";
    }
    this.#retry.dropFront(retried.length);
    if (result.kind === "ok") {
      this.#written(rows.length);
      this.#settled(true);
      return "ok";
    }
    if (result.dropped !== null) {
      // The database stored the other rows: nothing to isolate (sending them again would only
      // overwrite them), and the counts are its own.
      this.#partlyRefused(rows.length, result.dropped, result);
      this.#settled(this.#totalWritten > writtenBefore);
      return "rejected";
    }
    const unsent = await this.#isolate(rows, result, deadline);
    if (unsent.length > 0) {
      // Parts accepted before the failure do not end the back-off: a database that takes some
      // requests and fails others is still failing, and is not sent the next at once.
      this.#requeueFront(unsent);
      this.#writeFailed();
      return "failed";
    }
    this.#settled(this.#totalWritten > writtenBefore);
    return "rejected";
  }

  /**
   * A write whose every row the database settled (accepted, or refused and dropped): the database
   * answers, so the back-off starts over, and when it `stored` rows, writes are said to succeed
   * (again). Only here: rows accepted by a write that still leaves rows to retry (an isolation cut
   * by a failure) neither reset the back-off nor claim a recovery.
   */
  #settled(stored: boolean): void {
    if (stored) this.#saySucceeded();
    this.#connected = true;
    this.#backoffMs = 0;
    this.#backoffUntilMono = 0;
  }

  /**
   * Isolates the refused rows of a refused write: splits it in halves and sends each again,
   * depth first and in order, until every refused part is a single row, which is dropped. Spends
   * at most `isolationMaxRequests` requests; a refused part that cannot be split within them is
   * dropped whole. Returns the rows left unsettled by a retryable failure or the deadline.
   */
  async #isolate(
    rows: string[],
    first: { status: number; detail: string },
    deadline: WriteDeadline,
  ): Promise<string[]> {
    const budget = Math.max(0, Math.floor(this.#tuning.isolationMaxRequests));
    const work: Segment[] = [{ rows, refused: true }];
    let requests = 0;
    let untried = 0; // untried segments in `work`: each will cost one request
    let written = 0;
    let dropped = 0;
    let firstDropped = null as string | null;
    let refusal = first;
    const drop = (seg: Segment) => {
      dropped += seg.rows.length;
      firstDropped ??= seg.rows[0] ?? null;
    };
    let unsent: string[] = [];
    while (work.length > 0) {
      const seg = work.shift() as Segment;
      if (seg.refused) {
        if (seg.rows.length === 1 || requests + untried + 2 > budget) {
          drop(seg);
        } else {
          const mid = Math.ceil(seg.rows.length / 2);
          work.unshift(
            { rows: seg.rows.slice(0, mid), refused: false },
            { rows: seg.rows.slice(mid), refused: false },
          );
          untried += 2;
        }
        continue;
      }
      untried--;
      const remaining = deadline.mono - this.#opts.clock.monoMs();
      if (this.#abortWrites || this.#stopCut || remaining <= 0) {
        unsent = [seg, ...work].flatMap((w) => w.rows);
        break;
      }
      requests++;
      const result = await this.#post(seg.rows, deadline);
      if (result.kind === "ok") {
        written += seg.rows.length;
      } else if (result.kind === "refused" && result.dropped !== null) {
        // A partial write of this part: the database stored the rest of it.
        const lost = Math.min(seg.rows.length, result.dropped);
        written += seg.rows.length - lost;
        dropped += lost;
        refusal = result;
      } else if (result.kind === "refused") {
        refusal = result;
        work.unshift({ rows: seg.rows, refused: true });
      } else {
        unsent = [seg, ...work].flatMap((w) => w.rows);
        break;
      }
    }
    this.#written(written);
    this.#droppedRejected += dropped;
    this.#totalFailed += dropped;
    const detail = refusal.detail ? `: ${refusal.detail}` : "";
    const example = firstDropped === null
      ? ""
      : `; first dropped row: ${firstDropped.slice(0, 200)}`;
    this.#reportError(
      `write refused (HTTP ${refusal.status}${detail}): ${dropped} of ${rows.length} rows dropped, ` +
        `${written} written, ${unsent.length} to retry, after ${requests} isolating requests${example}`,
      "loss",
    );
    return unsent;
  }

  /** A partial write of `rows`: the database dropped `dropped` of them and stored the others. */
  #partlyRefused(
    rows: number,
    dropped: number,
    refusal: { status: number; detail: string },
  ): void {
    const lost = Math.min(rows, dropped);
    this.#written(rows - lost);
    this.#droppedRejected += lost;
    this.#totalFailed += lost;
    const detail = refusal.detail ? `: ${refusal.detail}` : "";
    this.#reportError(
      `write partly refused (HTTP ${refusal.status}${detail}): the database dropped ${lost} of ` +
        `${rows} rows and stored the others`,
      "loss",
    );
  }

  /**
   * Counts accepted rows. What a success means for the outage (the back-off, the line that writes
   * succeed again) waits for the whole write to settle (#settled).
   */
  #written(count: number): void {
    if (count === 0) return;
    this.#totalWritten += count;
    this.#lastFlushAt = this.#opts.clock.nowMs();
  }

  /** Says a write settled with rows stored: the end of an outage, the retry-buffer drops before it. */
  #saySucceeded(): void {
    // A failure held back is older than this success: said first, not after it.
    this.#sayHeld(this.#errorLines.failure, this.#opts.clock.monoMs());
    const again = !this.#connected && this.#lastError !== null;
    if (this.#retryDrops > 0) {
      this.#log.warn(
        `write succeeded${again ? " again" : ""}; ${this.#retryDrops} rows dropped from the ` +
          `full retry buffer before it (dropped_retry)`,
      );
      this.#retryDrops = 0;
    } else if (again) this.#log.info("write succeeded again");
  }

  /**
   * Records a retryable write failure and backs off: the doubling back-off, or the `Retry-After`
   * of the database's answer when that is longer.
   */
  #writeFailed(): void {
    this.#connected = false;
    this.#writeFailures++;
    this.#backoffMs = this.#backoffMs === 0
      ? this.#tuning.retryInitialMs
      : Math.min(this.#backoffMs * 2, this.#tuning.retryMaxMs);
    this.#backoffUntilMono = this.#opts.clock.monoMs() +
      Math.max(this.#backoffMs, this.#retryAfterMs);
  }

  /** Puts rows back in front of the retry buffer (oldest first), counting what it evicts. */
  #requeueFront(rows: readonly string[]): void {
    const rest = this.#retry.peek(this.#retry.length);
    this.#retry.clear();
    this.#park(rows.concat(rest));
  }

  /** The deadline `budgetMs` from now, of the budget `budget` names. */
  #deadline(budgetMs: number, budget: string): WriteDeadline {
    const ms = Math.max(0, budgetMs);
    return { mono: this.#opts.clock.monoMs() + ms, budget, budgetMs: ms };
  }

  /**
   * One request, aborted after the write timeout or at `deadline`, whichever comes first; the
   * abort's reason (a string) is the error line that says which bound ended it.
   */
  async #post(rows: readonly string[], deadline: WriteDeadline): Promise<PostResult> {
    const transport = this.#transport;
    if (!transport) return { kind: "failed" };
    const abort = new AbortController();
    this.#abort = abort;
    const clock = this.#opts.clock;
    const writeTimeoutMs = this.#tuning.writeTimeoutMs;
    const remaining = deadline.mono - clock.monoMs();
    const timeoutMs = Math.max(1, Math.min(writeTimeoutMs, remaining));
    const why = remaining < writeTimeoutMs
      ? budgetEnded(deadline)
      : `write failed, will retry: no answer within ${writeTimeoutMs} ms (WRITE_TIMEOUT_MS)`;
    const timer = clock.setTimer(() => abort.abort(why), timeoutMs);
    this.#retryAfterMs = 0;
    try {
      await transport.request(this.#writePath, rows.join("\n") + "\n", {
        method: "POST",
        // accept text: the client then always reads the response body (no leaked stream).
        headers: { "content-type": "text/plain; charset=utf-8", accept: "text/plain" },
        signal: abort.signal,
      });
      return { kind: "ok" };
    } catch (err) {
      const status = (err as { statusCode?: unknown })?.statusCode;
      if (typeof status === "number") {
        // One log line per event: the database's answer may span lines.
        const body = String((err as { body?: unknown }).body ?? "");
        const detail = body.replace(/\s+/g, " ").trim().slice(0, 200);
        if (status === 400 || status === 413 || status === 422) {
          return { kind: "refused", status, detail, dropped: partialWriteDropped(body) };
        }
        // The client's HttpError keeps the answer's headers (a header repeated: an array).
        const headers = (err as { headers?: Record<string, unknown> }).headers;
        this.#retryAfterMs = retryAfterMs(
          headers?.["retry-after"],
          clock.nowMs(),
          headers?.["date"],
        );
        const after = this.#retryAfterMs > 0 ? ` (Retry-After: ${this.#retryAfterMs} ms)` : "";
        this.#reportError(
          `write failed, will retry: HTTP ${status}${detail ? `: ${detail}` : ""}${after}` +
            (SETTINGS_TO_CHECK[status] ?? ""),
        );
        return { kind: "failed" };
      }
      const reason: unknown = abort.signal.aborted ? abort.signal.reason : undefined;
      this.#reportError(
        typeof reason === "string" ? reason : `write failed, will retry: ${errorMessage(err)}`,
      );
      return { kind: "failed" };
    } finally {
      clock.clearTimer(timer);
      this.#abort = null;
    }
  }

  /**
   * Waits for the in-flight write until `deadline`, then aborts it (it then settles promptly);
   * `why` is the error line the abort logs.
   */
  async #awaitInFlight(deadline: WriteDeadline, why: string): Promise<void> {
    const inFlight = this.#inFlight;
    if (!inFlight) return;
    const clock = this.#opts.clock;
    let timer: TimerId | undefined;
    const expired = new Promise<void>((resolve) => {
      timer = clock.setTimer(resolve, Math.max(0, deadline.mono - clock.monoMs()));
    });
    await Promise.race([inFlight, expired]);
    clock.clearTimer(timer);
    this.#abortWrites = true;
    this.#abort?.abort(why);
    await inFlight;
    this.#abortWrites = false;
  }

  // ---- health snapshots -----------------------------------------------------------------------

  async #takeHealthSnapshot(): Promise<void> {
    const snapshot = this.#opts.healthSnapshot;
    if (!snapshot || this.#healthBusy || !this.#running) return;
    this.#healthBusy = true;
    const ts = this.#opts.clock.nowMs();
    try {
      const providers = await snapshot();
      // A snapshot that resolves after stop() is discarded: the final flush is already done. Not
      // one that resolves during a reload's retarget (#running false meanwhile): taken before it,
      // its rows join the rows waiting, as the events published before it (to the old database,
      // or kept for the same one), unless the reload turned telemetry off.
      if (this.#stopped || !this.#opts.enabled) return;
      this.#appendRows(healthRows(this.#runtimeName, providers, ts, this.#names));
      this.#lastHealthAt = ts;
      if (this.#batch.length >= this.#batchSize) this.#kick();
    } catch (err) {
      this.#reportError(`health snapshot failed: ${errorMessage(err)}`);
    } finally {
      this.#healthBusy = false;
    }
  }

  // ---- errors ---------------------------------------------------------------------------------

  #setError(message: string): void {
    this.#lastError = message;
    this.#lastErrorAt = this.#opts.clock.nowMs();
  }

  /**
   * Records the error for the status and logs at most one line of its kind per
   * errorLogIntervalMs. A line held back is not forgotten: the last one held is logged, with how
   * many were held, when the period is over (#sayHeldErrors, every tick and at stop), so rows
   * given up are said even when nothing goes wrong afterwards. The kinds have separate periods:
   * retried failures (an outage) never hold back the line that says rows were dropped.
   */
  #reportError(message: string, kind: ErrorKind = "failure"): void {
    this.#setError(message);
    const limit = this.#errorLines[kind];
    const now = this.#opts.clock.monoMs();
    if (now - limit.lastLogMono < this.#tuning.errorLogIntervalMs) {
      limit.suppressed++;
      limit.held = message;
      return;
    }
    this.#sayHeld(limit, now);
    limit.lastLogMono = now;
    this.#log.error(message);
  }

  /** Logs the error line each kind held back once its period is over (`force`: at once). */
  #sayHeldErrors(force = false): void {
    const now = this.#opts.clock.monoMs();
    for (const limit of Object.values(this.#errorLines)) {
      if (force || now - limit.lastLogMono >= this.#tuning.errorLogIntervalMs) {
        this.#sayHeld(limit, now);
      }
    }
  }

  #sayHeld(limit: ErrorLineLimit, now: number): void {
    if (limit.held === null) return;
    const others = limit.suppressed - 1;
    const suffix = others > 0 ? ` (${others} similar errors suppressed before it)` : "";
    this.#log.error(`${limit.held}${suffix}`);
    limit.held = null;
    limit.suppressed = 0;
    limit.lastLogMono = now;
  }
}

/**
 * What an error line is about: `failure`, something the writer retries or recovers from (a
 * failed write, a health snapshot); `loss`, rows or their data given up (refused by the database,
 * not formattable, a batch overflow, a run payload left out).
 */
type ErrorKind = "failure" | "loss";

/** The state of one kind's once-per-errorLogIntervalMs limit. */
interface ErrorLineLimit {
  lastLogMono: number;
  /** Lines held back in the current period. */
  suppressed: number;
  /** The last line held back, logged when the period is over. */
  held: string | null;
}
