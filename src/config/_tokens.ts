/**
 * `http.tokens`: named API tokens with roles (README "Roles"). Checks names (pattern, unique,
 * not reserved), roles, that each entry sets exactly one of `token` and `token_env`, that every
 * token resolves to a non-empty value, that no two entries (nor the single `default` token) share
 * a value, and warns about short tokens. Messages never contain a token value.
 */
import type { Checker, Obj } from "./_checker.ts";
import { present } from "./_checker.ts";
import { formatPath, type Path } from "./_source.ts";
import {
  type ApiTokenConfig,
  MAX_API_TOKENS,
  MAX_TOKEN_CHARS,
  MIN_RECOMMENDED_TOKEN_CHARS,
  RESERVED_TOKEN_NAMES,
  TOKEN_ENV_PATTERN,
  TOKEN_ENV_PREFIX,
  TOKEN_NAME_PATTERN,
  TOKEN_ROLES,
  type TokenRole,
  type UnsendableTokenEntry,
} from "./types.ts";

const TOKEN_KEYS = ["name", "role", "token", "token_env"];

/** What readTokens needs besides the checker. */
export interface TokenContext {
  readonly checker: Checker;
  /** The value of an environment variable named by `token_env` (undefined when unset). */
  readonly secretEnv: (name: string) => string | undefined;
  /** Reports what the checking machine lacks (an unset `token_env`) with the right severity. */
  readonly environmentProblem: (path: Path, message: string) => void;
  /** The single token (`http.auth_token` / RUNTIME_API_TOKEN) as known here; "" when none. */
  readonly defaultToken: string;
  /**
   * `--check-config` with RUNTIME_API_TOKEN set: the file's own http.auth_token, which that
   * variable overrides here but not on a target without it (checked as a start there would); "".
   */
  readonly overriddenToken: string;
  /**
   * Reports a token no client can send (unsendableToken): an error while auth is on (it would
   * admit nobody), a warning while it is off (tokens are ignored then).
   */
  readonly unsendable: (path: Path, message: string) => void;
  /** Told each entry left out for such a token (so a reload can tell it from one removed). */
  readonly leftOut: (entry: UnsendableTokenEntry) => void;
}

/** Reads `http.tokens` (P is the `http` path); entries with an error are left out. */
export function readTokens(h: Obj, P: Path, ctx: TokenContext): ApiTokenConfig[] {
  const c = ctx.checker;
  const path = [...P, "tokens"];
  const list = c.sequence(h.tokens, path);
  if (list === null) return [];
  if (list.length > MAX_API_TOKENS) {
    c.error(path, `has ${list.length} entries, at most ${MAX_API_TOKENS} are allowed`);
    return [];
  }
  const out: ApiTokenConfig[] = [];
  const names = new Map<string, number>();
  /** Resolved token value -> the entry (or `default`) that has it, for the duplicate check. */
  const values = new Map<string, string>();
  if (ctx.defaultToken !== "") {
    values.set(ctx.defaultToken, "http.auth_token / RUNTIME_API_TOKEN (the token 'default')");
  }
  list.forEach((item, i) => {
    const ip = [...path, i];
    const entry = c.mapping(item, ip, true);
    if (entry === null) return;
    c.knownKeys(entry, ip, TOKEN_KEYS);
    const name = readName(c, entry, ip, names, i);
    const role = readRole(c, entry, ip);
    const source = readSource(c, entry, ip);
    if (name === null || role === null || source === null) return;
    let value: string;
    let valuePath: Path;
    if (source.kind === "token") {
      value = source.value;
      valuePath = [...ip, "token"];
    } else {
      valuePath = [...ip, "token_env"];
      value = ctx.secretEnv(source.value) ?? "";
      if (value === "") {
        ctx.environmentProblem(
          valuePath,
          `environment variable ${source.value} is not set or empty: token '${name}' has no value`,
        );
      }
    }
    if (value !== "") {
      const unsendable = unsendableToken(value);
      if (unsendable !== null) {
        ctx.unsendable(valuePath, `token '${name}' ${unsendable}`);
        ctx.leftOut({ name, why: unsendable });
        return;
      }
      const holder = values.get(value);
      if (holder !== undefined) {
        c.error(
          valuePath,
          `token '${name}' has the same value as ${holder}: each token must identify one name`,
        );
        return;
      }
      if (ctx.overriddenToken !== "" && value === ctx.overriddenToken) {
        c.error(
          valuePath,
          `token '${name}' has the same value as http.auth_token (the token 'default' where ` +
            "RUNTIME_API_TOKEN is not set; it overrides http.auth_token here): each token must " +
            "identify one name",
        );
        return;
      }
      values.set(value, `${formatPath(ip)} (the token '${name}')`);
      if (value.length < MIN_RECOMMENDED_TOKEN_CHARS) {
        c.warning(
          valuePath,
          `token '${name}' is shorter than ${MIN_RECOMMENDED_TOKEN_CHARS} characters and can be ` +
            "guessed (use 32 or more random characters)",
        );
      }
    }
    out.push({
      name,
      role,
      token: source.kind === "token" ? source.value : "",
      tokenEnv: source.kind === "env" ? source.value : "",
    });
  });
  return out;
}

