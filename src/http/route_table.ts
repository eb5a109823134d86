/**
 * What a route is: its handler's context, its documentation (GET /v0/openapi.json is built from
 * it) and its options. The routes themselves are in api/<domain>_routes.ts, each beside its
 * handler; routes.ts assembles them and matches requests. Handlers return the success body (the
 * envelope adds `status`) or throw RuntimeError; http_api.ts turns both into responses in one
 * place.
 */
import type { TokenRole } from "../config/mod.ts";
import type { CallerRefusal } from "../control/mod.ts";
import type { Principal } from "./auth.ts";
import type { BodyLimits } from "./json_body.ts";
import type { JsonSchema } from "./request_schemas.ts";
import type { HttpServices } from "./services.ts";
import type { SseHub } from "./sse_hub.ts";

/** What a route handler receives. */
export interface RouteContext {
  readonly req: Request;
  readonly url: URL;
  /** Decoded path parameters by name. */
  readonly params: Readonly<Record<string, string>>;
  /** Who the request acts as (auth.ts). */
  readonly principal: Principal;
  readonly services: HttpServices;
  readonly sse: SseHub;
  readonly limits: BodyLimits;
  /**
   * Reads the JSON body (bounded by `limits`) and checks it against the route's request schema
   * (doc.body): resolves the body typed as that schema says (`null` for an absent optional one),
   * or throws INVALID_ARGUMENT naming the wrong field. Call it once. A request whose API tokens
   * were replaced while its body arrived is asked again under those in force (401, 403), unless
   * `stop` says the body asks for a stop (FAULT, IDLE, a run's close): a stop is never asked
   * again (docs/safety.md section 9).
   */
  readonly body: <T>(stop?: (value: T) => boolean) => Promise<T>;
  /** Whether a value matches the route's request schema (for a `lenient` body). */
  readonly bodyMatches: (value: unknown) => Promise<boolean>;
  /**
   * Whether the request's credentials admit it to this route under the API tokens in force now
   * (a reload may have removed its token or lowered its role since it was admitted).
   */
  readonly admitted: () => Promise<boolean>;
  /**
   * False once the API tokens were replaced after this request was admitted (a reload while it
   * ran): whatever it keeps open must be checked with `admitted` again.
   */
  readonly admittedUnderCurrentTokens: () => boolean;
  /**
   * A check, for a command that waits its turn (a call in its provider's queue), of whether the
   * API tokens in force when it is asked still admit this request with its route's role: null, or
   * the refusal (a reload removed or lowered its token since), which the request is answered
   * with as its first check would have (401, 403). Synchronous once resolved.
   */
  readonly stillAdmitted: () => Promise<() => CallerRefusal | null>;
  /**
   * Closes the request's connection at once, whatever its answer is still writing (an event
   * stream whose client stopped reading); nothing when no server carries the request.
   */
  readonly dropConnection: () => void;
  /**
   * Settles once the request's answer is written or its connection has ended; null when no
   * server carries the request.
   */
  readonly answered: Promise<void> | null;
  /**
   * Whether the e-stop latched or the runtime entered FAULT or IDLE since the request arrived (its
   * headers): a command whose body arrived after a stop was sent before it (stop_marks.ts).
   */
  readonly stoppedSinceArrival: () => boolean;
  /**
   * The request's slot, to give back before it answers (`release`, idempotent; the handler's end
   * gives it back anyway): the e-stop's, once its latch holds and its body has arrived, so that
   * presses waiting for their stop's answer hold none. Null when the request holds no slot: a
   * `neverBusy` route served while every priority slot was taken (its body is then not to be read).
   */
  readonly slot: HeldSlot | null;
}

/** A request slot a request holds (http_api.ts), which it may give back before it answers. */
export interface HeldSlot {
  /** Gives the slot back; nothing once given back. */
  release(): void;
}

export type RouteHandler = (ctx: RouteContext) => Promise<Response> | Response;

