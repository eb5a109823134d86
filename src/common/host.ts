/**
 * Interfaces to the host (clock, logging, processes). Implementations live in src/host/, the
 * only folder that touches Deno.*; everything else receives these through constructors.
 */

/** Wall and monotonic time in milliseconds. */
export interface Clock {
  /** Epoch milliseconds (wall clock). */
  nowMs(): number;
  /** Monotonic milliseconds (for durations and deadlines). */
  monoMs(): number;
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
