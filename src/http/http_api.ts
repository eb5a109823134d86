/**
 * The request handler: `(Request, {remoteAddr}) => Promise<Response>`. Order per request:
 * concurrency bound -> CORS preflight -> auth -> route -> handler; every outcome, errors
 * included, leaves through one place that adds CORS headers.
 */
import type { Logger } from "../common/mod.ts";
import { BearerAuth, unauthorizedResponse } from "./auth.ts";
import { CorsPolicy, withHeaders } from "./cors.ts";
import { errorResponse, responseForError } from "./envelope.ts";
import { BODY_READ_TIMEOUT_MS, type BodyLimits, MAX_BODY_BYTES } from "./json_body.ts";
import { matchRoute } from "./routes.ts";
import type { HttpServices } from "./services.ts";
import { SseHub } from "./sse_hub.ts";

/** Connection facts the server passes with each request (injected so tests can fake them). */
export interface RequestInfo {
  /** Client IP address without port, e.g. `127.0.0.1` or `::1`. */
  readonly remoteAddr: string;
}

export interface HttpApiOptions {
  /** Effective API token (see resolveApiToken); "" = none configured. */
  readonly apiToken: string;
  /** Default http.thread_pool_size. */
  readonly maxConcurrentRequests?: number;
  readonly maxBodyBytes?: number;
  readonly bodyReadTimeoutMs?: number;
  /** SSE keep-alive comment interval (default 15 s; tests use a short one). */
  readonly sseKeepAliveMs?: number;
  readonly maxSseClients?: number;
  readonly sseQueueSize?: number;
}

/** The /v0 API over the runtime's services. */
export class HttpApi {
  readonly #services: HttpServices;
  readonly #log: Logger;
  readonly #auth: BearerAuth;
  readonly #cors: CorsPolicy;
  readonly #sse: SseHub;
  readonly #limits: BodyLimits;
  readonly #maxConcurrent: number;
  #inFlight = 0;

  constructor(services: HttpServices, options: HttpApiOptions) {
    const http = services.config.http;
    this.#services = services;
    this.#log = services.host.log.child("http");
    this.#auth = new BearerAuth(http, options.apiToken);
    this.#cors = new CorsPolicy(http);
    this.#sse = new SseHub({
      bus: services.bus,
      log: this.#log,
      keepAliveMs: options.sseKeepAliveMs,
      maxClients: options.maxSseClients,
      queueSize: options.sseQueueSize,
    });
    this.#limits = {
      maxBytes: options.maxBodyBytes ?? MAX_BODY_BYTES,
      timeoutMs: options.bodyReadTimeoutMs ?? BODY_READ_TIMEOUT_MS,
    };
    this.#maxConcurrent = Math.max(1, options.maxConcurrentRequests ?? http.threadPoolSize);
  }

  /** Open SSE streams. */
  get sseClientCount(): number {
    return this.#sse.clientCount;
  }

  /** Requests being handled now (SSE streams count only until their response starts). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Handles one request; never rejects. */
  handle = async (req: Request, info: RequestInfo): Promise<Response> => {
    let cors: Record<string, string> = {};
    let res: Response;
    try {
      const url = new URL(req.url);
      const preflight = req.method === "OPTIONS" && url.pathname.startsWith("/v0/");
      cors = this.#cors.headersFor(req, preflight);
      // http.thread_pool_size bounds concurrently handled requests: Deno has no worker threads,
      // so the bound protects providers and memory instead. Excess requests are answered 503 at
      // once rather than queued, so a client never waits behind a stuck peer. An SSE stream
      // holds its slot only until its response starts; streams have their own bound.
      if (this.#inFlight >= this.#maxConcurrent) {
        res = errorResponse(
          "UNAVAILABLE",
          `Server busy: ${this.#maxConcurrent} requests in progress (http.thread_pool_size)`,
        );
      } else {
        this.#inFlight++;
        try {
          res = await this.#dispatch(req, url, info, preflight);
        } finally {
          this.#inFlight--;
        }
      }
    } catch (err) {
      res = responseForError(err);
    }
    if (res.status >= 500) this.#log.warn(`${req.method} ${safePath(req)} -> ${res.status}`);
    else this.#log.debug(`${req.method} ${safePath(req)} -> ${res.status}`);
    return withHeaders(res, cors);
  };

  /** Ends every SSE stream and refuses new ones; call before the server shuts down. */
  close(): void {
    this.#sse.closeAll();
  }

  async #dispatch(
    req: Request,
    url: URL,
    info: RequestInfo,
    preflight: boolean,
  ): Promise<Response> {
    // Preflights carry no credentials by design (browsers never send Authorization on them), so
    // they are answered before auth: they reveal nothing and run nothing.
    if (preflight) return new Response(null, { status: 204 });
    if (!(await this.#auth.allows(req, info.remoteAddr))) {
      await req.body?.cancel().catch(() => {});
      return unauthorizedResponse();
    }
    try {
      const match = matchRoute(req.method, url.pathname);
      if (!match) {
        return errorResponse("NOT_FOUND", `Route not found: ${req.method} ${url.pathname}`);
      }
      return await match.handler({
        req,
        url,
        params: match.params,
        services: this.#services,
        sse: this.#sse,
        limits: this.#limits,
      });
    } catch (err) {
      const res = responseForError(err);
      if (res.status === 500) {
        this.#log.error(`${req.method} ${url.pathname}: ${(err as Error)?.message ?? err}`);
      }
      return res;
    }
  }
}

/** Path without query (queries are never logged: they are client data). */
function safePath(req: Request): string {
  try {
    return new URL(req.url).pathname;
  } catch {
    return "?";
  }
}
