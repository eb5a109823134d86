/**
 * CORS per http-api.md sec. 2 plus the project additions: `Authorization` is an allowed header and
 * `Vary: Origin` accompanies an echoed origin.
 */
import type { HttpConfig } from "../config/mod.ts";

export const CORS_ALLOW_METHODS = "GET, POST, OPTIONS";
export const CORS_ALLOW_HEADERS = "Content-Type, Authorization";

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

  constructor(http: HttpConfig) {
    this.#origins = http.corsAllowedOrigins;
    this.#credentials = http.corsAllowCredentials;
  }

  /**
   * Headers to add to the response of `req`; empty when the request has no Origin or it matches
   * no entry. `preflight` always carries Allow-Methods/Allow-Headers (contract).
   */
  headersFor(req: Request, preflight: boolean): Record<string, string> {
    const out: Record<string, string> = {};
    if (preflight) {
      out["access-control-allow-methods"] = CORS_ALLOW_METHODS;
      out["access-control-allow-headers"] = CORS_ALLOW_HEADERS;
    }
    const origin = req.headers.get("origin");
    if (origin === null) return out;
    const entry = this.#origins.find((e) => originMatches(e, origin));
    if (entry === undefined) return out;
    if (entry === "*") {
      out["access-control-allow-origin"] = "*";
    } else {
      out["access-control-allow-origin"] = origin;
      out["vary"] = "Origin";
    }
    out["access-control-allow-methods"] = CORS_ALLOW_METHODS;
    out["access-control-allow-headers"] = CORS_ALLOW_HEADERS;
    if (this.#credentials) out["access-control-allow-credentials"] = "true";
    return out;
  }
}

/** Copies `headers` onto a response (responses built here have mutable headers). */
export function withHeaders(res: Response, headers: Record<string, string>): Response {
  for (const [k, v] of Object.entries(headers)) res.headers.set(k, v);
  return res;
}
