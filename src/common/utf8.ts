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

const NON_ASCII = /[^ -~\t\n\r]/; // anything but printable ASCII and common whitespace

/**
 * The length of `s` in UTF-8 bytes as TextEncoder writes it (a lone surrogate as U+FFFD, 3 bytes),
 * without encoding it. (The ADPP codec keeps its own copy: it imports nothing.)
 */
export function utf8Length(s: string): number {
  if (!NON_ASCII.test(s)) return s.length; // the common case, without a loop in JS
  let len = 0;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) len += 1;
    else if (c < 0x800) len += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        len += 4;
        i++;
      } else len += 3;
    } else len += 3;
  }
  return len;
}
