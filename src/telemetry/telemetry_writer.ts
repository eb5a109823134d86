/**
 * The InfluxDB telemetry writer (telemetry.md §1, §6, §7): event bus -> bounded queue -> batch ->
 * HTTP write, with a bounded retry buffer, retry timer with backoff, periodic health snapshots and
 * a status view for GET /v0/telemetry/status.
 *
 * Transport: we use the client's fetch-based `Transport.request` for one POST per write rather
 * than its `WriteApi`. The WriteApi batches, retries and drops rows on its own schedule and only
 * reports failures through callbacks, which makes exact per-row accounting (written / failed /
 * dropped) impossible; with one request per batch we know the fate of every row.
 *
 * Bounds (nothing grows without limit, nothing blocks the publisher):
 * - queue: `queue_size` events; the bus listener only pushes, evicting (and counting) the oldest.
 * - batch: filled from the queue up to `batch_size` rows; health rows are appended directly and
 *   the batch is hard-capped at `batch_size + BATCH_HEALTH_ALLOWANCE` rows (oldest dropped).
 * - retry buffer: `max_retry_buffer_size` rows; failed rows go back to its front, and while the
 *   writer backs off, due batches are parked in it without a write attempt, so an outage loses
 *   exactly the rows that do not fit (oldest first), all counted in `total_failed`/`dropped_retry`.
 * - one write in flight at a time, aborted after `writeTimeoutMs`; a write carries at most
 *   max(batch_size, 1000) retry rows plus the current batch.
 *
 * Non-retryable answers (400, 413, 422: InfluxDB refused the data itself) drop the rows and count
 * them in `total_failed`; any other failure (network, timeout, 401/403/404, 429, 5xx) is retried.
 */
import { InfluxDB } from "@influxdata/influxdb-client";
import type { Clock, Logger, ProviderHealthView } from "../common/mod.ts";
import type { Config, InfluxConfig } from "../config/mod.ts";
import type { EventBus, RuntimeEvent } from "../events/mod.ts";
import { formatRow, type Row } from "./line_protocol.ts";
import { healthRows, rowForEvent, type RunEventRecord, runEventRow } from "./rows.ts";
import { RingBuffer } from "./_ring_buffer.ts";

/**
 * Target and buffer sizes (config `telemetry.influxdb`) with the token already resolved: config
 * value, else INFLUXDB_TOKEN. An empty token means the writer does not start.
 */
export type InfluxSettings = InfluxConfig;

/** Timing knobs with production defaults; tests shorten them. */
export interface TelemetryTuning {
  /** Abort a write after this long (contract: 5 s). */
  readonly writeTimeoutMs: number;
  /** First retry delay after a failed write; doubles per failure up to `retryMaxMs`. */
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  /** At most one error log line per this period (contract: 10 s). */
  readonly errorLogIntervalMs: number;
  /** Housekeeping tick (contract: the flush loop wakes at least every 100 ms). */
  readonly tickMs: number;
}

/** Production defaults of {@link TelemetryTuning}. */
export const DEFAULT_TELEMETRY_TUNING: TelemetryTuning = {
  writeTimeoutMs: 5000,
  retryInitialMs: 1000,
  retryMaxMs: 30000,
  errorLogIntervalMs: 10000,
  tickMs: 100,
};

/** Extra rows the batch may hold beyond batch_size (health snapshots bypass the queue). */
const BATCH_HEALTH_ALLOWANCE = 10000;
/** Lower bound of the number of retry-buffer rows one write may carry. */
const MIN_ROWS_PER_WRITE = 1000;

/** Everything the writer needs; build it from the config with {@link telemetryOptionsFromConfig}. */
export interface TelemetryWriterOptions {
  readonly enabled: boolean;
  /** `runtime.name`; "" is written as "default". */
  readonly runtimeName: string;
  readonly influx: InfluxSettings;
  /** 0 disables health snapshots. */
  readonly healthIntervalMs: number;
  /** A live health snapshot (the runtime does a GetHealth round-trip per provider). */
  readonly healthSnapshot?: () => Promise<ProviderHealthView[]>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tuning?: Partial<TelemetryTuning>;
}

