/**
 * InfluxDB line protocol formatting (docs/telemetry.md, "Rows: tags and fields" and "Every line is
 * valid line protocol").
 *
 * We format rows ourselves instead of using the client's `Point`: the rows keep anolis's handling
 * of control characters (newline/CR/tab become literal `\n` `\r` `\t`, others are dropped) and
 * field order, which `Point` does not reproduce, and `Point` writes a tag value's backslash as is,
 * a trailing one too (`C:\` then escapes the `,` after it: InfluxDB refuses the point).
 *
 * Every line {@link formatRow} returns is valid line protocol (InfluxDB v2 reference, "Line
 * protocol": special characters, naming, at least one field):
 * - measurement: `,` space escaped; tag keys, tag values, field keys: `,` `=` space escaped;
 *   string field values: `"` `\` escaped (there a doubled backslash reads as one backslash).
 * - a backslash in a name or tag value is written as is, unless it is followed by another
 *   backslash, `,` `=` space or ends the text: then it is written `%5C` ({@link BACKSLASH_TEXT}).
 *   InfluxDB 1.x/2.x (models/points.go) has no escape for a backslash there: it keeps `\\` as two
 *   backslashes (VictoriaMetrics reads one), and a backslash before the `,` or space that ends the
 *   text escapes that separator, so the point is refused ("invalid tag format") and the whole
 *   write with it. A lone backslash before any other character reads as itself everywhere.
 * - newlines are never written raw (the protocol has no escape for them): \n \r \t become the
 *   two visible characters `\n` `\r` `\t`, other control characters are dropped: C0 (<0x20), DEL
 *   (0x7F) and C1 (U+0080-U+009F; NEL U+0085 ends a line in some viewers), the set
 *   hasControlCharacter in common/ counts.
 * - a tag value is at most {@link MAX_TAG_VALUE_BYTES} as written (a longer id is cut, with a hash
 *   of the whole id in its marker), so the series key stays within InfluxDB's 65,535 bytes.
 * - a name or tag value is never empty: one made only of dropped control characters is written
 *   as those characters percent-encoded (`\x01\x02` -> `%01%02`), an empty one as
 *   {@link EMPTY_ID_TEXT}. Ids without control characters are written exactly as before.
 * - names never start with what the protocol reserves: a measurement, tag key or field key
 *   starting with `_` gets `%5F`, a measurement starting with `#` (a comment line) gets `%23`.
 *   (Our names are fixed `runtime_...` words; tag values may start with anything.)
 * - a row with no writable field or a non-finite timestamp yields null (never an invalid line).
 *
 * Doubles are printed with JavaScript's shortest round-trip formatting (`String(n)`, e.g.
 * 23.456789 stays 23.456789, 1e21 prints as 1e+21) instead of anolis' 6 significant digits, so
 * no precision is lost. NaN and +/-Infinity are not representable in line protocol: such fields are
 * omitted. 64-bit integers (number or bigint) are printed exactly, never through a double.
 */

import { truncateUtf8, utf8Length } from "../common/mod.ts";

/** A typed line-protocol field value. */
export type FieldValue =
  | { kind: "double"; value: number }
  | { kind: "int"; value: number | bigint }
  | { kind: "uint"; value: number | bigint }
  | { kind: "bool"; value: boolean }
  | { kind: "string"; value: string };

/** One row before formatting: tags and fields keep their given order. */
export interface Row {
  readonly measurement: string;
  readonly tags: readonly (readonly [string, string])[];
  readonly fields: readonly (readonly [string, FieldValue])[];
  readonly timestampMs: number;
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);
const UINT64_MAX = (1n << 64n) - 1n;
/** Largest |timestamp| in ms that fits InfluxDB's int64 nanosecond timestamps. */
const MAX_TIMESTAMP_MS = 9_223_372_036_854;

/** Written for a name or tag value that is the empty string (line protocol forbids empty ones). */
export const EMPTY_ID_TEXT = "(empty)";

/**
 * C0, DEL and C1: the control characters common/'s hasControlCharacter counts. One character class,
 * so a row without any (the usual, ASCII one) still costs one regex scan per string.
 */
// deno-lint-ignore no-control-regex
const CONTROL = /[\x00-\x1f\x7f-\x9f]/g;

/**
 * Drops control characters (C0, DEL, C1) except \n \r \t, which become their two-char escapes.
 */
