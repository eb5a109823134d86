/**
 * The /v0 route table and its handlers. Handlers return the success body (the envelope adds
 * `status`) or throw RuntimeError; http_api.ts turns both into responses in one place.
 */
import {
  type DeviceCapabilities,
  failedPrecondition,
  invalidArgument,
  notFound,
  type Quality,
  RUNTIME_VERSION,
  RuntimeError,
  unavailable,
  worstQuality,
} from "../common/mod.ts";
import type { TokenRole } from "../config/mod.ts";
import { okResponse } from "./envelope.ts";
import { type BodyLimits, readJsonBody } from "./json_body.ts";
import {
  CALL_BODY_SCHEMA,
  type CallBody,
  CLOSE_RUN_BODY_SCHEMA,
  type CloseRunBody,
  ESTOP_BODY_SCHEMA,
  IGNORED_BODY_SCHEMA,
  type JsonSchema,
  MARKER_BODY_SCHEMA,
  type MarkerBody,
  MODE_BODY_SCHEMA,
  type ModeBody,
  NO_ARGUMENTS_BODY_SCHEMA,
  OPEN_RUN_BODY_SCHEMA,
  type OpenRunBody,
  SET_PARAMETER_BODY_SCHEMA,
  type SetParameterBody,
  SHELVE_BODY_SCHEMA,
  type ShelveBody,
} from "./request_schemas.ts";
import {
  closeRunRequest,
  markerRequest,
  openRunRequest,
  parseEventsPage,
  parseRunsPage,
} from "./run_bodies.ts";
import type { EstopStatus } from "../safety/mod.ts";
import type { Principal } from "./auth.ts";
import { AUDIT_QUERY_DOC, httpOrigin, parseAuditQuery } from "./audit_http.ts";
import type { HttpServices } from "./services.ts";
import type { SseHub } from "./sse_hub.ts";
import { callArgs, signalValueJson } from "./typed_value_json.ts";

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
   * or throws INVALID_ARGUMENT naming the wrong field. Call it once.
   */
  readonly body: <T>() => Promise<T>;
  /** Whether a value matches the route's request schema (for a `lenient` body). */
  readonly bodyMatches: (value: unknown) => Promise<boolean>;
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
 * with path parameters 400 (broken %-encoding): those need not be listed.
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
  readonly priority?: boolean;
  /** Any body is accepted (not only JSON): the e-stop is never refused for its body. */
  readonly anyBody?: boolean;
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

const route = (
  method: "GET" | "POST",
  path: string,
  handler: RouteHandler,
  options: RouteOptions & { readonly doc: RouteDoc },
): Route => ({ method, segments: path.slice(1).split("/"), handler, ...options });

const PAGE_QUERY = (defaultLimit: number, maxLimit: number): QueryParameterDoc[] => [
  {
    name: "limit",
    description:
      `Page size (default ${defaultLimit}, at most ${maxLimit}; a larger value is cut, ` +
      "a value below 1 or one that does not parse takes the default).",
    schema: { type: "string", pattern: "^\\s*[+-]?\\d+\\s*$" },
  },
  {
    name: "offset",
    description: "Entries to skip (default 0; a value that does not parse takes the default).",
    schema: { type: "string", pattern: "^\\s*[+-]?\\d+\\s*$" },
  },
];

/**
 * Every endpoint of http-api.md sec. 3, with its documentation and schemas (GET /v0/openapi.json).
 * HEAD is served by every GET route (RFC 9110 sec. 9.3.2).
 */
