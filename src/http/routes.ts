/**
 * The /v0 route table, assembled from api/<domain>_routes.ts (each route beside its handler;
 * route_table.ts says what a route is), and the matcher the request handler finds a route with.
 */
import { invalidArgument } from "../common/mod.ts";
import type { TokenRole } from "../config/mod.ts";
import { ALARM_ROUTES } from "./api/alarm_routes.ts";
import { AUDIT_ROUTES } from "./api/audit_routes.ts";
import { AUTOMATION_ROUTES } from "./api/automation_routes.ts";
import { DEVICE_ROUTES } from "./api/device_routes.ts";
import { ESTOP_ROUTES } from "./api/estop_routes.ts";
import { EVENT_ROUTES } from "./api/event_routes.ts";
import { HISTORY_ROUTES } from "./api/history_routes.ts";
import { metaRoutes } from "./api/meta_routes.ts";
import { MODE_ROUTES } from "./api/mode_routes.ts";
import { RUN_ROUTES } from "./api/run_routes.ts";
import { RUNTIME_ROUTES } from "./api/runtime_routes.ts";
import { TELEMETRY_ROUTES } from "./api/telemetry_routes.ts";
import {
  requiredRole,
  type Route,
  type RouteDoc,
  type RouteHandler,
  type RouteOptions,
} from "./route_table.ts";

/**
 * Every endpoint of docs/http-api.md, with its documentation and schemas (GET /v0/openapi.json,
 * whose paths follow this order). HEAD is served by every GET route (RFC 9110 sec. 9.3.2).
 */
export const ROUTES: readonly Route[] = [
  ...RUNTIME_ROUTES,
  ...TELEMETRY_ROUTES,
  ...DEVICE_ROUTES,
  ...MODE_ROUTES,
  ...ESTOP_ROUTES,
  ...AUTOMATION_ROUTES,
  ...ALARM_ROUTES,
  ...RUN_ROUTES,
  ...HISTORY_ROUTES,
  ...EVENT_ROUTES,
  ...AUDIT_ROUTES,
  ...metaRoutes(() => ROUTES),
];

/**
 * A matched route: its handler, options (the role resolved), documentation and decoded path
 * parameters.
 */
export interface RouteMatch extends RouteOptions {
  readonly handler: RouteHandler;
  readonly params: Record<string, string>;
  readonly doc: RouteDoc;
  readonly role: TokenRole;
}

/**
 * Finds the route for a method and path (HEAD finds the GET route); null when none matches
 * (the caller answers 404 "Route not found"). Throws INVALID_ARGUMENT for a path parameter with
 * broken %-encoding.
 */
export function matchRoute(method: string, pathname: string): RouteMatch | null {
  const wanted = method === "HEAD" ? "GET" : method;
  const parts = pathname.slice(1).split("/");
  for (const r of ROUTES) {
    if (r.method !== wanted || r.segments.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < parts.length && ok; i++) {
      const seg = r.segments[i];
      if (seg!.startsWith(":")) {
        if (parts[i] === "") ok = false;
        else params[seg!.slice(1)] = decodeSegment(parts[i]!, seg!.slice(1));
      } else if (seg !== parts[i]) {
        ok = false;
      }
    }
    if (ok) {
      return {
        handler: r.handler,
        params,
        priority: r.priority,
        anyBody: r.anyBody,
        doc: r.doc,
        role: requiredRole(r),
      };
    }
  }
  return null;
}

/**
 * The route template a path falls under, whatever the method (`/v0/state/:provider_id/:device_id`),
 * or null when no route has that shape: a bounded label for metrics, never the raw path.
 */
export function routeTemplate(pathname: string): string | null {
  const parts = pathname.slice(1).split("/");
  for (const r of ROUTES) {
    if (r.segments.length !== parts.length) continue;
    let ok = true;
    for (let i = 0; i < parts.length && ok; i++) {
      const seg = r.segments[i];
      ok = seg!.startsWith(":") ? parts[i] !== "" : seg === parts[i];
    }
    if (ok) return `/${r.segments.join("/")}`;
  }
  return null;
}

/**
 * The priority route a request goes to, else null (no %-decoding needed: none has parameters).
 */
export function priorityRoute(method: string, pathname: string): Route | null {
  const wanted = method === "HEAD" ? "GET" : method;
  return ROUTES.find((r) =>
    r.priority === true && r.method === wanted && `/${r.segments.join("/")}` === pathname
  ) ?? null;
}

/**
 * The query parameter every route accepts and none reads: the cache-buster `_=<time>` that HTTP
 * libraries append to a GET (jQuery's `cache: false`, many polling dashboards).
 */
export const CACHE_BUSTER_PARAMETER = "_";
/** An unknown parameter's name is quoted in the 400 up to this many characters. */
const UNKNOWN_NAME_SHOWN_CHARS = 64;

/**
 * Checks a request's query against its route's documented parameters (docs: `query`). Refuses a
 * parameter the route does not take: a misspelled filter (`GET /v0/events?provder=sim0`) would
 * otherwise be ignored without a word and the client would get the unfiltered answer. Refuses a
 * parameter that takes one value (not `repeated`) given more than once: the handler would read
 * the first alone, and the others (a second `signal_id` filter, a second `origin`) would be
 * dropped without a word. CACHE_BUSTER_PARAMETER is accepted everywhere and ignored.
 * @throws INVALID_ARGUMENT naming the parameter.
 */
export function checkQuery(url: URL, method: string, doc: RouteDoc): void {
  const known = doc.query ?? [];
  for (const name of new Set(url.searchParams.keys())) {
    if (name === CACHE_BUSTER_PARAMETER || known.some((q) => q.name === name)) continue;
    const shown = JSON.stringify(name.slice(0, UNKNOWN_NAME_SHOWN_CHARS));
    throw invalidArgument(
      `${shown}: unknown query parameter; ${method} ${url.pathname} takes ` +
        (known.length === 0 ? "none" : known.map((q) => q.name).join(", ")),
    );
  }
  for (const q of known) {
    if (q.repeated) continue;
    const n = url.searchParams.getAll(q.name).length;
    if (n > 1) throw invalidArgument(`${q.name}: given ${n} times; this parameter takes one value`);
  }
}

function decodeSegment(raw: string, name: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw invalidArgument(`${name}: invalid percent-encoding in path`);
  }
}
