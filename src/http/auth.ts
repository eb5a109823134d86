/**
 * Bearer-token authentication (docs/http-api.md, "Authentication": who is exempt, the 401 body) and
 * the roles of named tokens (docs/http-api.md, "Roles"). Tokens are compared in constant time over
 * all entries and never logged or echoed.
 */
import { isLoopbackHost } from "../common/mod.ts";
import { type HttpConfig, TOKEN_ROLES, type TokenRole } from "../config/mod.ts";
import { errorResponse } from "./envelope.ts";

/** The effective token: RUNTIME_API_TOKEN when set and non-empty, else `http.auth_token`. */
export function resolveApiToken(http: HttpConfig, envToken: string | undefined): string {
  return envToken !== undefined && envToken !== "" ? envToken : http.authToken;
}

/** What the runtime logs at start-up about authentication: one line, at `level`. */
export interface AuthenticationSummary {
  readonly level: "info" | "warn";
  readonly message: string;
}

/**
 * The start-up line saying whether the API asks for a token and which setting decides it (a
 * misspelled `auth_enabled` once left authentication off without a word). Names settings and
 * token sources only, never a token. `envToken`: RUNTIME_API_TOKEN is set and non-empty.
 */
export function authenticationSummary(
  http: HttpConfig,
  o: { readonly envToken: boolean },
): AuthenticationSummary {
  if (!http.enabled) {
    return { level: "info", message: "authentication off: http.enabled is false, no API served" };
  }
  if (!http.authEnabled) {
    const exposed = !isLoopbackHost(http.bind);
    return {
      level: exposed ? "warn" : "info",
      message: "authentication off: http.auth_enabled is false (its default when absent); every " +
        "request acts as admin 'anonymous'" +
        (exposed
          ? `, and the API on ${http.bind} is reachable from the network (http.allow_insecure_bind)`
          : `, from loopback only (http.bind ${http.bind})`),
    };
  }
  const tokens: string[] = [];
  if (o.envToken) tokens.push("RUNTIME_API_TOKEN (admin 'default')");
  else if (http.authToken !== "") tokens.push("http.auth_token (admin 'default')");
  if (http.tokens.length > 0) tokens.push(`${http.tokens.length} named in http.tokens`);
  const loopback = http.authExemptLoopback
    ? "loopback clients exempt (http.auth_exempt_loopback)"
    : "loopback clients too (http.auth_exempt_loopback is false)";
  return tokens.length === 0
    ? {
      level: "warn",
      message: `authentication on (http.auth_enabled: true) but no token is set: only ${
        http.authExemptLoopback ? "loopback clients get in" : "nobody gets in"
      }`,
    }
    : {
      level: "info",
      message: `authentication on (http.auth_enabled: true): bearer token from ${
        tokens.join(" and ")
      }; ${loopback}`,
    };
}

/**
 * Whether a client address is loopback: all of 127.0.0.0/8, `::1` and IPv4-mapped
 * `::ffff:127.x.x.x` (the same rule as the bind safety gate).
 */
export function isLoopbackAddress(address: string): boolean {
  return isLoopbackHost(address);
}

/**
 * The request headers with which a proxy says it relayed a request for another client (RFC 7239,
 * the de-facto X-Forwarded-For and X-Real-IP, and RFC 9110's Via, which every proxy must send).
 * A request carrying any of them that comes from loopback came through a proxy on this host: its
 * client is elsewhere, so the loopback exemption does not apply to it.
 */
const FORWARDING_HEADERS: readonly string[] = [
  "forwarded",
  "x-forwarded-for",
  "x-real-ip",
  "via",
];

/** Whether a proxy relayed the request for another client (any of FORWARDING_HEADERS). */
function isRelayedRequest(req: Request): boolean {
  return FORWARDING_HEADERS.some((h) => req.headers.has(h));
}

/**
 * Who a request acts as, for the record (audit) and for authorization: the token's name
 * (`default` for the single configured token, else the `http.tokens` entry's name), `local` for a
 * loopback-exempt request that presented no valid token, `anonymous` when auth is off. The token
 * itself is never kept here.
 */
