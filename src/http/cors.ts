/**
 * CORS as docs/http-api.md "CORS" describes it: anolis's rules, plus `Authorization` and
 * `Last-Event-ID` as allowed headers and `Vary: Origin` with an echoed origin. No origin has a grant unless
 * `http.cors_allowed_origins` lists it (a former default of `*` let any web page read a loopback
 * runtime's state, audit and runs). A page without a grant is told, and the log says, which key to
 * set: its preflight is answered 403 naming `http.cors_allowed_origins`, and the first request of
 * each such origin is logged.
 */
import { type Logger, providerTextWithin } from "../common/mod.ts";
import type { HttpConfig } from "../config/mod.ts";
import { errorResponse } from "./envelope.ts";

export const CORS_ALLOW_METHODS = "GET, POST, OPTIONS";
/**
 * The request headers a granted page may send: `Last-Event-ID` too, since a page that resumes the
 * event stream with `fetch` (an `EventSource` cannot send the token) sends it, and browsers
 * preflight it.
 */
export const CORS_ALLOW_HEADERS = "Content-Type, Authorization, Last-Event-ID";

/**
 * The response headers a granted page may read beyond the CORS-safelisted ones (Fetch standard):
 * `Retry-After`, which a 429 carries to say when a call may be sent again (docs/http-api.md,
 * "Provider policies"); `X-History-Incomplete`, a partial CSV history answer's mark;
 * `X-Incident-Incomplete`, an incident export's that is not whole. Without it a browser hands the
 * page `null` for the header.
 */
export const CORS_EXPOSE_HEADERS = "Retry-After, X-History-Incomplete, X-Incident-Incomplete";

/**
 * Distinct origins without a CORS grant that are logged, one line each; past it one more line says
 * that later ones are not (a page cannot make the log grow without bound by inventing origins).
 */
export const MAX_LOGGED_UNGRANTED_ORIGINS = 32;
/** Longest part of a client-supplied Origin quoted in an answer or a log line. */
const MAX_QUOTED_ORIGIN_CHARS = 200;

/** What a page whose origin has no grant is told (preflight answer) and the log says. */
export function ungrantedOriginMessage(origin: string): string {
  return `Origin ${
    quoteOrigin(origin)
  } has no CORS grant, so browsers keep this API's answers from its pages: list it in ` +
    "http.cors_allowed_origins (for the anolis workbench: " +
    "`cors_allowed_origins: http://localhost:3000`)";
}

/**
 * Whether one configured entry matches an origin: a single-`*` glob (the star stands for any
 * text, none included; the lone `*` is the glob that matches everything), or exact text (no star,
 * or more than one).
 */
export function originMatches(entry: string, origin: string): boolean {
  const star = entry.indexOf("*");
  if (star < 0 || entry.lastIndexOf("*") !== star) return entry === origin;
  const prefix = entry.slice(0, star);
  const suffix = entry.slice(star + 1);
  return origin.length >= prefix.length + suffix.length && origin.startsWith(prefix) &&
    origin.endsWith(suffix);
}

/** Computes the CORS headers for requests from one configuration. */
export class CorsPolicy {
  readonly #origins: readonly string[];
  readonly #credentials: boolean;
  /**
   * An entry other than `*`: the CORS headers of an answer then depend on the request's Origin,
   * so every answer says `Vary: Origin` (a shared cache must not hand one origin's answer, or an
   * answer without CORS headers, to another).
   */
  readonly #varies: boolean;
  readonly #log: Logger | null;
  /** Origins without a grant already logged (at most MAX_LOGGED_UNGRANTED_ORIGINS). */
  readonly #logged = new Set<string>();
  #loggingStopped = false;

  /** `log`: where an origin without a grant is reported, once (none: not reported). */
  constructor(http: HttpConfig, log: Logger | null = null) {
    this.#origins = http.corsAllowedOrigins;
    this.#credentials = http.corsAllowCredentials;
    this.#varies = this.#origins.some((e) => e !== "*");
    this.#log = log;
  }

