/**
 * GET /v0/openapi.json: the OpenAPI 3.1 document of the HTTP API, built from the route table it is
 * given (routes.ts ROUTES: paths, parameters, request schemas, answers) and the response schemas
 * (response_schemas.ts), plus GET /metrics. Loaded and built on the first request only, then
 * kept as text: nothing of it is in memory in a runtime nobody asks.
 */
import { HTTP_CONTRACT_VERSION, RUNTIME_VERSION } from "../common/mod.ts";
import type { EventKind } from "../events/mod.ts";
import { METRICS_CONTENT_TYPE, METRICS_PATH } from "./metrics.ts";
import type { JsonSchema } from "./request_schemas.ts";
import { responseComponents } from "./response_schemas.ts";
import { requiredRole, type Route } from "./route_table.ts";

/** Every SSE event kind with what it carries (the `data:` members; all have `timestamp_ms`). */
export const EVENT_KIND_DOCS: Readonly<Record<EventKind, string>> = {
  state_update: "a polled value: provider_id, device_id, signal_id, value, quality",
  quality_change: "a signal's quality changed: provider_id, device_id, signal_id, old_quality, " +
    "new_quality (sent on every change; anolis never sends it)",
  device_availability: "a device came or went: provider_id, device_id, available; reason " +
    '"removed" when a configuration reload took its provider out (anolis never sends it)',
  provider_health_change: "a provider became AVAILABLE or UNAVAILABLE: provider_id, state " +
    "(anolis never sends it)",
  mode_change: "previous_mode, new_mode",
  parameter_change: "parameter_name, old_value, new_value (as text)",
  bt_error: "a behavior-tree node failed: node, error",
  automation_fault: "automation faulted: locus, error",
  hook_failure: "a mode-transition hook call failed: transition, phase, hook, device_handle, " +
    "function, error (project addition)",
  estop_change: "the e-stop latched or was released: latched, reason, cause (project addition)",
  estop_verification: "an e-stop's safe state was read back: outcome, elapsed_ms, checks_total, " +
    "checks_verified, failed_signals (project addition)",
  device_loss_latch: "automation may (no longer) command a device: provider_id, device_id, " +
    "latched, reason, provider_wide (a provider-wide entry's latch or release; project addition)",
  alarm: "an alarm transition: alarm_id, transition, state, level, cause, limit, signal, value, " +
    "quality, action, message, shelved_until_epoch_ms (project addition)",
  interlock: "an interlock engaged or released, or blocks for another reason: interlock_id, " +
    "blocking, reason, message, block (project addition)",
  config_reload: "the configuration was reloaded (SIGHUP) or a reload failed: result " +
    "(applied/failed), summary, providers_added, providers_removed, providers_restarted, " +
    "providers_retried, providers_updated, providers_unchanged, providers_failed, refused, needs_restart, errors, timestamp_ms " +
    "(project addition)",
};

/** Where our API departs from anolis's (docs/migrating-from-anolis.md lists each with its test). */
const DIFFERENCES = [
  'every JSON body carries `status`, the 401 too (`{status, error: "unauthorized"}` with ' +
  "`WWW-Authenticate: Bearer`)",
  "the API token is `RUNTIME_API_TOKEN` (preferred over `http.auth_token`), not " +
  "`ANOLIS_API_TOKEN`",
  "modes always exist: the runtime starts in IDLE, where actuating calls are refused (409) " +
  'until `POST /v0/mode {"mode":"MANUAL"}`; FAULT refuses them too; only category READ is ' +
  "read-only",
  "a call past the provider's `timeout_ms` answers 504 DEADLINE_EXCEEDED (anolis: 500)",
  "`POST /v0/estop` always enters FAULT; its answer adds `uncovered`, `hook_failures`, `drain` " +
  "and the read-back `verification`",
  "request policy (anolis has none): a non-loopback `Host` on a loopback bind and a foreign " +
  "`Origin` on a POST are 403 PERMISSION_DENIED; a POST body must be `application/json` (415); " +
  "bodies are bounded (64 KiB, 5 s, 32 levels of nesting)",
  "a mistyped member of a request is 400 naming it (anolis drops some silently), and so is a " +
  "query parameter the route does not take (anolis ignores it; the cache-buster `_` passes)",
  "CORS allows `Authorization` and sends `Vary: Origin`",
  "`quality_change`, `device_availability` and `provider_health_change` events are sent",
  'non-finite doubles are `{"type":"double","double":null,"non_finite":"NaN"}`; ' +
  "int64/uint64 values are exact",
  "a provider's declared function policy is enforced (anolis ignores it): a call outside " +
  "`allowed_modes` or to a function with `requires_lease` is 409, one sooner than " +
  "`min_interval_ms` after the last is 429 RESOURCE_EXHAUSTED with `Retry-After`",
];