export interface Principal {
  readonly name: string;
  /** The client's address as the connection reported it. */
  readonly address: string;
  /** What it may do: `default`, `local` and `anonymous` are admin; a named token has its role. */
  readonly role: TokenRole;
}

/** The principal names that are not token names. */
export const LOCAL_PRINCIPAL = "local";
export const ANONYMOUS_PRINCIPAL = "anonymous";
/** The name the single configured token (`http.auth_token` / RUNTIME_API_TOKEN) acts under. */
export const DEFAULT_TOKEN_NAME = "default";

/** A named token with its value resolved (`token`, or the variable `token_env` names). */
export interface NamedToken {
  readonly name: string;
  readonly role: TokenRole;
  /** The token; "" admits nobody. */
  readonly token: string;
}

/** The `http.tokens` entries with their values: `token`, else `env(token_env)` ("" when unset). */
export function resolveNamedTokens(
  http: HttpConfig,
  env: (name: string) => string | undefined,
): NamedToken[] {
  return http.tokens.map((t) => ({
    name: t.name,
    role: t.role,
    token: t.tokenEnv !== "" ? env(t.tokenEnv) ?? "" : t.token,
  }));
}

/**
 * Who a token reload gave or took access (the audit trail's record of it): names and roles only,
 * never a token. A token that admits nobody (empty: its variable unset) counts as absent.
 */
export interface TokenChanges {
  readonly added: readonly { readonly name: string; readonly role: TokenRole }[];
  readonly removed: readonly { readonly name: string; readonly role: TokenRole }[];
  /** The same name with another role. */
  readonly roles: readonly {
    readonly name: string;
    readonly from: TokenRole;
    readonly to: TokenRole;
  }[];
  /** The same name with another token (rotated): the old one no longer admits. */
  readonly replaced: readonly string[];
}

/**
 * What changes from the tokens `before` to `after` (each list with the single token as admin
 * `default` among the named ones); null when nobody gains or loses anything.
 */
export function tokenChanges(
  before: readonly NamedToken[],
  after: readonly NamedToken[],
): TokenChanges | null {
  const live = (list: readonly NamedToken[]) =>
    new Map(list.filter((t) => t.token !== "").map((t) => [t.name, t]));
  const was = live(before);
  const now = live(after);
  const added: { name: string; role: TokenRole }[] = [];
  const removed: { name: string; role: TokenRole }[] = [];
  const roles: { name: string; from: TokenRole; to: TokenRole }[] = [];
  const replaced: string[] = [];
  for (const [name, t] of now) {
    const old = was.get(name);
    if (old === undefined) {
      added.push({ name, role: t.role });
      continue;
    }
    if (old.role !== t.role) roles.push({ name, from: old.role, to: t.role });
    if (old.token !== t.token) replaced.push(name);
  }
  for (const [name, t] of was) if (!now.has(name)) removed.push({ name, role: t.role });
  return added.length + removed.length + roles.length + replaced.length === 0
    ? null
    : { added, removed, roles, replaced };
}

/** The changes in words, for the reload's summary line (names and roles, never a token). */
export function tokenChangesText(c: TokenChanges): string {
  return [
    ...c.added.map((t) => `added ${t.role} '${t.name}'`),
    ...c.removed.map((t) => `removed ${t.role} '${t.name}'`),
    ...c.roles.map((t) => `'${t.name}' ${t.from}->${t.to}`),
    ...c.replaced.map((name) => `'${name}' replaced`),
  ].join(", ");
}

/** Every token as compared: the single one as admin `default` first, then the named ones. */
export function withDefaultToken(apiToken: string, named: readonly NamedToken[]): NamedToken[] {
  return [{ name: DEFAULT_TOKEN_NAME, role: "admin", token: apiToken }, ...named];
}

/** Whether `have` may do what needs `need` (viewer < operator < admin). */
export function roleAllows(have: TokenRole, need: TokenRole): boolean {
  return TOKEN_ROLES.indexOf(have) >= TOKEN_ROLES.indexOf(need);
}

