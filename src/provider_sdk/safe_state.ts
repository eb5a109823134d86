import { type Logger, MAX_NAMED_IN_WARNING, namedList } from "../common/mod.ts";
import { type ResponsePayloads, WireProviderState } from "../adpp/mod.ts";
import { errorMessageText, statusMessageText } from "./_status_message.ts";

type MaybePromise<T> = T | Promise<T>;

/**
 * Why the SDK applied a provider's safe state: the lease ran out, stdin reached EOF (the runtime is
 * gone), the serve loop ended on a protocol error, SIGTERM/SIGINT, or a `stop` signal of
 * serveProvider that named no signal.
 */
export type SafeStateReason =
  | "lease_expired"
  | "stdin_eof"
  | "serve_error"
  | "SIGTERM"
  | "SIGINT"
  | "stopped";

/** What an applySafeState reports back: the devices it drove to their safe state. */
export interface SafeStateSummary {
  readonly devices: readonly string[];
}

/** A provider's safe-state callback (ProviderHandler.applySafeState). */
export type ApplySafeState = (reason: SafeStateReason) => MaybePromise<SafeStateSummary | void>;

/** Longest lease the SDK accepts: 1 hour. */
export const MAX_LEASE_MS = 3_600_000;

/**
 * Bound on one safe-state application. Past it the SDK stops waiting, logs the failure, reports it
 * in GetHealth and goes on (serving after a lease expiry, exiting otherwise).
 */
export const SAFE_STATE_TIMEOUT_MS = 2_000;

