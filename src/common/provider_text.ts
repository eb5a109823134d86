/** Longest provider-supplied text (a name, a version, an id) a log line or message quotes. */
export const PROVIDER_TEXT_CHARS = 80;

/**
 * Text a provider supplies (a name, a version, an id) as a log line or message quotes it: cut to
 * PROVIDER_TEXT_CHARS, so that what a provider says cannot make one line of any length.
 */
export function providerText(text: string): string {
  return providerTextWithin(text, PROVIDER_TEXT_CHARS);
}

/** Provider-supplied text (an id) in a message: cut as providerText, then JSON-quoted. */
export function quoteProviderText(text: string): string {
  return quoteProviderTextWithin(text, PROVIDER_TEXT_CHARS);
}

/**
 * Text a peer supplies (a provider's message or stderr line, a client's header) cut to `maxChars`
 * UTF-16 code units, the bound its caller names, and marked with an ellipsis when cut. A cut never
 * splits a surrogate pair (a character beyond U+FFFF): it is left out whole, one unit earlier. Two
 * arguments, apart from providerText, so that it is never handed to `map` by mistake.
 */
export function providerTextWithin(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const last = text.charCodeAt(maxChars - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? maxChars - 1 : maxChars;
  return `${text.slice(0, end)}\u2026`;
}

/**
 * Peer-supplied text in a message: cut as providerTextWithin, then JSON-quoted, so that a line
 * break or a quote in it can neither end the line nor forge the rest of it. JSON.stringify escapes
 * only C0 (U+0000-U+001F): it leaves DEL U+007F and the C1 controls U+0080-U+009F as they are
 * (NEL U+0085 a line break among them; a terminal takes CSI U+009B as the start of an escape
 * sequence, as it does ESC), and the line and paragraph separators U+2028/U+2029 (some log
 * viewers, editors and JavaScript readers break lines on them): they are written JSON-style too
 * (`\u007f`, `\u0085`, `\u009b`, `\u2028`; a log line escapes them as well, escapeControl), and
 * the quoted text still parses as JSON to the cut text.
 */
export function quoteProviderTextWithin(text: string, maxChars: number): string {
  return quoteCutText(providerTextWithin(text, maxChars));
}

/**
 * Text already cut to its bound (namedDeviceHandle's parts, each cut apart) JSON-quoted as
 * quoteProviderTextWithin quotes it: DEL, the C1 controls and U+2028/U+2029 written `\u007f`-style
 * too. Only for text its caller has cut: it cuts nothing.
 */
export function quoteCutText(text: string): string {
  return JSON.stringify(text).replace(
    /[\u007f-\u009f\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * What a configuration reload is doing with a provider that is not up yet: starting it anew (its
 * entry added) or restarting it (its entry changed).
 */
export type ReloadStart = "starting" | "restarting";

/**
 * The one wording of a provider a configuration reload is starting or restarting, not up yet, as
 * its subject's predicate: "is being started by a configuration reload" (or "restarted"). The
 * provider registry says it with the provider as subject (the device conditions, health,
 * Sparkplug), the e-stop's unverified reasons of its provider ("..., which is being started ...").
 */
export function reloadStartWords(start: ReloadStart): string {
  return `is being ${start === "starting" ? "started" : "restarted"} by a configuration reload`;
}

/**
 * The one wording of why the last configuration reload failed to start a provider (its start
 * error, or why its host could not be registered), as its subject's predicate: "failed to start at
 * a configuration reload (<why>)". The provider registry says it with the provider as subject
 * (startFailureText: health's start_error, the device conditions, Sparkplug), the e-stop's
 * unverified reasons of its provider ("..., which failed to start ...").
 */
export function startFailureWords(why: string): string {
  return `failed to start at a configuration reload (${why})`;
}