/** One token as compared: its digest and who it names. */
interface TokenEntry {
  readonly digest: Uint8Array;
  readonly name: string;
  readonly role: TokenRole;
}

/**
 * What a request presents, as BearerAuth compares it: the SHA-256 digest of its bearer token (null
 * for none), never the token, and whether a proxy relayed it. Taken once (BearerAuth.credentials),
 * it is compared again without hashing (BearerAuth.identifyNow).
 */
export interface Credentials {
  readonly digest: Uint8Array | null;
  readonly relayed: boolean;
}

/** Checks requests against the configured tokens; one instance per server. */
export class BearerAuth {
  readonly #enabled: boolean;
  readonly #exemptLoopback: boolean;
  /**
   * The single token (as admin `default`) and every named token, as SHA-256 digests: comparison
   * time does not depend on where the bytes differ. Empty tokens are left out (they admit nobody).
   */
  readonly #entries: Promise<TokenEntry[]>;
  /** #entries once digested: what identifyNow compares with. */
  #digested: readonly TokenEntry[] | null = null;

  constructor(http: HttpConfig, token: string, named: readonly NamedToken[] = []) {
    this.#enabled = http.authEnabled;
    this.#exemptLoopback = http.authExemptLoopback;
    this.#entries = Promise.all(
      withDefaultToken(token, named).filter((t) => t.token.length > 0).map(async (t) => ({
        digest: await sha256(t.token),
        name: t.name,
        role: t.role,
      })),
    ).then((entries) => {
      this.#digested = entries;
      return entries;
    });
  }

  /** A BearerAuth whose tokens are digested: identifyNow may be asked of it at once. */
  static async create(
    http: HttpConfig,
    token: string,
    named: readonly NamedToken[] = [],
  ): Promise<BearerAuth> {
    const auth = new BearerAuth(http, token, named);
    await auth.#entries;
    return auth;
  }

  /**
   * Who the request acts as, or null when it may not proceed (answer 401). A loopback client
   * without a valid token is exempt (`local`) unless a proxy relayed the request
   * (isRelayedRequest).
   */
  async identify(req: Request, remoteAddr: string): Promise<Principal | null> {
    if (!this.#enabled) {
      return { name: ANONYMOUS_PRINCIPAL, address: remoteAddr, role: "admin" };
    }
    const credentials = await this.credentials(req);
    await this.#entries;
    return this.identifyNow(credentials, remoteAddr);
  }

  /** What `req` presents (its token digested once), for identifyNow. */
  async credentials(req: Request): Promise<Credentials> {
    const header = req.headers.get("authorization");
    // Prefix is case-sensitive "Bearer" and exactly one space (as anolis).
    const digest = header === null || !header.startsWith(BEARER_PREFIX)
      ? null
      : await sha256(header.slice(BEARER_PREFIX.length));
    return { digest, relayed: isRelayedRequest(req) };
  }

  /**
   * identify, synchronously, for credentials taken before: the tokens must be digested (a
   * BearerAuth from create, or one that identified a request already); TypeError otherwise.
   */
  identifyNow(credentials: Credentials, remoteAddr: string): Principal | null {
    if (!this.#enabled) {
      return { name: ANONYMOUS_PRINCIPAL, address: remoteAddr, role: "admin" };
    }
    const entry = this.#match(credentials);
    if (entry !== null) return { name: entry.name, address: remoteAddr, role: entry.role };
    // A request a proxy on this host relayed comes from loopback for a client that is not.
    if (this.#exemptLoopback && isLoopbackAddress(remoteAddr) && !credentials.relayed) {
      return { name: LOCAL_PRINCIPAL, address: remoteAddr, role: "admin" };
    }
    return null;
  }

  /**
   * Whether the request carries a configured token (any of them), whether or not auth is
   * enabled (the request policy lets a cross-origin request with a token change state).
   */
  async presentsToken(req: Request): Promise<boolean> {
    const credentials = await this.credentials(req);
    await this.#entries;
    return this.presentsTokenNow(credentials);
  }

  /** presentsToken, synchronously, for credentials taken before (as identifyNow). */
  presentsTokenNow(credentials: Credentials): boolean {
    return this.#match(credentials) !== null;
  }

  /**
   * The entry whose token the credentials present, or null. The presented token was digested
   * once; it is compared with EVERY entry without an early exit, and the match is selected by
   * masking, not by branching: the time taken says nothing about which entry (if any) matched.
   */
  #match(credentials: Credentials): TokenEntry | null {
    const entries = this.#digested;
    if (entries === null) throw new TypeError("BearerAuth: tokens asked before they are digested");
    const presented = credentials.digest;
    if (presented === null) return null;
    // index + 1 of the matching entry, 0 for none; config validation keeps token values unique.
    let found = 0;
    for (let i = 0; i < entries.length; i++) {
      const hit = digestsEqualBit(presented, entries[i]!.digest);
      const mask = -hit; // 0 or all ones
      found = (found & ~mask) | ((i + 1) & mask);
    }
    return found === 0 ? null : entries[found - 1]!;
  }
}