/** Clock and timers of the serve loop (injectable so tests control time). */
export interface ProviderClock {
  /** Monotonic milliseconds (lease bookkeeping). */
  monoMs(): number;
  /** Wall clock in epoch milliseconds (what GetHealth reports). */
  nowMs(): number;
  /** Runs `fn` once after `ms`; returns a handle for clearTimer. */
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

/** The process clock: performance.now, Date.now and the global timers. */
export const SYSTEM_PROVIDER_CLOCK: ProviderClock = {
  monoMs: () => performance.now(),
  nowMs: () => Date.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** The last safe-state application. */
export interface SafeStateRecord {
  readonly reason: SafeStateReason;
  /** Wall-clock time (epoch ms) the application finished or gave up. */
  readonly atMs: number;
  readonly outcome: "applied" | "failed";
  /** Devices the provider reported as made safe; null when its callback reports nothing. */
  readonly devices: readonly string[] | null;
  /** Why the application failed (thrown error or timeout). */
  readonly error?: string;
}

/** Inputs of a SafeStateKeeper. */
export interface SafeStateKeeperOptions {
  /** The provider's declared safe state; undefined when it declares none. */
  readonly apply: ApplySafeState | undefined;
  /** 0 = no lease. Integer in [0, MAX_LEASE_MS]. */
  readonly leaseMs: number;
  readonly clock: ProviderClock;
  readonly logger?: Logger;
}

/**
 * The SDK's side of "providers that go safe on their own": applies the provider's safe state on a
 * lease expiry and on the way out, and adds what happened to GetHealth.
 *
 * The lease is one timer re-armed lazily: a request only writes a timestamp, the timer re-arms
 * itself for the time left when it fires early, and nothing is armed after an expiry until the next
 * request. The lease starts with the first request, pauses while a request is being handled and
 * restarts when its reply has been written.
 */
export class SafeStateKeeper {
  readonly #apply: ApplySafeState | undefined;
  readonly #leaseMs: number;
  readonly #clock: ProviderClock;
  readonly #log: Logger | undefined;
  #timer: unknown = undefined;
  #lastReplyMono = 0;
  #busy = false;
  #closed = false;
  #finalApplied = false;
  /** True from a lease expiry until the next Call answered OK. */
  #afterExpiry = false;
  #expiries = 0;
  #last: SafeStateRecord | null = null;
  /** The application in progress, if any (requests wait for it). */
  applying: Promise<void> | null = null;

  constructor(o: SafeStateKeeperOptions) {
    if (!Number.isInteger(o.leaseMs) || o.leaseMs < 0 || o.leaseMs > MAX_LEASE_MS) {
      throw new RangeError(`leaseMs must be an integer in [0, ${MAX_LEASE_MS}], got ${o.leaseMs}`);
    }
    if (o.leaseMs > 0 && o.apply === undefined) {
      throw new TypeError("leaseMs > 0 needs a handler with applySafeState");
    }
    this.#apply = o.apply;
    this.#leaseMs = o.leaseMs;
    this.#clock = o.clock;
    this.#log = o.logger;
  }

  /** The lease in ms (0 = off). */
  get leaseMs(): number {
    return this.#leaseMs;
  }

  /** The last application, or null. */
  get last(): SafeStateRecord | null {
    return this.#last;
  }

  /** True from a lease expiry until the next Call answered OK. */
  get afterLeaseExpiry(): boolean {
    return this.#afterExpiry;
  }

  /** A request arrived (hot path: no allocation unless the lease timer is not armed). */
  requestStarted(): void {
    if (this.#leaseMs === 0) return;
    this.#busy = true;
    if (this.#timer === undefined && !this.#closed) this.#arm(this.#leaseMs);
  }

  /** Its reply was written. A Call answered OK ends the after-expiry state (commanded again). */
  requestEnded(wasOkCall: boolean): void {
    if (wasOkCall) this.#afterExpiry = false;
    if (this.#leaseMs === 0) return;
    this.#busy = false;
    this.#lastReplyMono = this.#clock.monoMs();
  }

  /**
   * Applies the safe state on the way out (EOF, signal, protocol error) and stops the lease. Only
   * the first call applies; later ones resolve with its outcome.
   */
  async applyFinal(reason: SafeStateReason): Promise<SafeStateRecord | null> {
    this.close();
    if (this.#finalApplied) {
      await this.applying;
      return this.#last;
    }
    this.#finalApplied = true;
    if (this.#apply === undefined) return null;
    await this.applying; // a lease application still running finishes first
    await this.#run(reason);
    return this.#last;
  }

  /** Stops the lease timer (idempotent). */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Adds the safe-state facts to a GetHealth answer: after a lease expiry (until the next OK Call)
   * the provider state is at least DEGRADED and the message says when the safe state was applied;
   * metrics `lease_ms`, `lease_expiries`, `safe_state_active` and, once applied,
   * `safe_state_applied_at_ms` and `safe_state_reason`. Unchanged when there is nothing to say.
   */
  decorateHealth(h: ResponsePayloads["get_health"]): ResponsePayloads["get_health"] {
    if (this.#leaseMs === 0 && this.#last === null) return h;
    const provider = h.provider ?? {};
    const own: Record<string, string> = {
      lease_ms: String(this.#leaseMs),
      lease_expiries: String(this.#expiries),
      safe_state_active: String(this.#afterExpiry),
    };
    const last = this.#last;
    if (last !== null) {
      own.safe_state_applied_at_ms = String(last.atMs);
      own.safe_state_reason = last.reason;
      if (last.outcome === "failed") own.safe_state_error = last.error ?? "failed";
    }
    // The SDK's own first (among the MAX_HEALTH_METRICS answered), with their values over the
    // handler's of the same keys.
    const metrics: Record<string, string> = { ...own, ...(provider.metrics ?? {}), ...own };
    let state = provider.state ?? WireProviderState.UNSPECIFIED;
    let message = provider.message ?? "";
    if (this.#afterExpiry && last !== null) {
      const at = new Date(last.atMs).toISOString();
      const what = last.outcome === "failed"
        ? `safe state FAILED at ${at}: ${last.error ?? "failed"}`
        : last.devices?.length === 0
        ? `no device declares a safe state (${at})`
        : `safe state applied at ${at}`;
      const floor = last.outcome === "applied"
        ? WireProviderState.DEGRADED
        : WireProviderState.FAULT;
      state = Math.max(state, floor) as typeof state;
      message = `lease expired: ${what}` +
        (message === "" || message === "ok" ? "" : `; ${message}`);
    }
    return { ...h, provider: { ...provider, state, message, metrics } };
  }

  #arm(ms: number): void {
    this.#timer = this.#clock.setTimer(() => this.#onTimer(), ms);
  }

  #onTimer(): void {
    this.#timer = undefined;
    if (this.#closed) return;
    if (this.#busy) return this.#arm(this.#leaseMs);
    const left = this.#lastReplyMono + this.#leaseMs - this.#clock.monoMs();
    if (left > 0) return this.#arm(Math.ceil(left));
    // Expired: not re-armed until the next request arrives.
    this.#expiries++;
    this.#afterExpiry = true;
    void this.#run("lease_expired");
  }

  #run(reason: SafeStateReason): Promise<void> {
    const started = this.#clock.monoMs();
    const run = (async () => {
      let timer: unknown = undefined;
      const timeout = new Promise<"timeout">((resolve) => {
        timer = this.#clock.setTimer(() => resolve("timeout"), SAFE_STATE_TIMEOUT_MS);
      });
      let record: SafeStateRecord;
      try {
        const applied = Promise.resolve().then(() => this.#apply?.(reason));
        const r = await Promise.race([applied, timeout]);
        if (r === "timeout") {
          applied.catch(() => {}); // a late failure has nothing left to report to
          throw new Error(`did not finish within ${SAFE_STATE_TIMEOUT_MS} ms`);
        }
        record = {
          reason,
          atMs: this.#clock.nowMs(),
          outcome: "applied",
          devices: r ? [...r.devices] : null,
        };
      } catch (err) {
        record = {
          reason,
          atMs: this.#clock.nowMs(),
          outcome: "failed",
          devices: null,
          // Cut: it goes into every GetHealth answer (message, metric) and a log line.
          error: errorMessageText(err),
        };
      } finally {
        if (timer !== undefined) this.#clock.clearTimer(timer);
      }
      this.#last = record;
      this.#logRecord(record, Math.round(this.#clock.monoMs() - started));
    })();
    const tracked: Promise<void> = run.finally(() => {
      if (this.applying === tracked) this.applying = null;
    });
    this.applying = tracked;
    return tracked;
  }

  #logRecord(r: SafeStateRecord, tookMs: number): void {
    const why = r.reason === "lease_expired"
      ? `lease expired (no request for ${this.#leaseMs} ms)`
      : r.reason === "stdin_eof"
      ? "stdin closed"
      : r.reason === "serve_error"
      ? "serve loop ended on an error"
      : r.reason;
    if (r.outcome === "failed") {
      this.#log?.error(`${why}: safe state FAILED after ${tookMs} ms: ${r.error}`);
      return;
    }
    const line = r.devices?.length === 0
      ? `${why}: no device declares a safe state`
      : `${why}: safe state applied${r.devices === null ? "" : ` to ${madeSafe(r.devices)}`}` +
        ` (${tookMs} ms)`;
    if (r.reason === "lease_expired") this.#log?.warn(line);
    else this.#log?.info(line);
  }
}

/**
 * The devices a safe-state log line names: the first MAX_NAMED_IN_WARNING, each cut
 * (statusMessageText), the rest counted, so that one line stays bounded however many devices the
 * provider reports.
 */
function madeSafe(devices: readonly string[]): string {
  return namedList(devices, MAX_NAMED_IN_WARNING, statusMessageText);
}