/** Body of GET /v0/telemetry/status without `status` (http-api.md §4 plus operator fields). */
export interface TelemetryStatus {
  enabled: boolean;
  running: boolean;
  /** The last write attempt succeeded (false until the first successful write). */
  connected: boolean;
  /** Rows accepted by the database since start. */
  total_written: number;
  /** Rows given up: retry-buffer overflow, refused by the database (4xx), or unsent at shutdown. */
  total_failed: number;
  /** Rows in the current batch (excludes the retry buffer). */
  pending_batch: number;
  /** Events waiting in the subscriber queue. */
  queue_depth: number;
  /** Events lost to subscriber-queue overflow. */
  dropped_events: number;
  /** Omitted when telemetry is disabled; never carries the token. */
  backend?: { url: string; org: string; bucket: string };
  /** Rows waiting for a retry. */
  retry_buffer_depth: number;
  /** Rows evicted from the full retry buffer (a subset of total_failed). */
  dropped_retry: number;
  /** Write requests that failed (each retry counts); rising while connected=false = retrying. */
  write_failures: number;
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
    healthSnapshot?: () => Promise<ProviderHealthView[]>;
    tuning?: Partial<TelemetryTuning>;
  },
): TelemetryWriterOptions {
  const t = config.telemetry;
  return {
    enabled: t.enabled,
    runtimeName: config.runtime.name,
    influx: { ...t.influxdb, token: t.influxdb.token || deps.envToken || "" },
    healthIntervalMs: t.healthIntervalMs,
    healthSnapshot: deps.healthSnapshot,
    clock: deps.clock,
    logger: deps.logger,
    tuning: deps.tuning,
  };
}

type QueueItem =
  | RuntimeEvent
  | { kind: "run_event"; event: RunEventRecord; experimentLabel: string | null };

type WriteOutcome = "ok" | "rejected" | "failed";

interface Transport {
  request(path: string, body: string, options: {
    method: string;
    headers?: Record<string, string>;
    signal?: AbortSignal;
  }): Promise<unknown>;
}

/** Streams runtime events and health snapshots to InfluxDB; never throws, never blocks. */
export class TelemetryWriter {
  readonly #opts: TelemetryWriterOptions;
  readonly #tuning: TelemetryTuning;
  readonly #runtimeName: string;
  readonly #batchSize: number;
  readonly #flushIntervalMs: number;
  readonly #log: Logger;
  readonly #queue: RingBuffer<QueueItem>;
  readonly #retry: RingBuffer<string>;
  #batch: string[] = [];

  #transport: Transport | null = null;
  #writePath = "";
  #running = false;
  #unsubscribe: (() => void) | null = null;
  #tickTimer: ReturnType<typeof setInterval> | undefined;
  #kickTimer: ReturnType<typeof setTimeout> | undefined;
  #healthTimer: ReturnType<typeof setInterval> | undefined;
  #healthBusy = false;

  #inFlight: Promise<void> | null = null;
  #abort: AbortController | null = null;
  #lastFlushAttemptMono = 0;
  #backoffMs = 0;
  #backoffUntilMono = 0;

  #connected = false;
  #totalWritten = 0;
  #totalFailed = 0;
  #droppedEvents = 0;
  #droppedRetry = 0;
  #writeFailures = 0;
  #lastError: string | null = null;
  #lastErrorAt: number | null = null;
  #lastFlushAt: number | null = null;
  #lastHealthAt: number | null = null;
  #lastErrorLogMono = -Infinity;
  #suppressedErrors = 0;

  constructor(opts: TelemetryWriterOptions) {
    this.#opts = opts;
    this.#tuning = { ...DEFAULT_TELEMETRY_TUNING, ...opts.tuning };
    this.#runtimeName = opts.runtimeName || "default";
    this.#batchSize = Math.max(1, Math.floor(opts.influx.batchSize));
    this.#flushIntervalMs = Math.max(10, Math.floor(opts.influx.flushIntervalMs));
    this.#log = opts.logger;
    this.#queue = new RingBuffer(Math.max(1, opts.influx.queueSize));
    this.#retry = new RingBuffer(Math.max(0, opts.influx.maxRetryBufferSize));
  }

  /** True while the writer accepts events (enabled, token present, started, not stopped). */
  get running(): boolean {
    return this.#running;
  }

