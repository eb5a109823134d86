/**
 * The operator console: a static web page (console/ in the repository) served at `/` and its
 * asset paths, outside /v0. The page talks only to the public /v0 API. Its files are built into
 * the runtime by `deno task console:build` (src/http/_console_assets.js), so the binary reads no
 * file at run time. That module (~170 KB of text and gzip copies) is imported on the first
 * console request, not at start-up: a runtime whose console nobody opens never holds it.
 *
 * The files hold no data, so they are served without authentication; the page asks for the
 * bearer token when an API call answers 401. The Host check (DNS rebinding) still applies: it
 * runs before this. Every answer carries a strict Content-Security-Policy (no inline script or
 * style, connections to the page's own origin only, no framing: the e-stop clear must not be
 * clickjackable).
 */
import { errorResponse } from "./envelope.ts";

/** One file of the console as `deno task console:build` embeds it. */
export interface ConsoleAsset {
  /** URL path: `/` for index.html, else `/<file name>`. */
  readonly path: string;
  readonly contentType: string;
  /** Strong ETag (quoted) of the file's bytes. */
  readonly etag: string;
  /** The file's text (UTF-8). */
  readonly text: string;
  /** The same bytes gzip-compressed, base64-encoded (served when the client accepts gzip). */
  readonly gzipBase64: string;
}

/** The console's Content-Security-Policy: nothing inline, nothing foreign, never framed. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Headers on every console answer (assets, 304, 404, 405). */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/**
 * Browsers revalidate every time (the files change when the runtime is upgraded); the ETag
 * makes a revalidation a 304 without a body.
 */
export const CONSOLE_CACHE_CONTROL = "no-cache";

/** Whether a path belongs to the console rather than the API (everything outside /v0). */
export function isConsolePath(pathname: string): boolean {
  return pathname !== "/v0" && !pathname.startsWith("/v0/");
}

/** Whether an Accept-Encoding value admits gzip (RFC 9110 sec. 12.5.3: `q=0` refuses it). */
export function acceptsGzip(acceptEncoding: string | null): boolean {
  if (acceptEncoding === null) return false;
  let gzip: boolean | null = null;
  let star = false;
  for (const item of acceptEncoding.split(",")) {
    const [coding, ...params] = item.split(";").map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith("q="));
    const allowed = q === undefined || Number(q.slice(2)) > 0;
    if (coding === "gzip" || coding === "x-gzip") gzip = allowed;
    else if (coding === "*") star = allowed;
  }
  return gzip ?? star;
}

interface Prepared {
  readonly asset: ConsoleAsset;
  readonly plain: Uint8Array;
  gzip: Uint8Array | null;
}

/** Where the console's files come from: the embedded build by default. */
export type ConsoleAssetSource = () => Promise<readonly ConsoleAsset[]>;

/** The files `deno task console:build` embedded (a static specifier: `deno compile` includes it). */
export const EMBEDDED_CONSOLE_ASSETS: ConsoleAssetSource = async () =>
  (await import("./_console_assets.js")).CONSOLE_ASSETS;

/** Serves the embedded console files, loaded on the first request. */
export class ConsoleSite {
  readonly #source: ConsoleAssetSource;
  #byPath: Promise<Map<string, Prepared>> | null = null;

  constructor(source: ConsoleAssetSource = EMBEDDED_CONSOLE_ASSETS) {
    this.#source = source;
  }

  /** Whether the files have been loaded (by a request or `paths()`). */
  get loaded(): boolean {
    return this.#byPath !== null;
  }

  /** URL paths served, sorted. */
  async paths(): Promise<string[]> {
    return [...(await this.#files()).keys()].sort();
  }

  #files(): Promise<Map<string, Prepared>> {
    this.#byPath ??= this.#source().then((assets) => {
      const encoder = new TextEncoder();
      const byPath = new Map<string, Prepared>();
      for (const asset of assets) {
        byPath.set(asset.path, { asset, plain: encoder.encode(asset.text), gzip: null });
      }
      return byPath;
    });
    return this.#byPath;
  }

  /**
   * The answer for a console path: the file (gzip when accepted), 304 when the client's copy is
   * current, 404 for an unknown path, 405 for a method other than GET or HEAD on a file.
   */
  async serve(req: Request, url: URL): Promise<Response> {
    const found = (await this.#files()).get(url.pathname);
    if (req.method !== "GET" && req.method !== "HEAD") {
      await req.body?.cancel().catch(() => {});
      if (found === undefined) return notFound(req, url);
      const res = errorResponse(
        "INVALID_ARGUMENT",
        `Method not allowed: ${req.method} ${url.pathname} (the operator console answers GET ` +
          "and HEAD)",
        {},
        { ...CONSOLE_SECURITY_HEADERS, allow: "GET, HEAD" },
      );
      return new Response(res.body, { status: 405, headers: res.headers });
    }
    if (found === undefined) return notFound(req, url);
    const { asset } = found;
    const headers: Record<string, string> = {
      ...CONSOLE_SECURITY_HEADERS,
      "cache-control": CONSOLE_CACHE_CONTROL,
      etag: asset.etag,
      vary: "Accept-Encoding",
    };
    if (etagMatches(req.headers.get("if-none-match"), asset.etag)) {
      return new Response(null, { status: 304, headers });
    }
    headers["content-type"] = asset.contentType;
    if (acceptsGzip(req.headers.get("accept-encoding"))) {
      found.gzip ??= decodeBase64(asset.gzipBase64);
      headers["content-encoding"] = "gzip";
      return new Response(found.gzip.slice(), { status: 200, headers });
    }
    return new Response(found.plain.slice(), { status: 200, headers });
  }
}

function notFound(req: Request, url: URL): Response {
  return errorResponse(
    "NOT_FOUND",
    `Route not found: ${req.method} ${url.pathname}`,
    {},
    CONSOLE_SECURITY_HEADERS,
  );
}

/** If-None-Match: `*` or a list of entity tags, weak ones compared weakly (RFC 9110 sec. 13.1.2). */
function etagMatches(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch.split(",").some((t) => {
    const tag = t.trim();
    return tag === "*" || tag === etag || tag === `W/${etag}`;
  });
}

function decodeBase64(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
