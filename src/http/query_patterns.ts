/**
 * OpenAPI patterns of the strict integer query parameters, built from the same bounds their
 * parsers apply, so that a client generated from the document is neither stricter nor looser
 * than the server (tests/http/query_pattern_*_test.ts compare them with the server's answers).
 */

/** The digits of an integer from 1 to `max` without leading zeros, as a regular expression. */
export function positiveAtMost(max: string): string {
  const alternatives = max.length > 1 ? [String.raw`[1-9]\d{0,${max.length - 2}}`] : [];
  for (let i = 0; i < max.length; i++) {
    const digit = Number(max[i]);
    const low = i === 0 ? 1 : 0;
    if (digit - 1 < low) continue;
    const rest = max.length - 1 - i;
    const below = digit - 1 === low ? String(low) : `[${low}-${digit - 1}]`;
    const tail = rest === 0 ? "" : rest === 1 ? String.raw`\d` : String.raw`\d{${rest}}`;
    alternatives.push(`${max.slice(0, i)}${below}${tail}`);
  }
  alternatives.push(max);
  return alternatives.join("|");
}

/**
 * The texts a parser of the form `/^\d{1,maxChars}$/` then `min <= n <= max` accepts: 1 to
 * `maxChars` decimal digits (leading zeros allowed, no sign, no spaces) whose value is within
 * [min, max] (min 0 or 1).
 */
export function digitsRangePattern(o: { min: 0 | 1; max: number; maxChars: number }): string {
  if (!Number.isSafeInteger(o.max) || o.max < 1 || String(o.max).length > o.maxChars) {
    throw new RangeError(`digitsRangePattern: bad bounds ${JSON.stringify(o)}`);
  }
  const positive = `0*(?:${positiveAtMost(String(o.max))})`;
  return String.raw`^(?=\d{1,${o.maxChars}}$)(?:${positive}${o.min === 0 ? "|0+" : ""})$`;
}

/** Epoch milliseconds or a sequence number: 1 to 16 digits, at most 2^53-1. */
export const SAFE_DIGITS_PATTERN = digitsRangePattern({
  min: 0,
  max: Number.MAX_SAFE_INTEGER,
  maxChars: 16,
});

/**
 * SAFE_DIGITS_PATTERN as the parsers of those parameters test it (audit since/until, history
 * since_ms/until_ms, run events after_sequence): the document and the server read one expression.
 */
export const SAFE_DIGITS = new RegExp(SAFE_DIGITS_PATTERN, "u");