  /**
   * The answer to a CORS preflight (OPTIONS under /v0/): 204 No Content, or, for an Origin that
   * matches no entry, 403 PERMISSION_DENIED naming http.cors_allowed_origins (the browser refuses
   * the request either way; this way its developer tools show why). Never runs anything.
   */
  preflightResponse(req: Request): Response {
    const origin = req.headers.get("origin");
    if (origin === null || this.#entryFor(origin) !== undefined) {
      return new Response(null, { status: 204 });
    }
    return errorResponse("PERMISSION_DENIED", ungrantedOriginMessage(origin));
  }

  #entryFor(origin: string): string | undefined {
    return this.#origins.find((e) => originMatches(e, origin));
  }

  /** Logs the first request of an origin without a grant (not the API's own origin). */
  #noteUngranted(req: Request, origin: string): void {
    if (this.#log === null || this.#loggingStopped || this.#logged.has(origin)) return;
    if (isOwnOrigin(req, origin)) return; // the console: same origin, needs no grant
    if (this.#logged.size >= MAX_LOGGED_UNGRANTED_ORIGINS) {
      this.#loggingStopped = true;
      this.#log.warn(
        `more origins without a CORS grant: not logged (${MAX_LOGGED_UNGRANTED_ORIGINS} were)`,
      );
      return;
    }
    this.#logged.add(origin);
    this.#log.warn(`cross-origin request refused CORS: ${ungrantedOriginMessage(origin)}`);
  }

  /**
   * Headers to add to the response of `req`; none of the CORS grants when the request has no
   * Origin or it matches no entry (`Vary: Origin` still, with an entry other than `*`). `preflight` always carries Allow-Methods/Allow-Headers (as anolis answers them).
   */
  headersFor(req: Request, preflight: boolean): Record<string, string> {
    const out: Record<string, string> = {};
    if (this.#varies) out["vary"] = "Origin";
    if (preflight) {
      out["access-control-allow-methods"] = CORS_ALLOW_METHODS;
      out["access-control-allow-headers"] = CORS_ALLOW_HEADERS;
    }
    const origin = req.headers.get("origin");
    if (origin === null) return out;
    const entry = this.#entryFor(origin);
    if (entry === undefined) {
      this.#noteUngranted(req, origin);
      return out;
    }
    if (entry === "*") {
      out["access-control-allow-origin"] = "*";
    } else {
      out["access-control-allow-origin"] = origin;
    }
    out["access-control-allow-methods"] = CORS_ALLOW_METHODS;
    out["access-control-allow-headers"] = CORS_ALLOW_HEADERS;
    if (!preflight) out["access-control-expose-headers"] = CORS_EXPOSE_HEADERS;
    if (this.#credentials) out["access-control-allow-credentials"] = "true";
    return out;
  }
}

/** Whether `origin` is the request's own (scheme, Host and port): a same-origin page. */
function isOwnOrigin(req: Request, origin: string): boolean {
  try {
    const url = new URL(req.url);
    const own = new URL(`${url.protocol}//${req.headers.get("host") ?? url.host}`).origin;
    return origin.toLowerCase() === own;
  } catch {
    return false;
  }
}

/** A client-supplied origin as quoted text: bounded, control characters escaped (one log line). */
function quoteOrigin(origin: string): string {
  const cut = providerTextWithin(origin, MAX_QUOTED_ORIGIN_CHARS);
  let out = "";
  for (const ch of cut) {
    const code = ch.codePointAt(0)!;
    out += code < 0x20 || code === 0x7f || ch === "'"
      ? `\\u${code.toString(16).padStart(4, "0")}`
      : ch;
  }
  return `'${out}'`;
}

/** Copies `headers` onto a response (responses built here have mutable headers). */
export function withHeaders(res: Response, headers: Record<string, string>): Response {
  for (const [k, v] of Object.entries(headers)) {
    // Vary lists every request header the answer depends on: Origin joins what is there.
    if (k === "vary") res.headers.append(k, v);
    else res.headers.set(k, v);
  }
  return res;
}