/**
 * Why no client can present `token` in an `Authorization` header, as words for a diagnostic (never
 * the token), or null when one can. The server sees a header value with the whitespace at its ends
 * removed (Fetch normalizes header values), refuses one with a control character (400), and reads
 * its bytes as Latin-1, so a non-ASCII character sent as UTF-8 arrives as other characters: a
 * token with any of these is compared but never matched, and every request gets 401. One longer
 * than MAX_TOKEN_CHARS does not fit the request headers a server or proxy reads (400).
 */
export function unsendableToken(token: string): string | null {
  const why = unsendableBecause(token);
  return why === null
    ? null
    : `${why}: a client cannot send that in an Authorization header, so it would admit nobody`;
}

function unsendableBecause(token: string): string | null {
  if (token.length > MAX_TOKEN_CHARS) return `is longer than ${MAX_TOKEN_CHARS} characters`;
  if (/^\s/.test(token)) return "starts with whitespace";
  if (/[\r\n]$/.test(token)) {
    return "ends with whitespace (a newline left by the file it was read from?)";
  }
  if (/\s$/.test(token)) return "ends with whitespace";
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i);
    // Tab is the one control character a header value may hold.
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) return "has a control character";
    if (code > 0x7f) return "has a non-ASCII character";
  }
  return null;
}

function readName(
  c: Checker,
  entry: Obj,
  ip: Path,
  names: Map<string, number>,
  i: number,
): string | null {
  const path = [...ip, "name"];
  if (!present(entry, "name")) {
    c.error(path, "is required");
    return null;
  }
  const name = entry.name;
  if (typeof name !== "string" || !TOKEN_NAME_PATTERN.test(name)) {
    c.error(path, "must be 1 to 64 letters, digits, `_`, `.` or `-`, not starting with `.`");
    return null;
  }
  if (RESERVED_TOKEN_NAMES.includes(name)) {
    c.error(
      path,
      `'${name}' is reserved (${RESERVED_TOKEN_NAMES.join(", ")} already name who a request ` +
        "acts as); choose another name",
    );
    return null;
  }
  const first = names.get(name);
  if (first !== undefined) {
    c.error(
      path,
      `duplicate token name '${name}' (first at ${formatPath([...ip.slice(0, -1), first])})`,
    );
    return null;
  }
  names.set(name, i);
  return name;
}

function readRole(c: Checker, entry: Obj, ip: Path): TokenRole | null {
  const path = [...ip, "role"];
  if (!present(entry, "role")) {
    c.error(path, `is required (one of ${TOKEN_ROLES.join(", ")})`);
    return null;
  }
  const role = entry.role;
  if (typeof role !== "string" || !(TOKEN_ROLES as readonly string[]).includes(role)) {
    // A short word is echoed; anything longer may be a token pasted into the wrong key.
    const got = typeof role !== "string"
      ? `a ${typeof role}`
      : /^[A-Za-z_-]{1,16}$/.test(role)
      ? `'${role}'`
      : "a string that is not a role (not shown: it may be a token)";
    c.error(path, `must be one of ${TOKEN_ROLES.join(", ")}, got ${got}`);
    return null;
  }
  return role as TokenRole;
}

/** Exactly one of `token` (a non-empty string) and `token_env` (a variable name). */
function readSource(
  c: Checker,
  entry: Obj,
  ip: Path,
): { kind: "token" | "env"; value: string } | null {
  const hasToken = present(entry, "token");
  const hasEnv = present(entry, "token_env");
  if (hasToken === hasEnv) {
    c.error(
      ip,
      hasToken
        ? "has both token and token_env: set exactly one"
        : "needs token or token_env (exactly one): a named token without a value admits nobody",
    );
    return null;
  }
  if (hasToken) {
    const v = c.string(entry, ip, "token", "", true);
    return v === "" ? null : { kind: "token", value: v };
  }
  const v = c.string(entry, ip, "token_env", "", true);
  if (v === "") return null;
  if (!TOKEN_ENV_PATTERN.test(v)) {
    c.error(
      [...ip, "token_env"],
      `must be an environment variable name starting with ${TOKEN_ENV_PREFIX} (then 1 to 64 ` +
        "letters, digits or `_`): the runtime may read only those",
    );
    return null;
  }
  return { kind: "env", value: v };
}
