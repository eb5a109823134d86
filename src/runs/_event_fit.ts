/**
 * Fits an automatic event (a bus event, a call) into one stored record: an alarm message from the
 * configuration, a provider's error string or an e-stop reason may be longer than a line the
 * reader accepts, and a line it cannot read is skipped as corrupt -- the event would be lost in
 * silence. Its long strings are cut instead (each ends with CUT_MARK), and the payload says so
 * (`truncated: true`); when even that does not fit (thousands of members), the payload is
 * replaced by `{truncated: true, original_bytes}`. The event is never dropped.
 */
import { utf8Length } from "../common/mod.ts";
import type { RunEvent } from "./run_record.ts";

/** What a cut string ends with (ASCII). */
export const CUT_MARK = "...[cut]";

/** The event as its stored line, at most `maxBytes` bytes of UTF-8. */
export function fitEvent(event: RunEvent, maxBytes: number): { event: RunEvent; line: string } {
  const line = JSON.stringify(event);
  const bytes = utf8Length(line);
  if (bytes <= maxBytes) return { event, line };
  // The longest string each string is cut to: the largest that fits (a bisection).
  let lo = 0;
  let hi = longestString(event);
  let best: { event: RunEvent; line: string } | null = null;
  while (lo <= hi) {
    const cap = Math.floor((lo + hi) / 2);
    const cut: RunEvent = {
      ...event,
      type: cutString(event.type, cap),
      payload: { ...(cutStrings(event.payload, cap) as Record<string, unknown>), truncated: true },
    };
    const cutLine = JSON.stringify(cut);
    if (utf8Length(cutLine) <= maxBytes) {
      best = { event: cut, line: cutLine };
      lo = cap + 1;
    } else hi = cap - 1;
  }
  if (best !== null) return best;
  const note: RunEvent = {
    ...event,
    type: cutString(event.type, 64),
    payload: { truncated: true, original_bytes: bytes },
  };
  return { event: note, line: JSON.stringify(note) };
}

/** `s` cut to `cap` UTF-16 units plus CUT_MARK (never inside a surrogate pair). */
function cutString(s: string, cap: number): string {
  if (s.length <= cap + CUT_MARK.length) return s;
  let end = cap;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return s.slice(0, end) + CUT_MARK;
}

/** A copy of a JSON value with every string (not the keys) cut to `cap`. */
function cutStrings(v: unknown, cap: number): unknown {
  if (typeof v === "string") return cutString(v, cap);
  if (Array.isArray(v)) return v.map((x) => cutStrings(x, cap));
  if (typeof v === "object" && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = cutStrings(x, cap);
    return out;
  }
  return v;
}

/** Length of the longest string of the event (type and payload). */
function longestString(event: RunEvent): number {
  let longest = event.type.length;
  const stack: unknown[] = [event.payload];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") longest = Math.max(longest, v.length);
    else if (typeof v === "object" && v !== null) {
      for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push(x);
    }
  }
  return longest;
}
