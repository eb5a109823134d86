/**
 * The one JSON serialiser for HTTP bodies and SSE frames. Exact 64-bit integers (bigint) are
 * written as their decimal digits as a JSON number, as the C++ runtime writes int64/uint64
 * (`JSON.stringify` alone throws on a bigint).
 */

/** `JSON.rawJSON` (V8, Deno 2.x): not in the TypeScript lib yet. */
const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

function bigintAsNumber(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? rawJson(value.toString()) : value;
}

/**
 * JSON text of `value`; never throws for a bigint anywhere inside it. Takes JSON.stringify's fast
 * path and falls back to a replacer only when a bigint made that throw (rare: integers beyond
 * +/-2^53 only).
 */
export function toJsonText(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    return JSON.stringify(value, bigintAsNumber);
  }
}
