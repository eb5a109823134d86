import type { Logger, LogLevel } from "../common/mod.ts";

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };
/** syslog priorities journald understands as a `<N>` line prefix. */
const SYSLOG_PRIORITY: Record<LogLevel, number> = { debug: 7, info: 6, warn: 4, error: 3 };

export interface LoggerOptions {
  level: LogLevel;
  /** journald format: `<N>` priority prefix and no timestamp (journald adds its own). */
  journald: boolean;
  write: (line: string) => void;
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

  child(scope: string): Logger {
    return new LineLogger(this.#opts, this.#scope ? `${this.#scope}/${scope}` : scope);
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
    this.#opts.write(line);
  }
}

/**
 * Keeps one event on one line and printable: newlines become the two characters `\n`, other
 * control characters (CR, ESC from a provider's coloured stderr, ...) `\xNN`; tabs stay.
 * journald splits on newlines and shows a message holding control characters as a blob; a
 * terminal would interpret them.
 */
function escapeControl(message: string): string {
  // deno-lint-ignore no-control-regex
  return message.replace(/\r\n|[\x00-\x08\x0a-\x1f\x7f]/g, (c) => {
    if (c === "\r\n" || c === "\n") return "\\n";
    return `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
  });
}

const encoder = new TextEncoder();

/** The process logger writing to stderr; journald format when JOURNAL_STREAM is set. */
export function createStderrLogger(level: LogLevel): LineLogger {
  let journald = false;
  try {
    journald = Boolean(Deno.env.get("JOURNAL_STREAM"));
  } catch {
    // env permission not granted: plain format
  }
  return new LineLogger({
    level,
    journald,
    now: () => Date.now(),
    write: (line) => {
      try {
        Deno.stderr.writeSync(encoder.encode(line + "\n"));
      } catch {
        // stderr closed: nothing sensible left to do
      }
    },
  });
}