export const ROUTES: readonly Route[] = [
  route("GET", "/v0/runtime/status", runtimeStatus, {
    priority: true,
    doc: {
      operationId: "getRuntimeStatus",
      summary: "Version, mode, uptime, providers and the e-stop",
      tag: "runtime",
      response: "RuntimeStatusResponse",
    },
  }),
  route("GET", "/v0/providers/health", providersHealth, {
    doc: {
      operationId: "getProvidersHealth",
      summary: "Provider and device health, supervision and discovery warnings",
      tag: "runtime",
      response: "ProvidersHealthResponse",
    },
  }),
  route("GET", "/v0/telemetry/status", telemetryStatus, {
    doc: {
      operationId: "getTelemetryStatus",
      summary: "Telemetry writer counters (also when telemetry is disabled)",
      tag: "runtime",
      response: "TelemetryStatusResponse",
    },
  }),
  route("GET", "/v0/devices", listDevices, {
    doc: {
      operationId: "listDevices",
      summary: "Every device of every provider",
      tag: "devices",
      response: "DevicesResponse",
    },
  }),
  route("GET", "/v0/devices/:provider_id/:device_id/capabilities", deviceCapabilities, {
    doc: {
      operationId: "getDeviceCapabilities",
      summary: "A device's signals and functions (with their arguments)",
      tag: "devices",
      response: "DeviceCapabilitiesResponse",
      errors: [404],
    },
  }),
  route("GET", "/v0/state", allState, {
    doc: {
      operationId: "getState",
      summary: "Cached values of every device that has polled signals",
      tag: "devices",
      response: "StateCollectionResponse",
    },
  }),
  route("GET", "/v0/state/:provider_id/:device_id", deviceState, {
    doc: {
      operationId: "getDeviceState",
      summary: "One device's cached values",
      tag: "devices",
      query: [{
        name: "signal_id",
        description: "Only these signals (may repeat; unknown ids are ignored).",
        schema: { type: "string" },
        repeated: true,
      }],
      response: "DeviceStateResponse",
      errors: [404, 503],
    },
  }),
  route("POST", "/v0/call", call, {
    role: "operator",
    doc: {
      operationId: "callFunction",
      summary: "Call a device function",
      tag: "control",
      description: "Checks in this order: JSON, provider, device, function, mode and e-stop " +
        "gates, interlocks, then the arguments against the function's declaration. A provider " +
        "that is down answers 503, one that does not reply within its timeout_ms 504.",
      body: { schema: CALL_BODY_SCHEMA, required: true },
      response: "CallResponse",
      errors: [404, 409, 503, 504],
    },
  }),
  route("GET", "/v0/mode", getMode, {
    doc: {
      operationId: "getMode",
      summary: "The runtime mode",
      tag: "control",
      response: "ModeResponse",
    },
  }),
  route("POST", "/v0/mode", setMode, {
    role: "operator",
    doc: {
      operationId: "setMode",
      summary: "Change the runtime mode (runs the mode-transition hooks)",
      tag: "control",
      body: { schema: MODE_BODY_SCHEMA, required: true },
      response: "ModeResponse",
      errors: [409],
    },
  }),
  route("POST", "/v0/estop", estopTrigger, {
    // Anyone who may read may stop the machine.
    role: "viewer",
    priority: true,
    anyBody: true,
    doc: {
      operationId: "triggerEstop",
      summary: "Latch the software e-stop, enter FAULT and run the safe-state ladder",
      tag: "safety",
      description: "Any body is accepted (whatever its Content-Type): the latch engages before " +
        "it is read, and the answer waits at most ESTOP_REASON_READ_TIMEOUT_MS for it.",
      body: { schema: ESTOP_BODY_SCHEMA, required: false, handling: "lenient" },
      response: "EstopResponse",
    },
  }),
  route("POST", "/v0/estop/clear", estopClear, {
    role: "operator",
    priority: true,
    doc: {
      operationId: "clearEstop",
      summary: "Release the e-stop latch (re-arms nothing)",
      tag: "safety",
      body: { schema: IGNORED_BODY_SCHEMA, required: false, handling: "ignored" },
      response: "EstopClearResponse",
    },
  }),
  route("GET", "/v0/parameters", listParameters, {
    doc: {
      operationId: "listParameters",
      summary: "Automation parameters",
      tag: "automation",
      response: "ParametersResponse",
    },
  }),
  route("POST", "/v0/parameters", setParameter, {
    role: "operator",
    doc: {
      operationId: "setParameter",
      summary: "Set an automation parameter",
      tag: "automation",
      body: { schema: SET_PARAMETER_BODY_SCHEMA, required: true },
      response: "SetParameterResponse",
      errors: [404],
    },
  }),
  route("GET", "/v0/automation/tree", automationTree, {
    doc: {
      operationId: "getAutomationTree",
      summary: "The behavior-tree XML (re-read per request)",
      tag: "automation",
      response: "AutomationTreeResponse",
      errors: [404],
    },
  }),
  route("GET", "/v0/automation/status", automationStatus, {
    doc: {
      operationId: "getAutomationStatus",
      summary: "The automation engine's execution status",
      tag: "automation",
      response: "AutomationStatusResponse",
    },
  }),
  route("GET", "/v0/alarms", listAlarms, {
    doc: {
      operationId: "listAlarms",
      summary: "Every configured alarm with its state",
      tag: "alarms",
      response: "AlarmsResponse",
    },
  }),
  route("GET", "/v0/alarms/:alarm_id", getAlarm, {
    doc: {
      operationId: "getAlarm",
      summary: "One alarm",
      tag: "alarms",
      response: "AlarmResponse",
      errors: [404],
    },
  }),
  route("POST", "/v0/alarms/:alarm_id/ack", ackAlarm, {
    role: "operator",
    doc: {
      operationId: "ackAlarm",
      summary: "Acknowledge an active alarm",
      tag: "alarms",
      body: { schema: NO_ARGUMENTS_BODY_SCHEMA, required: false },
      response: "AlarmResponse",
      errors: [404, 409],
    },
  }),
  route("POST", "/v0/alarms/:alarm_id/shelve", shelveAlarm, {
    role: "operator",
    doc: {
      operationId: "shelveAlarm",
      summary: "Shelve an alarm for a while (not one whose action is fault or estop)",
      tag: "alarms",
      body: { schema: SHELVE_BODY_SCHEMA, required: true },
      response: "AlarmResponse",
      errors: [404, 409],
    },
  }),
  route("POST", "/v0/alarms/:alarm_id/unshelve", unshelveAlarm, {
    role: "operator",
    doc: {
      operationId: "unshelveAlarm",
      summary: "Unshelve a shelved alarm",
      tag: "alarms",
      body: { schema: NO_ARGUMENTS_BODY_SCHEMA, required: false },
      response: "AlarmResponse",
      errors: [404, 409],
    },
  }),
  route("GET", "/v0/interlocks", listInterlocks, {
    doc: {
      operationId: "listInterlocks",
      summary: "Every configured interlock and whether it blocks now",
      tag: "alarms",
      response: "InterlocksResponse",
    },
  }),
  route("GET", "/v0/runs", listRuns, {
    doc: {
      operationId: "listRuns",
      summary: "Run records, newest first",
      tag: "runs",
      query: PAGE_QUERY(50, 200),
      response: "RunsListResponse",
    },
  }),
  route("POST", "/v0/runs", openRun, {
    role: "operator",
    doc: {
      operationId: "openRun",
      summary: "Open a run (one at a time)",
      tag: "runs",
      body: { schema: OPEN_RUN_BODY_SCHEMA, required: false },
      response: "RunResponse",
      errors: [409],
    },
  }),
  route("GET", "/v0/runs/:run_id", getRun, {
    doc: {
      operationId: "getRun",
      summary: "One run record",
      tag: "runs",
      response: "RunResponse",
      errors: [404],
    },
  }),
  route("POST", "/v0/runs/:run_id/close", closeRun, {
    role: "operator",
    doc: {
      operationId: "closeRun",
      summary: "Close a run (idempotent)",
      tag: "runs",
      body: { schema: CLOSE_RUN_BODY_SCHEMA, required: false },
      response: "RunResponse",
      errors: [404],
    },
  }),
  route("GET", "/v0/runs/:run_id/events", listRunEvents, {
    doc: {
      operationId: "listRunEvents",
      summary: "A run's event log, oldest first",
      tag: "runs",
      query: [
        ...PAGE_QUERY(200, 1000),
        {
          name: "after_sequence",
          description: "Only events with a larger sequence (a cursor; offset counts from there).",
          schema: { type: "string", pattern: "^\\d{1,15}$" },
        },
      ],
      response: "RunEventsListResponse",
      errors: [404],
    },
  }),
  route("POST", "/v0/runs/:run_id/events", addRunMarker, {
    role: "operator",
    doc: {
      operationId: "addRunMarker",
      summary: "Record an operator marker in an open run",
      tag: "runs",
      body: { schema: MARKER_BODY_SCHEMA, required: true },
      response: "RunEventResponse",
      errors: [404, 409],
    },
  }),
  route("GET", "/v0/events", events, {
    doc: {
      operationId: "streamEvents",
      summary: "Server-Sent Events: state updates, mode changes, alarms, \u2026",
      tag: "events",
      query: [
        {
          name: "provider_id",
          description: "Only this provider's device events.",
          schema: { type: "string" },
        },
        {
          name: "device_id",
          description: "Only this device's device events.",
          schema: { type: "string" },
        },
        {
          name: "signal_id",
          description: "Only this signal's signal events.",
          schema: { type: "string" },
        },
      ],
      response: {
        contentType: "text/event-stream",
        description: "An endless stream of `event: <kind>`, `id: <n>`, `data: <JSON>` frames " +
          "(the kinds are listed in the document's description of this operation); comments " +
          "`: keepalive` and `: dropped N events`.",
        schema: { type: "string" },
      },
      errors: [503],
    },
  }),
  route("GET", "/v0/audit", listAudit, {
    doc: {
      operationId: "listAudit",
      summary: "The audit trail: who commanded what, when, and what the machine answered",
      tag: "safety",
      description: "Every decision on an actuating call (accepted, refused or failed), mode " +
        "change, parameter set, e-stop and clear, with its origin; consecutive identical calls " +
        "from one origin are collapsed into one entry with a count. Oldest first; page with " +
        "`next_cursor` (null at the end). Project addition (issue 21).",
      query: AUDIT_QUERY_DOC,
      response: "AuditResponse",
      errors: [400],
    },
  }),
  route("GET", "/v0/openapi.json", openApiDocument, {
    doc: {
      operationId: "getOpenApiDocument",
      summary: "This document (OpenAPI 3.1), built from the route table",
      tag: "meta",
      description: "The one answer without the `status` envelope: it is the document itself.",
      response: {
        contentType: "application/json",
        description: "The OpenAPI 3.1 document.",
        schema: { type: "object", required: ["openapi", "info", "paths"] },
      },
    },
  }),
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

/** The role a route needs: as declared, else viewer for a GET and admin (fail closed) otherwise. */
export function requiredRole(r: { readonly method: string; readonly role?: TokenRole }): TokenRole {
  return r.role ?? (r.method === "GET" ? "viewer" : "admin");
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
      if (seg.startsWith(":")) {
        if (parts[i] === "") ok = false;
        else params[seg.slice(1)] = decodeSegment(parts[i], seg.slice(1));
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
      ok = seg.startsWith(":") ? parts[i] !== "" : seg === parts[i];
    }
    if (ok) return `/${r.segments.join("/")}`;
  }
  return null;
}

