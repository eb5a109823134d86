import { concatBytes, escapeControl, type Logger, type LogLevel } from "../common/mod.ts";

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };
/** syslog priorities journald understands as a `<N>` line prefix. */
const SYSLOG_PRIORITY: Record<LogLevel, number> = { debug: 7, info: 6, warn: 4, error: 3 };

export interface LoggerOptions {
  level: LogLevel;
  /** journald format: `<N>` priority prefix and no timestamp (journald adds its own). */
  journald: boolean;
  /** Writes one formatted line; `level` is the line's (a sink may keep warnings over the rest). */
  write: (line: string, level: LogLevel) => void;
  now: () => number;
}

/** A line logger: one line per event, level first; newlines inside messages are escaped. */
export class LineLogger implements Logger {
  readonly #opts: LoggerOptions;
  readonly #scope: string;

  constructor(opts: LoggerOptions, scope = "") {
    this.#opts = opts;
    this.#scope = scope;
  }

  set level(level: LogLevel) {
    this.#opts.level = level;
  }

  debug(message: string): void {
    this.#emit("debug", message);
  }
  info(message: string): void {
    this.#emit("info", message);
  }
  warn(message: string): void {
    this.#emit("warn", message);
  }
  error(message: string): void {
    this.#emit("error", message);
  }

