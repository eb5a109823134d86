/**
 * Secrets never appear in a diagnostic. A key whose name mentions a token, password, secret,
 * passphrase or API key holds a secret (today http.auth_token,
 * telemetry.influxdb.token and its alias telemetry.influx_token; the rule is by name so a key added
 * later, or a call argument such as `password`, is covered without a schema marker). Three layers:
 * values at such a key are described by type only, text that mentions such a key name is not
 * echoed, and a last pass scrubs every secret value the file holds (and the password of any URL
 * with one, `http://user:pass@host`) out of every diagnostic, whichever layer wrote it.
 */
import { REDACTED, urlPassword } from "../common/mod.ts";
import type { Diagnostic } from "./types.ts";

/** What replaces a secret in a diagnostic (the one word common shows a URL's password as). */
export { REDACTED };

/**
 * Secrets shorter than this are not scrubbed from unrelated text by the last pass: scrubbing "1"
 * would garble every line number, and a value that short protects nothing. Values at a secret key
 * are still never echoed, whatever their length.
 */
export const MIN_SCRUBBED_SECRET_LENGTH = 4;

const SECRET_WORD_RE = /token|passw(?:or)?d|passphrase|secret|api_?key/i;

/** A plain key name: letters, digits, `_`, `-`, `.` (anything else may be a pasted value). */
const PLAIN_KEY_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Whether `key` names a secret-bearing setting (`auth_token`, `token`, `password`, ...); also
 * whether free text mentions one (`auth_token=abc123` pasted as a key or a value carries the
 * secret along).
 */
export function isSecretKey(key: string): boolean {
  return SECRET_WORD_RE.test(key);
}

/**
 * Whether a value is secret, walking down from the root. A list under a key named `tokens`
 * (`http.tokens`) is secret as a whole (a token pasted in its place stays hidden), and so is each
 * entry, except the entry's `name`, `role` and `token_env` (a variable name): those are shown in
 * diagnostics, the entry's `token` is not.
 */
export type SecretState = "plain" | "secret" | "token-list" | "token-entry";

/** The fields of a `tokens` entry that are not secret. */
const TOKEN_ENTRY_PLAIN_KEYS: ReadonlySet<string> = new Set(["name", "role", "token_env"]);

/** The state of the value at `key` (a mapping key, or a sequence index) under one in `state`. */
export function childSecretState(state: SecretState, key: string | number): SecretState {
  switch (state) {
    case "secret":
      return "secret";
    case "token-list":
      return typeof key === "number" ? "token-entry" : "secret";
    case "token-entry":
      return typeof key === "string" && TOKEN_ENTRY_PLAIN_KEYS.has(key) ? "plain" : "secret";
    case "plain":
      if (typeof key === "number") return "plain";
      if (key === "tokens") return "token-list";
      return isSecretKey(key) ? "secret" : "plain";
  }
}

/** Whether a key path leads to a secret value (or to a mapping or sequence holding secrets). */
export function isSecretPath(path: readonly (string | number)[]): boolean {
  let state: SecretState = "plain";
  for (const seg of path) state = childSecretState(state, seg);
  return state !== "plain";
}

/** A key as diagnostics may print it: a key that mentions a secret and is not a plain name is hidden. */
export function printableKey(key: string): string {
  return isSecretKey(key) && !PLAIN_KEY_RE.test(key) ? REDACTED : key;
}

/**
 * Most secret values the last pass scrubs (a real file holds a handful). It costs one substring
 * search per secret form per diagnostic, so a file with thousands of secret-named keys must not
 * make checking quadratic; secrets past this bound still get the first two layers.
 */
export const MAX_SCRUBBED_SECRETS = 32;

/**
 * Text forms of the secrets in a file, longest first so a longer form is scrubbed before a shorter
 * one inside it: every scalar stored under a secret key in `data` (the value, its JSON form when
 * that escapes something, and the shortened form diagnostics use for long strings), the same
 * scalars as written in the file (`sourceTexts`: `0x1F` is `31` in the data), and the password of
 * any URL with one. At most MAX_SCRUBBED_SECRETS values, in file order. Iterative: a deeply nested
 * file cannot overflow the stack here.
 */
export function secretTexts(data: unknown, sourceTexts: readonly string[] = []): string[] {
  const values: string[] = [];
  const add = (text: string) => {
    if (text.length >= MIN_SCRUBBED_SECRET_LENGTH && !values.includes(text)) values.push(text);
  };
  for (const text of sourceTexts) {
    if (values.length >= MAX_SCRUBBED_SECRETS) break;
    add(text);
  }
  const stack: { node: unknown; state: SecretState }[] = [{ node: data, state: "plain" }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    if (values.length >= MAX_SCRUBBED_SECRETS) break;
    const { node, state } = top;
    const secret = state !== "plain";
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) {
        stack.push({ node: node[i], state: childSecretState(state, i) });
      }
    } else if (node !== null && typeof node === "object") {
      for (const [k, v] of Object.entries(node).reverse()) {
        stack.push({ node: v, state: childSecretState(state, k) });
      }
    } else if (typeof node === "string" && !secret) {
      // A URL with a password in it (`http://user:pass@host`) carries a secret under any key.
      const password = urlPassword(node);
      if (password !== undefined) add(password);
    } else if (secret && node !== null && node !== undefined) {
      add(String(node));
    }
  }
  const forms = new Set<string>();
  for (const text of values) {
    forms.add(text);
    const json = JSON.stringify(text);
    if (json !== `"${text}"`) forms.add(json);
    if (text.length > 40) forms.add(text.slice(0, 37));
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/** `text` with every secret replaced by `<redacted>`. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.replaceAll(s, REDACTED);
  return out;
}

/** Diagnostics with every secret scrubbed from their message and key path. */
export function scrubDiagnostics(
  diagnostics: readonly Diagnostic[],
  secrets: readonly string[],
): Diagnostic[] {
  if (secrets.length === 0) return [...diagnostics];
  return diagnostics.map((d) => {
    const message = scrub(d.message, secrets);
    const path = scrub(d.path, secrets);
    return message === d.message && path === d.path ? d : { ...d, message, path };
  });
}