/** Whether a request goes to a priority route (no %-decoding needed: none has parameters). */
export function isPriorityRequest(method: string, pathname: string): boolean {
  const wanted = method === "HEAD" ? "GET" : method;
  return ROUTES.some((r) =>
    r.priority === true && r.method === wanted && `/${r.segments.join("/")}` === pathname
  );
}

function decodeSegment(raw: string, name: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw invalidArgument(`${name}: invalid percent-encoding in path`);
  }
}

// ---- runtime, providers, telemetry ----

function runtimeStatus({ services }: RouteContext): Response {
  const providers = services.inventory.providers().map((h) => ({
    provider_id: h.id,
    state: h.available ? "AVAILABLE" : "UNAVAILABLE",
    device_count: h.devices.length,
  }));
  return okResponse({
    version: RUNTIME_VERSION,
    // Project addition: the configured runtime.name ("" when none), for the operator console.
    runtime_name: services.config.runtime.name,
    mode: services.modes?.current() ?? "IDLE",
    uptime_seconds: services.uptimeSeconds(),
    polling_interval_ms: services.config.polling.intervalMs,
    providers,
    device_count: providers.reduce((n, p) => n + p.device_count, 0),
    estop: services.estop?.status() ?? estopStatusWithoutService(services),
  });
}

