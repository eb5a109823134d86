/**
 * What a web page in the operator's browser may do (README, "Security: what a web page may do";
 * docs/http-api.md, "Request policy"). Three checks, all before a route runs and before its body is
 * read (check 3 reads only the first bytes of an HTTP/2 body that comes undeclared):
 *
 * 1. Host (DNS rebinding). When the API is bound to loopback, a request whose `Host` is not
 *    `localhost`, 127.0.0.0/8 or `[::1]` (any port) nor listed in `http.allowed_hosts` is 403.
 * 2. Origin (cross-site requests). A state-changing request (any method but GET, HEAD, OPTIONS)
 *    that carries `Origin` runs only when the origin is the API's own (same scheme, host and
 *    port as the request, on a trusted host name), matches an explicit
 *    `http.cors_allowed_origins` entry (an exact origin or a one-star glob; never the lone `*`,
 *    which lets pages read, not write), or the request carries a valid bearer token (the single
 *    token or any `http.tokens` entry; the route's role check still applies). Else 403.
 *    The event stream (GET /v0/events) is opened for a foreign origin only with a CORS grant
 *    (`*` included) or the token: a page that could not read it would still hold a stream slot.
 * 3. Content type (simple requests). A state-changing request with a body must declare
 *    `Content-Type: application/json` (a `charset=utf-8` parameter is fine), else 415: browsers
 *    send `text/plain` bodies cross-site without a preflight, JSON never. An HTTP/2 body that
 *    comes without content-length is judged by reading its first bytes.
 *
 * Clients that are not browsers send no `Origin` and are unaffected by 2.
 */
import { isLoopbackHost, providerTextWithin } from "../common/mod.ts";
import type { HttpConfig } from "../config/mod.ts";
import { originMatches } from "./cors.ts";
import { type BodyLimits, bodyPresence, undeclaredBodyArrives } from "./json_body.ts";

/** Longest client-supplied text (a Host or Origin value) quoted back in an error message. */
export const MAX_QUOTED_HEADER_CHARS = 200;

/** A refusal: HTTP status, envelope code and message. */
export interface PolicyRefusal {
  readonly httpStatus: 403 | 415;
  readonly code: "PERMISSION_DENIED" | "INVALID_ARGUMENT";
  readonly message: string;
}

/** The event stream's path (check 2 judges its opening too). */
export const EVENT_STREAM_PATH = "/v0/events";

/** Methods that never change state (RFC 9110 safe methods). */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The request policy of one configuration. */
export class RequestPolicy {
  readonly #loopbackBound: boolean;
  readonly #allowedHosts: ReadonlyArray<{ host: string; port: string | null }>;
  readonly #explicitOrigins: readonly string[];
  /** `*` in http.cors_allowed_origins: every page may read (never write). */
  readonly #anyOriginGranted: boolean;

  constructor(http: HttpConfig) {
    this.#loopbackBound = isLoopbackHost(http.bind);
    // Config validation guarantees every entry is `host[:port]`; one that is not never matches.
    this.#allowedHosts = http.allowedHosts.flatMap((h) => splitHostPort(h.toLowerCase()) ?? []);
    this.#explicitOrigins = http.corsAllowedOrigins.filter((o) => o !== "*");
    this.#anyOriginGranted = http.corsAllowedOrigins.includes("*");
  }

