/**
 * How a stored event line is judged (parsed, shaped like a RunEvent of this run, not too deep),
 * and its key for seeking: the sequence number, which the registry writes in ascending order.
 */
import type { JournalLine } from "../journal/mod.ts";
import { exceedsJsonDepth } from "./_json_depth.ts";
import type { RunEvent } from "./run_record.ts";

/** How an event line is judged. */
export interface EventLineRules {
  readonly runId: string;
  readonly maxLineBytes: number;
  readonly maxDepth: number;
}

/** Parses one stored event line; null when it is corrupt (or a different run's, or too deep). */
export function parseEventLine(text: string, rules: EventLineRules): RunEvent | null {
  if (text.trim() === "") return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const e = v as Record<string, unknown>;
  if (
    e.run_id !== rules.runId || !Number.isSafeInteger(e.sequence) ||
    typeof e.category !== "string"
  ) {
    return null;
  }
  if (exceedsJsonDepth(e, rules.maxDepth)) return null;
  return e as unknown as RunEvent;
}

/**
 * The event of a line, or null. `final`: the file no longer grows, so a last line without a
 * newline is complete; otherwise it may still be being written and is not read yet.
 */
export function eventOfLine(line: JournalLine, rules: EventLineRules, final: boolean) {
  if (!line.terminated && !final) return null;
  return parseEventLine(line.text, rules);
}
