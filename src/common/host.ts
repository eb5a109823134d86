/**
 * Interfaces to the host (clock, logging, processes). Implementations live in src/host/, the
 * only folder that touches Deno.*; everything else receives these through constructors.
 */
import { errorMessage } from "./errors.ts";

/**
 * A timer set with {@link Clock.setTimer} (opaque: the host's timer handle, or a manual clock's
 * number); cancel it with {@link Clock.clearTimer}.
 */
export type TimerId = unknown;

/**
 * Wall and monotonic time in milliseconds, and timers on the monotonic clock. Everything that
 * reads the time or waits for it takes a Clock, so a test passes one manual clock
 * (tests/helpers/clock.ts) and moves time by hand instead of sleeping.
 *
 * Durations, deadlines, ages and staleness are measured on `monoMs` only: the wall clock may
 * step (NTP, an operator, a dead RTC battery on a Raspberry Pi) and is for display and records.
 */
export interface Clock {
  /** Epoch milliseconds (wall clock): for display and records, never for a duration. */
  nowMs(): number;
  /** Monotonic milliseconds (for durations, ages and deadlines). */
  monoMs(): number;
  /**
   * Calls `fn` once, `ms` milliseconds from now on the monotonic clock (a negative or NaN delay
   * counts as 0). A callback that throws is reported as an uncaught error, like a timer's.
   */
  setTimer(fn: () => void, ms: number): TimerId;
  /** Cancels a timer (a no-op for one that has fired or was cleared already). */
  clearTimer(id: TimerId): void;
}

/**
 * Reads a clock on a stop path, where a clock that throws must not take a step away: one that
 * fails is asked once more; null when it fails again (no invented time). Each failure is an
 * ERROR line on `log`: `<what>: reading the clock failed: <why>; asked once more`, then
 * `<thenWhat>: reading the clock failed: <why>` (`thenWhat` says what is left out).
 */
export function readClockTwice(
  read: () => number,
  log: Logger | undefined,
  what: string,
  thenWhat: string,
): number | null {
  try {
    return read();
  } catch (err) {
    log?.error(`${what}: reading the clock failed: ${errorMessage(err)}; asked once more`);
  }
  try {
    return read();
  } catch (err) {
    log?.error(`${thenWhat}: reading the clock failed: ${errorMessage(err)}`);
    return null;
  }
}

/**
 * `log` (and its children) whose lines never throw: a line it fails to write (a closed stderr) is
 * lost. For the stop path, where a log line must never take a stop action, its failure's report
 * or an answer away.
 */
export function neverThrowing(log: Logger): Logger {
  return eachLine(log, (write) => (message) => {
    try {
      write(message);
    } catch { /* nowhere left to say it */ }
  });
}

/**
 * `log` (and its children) writing no line once `silent()` is true: what a runtime's stop ended
 * says nothing after `runtime stopped` (the e-stop's read-backs, Estop.endReadBackLines).
 */
export function silencedWhen(log: Logger, silent: () => boolean): Logger {
  return eachLine(log, (write) => (message) => {
    if (!silent()) write(message);
  });
}

/** `log` with each level's line written through `wrap`, its children wrapped alike. */
function eachLine(
  log: Logger,
  wrap: (write: (message: string) => void) => (message: string) => void,
): Logger {
  return {
    debug: wrap((m) => log.debug(m)),
    info: wrap((m) => log.info(m)),
    warn: wrap((m) => log.warn(m)),
    error: wrap((m) => log.error(m)),
    child: (scope) => eachLine(log.child(scope), wrap),
  };
}

/**
 * A change of wall minus monotonic time this large is a step of the wall clock (NTP, an operator,
 * a board's first synchronisation), not its slewing (NTP slews at most 0.5 ms per second): what
 * follows the wall clock's steps (the history ring's horizon, a shelve's end as shown) ignores
 * smaller drift.
 */
export const WALL_STEP_MS = 1000;

/** Resolves after `ms` on `clock`; rejects with the signal's reason when `signal` aborts first. */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clock.clearTimer(id);
      reject(signal!.reason);
    };
    const id = clock.setTimer(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Resolves with `p`'s value, or `fallback` after `ms` on `clock` (the timer is always cleared). */
export function raceTimeout<T, F = T>(
  clock: Pick<Clock, "setTimer" | "clearTimer">,
  p: Promise<T>,
  ms: number,
  fallback: F,
): Promise<T | F> {
  let timer: TimerId;
  const t = new Promise<F>((resolve) => (timer = clock.setTimer(() => resolve(fallback), ms)));
  return Promise.race([p, t]).finally(() => clock.clearTimer(timer));
}

export type LogLevel = "debug" | "info" | "warn" | "error";

export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

/** One line per event, level first. Never pass secrets (tokens, auth headers). */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  /** A logger whose lines are prefixed with `[scope]`. */
  child(scope: string): Logger;
}

/**
 * A spawned provider process: the shape of a Deno.ChildProcess, used once. The provider leads its
 * own process group, which holds whatever it spawns (helpers).
 */
export interface ProviderProcess {
  readonly pid: number;
  readonly stdin: WritableStream<Uint8Array>;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  /**
   * Resolves with the exit code (128+signal for a signal) once the process ended; by then
   * whatever it left in its process group has been sent SIGKILL.
   */
  readonly exited: Promise<{ code: number; signal: string | null }>;
  /** Signals the provider's whole process group (a no-op once the provider has exited). */
  kill(signal: "SIGTERM" | "SIGKILL"): void;
}

export interface SpawnOptions {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
}

/**
 * Starts a provider process with piped stdin/stdout/stderr, in its own process group, without the
 * runtime's secrets in its environment. Throws when it cannot start.
 */
export type SpawnFn = (options: SpawnOptions) => ProviderProcess;

/**
 * What setting this process's session priority found (src/host/priority.ts): `set`, or why the
 * priority was left as it was.
 */
export type PriorityOutcome =
  | "set"
  | "autogroups_off"
  | "not_session_leader"
  | "not_permitted"
  | "no_autogroups"
  | "busy";

/** A PriorityOutcome, with the kernel's words when it refused otherwise. */
export interface PriorityResult {
  readonly outcome: PriorityOutcome;
  readonly detail?: string;
}

/** Sets this process's session to an autogroup nice (Linux; src/host/priority.ts). */
export type SetSessionPriorityFn = (nice: number) => Promise<PriorityResult>;

/** What the process uses (GET /metrics); read by src/host/, injected by the composition root. */
export interface ProcessStats {
  /** Resident set size in bytes. */
  readonly rssBytes: number;
  /** User + system CPU time in seconds since the process started; null where unreadable. */
  readonly cpuSeconds: number | null;
  /** JavaScript heap in use and reserved (V8), bytes: a leak shows as rising heap in use. */
  readonly heapUsedBytes: number;
  readonly heapTotalBytes: number;
}