function escapeControls(s: string): string {
  return s.replace(CONTROL, (c) => {
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    if (c === "\t") return "\\t";
    return "";
  });
}

const percent = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`;

/**
 * Keeps an escaped name or tag value from being empty: if escaping left nothing, the raw id was
 * empty or made only of dropped control characters; write it visibly instead.
 */
function nonEmpty(escaped: string, raw: string): string {
  if (escaped !== "") return escaped;
  return raw === "" ? EMPTY_ID_TEXT : raw.replace(/[^]/g, percent);
}

/** Percent-encodes a first character that a name may not start with (`_` reserved, `#` comment). */
function allowedStart(escaped: string, reserved: RegExp): string {
  return reserved.test(escaped) ? percent(escaped[0]!) + escaped.slice(1) : escaped;
}

/** Written for a backslash line protocol cannot carry in a name or tag value (module comment). */
export const BACKSLASH_TEXT = "%5C";

/**
 * What a tag key, tag value or field key escapes, in one scan: `,` `=` space, and a backslash
 * that touches another backslash, one of those or the end (InfluxDB reads none of them as written).
 */
const TAG_SPECIALS = /\\(?=[\\,= ]|$)|[,= ]/g;

/** What a measurement escapes: `,` space, and a backslash as in {@link TAG_SPECIALS}. */
const MEASUREMENT_SPECIALS = /\\(?=[\\,= ]|$)|[, ]/g;

/**
 * Escapes a name or tag value whose controls are already handled: a backslash `specials` matches
 * becomes {@link BACKSLASH_TEXT}, any other match gets a backslash.
 */
function escapeName(s: string, specials: RegExp): string {
  return s.replace(specials, (c) => c === "\\" ? BACKSLASH_TEXT : `\\${c}`);
}

/**
 * Escapes a tag value: `,` `=` space get a backslash, a backslash before a backslash, `,` `=`
 * space or at the end is written `%5C`; never empty.
 */
export function escapeTag(s: string): string {
  return nonEmpty(escapeName(escapeControls(s), TAG_SPECIALS), s);
}

/** Escapes a tag key or field key like a tag value; a leading `_` (reserved) is written `%5F`. */
export function escapeKey(s: string): string {
  return allowedStart(escapeTag(s), /^_/);
}

/**
 * Escapes a measurement name: `,` space get a backslash, a backslash as in {@link escapeTag};
 * never empty; a leading `_` (reserved) or `#` (it would make the line a comment) is
 * percent-encoded.
 */
