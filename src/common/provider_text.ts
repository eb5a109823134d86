/** Longest provider-supplied text (a name, a version, an id) a log line or message quotes. */
export const PROVIDER_TEXT_CHARS = 80;

/**
 * Text a provider supplies (a name, a version, an id) as a log line or message quotes it: cut to
 * PROVIDER_TEXT_CHARS, so that what a provider says cannot make one line of any length.
 */
export function providerText(text: string): string {
  return text.length > PROVIDER_TEXT_CHARS ? `${text.slice(0, PROVIDER_TEXT_CHARS)}\u2026` : text;
}

/** Provider-supplied text (an id) in a message: cut as providerText, then JSON-quoted. */
export function quoteProviderText(text: string): string {
  return JSON.stringify(providerText(text));
}