const ADDITIONS = [
  "`HEAD` on every GET route",
  "`GET /metrics` (Prometheus text format, same auth; `http.metrics_enabled`)",
  "`GET /v0/openapi.json` (this document)",
  "alarms and interlocks (`/v0/alarms*`, `/v0/interlocks`; SSE `alarm`, `interlock`)",
  "`after_sequence` cursor on `GET /v0/runs/{run_id}/events`, `before` cursor on `GET /v0/runs`",
  "signal history (`/v0/history/{provider_id}/{device_id}`, JSON or CSV) and incident records " +
  "around every stop (`/v0/incidents*`)",
  "members added to anolis answers (listed in each schema's description): `runtime_name`, " +
  "`estop.plan`/`cause`/`verification`, `discovery_warnings`, `held_claims`, `data_faults`, telemetry " +
  "counters, `device_loss_latched`, `device_loss_latched_providers`, `device_outages`, `refused_calls`, `hook_failures`, `allowed_values`, " +
  "capabilities' `policy` (functions) and `poll_hint_hz`/`stale_after_ms` (signals)",
  "the operator console at `/` (outside this document)",
];

const DESCRIPTION = [
  "The runtime's REST API (`/v0`) and event stream. Where it is not listed below, the HTTP " +
  `contract is anolis's (anolishq/anolis HTTP v0, OpenAPI document ` +
  `\`schemas/http/runtime-http.openapi.v0.yaml\` of release ${HTTP_CONTRACT_VERSION}): ` +
  "the same paths, bodies, status codes and " +
  "required members, so anolis clients work unchanged. Response objects are open: the members " +
  "we add are deliberate. docs/migrating-from-anolis.md lists every difference with the test " +
  "that shows it; docs/http-api.md walks through every endpoint.",
  "",
  "Errors are `{status: {code, message}}`; `code` maps to the HTTP status: OK 200, " +
  "INVALID_ARGUMENT 400 (and 415), UNAUTHENTICATED 401, PERMISSION_DENIED 403, NOT_FOUND 404, " +
  "FAILED_PRECONDITION 409, RESOURCE_EXHAUSTED 429, INTERNAL 500, UNAVAILABLE 503, DEADLINE_EXCEEDED 504. An unknown " +
  "path or method is 404 `Route not found: <METHOD> <path>`.",
  "",
  "Deliberate differences from anolis:",
  ...DIFFERENCES.map((d) => `- ${d}`),
  "",
  "Additions:",
  ...ADDITIONS.map((d) => `- ${d}`),
].join("\n");

const ERROR_RESPONSES: Readonly<Record<number, { name: string; description: string }>> = {
  400: { name: "BadRequest", description: "INVALID_ARGUMENT: a bad body, field or parameter" },
  401: { name: "Unauthenticated", description: "UNAUTHENTICATED: missing or wrong bearer token" },
  403: {
    name: "PermissionDenied",
    description: "PERMISSION_DENIED: Host not allowed, a foreign Origin on a POST, or the " +
      "token's role is below the operation's `x-required-role`",
  },
  404: { name: "NotFound", description: "NOT_FOUND" },
  409: { name: "FailedPrecondition", description: "FAILED_PRECONDITION" },
  429: {
    name: "ResourceExhausted",
    description: "RESOURCE_EXHAUSTED: a call sooner than its function's declared " +
      "min_interval_ms after the last one; `Retry-After` says when to retry (seconds)",
  },
  415: {
    name: "UnsupportedMediaType",
    description: "INVALID_ARGUMENT: a POST body that is not declared as application/json",
  },
  500: { name: "Internal", description: "INTERNAL" },
  503: {
    name: "Unavailable",
    description: "UNAVAILABLE: service not available, provider down, or server busy",
  },
  504: { name: "DeadlineExceeded", description: "DEADLINE_EXCEEDED: the provider did not reply" },
};

