/**
 * The request handler: `(Request, {remoteAddr}) => Promise<Response>`. Order per request:
 * host check -> CORS preflight (no slot) -> operator console (paths outside /v0 but /metrics,
 * when enabled) -> concurrency bound (priority routes have their own slots) -> auth -> origin
 * check -> /metrics (any role) or route -> role check (403) -> content-type check -> handler; every
 * outcome, errors included, leaves through one place that adds CORS headers (and drops the body
 * of a HEAD).
 */
import {
  type Logger,
  maxStreamsFor,
  requestConnectionsShort,
  RuntimeError,
} from "../common/mod.ts";
import type { CallerRefusal } from "../control/mod.ts";
import type { HttpConfig, TokenRole } from "../config/mod.ts";
import { auditHttpRefusal } from "./audit_http.ts";
import {
  authorizationFormProblem,
  BearerAuth,
  type Credentials,
  forbiddenResponse,
  type NamedToken,
  type Principal,
  roleAllows,
  type TokenChanges,
  tokenChanges,
  UNAUTHORIZED_MESSAGE,
  unauthorizedResponse,
  withDefaultToken,
} from "./auth.ts";
import { ConsoleSite, isConsolePath } from "./console_site.ts";
import { CorsPolicy, withHeaders } from "./cors.ts";
import { errorResponse, responseForError } from "./envelope.ts";
import {
  BODY_READ_TIMEOUT_MS,
  type BodyLimits,
  MAX_BODY_BYTES,
  priorityBodyLimits,
} from "./json_body.ts";
import { type PolicyRefusal, RequestPolicy } from "./request_policy.ts";
import {
  CONSOLE_ROUTE,
  HttpRequestMetrics,
  METRICS_CONTENT_TYPE,
  METRICS_PATH,
  renderMetrics,
  UNMATCHED_ROUTE,
} from "./metrics.ts";
import { loadRequestValidators, readRequestBody, requestValidator } from "./request_validation.ts";
import type { HeldSlot } from "./route_table.ts";
import { checkQuery, matchRoute, priorityRoute, routeTemplate } from "./routes.ts";
import type { HttpServices } from "./services.ts";
import { SseHub } from "./sse_hub.ts";

/**
 * Concurrent requests to the priority routes (e-stop, e-stop clear, runtime status), on top of
 * and apart from `http.thread_pool_size`. An e-stop holds its slot only until its latch holds and
 * its optional body has arrived (at most ESTOP_REASON_READ_TIMEOUT_MS), not while it waits for
 * its stop's answer (a press during a stop waits for the whole further stop: the presses of an
 * anxious operator would otherwise hold every slot and starve the clear and status); with every
 * slot taken it is still served, without one: it latches and its body is discarded unread
 * (route option `neverBusy`). A clear holds its slot while the content-type check reads the first
 * bytes of an HTTP/2 body it does not declare (as long at most: priorityBodyLimits); a status,
 * while it is answered from memory.
 */
export const PRIORITY_REQUEST_SLOTS = 16;

/** Connection facts the server passes with each request (injected so tests can fake them). */
export interface RequestInfo {
  /** Client IP address without port, e.g. `127.0.0.1` or `::1`. */
  readonly remoteAddr: string;
  /**
   * Closes the connection the request came on at once (the server's ServeHandler info); absent
   * when the handler is called without a server.
   */
  readonly dropConnection?: () => void;
  /**
   * Settles once the request's answer is written or its connection has ended (the server's
   * ServeHandler info); absent when the handler is called without a server.
   */
  readonly answered?: Promise<void>;
}

export interface HttpApiOptions {
  /** Effective API token (see resolveApiToken); "" = none configured. It acts as admin `default`. */
  readonly apiToken: string;
  /** The `http.tokens` entries with their values (see resolveNamedTokens). */
  readonly tokens?: readonly NamedToken[];
  /** Default http.thread_pool_size. */
  readonly maxConcurrentRequests?: number;
  readonly maxBodyBytes?: number;
  readonly bodyReadTimeoutMs?: number;
  /** SSE keep-alive comment interval (default 15 s; tests use a short one). */
  readonly sseKeepAliveMs?: number;
  readonly maxSseClients?: number;
  readonly sseQueueSize?: number;
  /** Bounds of the ring a resuming event stream replays from (event_ring.ts defaults). */
  readonly sseReplayMaxEvents?: number;
  readonly sseReplayMaxBytes?: number;
  /** Default PRIORITY_REQUEST_SLOTS. */
  readonly priorityRequestSlots?: number;
}

