/**
 * The audit entry and its bounds: every text of an entry (a reason, an argument's string, an
 * argument's name, an origin's identity) is cut to AUDIT_MAX_TEXT_BYTES with a marker saying how
 * much was kept, and a whole entry never exceeds AUDIT_MAX_ENTRY_BYTES on disk (args and result
 * give way first, then every text is cut shorter). An entry is bounded, never dropped: a provider
 * cannot hide its failure behind a long error message.
 */
import { toJsonText, utf8Length } from "../common/mod.ts";
import type { AuditAction, AuditOrigin, AuditOutcome } from "../control/mod.ts";

/** Largest journal line (an entry with its write-ahead bookkeeping). */
export const AUDIT_MAX_ENTRY_BYTES = 16 * 1024;
/** Longest text of one field (JSON-escaped UTF-8 bytes); longer is cut, with a marker. */
export const AUDIT_MAX_TEXT_BYTES = 4096;
/** The bound of every text of an entry that is still too large once args and result gave way. */
export const AUDIT_MAX_SHORT_TEXT_BYTES = 256;
/** Room kept in a line for the write-ahead ids an entry settles (`intents`). */
export const AUDIT_LINE_RESERVE_BYTES = 512;

/**
 * What an entry records: a decision (see AuditAction), `gap`: entries lost while the journal
 * could not be written (`count` of them).
 */
export type AuditEntryAction = AuditAction | "gap";

/**
 * A decision's outcome; `interrupted`: a call that passed every check, written ahead, whose
 * outcome was never recorded because the runtime ended first (found at the next start).
 */
export type AuditEntryOutcome = AuditOutcome | "interrupted";

/** One entry as written to the journal and served by GET /v0/audit. */
export interface AuditEntry {
  /** Runtime-wide order of closing (restarts at 1 with the process; not an id across restarts). */
  seq: number;
  /** The first decision's time (= first_time_epoch_ms). */
  time_epoch_ms: number;
  first_time_epoch_ms: number;
  last_time_epoch_ms: number;
  /** Decisions this entry stands for (> 1: collapsed); for `gap`, the entries lost. */
  count: number;
  origin: AuditOrigin;
  action: AuditEntryAction;
  device_handle: string | null;
  function: string | null;
  args: Readonly<Record<string, unknown>> | null;
  /** The runtime mode when the (first) decision was made. */
  mode: string;
  outcome: AuditEntryOutcome;
  reason: string | null;
  refused_by: string | null;
  /** The last decision's result. */
  result: Readonly<Record<string, unknown>> | null;
  /** The last decision's latency. */
  latency_ms: number | null;
}

/** An entry within the bounds and its JSON text (64-bit integers beyond 2^53 exact). */
export interface BoundedEntry {
  readonly entry: AuditEntry;
  readonly text: string;
}

/** The entry within the bounds (the same object when it already is) and its JSON text. */
export function boundedEntry(entry: AuditEntry): BoundedEntry {
  const text = toJsonText(entry);
  const bytes = utf8Length(text);
  // No field can be longer than the whole entry.
  if (bytes <= AUDIT_MAX_TEXT_BYTES) return { entry, text };
  const b = bounded(entry as unknown as Record<string, unknown>, bytes);
  return { entry: b.entry as unknown as AuditEntry, text: b.text };
}

/** The JSON text of an entry within the bounds. */
export function boundedEntryText(entry: AuditEntry): string {
  return boundedEntry(entry).text;
}

/** `value` (a record of the journal) within the bounds: texts cut, then args/result, then texts. */
export function bounded(
  value: Record<string, unknown>,
  bytes = utf8Length(toJsonText(value)),
): { entry: Record<string, unknown>; text: string } {
  const limit = AUDIT_MAX_ENTRY_BYTES - AUDIT_LINE_RESERVE_BYTES;
  let v = bytes > AUDIT_MAX_TEXT_BYTES ? boundTexts(value, AUDIT_MAX_TEXT_BYTES) : value;
  let text = toJsonText(v);
  if (utf8Length(text) <= limit) return { entry: v, text };
  const note = { truncated: `entry exceeded ${AUDIT_MAX_ENTRY_BYTES} bytes` };
  const notes = {
    ...("args" in value ? { args: value.args === null ? null : note } : {}),
    ...("result" in value ? { result: value.result === null ? null : note } : {}),
  };
  v = { ...v, ...notes };
  text = toJsonText(v);
  if (utf8Length(text) <= limit) return { entry: v, text };
  // Every text cut shorter, from the original (one marker, with the original size).
  v = boundTexts({ ...value, ...notes }, AUDIT_MAX_SHORT_TEXT_BYTES);
  return { entry: v, text: toJsonText(v) };
}

/** A copy of `v` with every string and object key cut to `limit` JSON-escaped bytes. */
function boundTexts(v: Record<string, unknown>, limit: number): Record<string, unknown>;
function boundTexts(v: unknown, limit: number): unknown;
function boundTexts(v: unknown, limit: number): unknown {
  if (typeof v === "string") return boundText(v, limit);
  if (Array.isArray(v)) return v.map((x) => boundTexts(x, limit));
  if (typeof v !== "object" || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    let key = boundText(k, limit);
    for (let i = 2; key in out; i++) key = `${boundText(k, limit - 8)}#${i}`; // cut names collide
    out[key] = boundTexts(x, limit);
  }
  return out;
}

/** Bytes of `s` as stored: UTF-8 of its JSON escaping, without the quotes. */
function storedBytes(s: string): number {
  return utf8Length(JSON.stringify(s)) - 2;
}

/**
 * `s` when it takes at most `limit` bytes as stored; else its longest head that fits with the
 * marker ` [truncated: K of N bytes kept]` (K, N: UTF-8 bytes of the head and of `s`).
 */
export function boundText(s: string, limit: number): string {
  if (s.length <= limit / 6 || storedBytes(s) <= limit) return s;
  const total = utf8Length(s);
  const room = limit - ` [truncated: ${total} of ${total} bytes kept]`.length;
  let lo = 0;
  let hi = Math.min(s.length, Math.max(0, room));
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (storedBytes(head(s, mid)) <= room) lo = mid;
    else hi = mid - 1;
  }
  const kept = head(s, lo);
  return `${kept} [truncated: ${utf8Length(kept)} of ${total} bytes kept]`;
}

/** The first `n` UTF-16 units of `s`, one fewer when that would split a surrogate pair. */
function head(s: string, n: number): string {
  const c = s.charCodeAt(n - 1);
  return s.slice(0, c >= 0xd800 && c <= 0xdbff ? n - 1 : n);
}