/** What every 401 says first (a detail on the header's form may follow). */
export const UNAUTHORIZED_MESSAGE = "Missing or invalid bearer token";

/** The scheme prefix a bearer token is sent with: case-sensitive, one space (as anolis). */
const BEARER_PREFIX = "Bearer ";

/**
 * What is wrong with the form of a request's Authorization header, or null when there is none or
 * its form is right (`Bearer <token>`, whatever the token). Says nothing about the token itself:
 * a client refused for the header's form must not go looking for a wrong token. Never quotes the
 * header.
 */
export function authorizationFormProblem(req: Request): string | null {
  const header = req.headers.get("authorization");
  if (header === null) return null;
  // Fetch joins repeated header lines with ", ": a second credential after the first.
  if (/, *[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]* +\S/.test(header)) {
    return "the Authorization header was sent more than once (send it once: 'Bearer <token>')";
  }
  const scheme = /^([^ \t]*)[ \t]/.exec(header)?.[1] ?? header;
  if (scheme.toLowerCase() !== "bearer") {
    return "the Authorization header is not a bearer token (expected 'Bearer <token>')";
  }
  if (scheme !== "Bearer") {
    return "the Authorization scheme must be written 'Bearer' (this case exactly)";
  }
  if (header.startsWith(BEARER_PREFIX) && !/^[ \t]/.test(header.slice(BEARER_PREFIX.length))) {
    return null;
  }
  return "the Authorization header needs exactly one space between 'Bearer' and the token";
}

/**
 * 401 with `WWW-Authenticate: Bearer` and the project's body (status envelope + flat error);
 * `detail`: what is wrong with the Authorization header's form (authorizationFormProblem).
 */
export function unauthorizedResponse(detail: string | null = null): Response {
  return errorResponse(
    "UNAUTHENTICATED",
    detail === null ? UNAUTHORIZED_MESSAGE : `${UNAUTHORIZED_MESSAGE}: ${detail}`,
    { error: "unauthorized" },
    { "www-authenticate": "Bearer" },
  );
}

/**
 * 403 for a principal whose role is below what the route needs. Names the route, the role needed
 * and the token's name and role; never the token.
 */
export function forbiddenResponse(
  method: string,
  path: string,
  principal: Principal,
  need: TokenRole,
): Response {
  return errorResponse(
    "PERMISSION_DENIED",
    `${method} ${path}: role ${need} required (token '${principal.name}' has role ${principal.role})`,
  );
}

async function sha256(text: string): Promise<Uint8Array> {
  const data = new TextEncoder().encode(text);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", data));
}

/**
 * 1 when two digests are equal, else 0, without an early exit or a branch on the bytes (digests of
 * different lengths differ).
 */
function digestsEqualBit(a: Uint8Array, b: Uint8Array): number {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  // diff is 0..255 (or a small length difference): (diff - 1) >>> 31 is 1 exactly when diff is 0.
  return ((diff - 1) >>> 31) & 1;
}