/** A counted bound on concurrent requests. */
class RequestSlots {
  readonly limit: number;
  inUse = 0;
  constructor(limit: number) {
    this.limit = Math.max(1, limit);
  }
  /** A slot for one request, null when all are taken. */
  tryAcquire(): SlotHold | null {
    if (this.inUse >= this.limit) return null;
    this.inUse++;
    return new SlotHold(this);
  }
  /** Gives back a slot tryAcquire took (SlotHold.release, once per slot). */
  release(): void {
    this.inUse--;
  }
}

/**
 * One request's slot (RouteContext.slot): an object, not a closure per request, given back once
 * however often `release` is called (by the e-stop once latched, and by the handler's end).
 */
class SlotHold implements HeldSlot {
  /** null once given back. */
  #slots: RequestSlots | null;
  constructor(slots: RequestSlots) {
    this.#slots = slots;
  }
  release(): void {
    const slots = this.#slots;
    if (slots === null) return;
    this.#slots = null;
    slots.release();
  }
}

/** The /v0 API over the runtime's services. */
export class HttpApi {
  readonly #services: HttpServices;
  readonly #log: Logger;
  #auth: BearerAuth;
  /** The tokens in effect, the single one as admin `default` first (what setTokens compares). */
  #tokens: readonly NamedToken[];
  /** Bumped by every setTokens: a request admitted under an older value is checked again. */
  #tokenGeneration = 0;
  /**
   * The latest setTokens' replacement of the tokens (settled, never rejecting): each one waits
   * for the one called before it, so the tokens of the call made last are the ones in force.
   */
  #retokened: Promise<unknown> = Promise.resolve();
  readonly #cors: CorsPolicy;
  readonly #sse: SseHub;
  readonly #policy: RequestPolicy;
  readonly #limits: BodyLimits;
  readonly #slots: RequestSlots;
  /** Set by close() (shutdown): only the priority routes are served from then on. */
  #closed = false;
  readonly #prioritySlots: RequestSlots;
  /** null when http.console_enabled is false. */
  readonly #console: ConsoleSite | null;
  /** null when http.metrics_enabled is false (GET /metrics is then a 404). */
  readonly #metrics: HttpRequestMetrics | null;

  /**
   * Replaces the API tokens (a reload of `http.auth_token` / `http.tokens`): from the next
   * request on, a removed token is refused and a new one admitted, and the event streams its
   * credentials no longer admit are ended. Resolves with how many ended and who gained or lost
   * access (`tokenChanges`, null when nobody did). `http` carries the rest of the authentication
   * settings, which keep their start-up values (they need a restart). Calls made while one is
   * still digesting its tokens take effect one after another in the order they were made (the
   * changes of each are against the tokens of the one before it). `changed` is given those
   * changes (when someone gained or lost access) in the synchronous step that puts the tokens in
   * effect, before it: what it records precedes every request they admit.
   */
  async setTokens(
    http: HttpConfig,
    apiToken: string,
    tokens: readonly NamedToken[],
    changed?: (changes: TokenChanges) => void,
  ): Promise<{ ended: number; changes: TokenChanges | null }> {
    const replaced = this.#retokened.then(() =>
      this.#replaceTokens(http, apiToken, tokens, changed)
    );
    this.#retokened = replaced.catch(() => {});
    const changes = await replaced;
    return { ended: await this.#sse.recheck(), changes };
  }

