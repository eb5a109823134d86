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

/** Largest number of decimal digits of a finite double's integer part (1.8e308). */
const MAX_DOUBLE_DIGITS = 309;

/** A JSON number's text: sign, integer digits, fraction digits, exponent. */
const JSON_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * Whether the JSON number text `source` is exactly the integer `n` that JSON.parse read from it
 * (`9007199254740993` and `2.0000000000000001` are not: parsing rounded them). Used with a
 * JSON.parse reviver's `context.source` by whatever takes integers from JSON text (HTTP bodies,
 * Sparkplug DCMD arguments).
 */
export function integerWrittenExactly(source: string, n: number): boolean {
  if (!JSON_NUMBER.test(source)) return true; // not a JSON number's text: nothing to compare
  const exact = exactJsonInteger(source);
  return exact !== null && exact === BigInt(n);
}

/**
 * The integer the JSON number text `source` denotes, exactly (`9007199254740993`, `1.0e3`:
 * 1000n), or null: not a JSON number's text, a fraction remains (`2.0000000000000001`,
 * `1e-400`), or more digits than a double's integer part has (`1e400`).
 */
export function exactJsonInteger(source: string): bigint | null {
  const m = JSON_NUMBER.exec(source);
  if (m === null) return null;
  const fraction = m[3] ?? "";
  const all = (m[2]! + fraction).replace(/^0+/, "");
  if (all === "") return 0n; // a zero however written
  const digits = all.replace(/0+$/, "");
  // The value is digits * 10^exp, digits without trailing zeros.
  const exp = Number(m[4] ?? "0") - fraction.length + (all.length - digits.length);
  if (!(exp >= 0)) return null; // a fraction remains (or an exponent beyond any double)
  if (digits.length + exp > MAX_DOUBLE_DIGITS) return null;
  return BigInt(m[1] + digits) * 10n ** BigInt(exp);
}

/** A JSON number's text that is an integer written in plain digits. */
const INTEGER_DIGITS = /^-?\d+$/;

/**
 * JSON.parse that keeps an integer a double cannot hold (beyond +/-(2^53-1), written in plain
 * digits, as toJsonText writes a bigint) exact, as a bigint; every other value as JSON.parse
 * reads it. Throws as JSON.parse does.
 */
export function parseJsonExact(text: string): unknown {
  return JSON.parse(text, exactIntegerReviver);
}

function exactIntegerReviver(
  _key: string,
  value: unknown,
  context?: { source?: string },
): unknown {
  if (
    typeof value === "number" && !Number.isSafeInteger(value) &&
    context?.source !== undefined && INTEGER_DIGITS.test(context.source)
  ) {
    return BigInt(context.source);
  }
  return value;
}

/**
 * A plain JSON copy of `value` whose bigints (integers beyond +/-2^53) are their decimal digits as
 * strings: for a record JSON.stringify writes and JSON.parse reads back (a run's event), where a
 * number would be rounded to a neighbouring integer. Members JSON leaves out (undefined,
 * functions) are left out.
 */
export function bigintsAsDigits(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return value.map((x) => bigintsAsDigits(x) ?? null);
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(value)) {
      const v = bigintsAsDigits(x);
      if (v !== undefined) out[k] = v;
    }
    return out;
  }
  return typeof value === "function" ? undefined : value;
}
