/** UTF-8 byte bounds on text (health fields, telemetry strings). */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Truncates to at most `maxBytes` UTF-8 bytes without splitting a code point. */
export function truncateUtf8(s: string, maxBytes: number): string {
  // Each UTF-16 code unit is at most 3 UTF-8 bytes: short strings need no encoding.
  if (s.length * 3 <= maxBytes) return s;
  const bytes = encoder.encode(s);
  if (bytes.length <= maxBytes) return s;
  let end = maxBytes;
  // Back off continuation bytes (10xxxxxx) so the cut lands on a code point boundary.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end));
}

/** The length of `s` in UTF-8 bytes. */
export function utf8Length(s: string): number {
  return encoder.encode(s).length;
}
