/**
 * Devices, their capabilities and cached state, and calls to their functions (docs/http-api.md
 * "Devices and capabilities", "State", "Modes and calls").
 */
import {
  type DeviceCapabilities,
  type FunctionPolicy,
  namedDeviceHandle,
  NO_FUNCTION_POLICY,
  notFound,
  type Quality,
  unavailable,
  worstQuality,
} from "../../common/mod.ts";
import { httpOrigin } from "../audit_http.ts";
import { okResponse } from "../envelope.ts";
import { CALL_BODY_SCHEMA, type CallBody } from "../request_schemas.ts";
import { sentBeforeStop, STOPPED_REFUSAL } from "../stop_marks.ts";
import { type Route, route, type RouteContext } from "../route_table.ts";
import type { HttpServices } from "../services.ts";
import { callArgs, signalValueJson } from "../typed_value_json.ts";

/** The device, state and call routes. */
export const DEVICE_ROUTES: readonly Route[] = [
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
        "gates, the function's declared `allowed_modes`, interlocks, `requires_lease` (409), " +
        "the arguments against the function's declaration, then its declared " +
        "`min_interval_ms` (429 with `Retry-After`). A provider that is down answers 503, one " +
        "that does not reply within its timeout_ms 504.",
      body: { schema: CALL_BODY_SCHEMA, required: true },
      response: "CallResponse",
      errors: [404, 409, 429, 503, 504],
    },
  }),
];

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
  // The client's ids, any length: cut as the call router cuts them (namedDeviceHandle).
  if (!caps) throw notFound(`Device not found: ${namedDeviceHandle(p, d)}`);
  return caps;
}

function deviceCapabilities({ services, params }: RouteContext): Response {
  const { provider_id: p, device_id: d } = params;
  const caps = requireDevice(services, p!, d!);
  const signals = [...caps.signals]
    .sort((a, b) => compareText(a.signalId, b.signalId))
    .map((s) => {
      const spec: Record<string, unknown> = {
        signal_id: s.signalId,
        value_type: s.valueType ?? "unspecified",
        label: s.name || s.description,
      };
      // Project addition (as ArgSpec's): the provider's SignalSpec.unit, only when it gave one.
      if (s.unit) spec.unit = s.unit;
      // Project addition: the signal's declared hints, as the provider gave them (0 = none); a
      // hint that is no finite number (a wire double may be NaN or +-Infinity) is null, as JSON
      // writes it anyway -- said so, and in the OpenAPI document.
      spec.poll_hint_hz = Number.isFinite(s.pollHintHz) ? s.pollHintHz : null;
      spec.stale_after_ms = s.staleAfterMs;
      return spec;
    });
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
        // A bound that is no finite number (NaN, +-Infinity on the wire) is left out: JSON has no
        // such number, and anolis' document makes each bound a number when present. The router
        // still checks the value against it as declared.
        if (a.min !== undefined && Number.isFinite(a.min)) spec.min = a.min;
        if (a.max !== undefined && Number.isFinite(a.max)) spec.max = a.max;
        // Project addition (as for parameters): what the router accepts for a string argument.
        if (a.allowedValues.length > 0) spec.allowed_values = [...a.allowedValues];
        return [a.name, spec];
      })),
      category: f.category,
      actuating: f.actuating,
      // Project addition: the declared FunctionPolicy, which the router enforces.
      policy: policyJson(f.policy ?? NO_FUNCTION_POLICY),
    }));
  return okResponse({ provider_id: p, device_id: d, capabilities: { signals, functions } });
}

