/**
 * A URL from the configuration as messages and log lines show it (its password hidden), and the
 * one rule of an http(s) URL: the configuration check and the telemetry writer refuse any other
 * with the same words.
 */
import { providerTextWithin, quoteProviderTextWithin } from "./provider_text.ts";

/** What replaces a secret (a URL's password, a token) where text is shown. */
export const REDACTED = "<redacted>";

/**
 * Longest URL text a message quotes (after its password is hidden): a url of any length in a
 * configuration cannot make one line of any length.
 */
export const URL_TEXT_CHARS = 200;

/**
 * The password of a URL's user information: `scheme://user:PASSWORD@host...`. The user
 * information runs to the LAST `@` of the authority (before any `/`, `?` or `#`), as URL parsers
 * read it: `http://u:p@ss@db` has the password `p@ss`, not `p` (which left `ss` shown).
 */
const URL_PASSWORD_RE = /^[a-z][a-z0-9+.-]*:\/\/[^/?#:\s]*:([^/?#\s]+)@/i;

/** The password of `url`'s user information (`http://user:PASSWORD@host`), or undefined. */
export function urlPassword(url: string): string | undefined {
  return URL_PASSWORD_RE.exec(url)?.[1];
}

/**
 * `url` with the password of its user information replaced by REDACTED (`http://u:<redacted>@h`),
 * anything else as given: how a URL from the configuration is shown (status, log lines).
 */
export function urlWithoutPassword(url: string): string {
  const m = URL_PASSWORD_RE.exec(url);
  if (m === null) return url;
  const end = m[0].length - 1; // the password ends before the `@`
  return `${url.slice(0, end - m[1]!.length)}${REDACTED}${url.slice(end)}`;
}

/**
 * A URL from the configuration in a message: its password hidden first (a cut cannot leave part
 * of it), then cut to URL_TEXT_CHARS and JSON-quoted as quoteProviderTextWithin does.
 */
export function quoteUrl(url: string): string {
  return quoteProviderTextWithin(urlWithoutPassword(url), URL_TEXT_CHARS);
}

/**
 * Why `url` is not an http(s) URL, or null: it must parse and be `http:` or `https:`, the schemes
 * fetch can POST an InfluxDB write to (`ftp:`, `mailto:`, `ws:` fail every write, `file:` takes no
 * POST, a `data:` url answers 200 and stores nothing). The one wording, the url quoted by
 * quoteUrl (password hidden, cut): `"ftp://db" is not an http(s) URL (fetch cannot write to
 * ftp:)`. Its caller puts the setting before it (`telemetry.influxdb.url: ...`).
 */
export function httpUrlProblem(url: string): string | null {
  if (!URL.canParse(url)) return `${quoteUrl(url)} is not a URL`;
  const { protocol } = new URL(url);
  if (protocol === "http:" || protocol === "https:") return null;
  // A scheme is letters, digits, `+`, `-`, `.`: only its length needs a bound.
  const scheme = providerTextWithin(protocol, URL_TEXT_CHARS);
  return `${quoteUrl(url)} is not an http(s) URL (fetch cannot write to ${scheme})`;
}