/** With no e-stop service nothing would be actuated: every actuating function is uncovered. */
function estopStatusWithoutService(services: HttpServices): EstopStatus {
  const actuating = services.inventory.providers()
    .flatMap((h) => h.devices)
    .reduce((n, d) => n + d.functions.filter((f) => f.actuating).length, 0);
  return {
    latched: false,
    software_safe_state: "none",
    latched_at_epoch_ms: null,
    uncovered_actuating_functions: actuating,
  };
}

function providersHealth({ services }: RouteContext): Response {
  // Project addition (issue 21): the audit journal's health (a failing write shows here).
  const audit = services.audit?.status();
  return okResponse({ providers: services.providerHealth(), ...(audit ? { audit } : {}) });
}

function telemetryStatus({ services }: RouteContext): Response {
  return okResponse(
    services.telemetry?.status() ?? {
      enabled: false,
      running: false,
      connected: false,
      total_written: 0,
      total_failed: 0,
      pending_batch: 0,
      queue_depth: 0,
      dropped_events: 0,
    },
  );
}

// ---- devices and state ----

function listDevices({ services }: RouteContext): Response {
  const devices = services.inventory.devices().map((d) => ({
    provider_id: d.providerId,
    device_id: d.deviceId,
    display_name: d.label || d.deviceId,
    type: d.typeId || "unknown",
  }));
  return okResponse({ devices });
}