/** Groups of operations in the OpenAPI document. */
export type ApiTag =
  | "runtime"
  | "devices"
  | "control"
  | "safety"
  | "automation"
  | "alarms"
  | "runs"
  | "history"
  | "events"
  | "meta";

/** One query parameter of a route. */
export interface QueryParameterDoc {
  readonly name: string;
  readonly description: string;
  readonly schema: JsonSchema;
  /** May be given more than once (`?signal_id=a&signal_id=b`). */
  readonly repeated?: boolean;
}

/** A route's request body. */
export interface RequestBodyDoc {
  readonly schema: JsonSchema;
  /** A body must be sent (else absent = `null`). */
  readonly required: boolean;
  /**
   * `validated` (default): `ctx.body()` checks it against the schema. `lenient`: read by the
   * handler itself, and a body that does not match is ignored (the e-stop). `ignored`: discarded
   * unread.
   */
  readonly handling?: "validated" | "lenient" | "ignored";
}

/** A success answer that is not a JSON envelope (the event stream, the document itself). */
export interface RawResponseDoc {
  readonly contentType: string;
  readonly description: string;
  readonly schema: JsonSchema;
}

/**
 * What GET /v0/openapi.json says about a route (openapi.ts builds the document from these).
 * Every route also answers 401, 403, 500 and 503 (busy); every POST 400 and 415; every route
 * but the e-stop 400 for its query (a parameter it does not take, or one that takes one value
 * given twice), and every route with path parameters 400 (broken %-encoding): those need not be
 * listed.
 */
export interface RouteDoc {
  /** Unique; also the name of the route's generated body validator. */
  readonly operationId: string;
  readonly summary: string;
  readonly tag: ApiTag;
  readonly description?: string;
  readonly query?: readonly QueryParameterDoc[];
  readonly body?: RequestBodyDoc;
  /** The 200 answer: a response schema's name (response_schemas.ts), or a raw answer. */
  readonly response: string | RawResponseDoc;
  /** Other media types of the 200 answer (CSV, JSON Lines), chosen by `Accept` or `format`. */
  readonly alternatives?: readonly RawResponseDoc[];
  /** The other statuses this route itself can answer (e.g. 404, 409). */
  readonly errors?: readonly number[];
}

/** How the request handler treats a route beyond calling it. */
export interface RouteOptions {
  /**
   * Outside `http.thread_pool_size`: served from PRIORITY_REQUEST_SLOTS of its own, so the
   * e-stop, its clear and the status that shows them are never refused because ordinary
   * requests (slow bodies, calls to a hung provider) hold every slot.
   */
  readonly priority?: boolean | undefined;
  /**
   * A priority route never refused for capacity (the e-stop): with every priority slot taken it
   * is served without one (RouteContext.slot null), so it latches whatever holds them.
   */
  readonly neverBusy?: boolean | undefined;
  /** Any body is accepted (not only JSON): the e-stop is never refused for its body. */
  readonly anyBody?: boolean | undefined;
  /**
   * The least role that may use the route (README "Roles"). A GET defaults to viewer; every
   * POST declares its role (a test walks ROUTES), and one that did not would need admin.
   */
  readonly role?: TokenRole;
}

/** One route: method, path, handler, its documentation and schemas, and options. */
export interface Route extends RouteOptions {
  readonly method: "GET" | "POST";
  /** Path segments after the leading "/"; `:name` captures one segment. */
  readonly segments: readonly string[];
  readonly handler: RouteHandler;
  readonly doc: RouteDoc;
}

/** A route from its method, path (`/v0/runs/:run_id`), handler, documentation and options. */
export const route = (
  method: "GET" | "POST",
  path: string,
  handler: RouteHandler,
  options: RouteOptions & { readonly doc: RouteDoc },
): Route => ({ method, segments: path.slice(1).split("/"), handler, ...options });

/** The role a route needs: as declared, else viewer for a GET and admin (fail closed) otherwise. */
export function requiredRole(r: { readonly method: string; readonly role?: TokenRole }): TokenRole {
  return r.role ?? (r.method === "GET" ? "viewer" : "admin");
}
