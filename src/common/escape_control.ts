/**
 * Keeps one event on one line and printable: newlines become the two characters `\n`, other
 * control characters (CR, ESC from a provider's coloured stderr or a configuration value, ...,
 * DEL and the C1 controls U+0080-U+009F: NEL U+0085 ends a line in some log viewers) `\xNN`,
 * the line and paragraph separators U+2028/U+2029 `\u2028`/`\u2029`; tabs stay. journald splits
 * on newlines and shows a message holding control characters as a blob; a terminal would
 * interpret them. Used by the log lines (src/host/logger.ts) and the
 * lines `--check-config` prints (src/config/report.ts).
 */
export function escapeControl(message: string): string {
  // deno-lint-ignore no-control-regex
  return message.replace(/\r\n|[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]/g, (c) => {
    if (c === "\r\n" || c === "\n") return "\\n";
    const code = c.charCodeAt(0);
    // The line and paragraph separators, which some log viewers and JavaScript readers break on.
    if (code > 0xff) return `\\u${code.toString(16)}`;
    return `\\x${code.toString(16).padStart(2, "0")}`;
  });
}

/**
 * Whether `text` holds a control character: C0 (U+0000-U+001F, tab included), DEL (U+007F) or C1
 * (U+0080-U+009F). An id holding one is refused where it enters (a provider's device, signal,
 * function or argument name at discovery), as it would reach log lines, URLs, the audit journal
 * and InfluxDB tags.
 */
export function hasControlCharacter(text: string): boolean {
  // deno-lint-ignore no-control-regex
  return /[\x00-\x1f\x7f-\x9f]/.test(text);
}