function requireDevice(services: HttpServices, p: string, d: string): DeviceCapabilities {
  const caps = services.inventory.capabilities(p, d);
  if (!caps) throw notFound(`Device not found: ${p}/${d}`);
  return caps;
}

function deviceCapabilities({ services, params }: RouteContext): Response {
  const { provider_id: p, device_id: d } = params;
  const caps = requireDevice(services, p, d);
  const signals = [...caps.signals]
    .sort((a, b) => compareText(a.signalId, b.signalId))
    .map((s) => ({
      signal_id: s.signalId,
      value_type: s.valueType ?? "unspecified",
      label: s.name || s.description,
    }));
  const functions = [...caps.functions]
    .sort((a, b) => a.functionId - b.functionId || compareText(a.name, b.name))
    .map((f) => ({
      function_id: f.functionId,
      name: f.name,
      label: f.description,
      args: Object.fromEntries(f.args.map((a) => {
        const spec: Record<string, unknown> = {
          type: a.type ?? "unspecified",
          required: a.required,
        };
        if (a.description) spec.description = a.description;
        if (a.unit) spec.unit = a.unit;
        if (a.min !== undefined) spec.min = a.min;
        if (a.max !== undefined) spec.max = a.max;
        // Project addition (as for parameters): what the router accepts for a string argument.
        if (a.allowedValues.length > 0) spec.allowed_values = [...a.allowedValues];
        return [a.name, spec];
      })),
      category: f.category,
      actuating: f.actuating,
    }));
  return okResponse({ provider_id: p, device_id: d, capabilities: { signals, functions } });
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * One device's cached values, optionally restricted to `only` signal ids. `age_ms` is how long ago
 * the runtime received the value (monotonic: neither a provider's clock nor a step of the host's
 * changes it) and an OK value past its staleness bound reads STALE; `timestamp_epoch_ms` is the
 * provider's timestamp as it gave it.
 */
function deviceStateBody(
  services: HttpServices,
  p: string,
  d: string,
  only: ReadonlySet<string> | null,
) {
  const cache = services.cache;
  const state = cache.device(p, d);
  const values = [];
  for (const signalId of state?.pollable ?? []) {
    if (only && !only.has(signalId)) continue;
    const s = state?.signals.get(signalId);
    if (!s) continue;
    values.push({
      signal_id: signalId,
      value: signalValueJson(s.value),
      timestamp_epoch_ms: s.timestampMs,
      quality: cache.qualityNow(p, d, signalId, s),
      age_ms: Math.round(cache.ageMs(s)),
    });
  }
  const quality: Quality = !state?.available
    ? "UNAVAILABLE"
    : worstQuality(values.map((v) => v.quality));
  return { provider_id: p, device_id: d, quality, values };
}

function allState({ services }: RouteContext): Response {
  const now = services.host.clock.nowMs();
  const devices = services.cache.devices()
    .filter((s) => s.pollable.length > 0)
    .map((s) => deviceStateBody(services, s.providerId, s.deviceId, null));
  return okResponse({ generated_at_epoch_ms: now, devices });
}

function deviceState({ services, params, url }: RouteContext): Response {
  const { provider_id: p, device_id: d } = params;
  const known = services.inventory.capabilities(p, d) ?? services.cache.device(p, d);
  if (!known) throw notFound(`Device not found: ${p}/${d}`);
  const state = services.cache.device(p, d);
  if (!state || state.pollable.length === 0) {
    throw unavailable(`No cached state for device: ${p}/${d} (it has no pollable signals)`);
  }
  const ids = url.searchParams.getAll("signal_id").filter((s) => s !== "");
  const now = services.host.clock.nowMs();
  const body = deviceStateBody(services, p, d, ids.length > 0 ? new Set(ids) : null);
  return okResponse({ generated_at_epoch_ms: now, ...body });
}

// ---- calls ----

async function call({ services, body, principal }: RouteContext): Promise<Response> {
  const b = await body<CallBody>();
  const result = await services.router.call({
    providerId: b.provider_id,
    deviceId: b.device_id,
    functionId: b.function_id,
    args: callArgs(b.args),
    origin: "manual",
    source: httpOrigin(principal),
    // No abort signal: a call is bounded by the provider's timeout_ms, and once queued it is
    // cheaper to finish than to half-cancel (Deno's request.signal also fires after success).
  });
  return okResponse({
    provider_id: result.providerId,
    device_id: result.deviceId,
    function_id: result.functionId,
    post_call_poll_triggered: true,
  });
}

// ---- modes, e-stop, parameters, automation ----

function getMode({ services }: RouteContext): Response {
  return okResponse({ mode: services.modes?.current() ?? "IDLE" });
}

async function setMode({ services, body, principal }: RouteContext): Promise<Response> {
  const modes = services.modes;
  if (!modes) throw unavailable("Mode manager not available");
  const source = httpOrigin(principal);
  /** Records a refusal decided here (the request never reaches the mode manager). */
  const refused = (err: unknown, refusedBy: string, mode: string | null): unknown => {
    if (err instanceof RuntimeError) {
      services.audit?.refused({
        action: "mode",
        origin: source,
        function: mode,
        reason: `${err.code}: ${err.message}`,
        refused_by: refusedBy,
      });
    }
    return err;
  };
  let mode: ModeBody["mode"];
  try {
    ({ mode } = await body<ModeBody>());
  } catch (err) {
    throw refused(err, "validation", null);
  }
  if (mode === "AUTO" && !services.config.automation.enabled) {
    throw refused(
      failedPrecondition("Mode AUTO requires automation (automation.enabled is false)"),
      "mode",
      mode,
    );
  }
  const report = await modes.requestWithReport(mode, source);
  return okResponse({ mode: report.mode, hook_failures: report.hook_failures });
}

/**
 * How long the e-stop waits for its optional body (the reason) before it triggers without it;
 * shorter than BODY_READ_TIMEOUT_MS because a slow client must not delay the answer (the latch
 * itself never waits for the body).
 */
export const ESTOP_REASON_READ_TIMEOUT_MS = 1000;

async function estopTrigger(
  { services, req, limits, bodyMatches, principal }: RouteContext,
): Promise<Response> {
  const estop = services.estop;
  if (!estop) throw unavailable("E-stop controller not available");
  // The reason is optional and informative only: the latch engages before the body is read, so
  // an unreadable, non-JSON or slow body never delays or blocks the stop.
  const reason = req.body === null ? undefined : readJsonBody(req, {
    maxBytes: limits.maxBytes,
    timeoutMs: Math.min(limits.timeoutMs, ESTOP_REASON_READ_TIMEOUT_MS),
  }).then(
    async (body: unknown) =>
      body !== undefined && await bodyMatches(body)
        ? (body as { reason?: string }).reason
        : undefined,
    () => undefined,
  );
  return okResponse(await estop.trigger(reason, { source: httpOrigin(principal) }));
}

async function estopClear({ services, req, principal }: RouteContext): Promise<Response> {
  const estop = services.estop;
  if (!estop) throw unavailable("E-stop controller not available");
  await req.body?.cancel().catch(() => {}); // body ignored
  return okResponse(estop.clear(httpOrigin(principal)));
}

function parameterService(services: HttpServices) {
  if (!services.parameters) throw unavailable("Parameters not available: automation is disabled");
  return services.parameters;
}

function listParameters({ services }: RouteContext): Response {
  return okResponse({ parameters: parameterService(services).list() });
}

async function setParameter({ services, body, principal }: RouteContext): Promise<Response> {
  const parameters = parameterService(services);
  const { name, value } = await body<SetParameterBody>();
  return okResponse({ parameter: parameters.set(name, value, httpOrigin(principal)) });
}

function automationService(services: HttpServices) {
  if (!services.automation) {
    throw unavailable(
      services.config.automation.enabled
        ? "Automation not available: the automation engine is not running"
        : "Automation not available: automation is disabled",
    );
  }
  return services.automation;
}

async function automationTree({ services }: RouteContext): Promise<Response> {
  return okResponse({ tree: await automationService(services).treeXml() });
}

function automationStatus({ services }: RouteContext): Response {
  return okResponse(automationService(services).status());
}

// ---- alarms and interlocks (docs/alarms.md) ----

function alarmService(services: HttpServices) {
  if (!services.alarms) throw unavailable("Alarms not available");
  return services.alarms;
}

function listAlarms({ services }: RouteContext): Response {
  return okResponse({ alarms: alarmService(services).alarms() });
}

function getAlarm({ services, params }: RouteContext): Response {
  return okResponse({ alarm: alarmService(services).alarm(params.alarm_id) });
}

async function ackAlarm({ services, body, params, principal }: RouteContext): Promise<Response> {
  const alarms = alarmService(services);
  await body<unknown>();
  return okResponse({ alarm: alarms.ack(params.alarm_id, httpOrigin(principal)) });
}

async function shelveAlarm(
  { services, body, params, principal }: RouteContext,
): Promise<Response> {
  const alarms = alarmService(services);
  const { duration_ms } = await body<ShelveBody>();
  return okResponse({
    alarm: alarms.shelve(params.alarm_id, duration_ms, httpOrigin(principal)),
  });
}

async function unshelveAlarm(
  { services, body, params, principal }: RouteContext,
): Promise<Response> {
  const alarms = alarmService(services);
  await body<unknown>();
  return okResponse({ alarm: alarms.unshelve(params.alarm_id, httpOrigin(principal)) });
}

function listInterlocks({ services }: RouteContext): Response {
  return okResponse({ interlocks: alarmService(services).interlocks() });
}

// ---- runs ----

function runsService(services: HttpServices) {
  if (!services.runs) throw unavailable("Run registry not available");
  return services.runs;
}

async function listRuns({ services, url }: RouteContext): Promise<Response> {
  return okResponse(await runsService(services).list(parseRunsPage(url.searchParams)));
}

async function openRun({ services, body }: RouteContext): Promise<Response> {
  const runs = runsService(services);
  return okResponse(await runs.open(openRunRequest(await body<OpenRunBody | null>())));
}

async function getRun({ services, params }: RouteContext): Promise<Response> {
  return okResponse(await runsService(services).get(params.run_id));
}

async function closeRun({ services, body, params }: RouteContext): Promise<Response> {
  const runs = runsService(services);
  return okResponse(
    await runs.close(params.run_id, closeRunRequest(await body<CloseRunBody | null>())),
  );
}

async function listRunEvents({ services, params, url }: RouteContext): Promise<Response> {
  const page = parseEventsPage(url.searchParams);
  return okResponse(await runsService(services).listEvents(params.run_id, page));
}

async function addRunMarker({ services, body, params }: RouteContext): Promise<Response> {
  const runs = runsService(services);
  return okResponse(await runs.addMarker(params.run_id, markerRequest(await body<MarkerBody>())));
}

// ---- audit trail (issue 21) ----

/** GET /v0/audit: entries oldest first, filtered, paged with an opaque cursor. */
async function listAudit({ services, url }: RouteContext): Promise<Response> {
  const query = parseAuditQuery(url.searchParams);
  if (!services.audit) throw unavailable("Audit trail not available");
  return okResponse(await services.audit.query(query));
}

// ---- events ----

/** The stream ends (and frees its subscription) when the client goes: Deno cancels the body. */
function events({ sse, url }: RouteContext): Response {
  const q = url.searchParams;
  return sse.open({
    providerId: q.get("provider_id") ?? "",
    deviceId: q.get("device_id") ?? "",
    signalId: q.get("signal_id") ?? "",
  });
}

// ---- the document ----

/**
 * GET /v0/openapi.json: built from ROUTES on the first request and kept (openapi.ts is loaded
 * only then, so a runtime nobody asks costs nothing for it).
 */
async function openApiDocument(): Promise<Response> {
  const { openApiDocumentText } = await import("./openapi.ts");
  return new Response(openApiDocumentText(), {
    status: 200,
    headers: { "content-type": "application/json" },
  });
}