  /**
   * Check 1: null when the request's host is acceptable. Both the `Host` header and the
   * request target's authority (they differ for an absolute-form target) must pass.
   */
  checkHost(req: Request, url: URL): PolicyRefusal | null {
    if (!this.#loopbackBound) return null;
    const header = req.headers.get("host");
    for (const host of header === null ? [url.host] : [header, url.host]) {
      if (!this.#isTrustedHost(host)) {
        return {
          httpStatus: 403,
          code: "PERMISSION_DENIED",
          message: `Host not allowed: '${quote(host)}' (the API is bound to loopback and answers ` +
            "only for localhost, 127.0.0.0/8, [::1] and http.allowed_hosts)",
        };
      }
    }
    return null;
  }

  /** Whether the method changes state (everything but GET, HEAD, OPTIONS). */
  static changesState(method: string): boolean {
    return !SAFE_METHODS.has(method);
  }

  /**
   * Whether check 2 judges this request at all: a state-changing one, or the event stream (GET
   * /v0/events: a read, but a page that could not read it would still hold one of the bounded
   * stream slots, and EventSource reconnects on its own).
   */
  static judgesOrigin(method: string, pathname: string): boolean {
    return RequestPolicy.changesState(method) ||
      (method === "GET" && pathname === EVENT_STREAM_PATH);
  }

  /**
   * Check 2: null when a request check 2 judges (judgesOrigin) may run as far as its origin goes.
   * A state-changing request needs the API's own origin, an explicit grant or the token; the
   * event stream also opens for the lone `*` grant (it lets pages read). `hasValidToken` is
   * whether it presents a configured bearer token (any of them).
   */
  checkOrigin(req: Request, url: URL, hasValidToken: boolean): PolicyRefusal | null {
    if (!RequestPolicy.judgesOrigin(req.method, url.pathname)) return null;
    const writes = RequestPolicy.changesState(req.method);
    const origin = req.headers.get("origin");
    if (origin === null || hasValidToken) return null;
    if (this.#isOwnOrigin(origin, req, url)) return null;
    if (!writes && this.#anyOriginGranted) return null;
    if (isSerializedOrigin(origin) && this.#explicitOrigins.some((e) => originMatches(e, origin))) {
      return null;
    }
    return {
      httpStatus: 403,
      code: "PERMISSION_DENIED",
      message: writes
        ? `Origin not allowed to change state: '${quote(origin)}' (list it in ` +
          "http.cors_allowed_origins, `*` does not count, or send the bearer token)"
        : `Origin not allowed to open the event stream: '${quote(origin)}' (list it in ` +
          "http.cors_allowed_origins, or send the bearer token)",
    };
  }

  /**
   * Check 3: null when a state-changing request has no body, or a JSON one. A request has a
   * body when it declares one (a non-zero Content-Length or any Transfer-Encoding); one that may
   * carry a body it does not declare (neither header: HTTP/2 without content-length, which Deno
   * does not tell from HTTP/1.1; json_body.ts bodyPresence) and is not declared JSON is read up to its first bytes (under `limits`) and refused when any
   * come, as a declared one is. Throws INVALID_ARGUMENT when that read fails (too slow).
   */
  async checkContentType(req: Request, limits: BodyLimits): Promise<PolicyRefusal | null> {
    if (!RequestPolicy.changesState(req.method)) return null;
    const presence = bodyPresence(req);
    if (presence === "none") return null;
    const type = req.headers.get("content-type");
    if (type !== null && isJsonContentType(type)) return null;
    if (presence === "unknown" && !await undeclaredBodyArrives(req, limits)) return null;
    return {
      httpStatus: 415,
      code: "INVALID_ARGUMENT",
      message: `Content-Type must be application/json for a request with a body (got ${
        type === null ? "none" : `'${quote(type)}'`
      })`,
    };
  }

  /** Loopback names and addresses, and http.allowed_hosts (with or without the port). */
  #isTrustedHost(hostPort: string): boolean {
    const parsed = splitHostPort(hostPort.toLowerCase());
    if (parsed === null) return false;
    const { host, port } = parsed;
    if (host === "localhost" || isIpv4Loopback(host) || host === "[::1]") return true;
    return this.#allowedHosts.some((e) => e.host === host && (e.port === null || e.port === port));
  }

  /**
   * The API's own origin: scheme, host and port of the request itself. The host must be one the
   * API knows is its own -- a loopback name, an IP literal or an allowed host -- since a page
   * served under any DNS name pointing here (DNS rebinding) also "matches" itself.
   */
  #isOwnOrigin(origin: string, req: Request, url: URL): boolean {
    const host = req.headers.get("host") ?? url.host;
    const authority = `${url.protocol}//${host}`;
    if (!URL.canParse(authority)) return false;
    const own = new URL(authority);
    if (origin.toLowerCase() !== own.origin) return false;
    return this.#isTrustedHost(host) || isIpLiteral(own.hostname);
  }
}

/** The charset values that mean UTF-8, bare or quoted (lower case). */
const UTF8_CHARSETS = new Set(["utf-8", "utf8", '"utf-8"', '"utf8"']);

/** `application/json`, optionally with parameters; a charset, if given, must be UTF-8. */
export function isJsonContentType(value: string): boolean {
  const [type, ...params] = value.split(";");
  if (type!.trim().toLowerCase() !== "application/json") return false;
  for (const p of params) {
    const eq = p.indexOf("=");
    if (eq < 0) continue;
    if (p.slice(0, eq).trim().toLowerCase() !== "charset") continue;
    if (!UTF8_CHARSETS.has(p.slice(eq + 1).trim().toLowerCase())) return false;
  }
  return true;
}

/** `host[:port]` with IPv6 in brackets; null when malformed. The host keeps its brackets. */
function splitHostPort(value: string): { host: string; port: string | null } | null {
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(value);
  if (m === null) return null;
  return { host: m[1]!, port: m[2] ?? null };
}

function isIpv4Loopback(host: string): boolean {
  return /^127(?:\.\d{1,3}){3}$/.test(host) && isLoopbackHost(host);
}

/**
 * Whether a URL's host name (canonical: IPv4 as a dotted quad, IPv6 in brackets) is an address,
 * not a name DNS could rebind.
 */
function isIpLiteral(hostname: string): boolean {
  return hostname.startsWith("[") || /^\d+\.\d+\.\d+\.\d+$/.test(hostname);
}

/** Whether `origin` is an origin as browsers send it: `scheme://host[:port]`, nothing more. */
function isSerializedOrigin(origin: string): boolean {
  return URL.canParse(origin) && new URL(origin).origin === origin.toLowerCase();
}

function quote(text: string): string {
  return providerTextWithin(text, MAX_QUOTED_HEADER_CHARS);
}
