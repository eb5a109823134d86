import type { Logger, LogLevel } from "../common/mod.ts";

const RANK: Readonly<Record<LogLevel, number>> = { debug: 0, info: 1, warn: 2, error: 3 };
const encoder = new TextEncoder();

/**
 * A Logger writing one line per event to stderr, level first: `INFO [scope] message`.
 * stdout belongs to the protocol, so a provider must never log there. Newlines in messages are
 * escaped so one event stays one line.
 */
export function createStderrLogger(scope: string, minLevel: LogLevel = "info"): Logger {
  const write = (level: LogLevel, message: string): void => {
    if (RANK[level] < RANK[minLevel]) return;
    const line = `${level.toUpperCase()} [${scope}] ${message.replaceAll("\n", "\\n")}\n`;
    try {
      Deno.stderr.writeSync(encoder.encode(line));
    } catch {
      // stderr gone (runtime exited): logging must never take the provider down.
    }
  };
  return {
    debug: (m) => write("debug", m),
    info: (m) => write("info", m),
    warn: (m) => write("warn", m),
    error: (m) => write("error", m),
    child: (sub) => createStderrLogger(`${scope}] [${sub}`, minLevel),
  };
}