  /**
   * A logger whose lines are scoped `[parent/scope]`. The scope is escaped as a message is
   * (escapeControl), once here: it may be configured text (a provider's id).
   */
  child(scope: string): Logger {
    const escaped = escapeControl(scope);
    return new LineLogger(this.#opts, this.#scope ? `${this.#scope}/${escaped}` : escaped);
  }

  #emit(level: LogLevel, message: string): void {
    if (RANK[level] < RANK[this.#opts.level]) return;
    const text = escapeControl(message);
    const scope = this.#scope ? `[${this.#scope}] ` : "";
    const line = this.#opts.journald
      ? `<${SYSLOG_PRIORITY[level]}>${scope}${text}`
      : `${level.toUpperCase().padEnd(5)} ${
        new Date(this.#opts.now()).toISOString()
      } ${scope}${text}`;
    this.#opts.write(line, level);
  }
}

const encoder = new TextEncoder();

/**
 * Most bytes of log lines waiting for stderr. Past it a line is dropped and counted, and a WARN
 * line says how many once stderr takes lines again: stderr is a pipe or journald's socket, and a
 * reader that stops (journald stalled, a pager or `tee` that stopped reading, a terminal paused
 * with Ctrl-S) must cost log lines, never the runtime.
 */
export const LOG_QUEUE_MAX_BYTES = 1024 * 1024;
/**
 * Of LOG_QUEUE_MAX_BYTES, what only warnings and errors may fill: a flood of DEBUG or INFO lines
 * behind a stalled reader leaves room for the lines that matter (an e-stop's, a provider's loss).
 */
export const LOG_QUEUE_WARN_RESERVE_BYTES = 256 * 1024;
/** Most bytes handed to one stderr write (whole lines, at least one). */
const LOG_WRITE_CHUNK_BYTES = 64 * 1024;
/** Longest the process waits at exit for its queued log lines to reach stderr. */
export const LOG_FLUSH_AT_EXIT_MS = 2000;

/**
 * The process's stderr as the logger writes it: lines are queued (bounded by LOG_QUEUE_MAX_BYTES,
 * the last LOG_QUEUE_WARN_RESERVE_BYTES for warnings and errors) and written by an asynchronous
 * write, in order. A synchronous write blocked the whole process,
 * its API and e-stop included, as soon as the reader stopped and the pipe filled (64 KiB). A write
 * that fails (stderr a file on a full disk) drops the lines waiting, counted; the next line tries
 * again. Only a stderr that is gone (a broken pipe, a closed descriptor) ends the writing.
 */
export class StderrQueue {
  readonly #write: (bytes: Uint8Array) => Promise<number>;
  #lines: Uint8Array[] = [];
  #bytes = 0;
  #dropped = 0;
  /** Why the lines counted in #dropped were: the last failed write's error, else null (a stall). */
  #dropReason: string | null = null;
  #closed = false;
  #writing: Promise<void> | null = null;
  /**
   * Says how many lines were dropped and why (a failed write's error, or null: stderr was not
   * taking them fast enough), as a line of the logger's own format; set by the logger.
   */
  onDropped: (count: number, reason: string | null) => void = () => {};

  constructor(write: (bytes: Uint8Array) => Promise<number>) {
    this.#write = write;
  }

  push(line: string, level: LogLevel): void {
    if (this.#closed) return;
    const bytes = encoder.encode(line + "\n");
    const bound = RANK[level] >= RANK.warn
      ? LOG_QUEUE_MAX_BYTES
      : LOG_QUEUE_MAX_BYTES - LOG_QUEUE_WARN_RESERVE_BYTES;
    if (this.#bytes + bytes.length > bound) {
      this.#dropped++;
      return;
    }
    this.#lines.push(bytes);
    this.#bytes += bytes.length;
    this.#writing ??= this.#pump();
  }

  /** Resolves once every queued line is written, or after `timeoutMs` (stderr not taking them). */
  async flush(timeoutMs: number): Promise<void> {
    if (this.#writing === null) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((r) => timer = setTimeout(r, timeoutMs));
    await Promise.race([this.#writing, late]);
    clearTimeout(timer);
  }

  async #pump(): Promise<void> {
    /** Lines of the chunk being written (taken out of #lines). */
    let writing = 0;
    try {
      while (this.#lines.length > 0) {
        let n = 0;
        let size = 0;
        while (
          n < this.#lines.length &&
          (n === 0 || size + this.#lines[n]!.length <= LOG_WRITE_CHUNK_BYTES)
        ) {
          size += this.#lines[n++]!.length;
        }
        const chunk = concatBytes(this.#lines.splice(0, n));
        writing = n;
        for (let at = 0; at < chunk.length;) at += await this.#write(chunk.subarray(at));
        writing = 0;
        this.#bytes -= size;
        if (this.#dropped > 0) {
          const count = this.#dropped;
          const reason = this.#dropReason;
          this.#dropped = 0;
          this.#dropReason = null;
          this.onDropped(count, reason);
        }
      }
    } catch (err) {
      if (err instanceof Deno.errors.BrokenPipe || err instanceof Deno.errors.BadResource) {
        // stderr gone (its reader ended, the descriptor closed): nothing sensible left to do
        this.#closed = true;
      } else {
        // A write that failed for now (stderr a file on a disk that is full, or failing): the
        // lines waiting are dropped and counted, and the next line tries again, so logging goes
        // on once the disk takes writes (a loop of retries here would spin on a full disk).
        this.#dropped += writing + this.#lines.length;
        this.#dropReason = err instanceof Error ? err.message : String(err);
      }
      this.#lines = [];
      this.#bytes = 0;
    } finally {
      this.#writing = null;
    }
  }
}

const stderrQueue = new StderrQueue((bytes) => Deno.stderr.write(bytes));

/**
 * Waits (at most `timeoutMs`) for the log lines still queued for stderr: before the process
 * exits, so its last lines are not lost, and never longer, so a stalled reader cannot keep it.
 */
export function flushStderrLog(timeoutMs = LOG_FLUSH_AT_EXIT_MS): Promise<void> {
  return stderrQueue.flush(timeoutMs);
}

/** The process logger writing to stderr; journald format when JOURNAL_STREAM is set. */
export function createStderrLogger(level: LogLevel): LineLogger {
  let journald = false;
  try {
    journald = Boolean(Deno.env.get("JOURNAL_STREAM"));
  } catch {
    // env permission not granted: plain format
  }
  const log = new LineLogger({
    level,
    journald,
    now: () => Date.now(),
    write: (line, level) => stderrQueue.push(line, level),
  });
  stderrQueue.onDropped = (count, reason) =>
    log.warn(
      reason === null
        ? `${count} log line(s) dropped: stderr was not taking them (the log queue holds at ` +
          `most ${LOG_QUEUE_MAX_BYTES} bytes, the last ${LOG_QUEUE_WARN_RESERVE_BYTES} for ` +
          `warnings and errors)`
        : `${count} log line(s) dropped: writing them to stderr failed (${reason})`,
    );
  return log;
}
