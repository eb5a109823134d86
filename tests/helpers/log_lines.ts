/** A real LineLogger whose lines a test keeps, to assert on what was logged (and how much). */
import type { LogLevel } from "../../src/common/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";

/**
 * A LineLogger writing each line into `lines` (the caller's array when given, else a new one).
 * Defaults: level "debug", journald false, timestamps from Date.now.
 */
export function capturingLogger(
  o: { level?: LogLevel; now?: () => number; journald?: boolean; lines?: string[] } = {},
): { log: LineLogger; lines: string[] } {
  const lines = o.lines ?? [];
  const log = new LineLogger({
    level: o.level ?? "debug",
    journald: o.journald ?? false,
    now: o.now ?? (() => Date.now()),
    write: (line) => lines.push(line),
  });
  return { log, lines };
}
