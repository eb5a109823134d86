/**
 * InfluxDB line protocol formatting (telemetry.md §2-§4, §8).
 *
 * We format rows ourselves instead of using the client's `Point`: the contract fixes escaping
 * (§8: newline/CR/tab become literal `\n` `\r` `\t`, other control bytes are dropped) and field
 * order, which `Point` does not reproduce.
 *
 * Doubles are printed with JavaScript's shortest round-trip formatting (`String(n)`, e.g.
 * 23.456789 stays 23.456789, 1e21 prints as 1e+21) instead of anolis' 6 significant digits, so
 * no precision is lost. NaN and ±Infinity are not representable in line protocol: such fields are
 * omitted.
 */

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

/** Drops control bytes (<0x20, 0x7F) except \n \r \t, which become their two-char escapes. */
function escapeControls(s: string): string {
  // deno-lint-ignore no-control-regex
  return s.replace(/[\x00-\x1f\x7f]/g, (c) => {
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    if (c === "\t") return "\\t";
    return "";
  });
}

/** Escapes a tag key or tag value: `,` `=` space `\` get a backslash (§8). */
export function escapeTag(s: string): string {
  return escapeControls(s.replace(/[\\,= ]/g, (c) => `\\${c}`));
}

/** Escapes a measurement name: `,` space `\` get a backslash. */
export function escapeMeasurement(s: string): string {
  return escapeControls(s.replace(/[\\, ]/g, (c) => `\\${c}`));
}

/** Escapes a string field value (without the surrounding quotes): `"` and `\` (§8). */
export function escapeStringField(s: string): string {
  return escapeControls(s.replace(/["\\]/g, (c) => `\\${c}`));
}

function toBigInt(v: number | bigint): bigint | null {
  if (typeof v === "bigint") return v;
  if (!Number.isFinite(v)) return null;
  return BigInt(Math.trunc(v));
}

/** Formats one field value, or null when it cannot be represented (NaN, out of range). */
export function formatFieldValue(f: FieldValue): string | null {
  switch (f.kind) {
    case "double":
      return Number.isFinite(f.value) ? String(f.value) : null;
    case "int": {
      const b = toBigInt(f.value);
      return b === null || b > INT64_MAX || b < INT64_MIN ? null : `${b}i`;
    }
    case "uint": {
      const b = toBigInt(f.value);
      return b === null || b < 0n || b > UINT64_MAX ? null : `${b}u`;
    }
    case "bool":
      return f.value ? "true" : "false";
    case "string":
      return `"${escapeStringField(f.value)}"`;
  }
}

/**
 * Formats a row as one line (no trailing newline). Tags with an empty value are left out (line
 * protocol forbids them); unrepresentable fields are left out; a row without any field is not a
 * valid line and yields null.
 */
export function formatRow(row: Row): string | null {
  let head = escapeMeasurement(row.measurement);
  for (const [k, v] of row.tags) {
    if (v === "") continue;
    head += `,${escapeTag(k)}=${escapeTag(v)}`;
  }
  const parts: string[] = [];
  for (const [k, f] of row.fields) {
    const text = formatFieldValue(f);
    if (text !== null) parts.push(`${escapeTag(k)}=${text}`);
  }
  if (parts.length === 0) return null;
  return `${head} ${parts.join(",")} ${Math.trunc(row.timestampMs)}`;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Truncates to at most `maxBytes` UTF-8 bytes without splitting a code point. */
export function truncateUtf8(s: string, maxBytes: number): string {
  const bytes = encoder.encode(s);
  if (bytes.length <= maxBytes) return s;
  let end = maxBytes;
  // Back off continuation bytes (10xxxxxx) so the cut lands on a code point boundary.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end));
}
