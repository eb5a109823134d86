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
  type RuntimeError,
  unavailable,
  worstQuality,
} from "../common/mod.ts";
import { RUNTIME_MODES, type RuntimeMode } from "../config/mod.ts";
import { okResponse } from "./envelope.ts";
import { type BodyLimits, isPlainObject, readJsonBody, readJsonObject } from "./json_body.ts";
import {
  parseCloseRun,
  parseEventsPage,
  parseMarker,
  parseOpenRun,
  parseRunsPage,
} from "./run_bodies.ts";
import type { EstopStatus } from "../safety/mod.ts";
import { parseNoArguments, parseShelve } from "./alarm_bodies.ts";
import type { Principal } from "./auth.ts";
import { httpOrigin, parseAuditQuery } from "./audit_http.ts";
import type { HttpServices } from "./services.ts";
import type { SseHub } from "./sse_hub.ts";
import { parseArgs, signalValueJson } from "./typed_value_json.ts";

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
}

export type RouteHandler = (ctx: RouteContext) => Promise<Response> | Response;

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
}

interface Route extends RouteOptions {
  readonly method: "GET" | "POST";
  /** Path segments after the leading "/"; `:name` captures one segment. */
  readonly segments: readonly string[];
  readonly handler: RouteHandler;
}

const route = (
  method: "GET" | "POST",
  path: string,
  handler: RouteHandler,
  options: RouteOptions = {},
): Route => ({ method, segments: path.slice(1).split("/"), handler, ...options });

/** Every endpoint of http-api.md §3. HEAD is served by every GET route (RFC 9110 §9.3.2). */
export const ROUTES: readonly Route[] = [
  route("GET", "/v0/runtime/status", runtimeStatus, { priority: true }),
  route("GET", "/v0/providers/health", providersHealth),
  route("GET", "/v0/telemetry/status", telemetryStatus),
  route("GET", "/v0/devices", listDevices),
  route("GET", "/v0/devices/:provider_id/:device_id/capabilities", deviceCapabilities),
  route("GET", "/v0/state", allState),
  route("GET", "/v0/state/:provider_id/:device_id", deviceState),
  route("POST", "/v0/call", call),
  route("GET", "/v0/mode", getMode),
  route("POST", "/v0/mode", setMode),
  route("POST", "/v0/estop", estopTrigger, { priority: true, anyBody: true }),
  route("POST", "/v0/estop/clear", estopClear, { priority: true }),
  route("GET", "/v0/parameters", listParameters),
  route("POST", "/v0/parameters", setParameter),
  route("GET", "/v0/automation/tree", automationTree),
  route("GET", "/v0/automation/status", automationStatus),
  route("GET", "/v0/alarms", listAlarms),
  route("GET", "/v0/alarms/:alarm_id", getAlarm),
  route("POST", "/v0/alarms/:alarm_id/ack", ackAlarm),
  route("POST", "/v0/alarms/:alarm_id/shelve", shelveAlarm),
  route("POST", "/v0/alarms/:alarm_id/unshelve", unshelveAlarm),
  route("GET", "/v0/interlocks", listInterlocks),
  route("GET", "/v0/runs", listRuns),
  route("POST", "/v0/runs", openRun),
  route("GET", "/v0/runs/:run_id", getRun),
  route("POST", "/v0/runs/:run_id/close", closeRun),
  route("GET", "/v0/runs/:run_id/events", listRunEvents),
  route("POST", "/v0/runs/:run_id/events", addRunMarker),
  route("GET", "/v0/events", events),
  route("GET", "/v0/audit", listAudit),
];

