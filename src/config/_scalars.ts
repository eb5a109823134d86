/**
 * Hook and safety call arguments: YAML scalar text -> typed value. Quotes are not significant, so
 * `"120"` and `120` are both int64 and `1e3` is a string whether quoted or not; this is how anolis
 * reads them and existing configs rely on it.
 */
import type { CallArgValue } from "./types.ts";

const INT_RE = /^[+-]?\d+$/;
const DOUBLE_RE = /^[+-]?(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Result of converting one scalar: the typed value, or why it cannot be used. */
export type ScalarConversion = { ok: true; value: CallArgValue } | { ok: false; reason: string };

/** Converts the source text of a YAML scalar to a call argument value. */
export function convertCallArg(text: string): ScalarConversion {
  if (text === "true" || text === "false") {
    return { ok: true, value: { type: "bool", bool: text === "true" } };
  }
  if (INT_RE.test(text)) {
    const big = BigInt(text);
    if (big < INT64_MIN || big > INT64_MAX) {
      return { ok: false, reason: `value out of range: ${text} does not fit a 64-bit integer` };
    }
    const n = Number(big);
    // Call arguments travel as JS numbers; refuse what would silently lose digits.
    if (!Number.isSafeInteger(n)) {
      return {
        ok: false,
        reason: `value out of range: ${text} is beyond \u00b1${Number.MAX_SAFE_INTEGER} ` +
          `and would lose precision`,
      };
    }
    return { ok: true, value: { type: "int64", int64: n } };
  }
  if (DOUBLE_RE.test(text)) {
    const d = Number(text);
    if (!Number.isFinite(d)) {
      return { ok: false, reason: `value out of range: ${text} does not fit a double` };
    }
    return { ok: true, value: { type: "double", double: d } };
  }
  return { ok: true, value: { type: "string", string: text } };
}