/** Every route answers these (auth, host policy, internal error, server busy). */
const COMMON_ERRORS = [401, 403, 500, 503];

/** The OpenAPI path of a route: `/v0/state/{provider_id}/{device_id}`. */
export function openApiPath(segments: readonly string[]): string {
  return "/" + segments.map((s) => s.startsWith(":") ? `{${s.slice(1)}}` : s).join("/");
}

/** The statuses a route can answer besides 200. */
export function routeErrorStatuses(r: Route): number[] {
  const s = new Set([...COMMON_ERRORS, ...(r.doc.errors ?? [])]);
  if (r.method === "POST" && r.doc.body?.handling !== "ignored") s.add(400);
  if (r.method === "POST" && !r.anyBody) s.add(415);
  if (r.segments.some((x) => x.startsWith(":"))) s.add(400);
  // A query parameter the route does not take, or one that takes one value given twice
  // (routes.ts checkQuery); the e-stop ignores its query.
  if (!r.anyBody) s.add(400);
  return [...s].sort((a, b) => a - b);
}

const PATH_PARAMETER_DOCS: Readonly<Record<string, string>> = {
  provider_id: "A provider id (http: percent-encoded).",
  device_id: "A device id of that provider.",
  alarm_id: "An alarm id (`alarms[].id`).",
  run_id: "A run id (`<runtime.name>-<ULID>`).",
  incident_id: "An incident id (`inc-<epoch ms>-<n>`).",
};

function operation(r: Route): Record<string, unknown> {
  const d = r.doc;
  const parameters: unknown[] = r.segments.filter((s) => s.startsWith(":")).map((s) => ({
    name: s.slice(1),
    in: "path",
    required: true,
    description: PATH_PARAMETER_DOCS[s.slice(1)] ?? s.slice(1),
    schema: { type: "string", minLength: 1 },
  }));
  for (const q of d.query ?? []) {
    parameters.push({
      name: q.name,
      in: "query",
      required: false,
      description: q.description,
      schema: q.repeated ? { type: "array", items: q.schema } : q.schema,
      ...(q.repeated ? { style: "form", explode: true } : {}),
    });
  }
  const op: Record<string, unknown> = {
    operationId: d.operationId,
    summary: d.summary,
    tags: [d.tag],
    // The least role of a named token (`http.tokens`) that may call it (README "Roles").
    "x-required-role": requiredRole(r),
  };
  let description = d.description ?? "";
  if (d.operationId === "streamEvents") {
    description = "Event kinds (`event:` name, then the `data:` members):\n" +
      Object.entries(EVENT_KIND_DOCS).map(([k, v]) => `- \`${k}\`: ${v}`).join("\n") +
      "\n\nFilters provider_id, device_id apply to state_update, quality_change and " +
      "device_availability; signal_id to state_update and quality_change; every other kind is " +
      "always delivered. At most 32 streams (then 503).\n\n" +
      "Ids are `<boot>-<n>`: `boot` is new on every start of the runtime, `n` counts from 1. " +
      "A client that sends the last id it saw (`Last-Event-ID`, as EventSource does when it " +
      "reconnects, or `last_event_id`) first gets every event it missed that the runtime still " +
      "holds (its recent events, bounded in count and bytes), in order, then live ones. When " +
      "they are no longer held, or the id is from another start of the runtime, the stream " +
      "starts with one `resync` event instead (`reason` too_old, restarted or unknown; " +
      "`last_event_id`; `timestamp_ms`): re-read the state. An id no runtime sends is 400.";
  }
  if (description !== "") op.description = description;
  if (parameters.length > 0) op.parameters = parameters;
  if (d.body !== undefined) {
    op.requestBody = {
      required: d.body.required,
      ...(d.body.handling === "ignored" ? { description: "Ignored." } : {}),
      content: { "application/json": { schema: d.body.schema } },
    };
  }
  const success = typeof d.response === "string"
    ? {
      description: "OK",
      content: { "application/json": { schema: { $ref: `#/components/schemas/${d.response}` } } },
    }
    : {
      description: d.response.description,
      content: { [d.response.contentType]: { schema: d.response.schema } },
    };
  for (const alt of d.alternatives ?? []) {
    (success.content as Record<string, unknown>)[alt.contentType] = { schema: alt.schema };
    success.description += ` ${alt.description}`;
  }
  const responses: Record<string, unknown> = { "200": success };
  for (const status of routeErrorStatuses(r)) {
    responses[String(status)] = { $ref: `#/components/responses/${ERROR_RESPONSES[status]!.name}` };
  }
  op.responses = responses;
  return op;
}