/** A matched route: its handler, options and decoded path parameters. */
export interface RouteMatch extends RouteOptions {
  readonly handler: RouteHandler;
  readonly params: Record<string, string>;
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
    if (ok) return { handler: r.handler, params, priority: r.priority, anyBody: r.anyBody };
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
  const providers = services.registry.hosts.map((h) => ({
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
  const actuating = services.registry.hosts
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
  const devices = services.registry.devices().map((d) => ({
    provider_id: d.providerId,
    device_id: d.deviceId,
    display_name: d.label || d.deviceId,
    type: d.typeId || "unknown",
  }));
  return okResponse({ devices });
}

function requireDevice(services: HttpServices, p: string, d: string): DeviceCapabilities {
  const caps = services.registry.capabilities(p, d);
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

/** One device's cached values, optionally restricted to `only` signal ids. */
function deviceStateBody(
  services: HttpServices,
  p: string,
  d: string,
  nowMs: number,
  only: ReadonlySet<string> | null,
) {
  const state = services.cache.device(p, d);
  const values = [];
  for (const signalId of state?.pollable ?? []) {
    if (only && !only.has(signalId)) continue;
    const s = state?.signals.get(signalId);
    if (!s) continue;
    values.push({
      signal_id: signalId,
      value: signalValueJson(s.value),
      timestamp_epoch_ms: s.timestampMs,
      quality: s.quality,
      age_ms: Math.max(0, nowMs - s.timestampMs),
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
    .map((s) => deviceStateBody(services, s.providerId, s.deviceId, now, null));
  return okResponse({ generated_at_epoch_ms: now, devices });
}

function deviceState({ services, params, url }: RouteContext): Response {
  const { provider_id: p, device_id: d } = params;
  const known = services.registry.capabilities(p, d) ?? services.cache.device(p, d);
  if (!known) throw notFound(`Device not found: ${p}/${d}`);
  const state = services.cache.device(p, d);
  if (!state || state.pollable.length === 0) {
    throw unavailable(`No cached state for device: ${p}/${d} (it has no pollable signals)`);
  }
  const ids = url.searchParams.getAll("signal_id").filter((s) => s !== "");
  const now = services.host.clock.nowMs();
  const body = deviceStateBody(services, p, d, now, ids.length > 0 ? new Set(ids) : null);
  return okResponse({ generated_at_epoch_ms: now, ...body });
}

// ---- calls ----

const MAX_UINT32 = 0xffff_ffff;

async function call({ services, req, limits, principal }: RouteContext): Promise<Response> {
  const body = await readJsonObject(req, limits);
  const providerId = requireString(body, "provider_id");
  const deviceId = requireString(body, "device_id");
  if (!("function_id" in body)) {
    throw invalidArgument("function_id: missing (name dispatch is not accepted over HTTP)");
  }
  const functionId = body.function_id;
  if (
    typeof functionId !== "number" || !Number.isInteger(functionId) || functionId < 0 ||
    functionId > MAX_UINT32
  ) {
    throw invalidArgument(`function_id: must be an integer from 0 to ${MAX_UINT32}`);
  }
  const args = parseArgs(body.args);
  const result = await services.router.call({
    providerId,
    deviceId,
    functionId,
    args,
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

function requireString(body: Record<string, unknown>, field: string): string {
  if (!(field in body)) throw invalidArgument(`${field}: missing`);
  const v = body[field];
  if (typeof v !== "string") throw invalidArgument(`${field}: must be a string`);
  return v;
}

// ---- modes, e-stop, parameters, automation ----

function getMode({ services }: RouteContext): Response {
  return okResponse({ mode: services.modes?.current() ?? "IDLE" });
}

async function setMode({ services, req, limits, principal }: RouteContext): Promise<Response> {
  const modes = services.modes;
  if (!modes) throw unavailable("Mode manager not available");
  const body = await readJsonObject(req, limits);
  const mode = requireString(body, "mode");
  const source = httpOrigin(principal);
  const refuse = (err: RuntimeError, refusedBy: string): never => {
    services.audit?.refused({
      action: "mode",
      origin: source,
      function: mode,
      reason: `${err.code}: ${err.message}`,
      refused_by: refusedBy,
    });
    throw err;
  };
  if (!(RUNTIME_MODES as readonly string[]).includes(mode)) {
    refuse(
      invalidArgument(`mode: must be one of MANUAL, AUTO, IDLE, FAULT (got "${mode}")`),
      "validation",
    );
  }
  if (mode === "AUTO" && !services.config.automation.enabled) {
    refuse(
      failedPrecondition("Mode AUTO requires automation (automation.enabled is false)"),
      "mode",
    );
  }
  const report = await modes.requestWithReport(mode as RuntimeMode, source);
  return okResponse({ mode: report.mode, hook_failures: report.hook_failures });
}

/**
 * How long the e-stop waits for its optional body (the reason) before it triggers without it;
 * shorter than BODY_READ_TIMEOUT_MS because a slow client must not delay the answer (the latch
 * itself never waits for the body).
 */
export const ESTOP_REASON_READ_TIMEOUT_MS = 1000;

async function estopTrigger(
  { services, req, limits, principal }: RouteContext,
): Promise<Response> {
  const estop = services.estop;
  if (!estop) throw unavailable("E-stop controller not available");
  // The reason is optional and informative only: the latch engages before the body is read, so
  // an unreadable, non-JSON or slow body never delays or blocks the stop.
  const reason = req.body === null ? undefined : readJsonBody(req, {
    maxBytes: limits.maxBytes,
    timeoutMs: Math.min(limits.timeoutMs, ESTOP_REASON_READ_TIMEOUT_MS),
  }).then(
    (body) => isPlainObject(body) && typeof body.reason === "string" ? body.reason : undefined,
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

async function setParameter(
  { services, req, limits, principal }: RouteContext,
): Promise<Response> {
  const parameters = parameterService(services);
  const body = await readJsonObject(req, limits);
  const name = requireString(body, "name");
  if (!("value" in body)) throw invalidArgument("value: missing");
  return okResponse({ parameter: parameters.set(name, body.value, httpOrigin(principal)) });
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

async function ackAlarm({ services, req, limits, params }: RouteContext): Promise<Response> {
  const alarms = alarmService(services);
  parseNoArguments(await readJsonBody(req, limits));
  return okResponse({ alarm: alarms.ack(params.alarm_id) });
}

async function shelveAlarm({ services, req, limits, params }: RouteContext): Promise<Response> {
  const alarms = alarmService(services);
  const { durationMs } = parseShelve(await readJsonBody(req, limits));
  return okResponse({ alarm: alarms.shelve(params.alarm_id, durationMs) });
}

async function unshelveAlarm({ services, req, limits, params }: RouteContext): Promise<Response> {
  const alarms = alarmService(services);
  parseNoArguments(await readJsonBody(req, limits));
  return okResponse({ alarm: alarms.unshelve(params.alarm_id) });
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

async function openRun({ services, req, limits }: RouteContext): Promise<Response> {
  const runs = runsService(services);
  return okResponse(await runs.open(parseOpenRun(await readJsonBody(req, limits))));
}

async function getRun({ services, params }: RouteContext): Promise<Response> {
  return okResponse(await runsService(services).get(params.run_id));
}

async function closeRun({ services, req, limits, params }: RouteContext): Promise<Response> {
  const runs = runsService(services);
  return okResponse(
    await runs.close(params.run_id, parseCloseRun(await readJsonBody(req, limits))),
  );
}

async function listRunEvents({ services, params, url }: RouteContext): Promise<Response> {
  const page = parseEventsPage(url.searchParams);
  return okResponse(await runsService(services).listEvents(params.run_id, page));
}

async function addRunMarker({ services, req, limits, params }: RouteContext): Promise<Response> {
  const runs = runsService(services);
  return okResponse(
    await runs.addMarker(params.run_id, parseMarker(await readJsonBody(req, limits))),
  );
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