export function escapeMeasurement(s: string): string {
  return allowedStart(nonEmpty(escapeName(escapeControls(s), MEASUREMENT_SPECIALS), s), /^[_#]/);
}

/** Escapes a string field value (without the surrounding quotes): `"` and `\` get a backslash. */
export function escapeStringField(s: string): string {
  return escapeControls(s.replace(/["\\]/g, (c) => `\\${c}`));
}

/**
 * Most UTF-8 bytes of a string field value as the database stores it: InfluxDB refuses a longer one
 * (its 64 KiB limit), and with it the whole write. A longer value is cut to fit, on a code point
 * boundary, and ends with {@link STRING_FIELD_CUT_MARKER}.
 */
export const MAX_STRING_FIELD_BYTES = 64 * 1024;

/** What ends a string field value cut at {@link MAX_STRING_FIELD_BYTES} (counted in them). */
export const STRING_FIELD_CUT_MARKER = "...[cut]";

/**
 * A string field value as written (without the surrounding quotes), its stored form (controls
 * escaped or dropped, as escapeStringField does) at most {@link MAX_STRING_FIELD_BYTES} UTF-8
 * bytes: a longer one is cut on a code point boundary and ends with the marker.
 */
function stringFieldText(s: string): string {
  // A UTF-16 code unit stores as at most 3 UTF-8 bytes (a control as at most 2): no cut needed.
  if (s.length * 3 <= MAX_STRING_FIELD_BYTES) return escapeStringField(s);
  const stored = escapeControls(s);
  if (utf8Length(stored) <= MAX_STRING_FIELD_BYTES) return escapeStringField(s);
  const cut = truncateUtf8(stored, MAX_STRING_FIELD_BYTES - STRING_FIELD_CUT_MARKER.length) +
    STRING_FIELD_CUT_MARKER;
  // The stored form has no control left; its backslashes (a `\n` made of a newline too) are
  // escaped as the database reads them back.
  return cut.replace(/["\\]/g, (c) => `\\${c}`);
}

/**
 * Most UTF-8 bytes of a tag value as written (escapes included). InfluxDB refuses a point whose
 * series key (measurement and tags, as written) passes 65,535 bytes, and with it the whole write:
 * a row has at most four tags of ids plus `seq`, so four values of this bound and the names stay
 * within it. A longer value (a device, signal or provider id) is cut to fit, on a code point
 * boundary and never inside an escape, and ends with `...[cut:<hash>]` (TAG_VALUE_CUT_MARKER, 8 hex
 * digits of a hash of the whole id): the same id always gives the same tag, two ids cut to one
 * start stay two series.
 */
export const MAX_TAG_VALUE_BYTES = 8 * 1024;

/** What starts the end of a tag value cut at {@link MAX_TAG_VALUE_BYTES}: then `<hash>]`. */
export const TAG_VALUE_CUT_MARKER = "...[cut:";

/** FNV-1a (32 bits) of the UTF-16 code units of `s`, as 8 hex digits: stable across runs. */
function idHash(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, "0");
}

/** A tag value as written: escaped, never empty, at most {@link MAX_TAG_VALUE_BYTES} (cut). */
function tagValueText(s: string): string {
  const escaped = escapeTag(s);
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short values need no counting.
  if (escaped.length * 3 <= MAX_TAG_VALUE_BYTES) return escaped;
  if (utf8Length(escaped) <= MAX_TAG_VALUE_BYTES) return escaped;
  const marker = `${TAG_VALUE_CUT_MARKER}${idHash(s)}]`;
  const cut = truncateUtf8(escaped, MAX_TAG_VALUE_BYTES - marker.length);
  // An escaped value never holds two backslashes in a row: one at the cut is half an escape
  // (`\,` or `\n` cut after `\`) or a lone one; either is dropped.
  return (cut.endsWith("\\") ? cut.slice(0, -1) : cut) + marker;
}

/** The exact integer a number or bigint holds, or null (NaN, +/-Infinity, a fraction). */
function toBigInt(v: number | bigint): bigint | null {
  if (typeof v === "bigint") return v;
  return Number.isInteger(v) ? BigInt(v) : null;
}

/** Formats one field value, or null when it cannot be represented (NaN, +/-Infinity, out of range). */
export function formatFieldValue(f: FieldValue): string | null {
  switch (f.kind) {
    case "double":
      return Number.isFinite(f.value) ? String(f.value) : null;
    case "int": {
      // Safe integers print directly; anything else goes through bigint, never through a double.
      if (Number.isSafeInteger(f.value)) return `${f.value}i`;
      const b = toBigInt(f.value);
      return b === null || b > INT64_MAX || b < INT64_MIN ? null : `${b}i`;
    }
    case "uint": {
      if (Number.isSafeInteger(f.value)) return (f.value as number) < 0 ? null : `${f.value}u`;
      const b = toBigInt(f.value);
      return b === null || b < 0n || b > UINT64_MAX ? null : `${b}u`;
    }
    case "bool":
      return f.value ? "true" : "false";
    case "string":
      return `"${stringFieldText(f.value)}"`;
  }
}

/**
 * Formats a row as one line (no trailing newline). Names and tag values are escaped and never
 * empty (see the module comment); unrepresentable fields are left out. A row without any
 * writable field, or with a timestamp outside what InfluxDB can store, is not a valid line: null.
 */
export function formatRow(row: Row): string | null {
  const ts = row.timestampMs;
  if (!Number.isFinite(ts) || Math.abs(ts) > MAX_TIMESTAMP_MS) return null;
  let head = escapeMeasurement(row.measurement);
  for (const [k, v] of row.tags) head += `,${escapeKey(k)}=${tagValueText(v)}`;
  let fields = "";
  for (const [k, f] of row.fields) {
    const text = formatFieldValue(f);
    if (text !== null) fields += `${fields === "" ? "" : ","}${escapeKey(k)}=${text}`;
  }
  if (fields === "") return null;
  return `${head} ${fields} ${Math.trunc(ts)}`;
}

/** Truncates to at most `maxBytes` UTF-8 bytes without splitting a code point (from common/). */
export { truncateUtf8 };