/** The document of a route table (routes.ts ROUTES) as an object (a new one each call). */
export function openApiDocument(routes: readonly Route[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = openApiPath(r.segments);
    (paths[path] ??= {})[r.method.toLowerCase()] = operation(r);
  }
  paths[METRICS_PATH] = {
    get: {
      operationId: "getMetrics",
      summary: "Prometheus metrics (text exposition format 0.0.4)",
      tags: ["meta"],
      description: "Same authentication as /v0; 404 when `http.metrics_enabled` is false. " +
        "docs/metrics.md describes every metric.",
      responses: {
        "200": {
          description: "The exposition.",
          content: { [METRICS_CONTENT_TYPE.split(";")[0]!]: { schema: { type: "string" } } },
        },
        "401": { $ref: "#/components/responses/Unauthenticated" },
        "403": { $ref: "#/components/responses/PermissionDenied" },
        "404": { $ref: "#/components/responses/NotFound" },
        "500": { $ref: "#/components/responses/Internal" },
        "503": { $ref: "#/components/responses/Unavailable" },
      },
    },
  };
  const responses: Record<string, unknown> = {};
  for (const [status, { name, description }] of Object.entries(ERROR_RESPONSES)) {
    const schema = status === "401" ? "UnauthorizedResponse" : "ErrorResponse";
    responses[name] = {
      description,
      content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` } } },
      ...(status === "401"
        ? { headers: { "WWW-Authenticate": { schema: { type: "string", const: "Bearer" } } } }
        : {}),
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Hardware runtime HTTP API",
      version: RUNTIME_VERSION,
      description: DESCRIPTION,
    },
    tags: [
      { name: "runtime", description: "Runtime, providers and telemetry status" },
      { name: "devices", description: "Devices, capabilities and cached state" },
      { name: "control", description: "Calls and modes" },
      { name: "safety", description: "The software e-stop" },
      { name: "automation", description: "Parameters and the behavior tree" },
      { name: "alarms", description: "Alarms and interlocks (project addition)" },
      { name: "runs", description: "Run records and markers" },
      {
        name: "history",
        description: "Signal history (memory ring and disk tier) and incident records " +
          "(project addition)",
      },
      { name: "events", description: "Server-Sent Events" },
      { name: "meta", description: "This document and the metrics" },
    ],
    security: [{}, { bearerAuth: [] }],
    paths,
    components: {
      schemas: responseComponents() as Record<string, JsonSchema>,
      responses,
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description: "Needed when http.auth_enabled is true (loopback clients are exempt " +
            "unless http.auth_exempt_loopback is false).",
        },
      },
    },
  };
}

const cachedTexts = new WeakMap<readonly Route[], string>();

/** The document of `routes` as JSON text, built on the first call for that table and kept. */
export function openApiDocumentText(routes: readonly Route[]): string {
  let text = cachedTexts.get(routes);
  if (text === undefined) cachedTexts.set(routes, text = JSON.stringify(openApiDocument(routes)));
  return text;
}