function policyJson(p: FunctionPolicy) {
  return {
    allowed_modes: [...p.allowedModes],
    requires_lease: p.requiresLease,
    min_interval_ms: p.minIntervalMs,
    is_idempotent: p.isIdempotent,
    safety_profile: p.safetyProfile,
  };
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
  const units = signalUnits(services, p, d);
  const values = [];
  for (const signalId of state?.pollable ?? []) {
    if (only && !only.has(signalId)) continue;
    const s = state?.signals.get(signalId);
    if (!s) continue;
    const v: SignalValueJson = {
      signal_id: signalId,
      value: signalValueJson(s.value),
      timestamp_epoch_ms: s.timestampMs,
      quality: cache.qualityNow(p, d, signalId, s),
      age_ms: Math.round(cache.ageMs(s)),
    };
    const unit = units?.get(signalId);
    if (unit) v.unit = unit;
    values.push(v);
  }
  const quality: Quality = !state?.available
    ? "UNAVAILABLE"
    : worstQuality(values.map((v) => v.quality));
  return { provider_id: p, device_id: d, quality, values };
}

interface SignalValueJson {
  signal_id: string;
  value: ReturnType<typeof signalValueJson>;
  timestamp_epoch_ms: number;
  quality: Quality;
  age_ms: number;
  /** Project addition: the signal's unit from its SignalSpec, only when it declares one. */
  unit?: string;
}

/** Per DescribeDevice answer (a rediscovery brings a new object): its signals' units. */
const unitsByCapabilities = new WeakMap<DeviceCapabilities, ReadonlyMap<string, string> | null>();

/** signal_id -> unit of the device's signals that declare one; null when none does. */
function signalUnits(
  services: HttpServices,
  p: string,
  d: string,
): ReadonlyMap<string, string> | null {
  const caps = services.inventory.capabilities(p, d);
  if (!caps) return null;
  let units = unitsByCapabilities.get(caps);
  if (units === undefined) {
    let out: Map<string, string> | null = null;
    for (const s of caps.signals) if (s.unit) (out ??= new Map()).set(s.signalId, s.unit);
    units = out;
    unitsByCapabilities.set(caps, units);
  }
  return units;
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
  const known = services.inventory.capabilities(p!, d!) ?? services.cache.device(p!, d!);
  if (!known) throw notFound(`Device not found: ${namedDeviceHandle(p!, d!)}`);
  const state = services.cache.device(p!, d!);
  if (!state || state.pollable.length === 0) {
    throw unavailable(
      `No cached state for device: ${namedDeviceHandle(p!, d!)} (it has no pollable signals)`,
    );
  }
  const ids = url.searchParams.getAll("signal_id").filter((s) => s !== "");
  const now = services.host.clock.nowMs();
  const body = deviceStateBody(services, p!, d!, ids.length > 0 ? new Set(ids) : null);
  return okResponse({ generated_at_epoch_ms: now, ...body });
}

async function call(
  { services, body, principal, stoppedSinceArrival, stillAdmitted }: RouteContext,
): Promise<Response> {
  const b = await body<CallBody>();
  // Asked again at the call's turn: a reload may remove or lower its token while it is queued.
  const admitted = await stillAdmitted();
  // Sent before a stop that happened while its body arrived: never carried out after it (the
  // latch may have been released and the machine re-armed meanwhile). A read-only function
  // changes nothing, and one the device does not declare is the router's to refuse.
  const fn = services.inventory.capabilities(b.provider_id, b.device_id)?.functions
    .find((f) => f.functionId === b.function_id);
  if (fn?.actuating && stoppedSinceArrival()) {
    const err = sentBeforeStop("POST /v0/call");
    services.audit.refused({
      action: "call",
      origin: httpOrigin(principal),
      device_handle: `${b.provider_id}/${b.device_id}`,
      function: fn.name,
      args: b.args ?? {},
      reason: `${err.code}: ${err.message}`,
      refused_by: STOPPED_REFUSAL,
    });
    throw err;
  }
  const result = await services.router.call({
    providerId: b.provider_id,
    deviceId: b.device_id,
    functionId: b.function_id,
    args: callArgs(b.args),
    origin: "manual",
    source: httpOrigin(principal),
    stillAdmitted: admitted,
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