  /**
   * Subscribes to the bus and starts the flush loop and health timer. Does nothing when disabled;
   * with an empty token it stays stopped and reports why in `last_error`.
   */
  start(bus: EventBus): void {
    if (!this.#opts.enabled || this.#running) return;
    const { url, org, bucket, token } = this.#opts.influx;
    if (!token) {
      this.#setError(
        "telemetry.influxdb.token is empty and INFLUXDB_TOKEN is not set: telemetry writer not started",
      );
      this.#log.warn(this.#lastError ?? "");
      return;
    }
    try {
      this.#transport = new InfluxDB({ url, token }).transport as Transport;
    } catch (err) {
      this.#setError(`telemetry.influxdb.url: ${errorText(err)}: telemetry writer not started`);
      this.#log.error(this.#lastError ?? "");
      return;
    }
    // Contract §1 inserts org/bucket unencoded; encoding is identical for ordinary names and
    // keeps names with `&` or spaces from corrupting the query string.
    this.#writePath = `/api/v2/write?org=${encodeURIComponent(org)}&bucket=${
      encodeURIComponent(bucket)
    }&precision=ms`;
    this.#running = true;
    this.#lastFlushAttemptMono = this.#opts.clock.monoMs();
    this.#unsubscribe = bus.subscribe((published) => this.#onEvent(published.event));
    const tickMs = Math.max(1, Math.min(this.#tuning.tickMs, this.#flushIntervalMs));
    this.#tickTimer = setInterval(() => this.#tick(), tickMs);
    if (this.#opts.healthIntervalMs > 0 && this.#opts.healthSnapshot) {
      this.#healthTimer = setInterval(
        () => this.#takeHealthSnapshot(),
        this.#opts.healthIntervalMs,
      );
    }
    this.#log.info(`writing to ${url} org=${org} bucket=${bucket}`);
  }

  /** Queues a run open/close/marker row (connected to the run registry's telemetry sink). */
  recordRunEvent(event: RunEventRecord, experimentLabel: string | null = null): void {
    if (!this.#running) return;
    this.#enqueue({ kind: "run_event", event, experimentLabel });
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
      queue_depth: this.#queue.length,
      dropped_events: this.#droppedEvents,
      retry_buffer_depth: this.#retry.length,
      dropped_retry: this.#droppedRetry,
      write_failures: this.#writeFailures,
      last_error: this.#lastError,
      last_error_at_epoch_ms: this.#lastErrorAt,
      last_flush_at_epoch_ms: this.#lastFlushAt,
      last_health_snapshot_at_epoch_ms: this.#lastHealthAt,
    };
    if (enabled) {
      const { url, org, bucket } = this.#opts.influx;
      s.backend = { url, org, bucket };
    }
    return s;
  }

  /**
   * Stops health snapshots and the subscription, then flushes queue, batch and retry buffer
   * within `budgetMs`. Rows still unsent when the budget ends (or after a failed final write)
   * are counted in `total_failed`.
   */
  async stop(budgetMs: number): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    clearInterval(this.#healthTimer);
    clearInterval(this.#tickTimer);
    clearTimeout(this.#kickTimer);
    this.#healthTimer = this.#tickTimer = this.#kickTimer = undefined;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    const mono = () => this.#opts.clock.monoMs();
    const deadline = mono() + Math.max(0, budgetMs);
    try {
      if (this.#inFlight) await this.#awaitInFlight(deadline - mono());
      this.#fillBatch(Infinity);
      while (this.#retry.length + this.#batch.length > 0) {
        const remaining = deadline - mono();
        if (remaining <= 0) break;
        const outcome = await this.#writeOnce(Math.min(this.#tuning.writeTimeoutMs, remaining));
        if (outcome === "failed") break;
      }
    } catch (err) {
      this.#reportError(`shutdown flush: ${errorText(err)}`);
    }
    const lost = this.#retry.clear() + this.#batch.length;
    this.#batch = [];
    if (lost > 0) {
      this.#totalFailed += lost;
      this.#log.warn(`shutdown: ${lost} telemetry rows could not be written and are lost`);
    }
  }

  // ---- event intake ---------------------------------------------------------------------------

  #onEvent(event: RuntimeEvent): void {
    // Only the kinds that become rows take queue space (§1 "Events written").
    if (
      event.kind === "state_update" || event.kind === "mode_change" ||
      event.kind === "parameter_change"
    ) {
      this.#enqueue(event);
    }
  }

  #enqueue(item: QueueItem): void {
    try {
      this.#droppedEvents += this.#queue.push(item);
      if (this.#queue.length >= this.#batchSize) this.#kick();
    } catch (err) {
      this.#reportError(`enqueue: ${errorText(err)}`);
    }
  }

  /** Runs the flush loop soon (batch full or more work after a write) without waiting a tick. */
  #kick(): void {
    if (this.#kickTimer !== undefined || !this.#running || this.#inFlight) return;
    this.#kickTimer = setTimeout(() => {
      this.#kickTimer = undefined;
      this.#tick();
    }, 0);
  }

  /** Formats queued events into the batch until it holds `limit` rows. */
  #fillBatch(limit: number): void {
    while (this.#batch.length < limit && this.#queue.length > 0) {
      const item = this.#queue.shift() as QueueItem;
      let row: Row | null;
      try {
        row = item.kind === "run_event"
          ? runEventRow(this.#runtimeName, item.event, item.experimentLabel)
          : rowForEvent(this.#runtimeName, item);
      } catch (err) {
        this.#totalFailed++;
        this.#reportError(`format: ${errorText(err)}`);
        continue;
      }
      const line = row === null ? null : formatRow(row);
      if (line !== null) this.#batch.push(line);
    }
  }

  #appendRows(rows: readonly Row[]): void {
    for (const row of rows) {
      const line = formatRow(row);
      if (line !== null) this.#batch.push(line);
    }
    const cap = this.#batchSize + BATCH_HEALTH_ALLOWANCE;
    if (this.#batch.length > cap) {
      const excess = this.#batch.length - cap;
      this.#batch.splice(0, excess);
      this.#totalFailed += excess;
      this.#reportError(`batch overflow: ${excess} rows dropped`);
    }
  }

  // ---- flush loop -----------------------------------------------------------------------------

  #tick(): void {
    if (!this.#running) return;
    try {
      this.#fillBatch(this.#batchSize);
      if (this.#inFlight) return;
      const now = this.#opts.clock.monoMs();
      const batchDue = () =>
        this.#batch.length >= this.#batchSize ||
        (this.#batch.length > 0 && now - this.#lastFlushAttemptMono >= this.#flushIntervalMs);
      if (now < this.#backoffUntilMono) {
        // Backing off after a failure: due batches go straight to the retry buffer, so an outage
        // costs exactly the rows that do not fit there (and the queue keeps draining).
        while (batchDue()) {
          this.#park(this.#batch.splice(0));
          this.#lastFlushAttemptMono = now;
          this.#fillBatch(this.#batchSize);
        }
        return;
      }
      if (this.#retry.length > 0 || batchDue()) {
        this.#inFlight = this.#writeOnce(this.#tuning.writeTimeoutMs).then(() => {}).finally(
          () => {
            this.#inFlight = null;
            if (this.#hasUrgentWork()) this.#kick();
          },
        );
      }
    } catch (err) {
      this.#reportError(`flush loop: ${errorText(err)}`);
    }
  }

  #hasUrgentWork(): boolean {
    const now = this.#opts.clock.monoMs();
    if (now < this.#backoffUntilMono) return false;
    return this.#retry.length > 0 || this.#batch.length >= this.#batchSize ||
      this.#queue.length >= this.#batchSize;
  }

  /** Moves rows into the retry buffer, counting the oldest rows it evicts. */
  #park(rows: readonly string[]): void {
    const evicted = this.#retry.pushAll(rows);
    if (evicted > 0) {
      this.#totalFailed += evicted;
      this.#droppedRetry += evicted;
    }
  }

  /** One POST: the oldest retry rows, plus the current batch once the retry buffer fits. */
  async #writeOnce(timeoutMs: number): Promise<WriteOutcome> {
    const maxRetryRows = Math.max(this.#batchSize, MIN_ROWS_PER_WRITE);
    const retried = this.#retry.peek(maxRetryRows);
    const fresh = retried.length === this.#retry.length ? this.#batch.splice(0) : [];
    const count = retried.length + fresh.length;
    if (count === 0) return "ok";
    this.#lastFlushAttemptMono = this.#opts.clock.monoMs();
    const outcome = await this.#post(retried.concat(fresh).join("\n") + "\n", timeoutMs);
    // Nothing else touches the retry buffer while a write is in flight (see #tick), so the
    // peeked rows are still its oldest entries here.
    if (outcome === "ok") {
      this.#retry.dropFront(retried.length);
      this.#totalWritten += count;
      this.#lastFlushAt = this.#opts.clock.nowMs();
      if (!this.#connected && this.#lastError !== null) this.#log.info("write succeeded again");
      this.#connected = true;
      this.#backoffMs = 0;
      this.#backoffUntilMono = 0;
    } else if (outcome === "rejected") {
      this.#retry.dropFront(retried.length);
      this.#totalFailed += count;
      this.#connected = true;
    } else {
      this.#connected = false;
      this.#writeFailures++;
      this.#park(fresh);
      this.#backoffMs = this.#backoffMs === 0
        ? this.#tuning.retryInitialMs
        : Math.min(this.#backoffMs * 2, this.#tuning.retryMaxMs);
      this.#backoffUntilMono = this.#opts.clock.monoMs() + this.#backoffMs;
    }
    return outcome;
  }

  async #post(body: string, timeoutMs: number): Promise<WriteOutcome> {
    const transport = this.#transport;
    if (!transport) return "failed";
    const abort = new AbortController();
    this.#abort = abort;
    const timer = setTimeout(() => abort.abort(), Math.max(1, timeoutMs));
    try {
      await transport.request(this.#writePath, body, {
        method: "POST",
        // accept text: the client then always reads the response body (no leaked stream).
        headers: { "content-type": "text/plain; charset=utf-8", accept: "text/plain" },
        signal: abort.signal,
      });
      return "ok";
    } catch (err) {
      const status = (err as { statusCode?: unknown })?.statusCode;
      if (typeof status === "number") {
        const detail = String((err as { body?: unknown }).body ?? "").slice(0, 200);
        const rejected = status === 400 || status === 413 || status === 422;
        this.#reportError(
          `write ${rejected ? "refused, rows dropped" : "failed, will retry"}: HTTP ${status}${
            detail ? `: ${detail}` : ""
          }`,
        );
        return rejected ? "rejected" : "failed";
      }
      const reason = abort.signal.aborted ? `timed out after ${timeoutMs} ms` : errorText(err);
      this.#reportError(`write failed, will retry: ${reason}`);
      return "failed";
    } finally {
      clearTimeout(timer);
      this.#abort = null;
    }
  }

  /** Waits for the in-flight write up to `ms`, then aborts it (it then settles promptly). */
  async #awaitInFlight(ms: number): Promise<void> {
    const inFlight = this.#inFlight;
    if (!inFlight) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, ms));
    });
    await Promise.race([inFlight, expired]);
    clearTimeout(timer);
    this.#abort?.abort();
    await inFlight;
  }

  // ---- health snapshots -----------------------------------------------------------------------

  async #takeHealthSnapshot(): Promise<void> {
    const snapshot = this.#opts.healthSnapshot;
    if (!snapshot || this.#healthBusy || !this.#running) return;
    this.#healthBusy = true;
    const ts = this.#opts.clock.nowMs();
    try {
      const providers = await snapshot();
      // A snapshot that resolves after stop() is discarded: the final flush is already done.
      if (!this.#running) return;
      this.#appendRows(healthRows(this.#runtimeName, providers, ts));
      this.#lastHealthAt = ts;
      if (this.#batch.length >= this.#batchSize) this.#kick();
    } catch (err) {
      this.#reportError(`health snapshot failed: ${errorText(err)}`);
    } finally {
      this.#healthBusy = false;
    }
  }

  // ---- errors ---------------------------------------------------------------------------------

  #setError(message: string): void {
    this.#lastError = message;
    this.#lastErrorAt = this.#opts.clock.nowMs();
  }

  /** Records the error for the status and logs at most one line per errorLogIntervalMs. */
  #reportError(message: string): void {
    this.#setError(message);
    const now = this.#opts.clock.monoMs();
    if (now - this.#lastErrorLogMono < this.#tuning.errorLogIntervalMs) {
      this.#suppressedErrors++;
      return;
    }
    const suffix = this.#suppressedErrors > 0
      ? ` (${this.#suppressedErrors} similar errors suppressed)`
      : "";
    this.#suppressedErrors = 0;
    this.#lastErrorLogMono = now;
    this.#log.error(`${message}${suffix}`);
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
