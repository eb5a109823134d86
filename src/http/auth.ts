/**
 * Bearer-token authentication (spec "Authentication", contract/README.md 401 shape). The token is
 * compared in constant time and never logged or echoed.
 */
import { type HttpConfig, isLoopback } from "../config/mod.ts";
import { errorResponse } from "./envelope.ts";

/** The effective token: RUNTIME_API_TOKEN when set and non-empty, else `http.auth_token`. */
export function resolveApiToken(http: HttpConfig, envToken: string | undefined): string {
  return envToken !== undefined && envToken !== "" ? envToken : http.authToken;
}

/**
 * Whether a client address is loopback: all of 127.0.0.0/8, `::1` and IPv4-mapped
 * `::ffff:127.x.x.x` (the same rule as the bind safety gate).
 */
export function isLoopbackAddress(address: string): boolean {
  return isLoopback(address);
}

/**
 * Who a request acts as, for the record (audit) and for authorization: the token's name
 * (`default` for the single configured token), `local` for a loopback-exempt request that
 * presented no valid token, `anonymous` when auth is off. The token itself is never kept here.
 */
export interface Principal {
  readonly name: string;
  /** The client's address as the connection reported it. */
  readonly address: string;
}

/** The principal names that are not token names. */
export const LOCAL_PRINCIPAL = "local";
export const ANONYMOUS_PRINCIPAL = "anonymous";
/** The name the single configured token (`http.auth_token` / RUNTIME_API_TOKEN) acts under. */
export const DEFAULT_TOKEN_NAME = "default";

/** Checks requests against the configured token; one instance per server. */
export class BearerAuth {
  readonly #enabled: boolean;
  readonly #exemptLoopback: boolean;
  /** SHA-256 of the token, so comparison time does not depend on where the bytes differ. */
  readonly #tokenDigest: Promise<Uint8Array> | null;

  constructor(http: HttpConfig, token: string) {
    this.#enabled = http.authEnabled;
    this.#exemptLoopback = http.authExemptLoopback;
    // An empty configured token never authorizes anyone.
    this.#tokenDigest = token.length === 0 ? null : sha256(token);
  }

  /** Who the request acts as, or null when it may not proceed (answer 401). */
  async identify(req: Request, remoteAddr: string): Promise<Principal | null> {
    if (!this.#enabled) return { name: ANONYMOUS_PRINCIPAL, address: remoteAddr };
    if (await this.presentsToken(req)) return { name: DEFAULT_TOKEN_NAME, address: remoteAddr };
    if (this.#exemptLoopback && isLoopbackAddress(remoteAddr)) {
      return { name: LOCAL_PRINCIPAL, address: remoteAddr };
    }
    return null;
  }

  /**
   * Whether the request carries the configured token, whether or not auth is enabled (the
   * request policy lets a cross-origin request with the token change state).
   */
  async presentsToken(req: Request): Promise<boolean> {
    const header = req.headers.get("authorization");
    // Prefix is case-sensitive "Bearer" and exactly one space (as anolis).
    if (header === null || !header.startsWith("Bearer ") || this.#tokenDigest === null) {
      return false;
    }
    const presented = await sha256(header.slice("Bearer ".length));
    return constantTimeEqual(presented, await this.#tokenDigest);
  }
}

/** 401 with `WWW-Authenticate: Bearer` and the project's body (status envelope + flat error). */
export function unauthorizedResponse(): Response {
  return errorResponse(
    "UNAUTHENTICATED",
    "Missing or invalid bearer token",
    { error: "unauthorized" },
    { "www-authenticate": "Bearer" },
  );
}

async function sha256(text: string): Promise<Uint8Array> {
  const data = new TextEncoder().encode(text);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", data));
}

/** Compares two digests without an early exit (digests of different lengths differ). */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}