  /** setTokens' replacement, once the calls before it have made theirs. */
  async #replaceTokens(
    http: HttpConfig,
    apiToken: string,
    tokens: readonly NamedToken[],
    changed: ((changes: TokenChanges) => void) | undefined,
  ): Promise<TokenChanges | null> {
    // Digested before they take effect: a request admitted under the tokens before is asked again
    // of these synchronously (a call at its turn, #admittedNow).
    const auth = await BearerAuth.create(http, apiToken, tokens);
    const next = withDefaultToken(apiToken, tokens);
    const changes = tokenChanges(this.#tokens, next);
    if (changes !== null) changed?.(changes);
    this.#tokens = next;
    this.#auth = auth;
    this.#tokenGeneration++;
    return changes;
  }

  constructor(services: HttpServices, options: HttpApiOptions) {
    const http = services.config.http;
    this.#services = services;
    this.#log = services.host.log.child("http");
    this.#auth = new BearerAuth(http, options.apiToken, options.tokens ?? []);
    this.#tokens = withDefaultToken(options.apiToken, options.tokens ?? []);
    this.#cors = new CorsPolicy(http, this.#log);
    this.#policy = new RequestPolicy(http);
    this.#sse = new SseHub({
      bus: services.bus,
      log: this.#log,
      clock: services.host.clock,
      keepAliveMs: options.sseKeepAliveMs,
      maxClients: options.maxSseClients,
      queueSize: options.sseQueueSize,
      replayMaxEvents: options.sseReplayMaxEvents,
      replayMaxBytes: options.sseReplayMaxBytes,
    });
    if (options.maxSseClients === undefined) this.fitConnections(http.maxConnections);
    this.#limits = {
      maxBytes: options.maxBodyBytes ?? MAX_BODY_BYTES,
      timeoutMs: options.bodyReadTimeoutMs ?? BODY_READ_TIMEOUT_MS,
      clock: services.host.clock,
    };
    this.#slots = new RequestSlots(options.maxConcurrentRequests ?? http.threadPoolSize);
    this.#prioritySlots = new RequestSlots(options.priorityRequestSlots ?? PRIORITY_REQUEST_SLOTS);
    this.#console = http.consoleEnabled ? new ConsoleSite() : null;
    this.#metrics = http.metricsEnabled ? new HttpRequestMetrics() : null;
  }

  /**
   * Fits the bound on event streams to the connections the server holds (`maxConnections`: the
   * bound in force, http.max_connections or lower when the open-file limit lowered it): streams
   * take at most half of them (maxStreamsFor), so they never lock a request out. A bound lowered
   * so far that it leaves requests no more connections than http.thread_pool_size is warned
   * about, as the configuration check warns about such an http.max_connections.
   */
  fitConnections(maxConnections: number): void {
    this.#sse.limitClients(
      maxStreamsFor(maxConnections),
      `streams get at most half of the server's ${maxConnections} connections, ` +
        "http.max_connections",
    );
    const http = this.#services.config.http;
    if (maxConnections >= http.maxConnections) return; // the configuration check said it
    const short = requestConnectionsShort(maxConnections, http.threadPoolSize);
    if (short === null) return;
    this.#log.warn(
      `the connection bound in force (${maxConnections}, http.max_connections ` +
        `${http.maxConnections} lowered to fit the open-file limit) ${short.text} ` +
        "(raise LimitNOFILE / ulimit -n, or lower http.thread_pool_size)",
    );
  }

  /** Open SSE streams. */
  get sseClientCount(): number {
    return this.#sse.clientCount;
  }

  /**
   * Requests holding a slot now, priority ones included (SSE streams count only until their
   * response starts; an e-stop press waiting for its stop's answer holds none).
   */
  get inFlight(): number {
    return this.#slots.inUse + this.#prioritySlots.inUse;
  }

  /** Handles one request; never rejects. */
  handle = async (req: Request, info: RequestInfo): Promise<Response> => {
    const startedMs = this.#services.host.clock.monoMs();
    // Taken as the request arrives, before anything awaits (its body may arrive after a stop).
    const stopMark = this.#services.router.stopEpoch();
    let cors: Record<string, string> = {};
    let res: Response;
    let route = UNMATCHED_ROUTE;
    try {
      const url = new URL(req.url);
      route = this.#routeLabel(url.pathname);
      // GET /metrics is read cross-origin like /v0 (a granted page scraping it with the token
      // needs its Authorization preflight answered).
      const preflight = req.method === "OPTIONS" &&
        (url.pathname.startsWith("/v0/") || route === METRICS_PATH);
      cors = this.#cors.headersFor(req, preflight);
      // DNS rebinding: a loopback-bound API answers only for loopback names (and allowed_hosts),
      // before anything else is looked at.
      const wrongHost = this.#policy.checkHost(req, url);
      if (wrongHost) {
        res = await refuse(req, wrongHost);
      } else if (preflight) {
        // Answered from memory, before auth (browsers never send credentials on a preflight)
        // and without a request slot: the preflight of a cross-origin POST /v0/estop must not be
        // refused for capacity when the stop itself would not be.
        await req.body?.cancel().catch(() => {});
        res = this.#cors.preflightResponse(req);
      } else if (this.#console !== null && route === CONSOLE_ROUTE) {
        // The console's files hold no data: no auth (the page asks for the token when the API
        // answers 401), and no request slot (answered from memory at once).
        res = await this.#console.serve(req, url);
      } else {
        // http.thread_pool_size bounds concurrently handled requests: Deno has no worker
        // threads, so the bound protects providers and memory instead. Excess requests are
        // answered 503 at once rather than queued, so a client never waits behind a stuck
        // peer. An SSE stream holds its slot only until its response starts; streams have
        // their own bound. The e-stop, its clear and runtime status have slots of their own.
        const priority = priorityRoute(req.method, url.pathname);
        const slots = priority === null ? this.#slots : this.#prioritySlots;
        if (this.#closed && priority === null) {
          // Shutting down (close()): a connection the server still holds (an HTTP/2 one whose
          // call is being answered) may carry new requests until the drain ends; nothing new is
          // commanded then. The e-stop, its clear and runtime status are still served.
          await req.body?.cancel().catch(() => {});
          res = errorResponse(
            "UNAVAILABLE",
            "Server shutting down: only the e-stop and runtime status are served",
          );
        } else {
          const slot = slots.tryAcquire();
          if (slot === null && priority?.neverBusy !== true) {
            await req.body?.cancel().catch(() => {});
            res = errorResponse(
              "UNAVAILABLE",
              priority !== null
                ? `Server busy: ${slots.limit} e-stop/status requests in progress`
                : `Server busy: ${slots.limit} requests in progress (http.thread_pool_size)`,
            );
          } else {
            // The e-stop is never refused for capacity: without a slot it is served all the same
            // (slot null: its body is not read), and it gives its slot back early.
            try {
              res = await this.#dispatch(req, url, info, stopMark, slot);
            } finally {
              slot?.release();
            }
          }
        }
      }
    } catch (err) {
      res = responseForError(err);
    }
    if (res.status >= 500) this.#log.warn(`${req.method} ${safePath(req)} -> ${res.status}`);
    else this.#log.debug(`${req.method} ${safePath(req)} -> ${res.status}`);
    if (req.method === "HEAD") res = await withoutBody(res);
    this.#metrics?.record(
      req.method,
      route,
      res.status,
      (this.#services.host.clock.monoMs() - startedMs) / 1000,
    );
    return withHeaders(res, cors);
  };

  /**
   * The CORS headers `req`'s answer carries (as handle() adds them), for an answer the server
   * makes in its place: the 504 "outcome unknown" at shutdown, the 500 when handle() fails
   * (serve's standInHeaders).
   */
  standInHeaders(req: Request): Headers {
    return new Headers(this.#cors.headersFor(req, false));
  }

  /** The bounded route label of a path: a route template, /metrics, console or unmatched. */
  #routeLabel(pathname: string): string {
    if (this.#metrics !== null && pathname === METRICS_PATH) return METRICS_PATH;
    if (this.#console !== null && isConsolePath(pathname)) return CONSOLE_ROUTE;
    return routeTemplate(pathname) ?? UNMATCHED_ROUTE;
  }

  /** GET /metrics (HEAD too): the Prometheus exposition. */
  async #scrape(): Promise<Response> {
    const proc = await this.#services.processStats();
    const text = renderMetrics(this.#services, {
      requests: this.#metrics!,
      sse: this.#sse,
      inFlight: this.inFlight,
      proc,
    });
    return new Response(text, { status: 200, headers: { "content-type": METRICS_CONTENT_TYPE } });
  }

  /**
   * Asks the tokens in force again for a request admitted under older ones; throws Unadmitted
   * (401, or 403 for a role now too low), audited as the first check would have, when they no
   * longer admit it. Asked by #dispatch when the tokens were replaced since the request was
   * admitted (its `generation` is no longer #tokenGeneration), also before a body is refused
   * (malformed, too large, too slow, not as the schema says, not JSON): that is 400 or 415 only to
   * a request the tokens in force still admit; one they no longer admit (replaced by a reload
   * while its body arrived) learns nothing from its body.
   */
  async #readmit(
    req: Request,
    url: URL,
    info: RequestInfo,
    was: Principal,
    need: TokenRole,
  ): Promise<void> {
    const now = await this.#auth.identify(req, info.remoteAddr);
    const refusal = refusedRequest(req, url, info);
    const why = "the API tokens were replaced (configuration reload) while its body arrived";
    if (now !== null && roleAllows(now.role, need)) {
      // A foreign page may have passed the origin check by its token alone: asked again too.
      const foreign = await this.#foreignOrigin(req, url);
      if (foreign === null) return;
      auditHttpRefusal(this.#services, {
        ...refusal,
        principal: now,
        refusedBy: "origin",
        reason: `${foreign.code}: ${foreign.message}: ${why}`,
      });
      throw new Unadmitted(refusalResponse(foreign));
    }
    if (now === null) {
      auditHttpRefusal(this.#services, {
        ...refusal,
        principal: null,
        refusedBy: "auth",
        reason: `UNAUTHENTICATED: token '${was.name}' no longer admits: ${why}`,
      });
      throw new Unadmitted(unauthorizedResponse());
    }
    auditHttpRefusal(this.#services, {
      ...refusal,
      principal: now,
      refusedBy: "role",
      reason: `PERMISSION_DENIED: role ${need} required (${now.name} has role ${now.role}): ${why}`,
    });
    throw new Unadmitted(forbiddenResponse(req.method, url.pathname, now, need));
  }

  /** #readmit, once the tokens were replaced since `generation` (when the request was admitted). */
  async #readmitIfReplaced(
    generation: number,
    req: Request,
    url: URL,
    info: RequestInfo,
    was: Principal,
    need: TokenRole,
  ): Promise<void> {
    if (generation !== this.#tokenGeneration) await this.#readmit(req, url, info, was, need);
  }

  /**
   * #readmit, synchronously, for a command that waits its turn (a call in its provider's queue):
   * null while the tokens in force still admit the request with the role it needs, else the
   * refusal, with its answer in AT_TURN_ANSWERS. Not audited here: the refused command is (the
   * call router's entry, `refused_by` as this names it).
   */
  #admittedNow(
    req: Request,
    url: URL,
    info: RequestInfo,
    was: Principal,
    need: TokenRole,
    credentials: Credentials,
  ): CallerRefusal | null {
    const why = "the API tokens were replaced (configuration reload) while it waited to act " +
      "(its turn, or its hooks)";
    const now = this.#auth.identifyNow(credentials, info.remoteAddr);
    let refusal: CallerRefusal;
    let answer: Response;
    if (now !== null && roleAllows(now.role, need)) {
      const foreign = RequestPolicy.judgesOrigin(req.method, url.pathname) &&
          req.headers.has("origin")
        ? this.#policy.checkOrigin(req, url, this.#auth.presentsTokenNow(credentials))
        : null;
      if (foreign === null) return null;
      refusal = {
        refusedBy: "origin",
        error: new RuntimeError(foreign.code, `${foreign.message}: ${why}`),
      };
      answer = refusalResponse(foreign);
    } else if (now === null) {
      refusal = {
        refusedBy: "auth",
        error: new RuntimeError(
          "UNAUTHENTICATED",
          `token '${was.name}' no longer admits: ${why}`,
        ),
      };
      answer = unauthorizedResponse();
    } else {
      refusal = {
        refusedBy: "role",
        error: new RuntimeError(
          "PERMISSION_DENIED",
          `role ${need} required (${now.name} has role ${now.role}): ${why}`,
        ),
      };
      answer = forbiddenResponse(req.method, url.pathname, now, need);
    }
    AT_TURN_ANSWERS.set(refusal.error, answer);
    return refusal;
  }

  /**
   * The origin check under the tokens in force (a foreign page may pass it by its token alone),
   * for a request it judges; null when it may go on.
   */
  async #foreignOrigin(req: Request, url: URL): Promise<PolicyRefusal | null> {
    if (!RequestPolicy.judgesOrigin(req.method, url.pathname) || !req.headers.has("origin")) {
      return null;
    }
    return this.#policy.checkOrigin(req, url, await this.#auth.presentsToken(req));
  }

  /**
   * Ends every SSE stream and refuses new ones, and every new request but the priority routes
   * (e-stop, its clear, runtime status); call before the server shuts down.
   */
  close(): void {
    this.#closed = true;
    this.#sse.closeAll();
  }

  async #dispatch(
    req: Request,
    url: URL,
    info: RequestInfo,
    stopMark: number,
    slot: SlotHold | null,
  ): Promise<Response> {
    // The tokens this request is admitted under (a reload may replace them while it runs).
    const generation = this.#tokenGeneration;
    const principal = await this.#auth.identify(req, info.remoteAddr);
    if (principal === null) {
      await req.body?.cancel().catch(() => {});
      const form = authorizationFormProblem(req);
      auditHttpRefusal(this.#services, {
        ...refusedRequest(req, url, info),
        principal,
        refusedBy: "auth",
        reason: `UNAUTHENTICATED: ${UNAUTHORIZED_MESSAGE}${form === null ? "" : `: ${form}`}`,
      });
      return unauthorizedResponse(form);
    }
    // A state-changing request (or an event stream) from a web page runs only for a trusted
    // origin or with the token.
    const foreign = await this.#foreignOrigin(req, url);
    if (foreign) {
      auditHttpRefusal(this.#services, {
        ...refusedRequest(req, url, info),
        principal,
        refusedBy: "origin",
        reason: `${foreign.code}: ${foreign.message}`,
      });
      return await refuse(req, foreign);
    }
    try {
      if (this.#metrics !== null && url.pathname === METRICS_PATH) {
        await req.body?.cancel().catch(() => {});
        if (req.method === "GET" || req.method === "HEAD") return await this.#scrape();
        return errorResponse("NOT_FOUND", `Route not found: ${req.method} ${url.pathname}`);
      }
      const match = matchRoute(req.method, url.pathname);
      if (!match) {
        await req.body?.cancel().catch(() => {});
        return errorResponse("NOT_FOUND", `Route not found: ${req.method} ${url.pathname}`);
      }
      if (!roleAllows(principal.role, match.role)) {
        await req.body?.cancel().catch(() => {});
        auditHttpRefusal(this.#services, {
          ...refusedRequest(req, url, info),
          principal,
          refusedBy: "role",
          reason: `PERMISSION_DENIED: role ${match.role} required (${principal.name} has role ` +
            `${principal.role})`,
        });
        return forbiddenResponse(req.method, url.pathname, principal, match.role);
      }
      // The e-stop is refused for nothing it carries: neither its body nor its query.
      if (!match.anyBody) checkQuery(url, req.method, match.doc);
      if (!match.anyBody) {
        // Reads the first bytes of a body a request does not declare (HTTP/2 without
        // content-length; never the e-stop's: anyBody); on a priority route (the clear) no longer
        // than the e-stop reads.
        const limits = match.priority === true ? priorityBodyLimits(this.#limits) : this.#limits;
        let notJson: PolicyRefusal | null;
        try {
          notJson = await this.#policy.checkContentType(req, limits);
        } catch (err) {
          await this.#readmitIfReplaced(generation, req, url, info, principal, match.role);
          throw err;
        }
        if (notJson) {
          await this.#readmitIfReplaced(generation, req, url, info, principal, match.role);
          return await refuse(req, notJson);
        }
      }
      return await match.handler({
        req,
        url,
        params: match.params,
        principal,
        services: this.#services,
        sse: this.#sse,
        limits: this.#limits,
        body: async <T>(stop?: (value: T) => boolean) => {
          let value: T;
          try {
            value = await readRequestBody<T>(req, this.#limits, match.doc);
          } catch (err) {
            // No stop acts on a refused body.
            await this.#readmitIfReplaced(generation, req, url, info, principal, match.role);
            throw err;
          }
          // The tokens may have been replaced (a reload) while the body arrived: the request
          // acts only when the tokens in force now still admit it with the role it needs. A
          // stop (FAULT, IDLE, a run's close) acts whatever a reload did to its token.
          if (generation !== this.#tokenGeneration && stop?.(value) !== true) {
            await this.#readmit(req, url, info, principal, match.role);
          }
          return value;
        },
        bodyMatches: async (value) => {
          await loadRequestValidators();
          return requestValidator(match.doc.operationId)(value);
        },
        admitted: async () => {
          const now = await this.#auth.identify(req, info.remoteAddr);
          if (now === null || !roleAllows(now.role, match.role)) return false;
          return await this.#foreignOrigin(req, url) === null;
        },
        admittedUnderCurrentTokens: () => generation === this.#tokenGeneration,
        stillAdmitted: async () => {
          const credentials = await this.#auth.credentials(req);
          return () =>
            generation === this.#tokenGeneration
              ? null
              : this.#admittedNow(req, url, info, principal, match.role, credentials);
        },
        dropConnection: info.dropConnection ?? NO_CONNECTION,
        answered: info.answered ?? null,
        stoppedSinceArrival: () => this.#services.router.stopEpoch() !== stopMark,
        slot,
      });
    } catch (err) {
      if (err instanceof Unadmitted) return err.response;
      const atTurn = err instanceof RuntimeError ? AT_TURN_ANSWERS.get(err) : undefined;
      if (atTurn !== undefined) return atTurn;
      const res = responseForError(err);
      if (res.status === 500) {
        this.#log.error(`${req.method} ${url.pathname}: ${(err as Error)?.message ?? err}`);
      }
      return res;
    }
  }
}

/** The dropConnection of a request no server carries (the handler called directly): nothing. */
const NO_CONNECTION = (): void => {};

/** Who asked what, from where: the part of an audited HTTP refusal the request itself gives. */
function refusedRequest(
  req: Request,
  url: URL,
  info: RequestInfo,
): { method: string; pathname: string; address: string } {
  return { method: req.method, pathname: url.pathname, address: info.remoteAddr };
}

/** A request its credentials no longer admit (the tokens changed while it ran): its answer. */
class Unadmitted extends Error {
  constructor(readonly response: Response) {
    super(`refused: ${response.status}`);
  }
}

/**
 * The answer of each refusal #admittedNow made (the router throws it back as the call's error):
 * 401 with its challenge, or 403, as the first check answers.
 */
const AT_TURN_ANSWERS = new WeakMap<RuntimeError, Response>();

/** A policy refusal as an error response; the body is discarded unread. */
async function refuse(req: Request, refusal: PolicyRefusal): Promise<Response> {
  await req.body?.cancel().catch(() => {});
  return refusalResponse(refusal);
}

function refusalResponse(refusal: PolicyRefusal): Response {
  return new Response(
    JSON.stringify({ status: { code: refusal.code, message: refusal.message } }),
    { status: refusal.httpStatus, headers: { "content-type": "application/json" } },
  );
}

/**
 * The HEAD form of a response: same status and headers, no body (RFC 9110 sec. 9.3.2). A finite
 * body's length is kept as Content-Length; an event stream is cancelled (which closes it).
 */
async function withoutBody(res: Response): Promise<Response> {
  const headers = new Headers(res.headers);
  if (res.body !== null) {
    if ((headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      await res.body.cancel().catch(() => {});
    } else {
      headers.set("content-length", String((await res.arrayBuffer()).byteLength));
    }
  }
  return new Response(null, { status: res.status, headers });
}

/** Path without query (queries are never logged: they are client data). */
function safePath(req: Request): string {
  try {
    return new URL(req.url).pathname;
  } catch {
    return "?";
  }
}
