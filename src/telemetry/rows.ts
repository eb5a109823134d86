/**
 * Row builders for every measurement the runtime writes (docs/telemetry.md, "Rows: tags and
 * fields"). The measurement names follow `telemetry.measurement_names`: the project's `runtime_`
 * names (default) or the names the anolis runtime writes; tags, fields and field types are the
 * same under both.
 */
import {
  errorMessage,
  type ProviderDeviceHealthView,
  type ProviderHealthView,
  type TypedValue,
} from "../common/mod.ts";
import type { MeasurementNaming } from "../config/mod.ts";
import type { RuntimeEvent } from "../events/mod.ts";
import { type FieldValue, type Row, truncateUtf8 } from "./line_protocol.ts";

/** The measurement name of each kind of row. */
export interface MeasurementNames {
  readonly signal: string;
  readonly modeChange: string;
  readonly parameterChange: string;
  readonly providerHealth: string;
  readonly deviceHealth: string;
  readonly runEvent: string;
  readonly alarm: string;
}

/**
 * The names under each setting. `runtime` is the project's (`runtime_` prefix). `anolis`
 * is what the C++ anolis runtime writes: v0.1.21 `core/telemetry/influx_sink.*` (anolis_signal,
 * mode_change, parameter_change) and later releases' `core/telemetry/health_line_protocol.hpp`
 * (anolis_provider_health, anolis_device_health). anolis writes no run events and has no alarms:
 * those measurements keep our names under both settings rather than invent anolis ones.
 */
export const MEASUREMENT_NAMES: Readonly<Record<MeasurementNaming, MeasurementNames>> = {
  runtime: {
    signal: "runtime_signal",
    modeChange: "runtime_mode_change",
    parameterChange: "runtime_parameter_change",
    providerHealth: "runtime_provider_health",
    deviceHealth: "runtime_device_health",
    runEvent: "runtime_run_event",
    alarm: "runtime_alarm",
  },
  anolis: {
    signal: "anolis_signal",
    modeChange: "mode_change",
    parameterChange: "parameter_change",
    providerHealth: "anolis_provider_health",
    deviceHealth: "anolis_device_health",
    runEvent: "runtime_run_event",
    alarm: "runtime_alarm",
  },
};

/** The default names (`measurement_names: runtime`). */
export const MEASUREMENTS: MeasurementNames = MEASUREMENT_NAMES.runtime;

/** String health fields are truncated to this many UTF-8 bytes (as anolis truncates them). */
const MAX_STRING_METRIC_BYTES = 128;
/** Bound on the JSON payload text of a run event row (rows must stay small). */
const MAX_RUN_PAYLOAD_BYTES = 4096;

type Fields = [string, FieldValue][];

/**
 * A signal value as telemetry accepts it: a TypedValue whose int64/uint64 member may be a bigint
 * (outside the safe-integer range: kept exact), or null (a declared signal the provider answered
 * without a value: the row keeps its quality field and has no value field).
 */
export type SignalValue =
  | TypedValue
  | { type: "int64"; int64: number | bigint }
  | { type: "uint64"; uint64: number | bigint }
  | null;

/** Why a row builder left something out of a row; the writer counts each kind. */
export type RowOmission =
  /** The signal's value cannot be carried by line protocol (NaN/+/-Infinity, integer range). */
  | { readonly kind: "value"; readonly reason: "non_finite" | "out_of_range" }
  /** A run event's payload could not be serialised; `reason` names why. */
  | { readonly kind: "payload"; readonly reason: string };

/** A row plus what its builder had to leave out. */
export interface BuiltRow extends Row {
  readonly omission?: RowOmission | undefined;
}

const str = (value: string): FieldValue => ({ kind: "string", value });
const int = (value: number | bigint): FieldValue => ({ kind: "int", value });
const bool = (value: boolean): FieldValue => ({ kind: "bool", value });

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;

/** True when `v` is an integer within [min, max] (min is 0 or INT64_MIN, max beyond 2^53). */
function integerWithin(v: number | bigint, min: bigint, max: bigint): boolean {
  if (typeof v === "number") {
    // Fast path: a safe integer is within both ranges unless negative for uint64.
    if (Number.isSafeInteger(v)) return min < 0n || v >= 0;
    if (!Number.isInteger(v)) return false;
    v = BigInt(v);
  }
  return v >= min && v <= max;
}

/** The typed value field of a signal row, "none" for a null value, or why it is left out. */
function valueField(
  v: SignalValue,
): [string, FieldValue] | "none" | "non_finite" | "out_of_range" {
  if (v === null) return "none";
  switch (v.type) {
    case "double":
      return Number.isFinite(v.double)
        ? ["value_double", { kind: "double", value: v.double }]
        : "non_finite";
    case "int64":
      return integerWithin(v.int64, INT64_MIN, INT64_MAX)
        ? ["value_int", int(v.int64)]
        : "out_of_range";
    case "uint64":
      return integerWithin(v.uint64, 0n, UINT64_MAX)
        ? ["value_uint", { kind: "uint", value: v.uint64 }]
        : "out_of_range";
    case "bool":
      return ["value_bool", bool(v.bool)];
    case "string":
      return ["value_string", str(v.string)];
    case "bytes":
      // anolis writes the raw bytes as text (a bug: arbitrary bytes are not text and can end the
      // line); we write the base64 form the HTTP API shows, under both measurement_names.
      return ["value_string", str(v.base64)];
  }
}

/** The row for a bus event, or null for the event kinds that are not written. */
export function rowForEvent(
  runtimeName: string,
  event: RuntimeEvent,
  names: MeasurementNames = MEASUREMENTS,
): BuiltRow | null {
  switch (event.kind) {
    case "state_update":
      return signalRow(
        runtimeName,
        event.provider_id,
        event.device_id,
        event.signal_id,
        event.value,
        event.quality,
        event.timestamp_ms,
        names,
      );
    case "mode_change":
      // No tags, not even runtime_name: anolis writes it so, and dashboards made for it rely on it.
      return {
        measurement: names.modeChange,
        tags: [],
        fields: [["previous_mode", str(event.previous_mode)], ["new_mode", str(event.new_mode)]],
        timestampMs: event.timestamp_ms,
      };
    case "parameter_change":
      return {
        measurement: names.parameterChange,
        tags: [["parameter_name", event.parameter_name]],
        fields: [["old_value", str(event.old_value)], ["new_value", str(event.new_value)]],
        timestampMs: event.timestamp_ms,
      };
    case "alarm":
      return alarmRow(runtimeName, event, names);
    default:
      return null;
  }
}

/**
 * A signal row: a state update, or (value null) the quality of a signal that has no value. The
 * quality field is always there, so the row always has a field (valid line protocol).
 */
export function signalRow(
  runtimeName: string,
  providerId: string,
  deviceId: string,
  signalId: string,
  value: SignalValue,
  quality: string,
  timestampMs: number,
  names: MeasurementNames = MEASUREMENTS,
): BuiltRow {
  const fields: Fields = [];
  const vf = valueField(value);
  let omission: RowOmission | undefined;
  if (typeof vf !== "string") fields.push(vf);
  else if (vf !== "none") omission = { kind: "value", reason: vf };
  fields.push(["quality", str(quality)]);
  return {
    omission,
    measurement: names.signal,
    tags: [
      ["runtime_name", runtimeName],
      ["provider_id", providerId],
      ["device_id", deviceId],
      ["signal_id", signalId],
    ],
    fields,
    timestampMs,
  };
}

/**
 * A `runtime_alarm` row: one per alarm transition (docs/telemetry.md). Tags: runtime_name,
 * alarm_id (bounded by MAX_ALARMS), transition (raise | clear | ack | shelve | unshelve). Fields:
 * state, level ("" when the condition does not hold), cause ("" likewise), limit (a numeric limit
 * as a double; alarm_when's value as text in limit_text), signal, quality ("" when not cached),
 * and the value as in signal rows (value_double, value_int, ...; left out when none or not
 * writable).
 */
function alarmRow(
  runtimeName: string,
  event: Extract<RuntimeEvent, { kind: "alarm" }>,
  names: MeasurementNames,
): BuiltRow {
  const fields: Fields = [
    ["state", str(event.state)],
    ["level", str(event.level ?? "")],
    ["cause", str(event.cause ?? "")],
  ];
  if (typeof event.limit === "number") {
    fields.push(["limit", { kind: "double", value: event.limit }]);
  } else if (event.limit !== null) fields.push(["limit_text", str(String(event.limit))]);
  fields.push(["signal", str(event.signal)], ["quality", str(event.quality ?? "")]);
  let omission: RowOmission | undefined;
  const vf = valueField(event.value);
  if (typeof vf !== "string") fields.push(vf);
  else if (vf !== "none") omission = { kind: "value", reason: vf };
  return {
    omission,
    measurement: names.alarm,
    tags: [
      ["runtime_name", runtimeName],
      ["alarm_id", event.alarm_id],
      ["transition", event.transition],
    ],
    fields,
    timestampMs: event.timestamp_ms,
  };
}

/** Digits only, and within int64 (a larger value would make InfluxDB reject the whole batch). */
function strictUint(text: string | undefined): bigint | null {
  if (text === undefined || !/^[0-9]+$/.test(text)) return null;
  const n = BigInt(text);
  return n > (1n << 63n) - 1n ? null : n;
}

function metricInts(metrics: Record<string, string> | undefined, keys: readonly string[]): Fields {
  const out: Fields = [];
  if (!metrics) return out;
  for (const k of keys) {
    const n = strictUint(metrics[k]);
    if (n !== null) out.push([k, int(n)]);
  }
  return out;
}

function metricBools(metrics: Record<string, string> | undefined, keys: readonly string[]): Fields {
  const out: Fields = [];
  if (!metrics) return out;
  for (const k of keys) {
    const v = metrics[k];
    if (v === "true" || v === "false") out.push([k, bool(v === "true")]);
  }
  return out;
}

function metricStrings(
  metrics: Record<string, string> | undefined,
  keys: readonly string[],
): Fields {
  const out: Fields = [];
  if (!metrics) return out;
  for (const k of keys) {
    const v = metrics[k];
    if (typeof v === "string" && v !== "") {
      out.push([k, str(truncateUtf8(v, MAX_STRING_METRIC_BYTES))]);
    }
  }
  return out;
}

const PROVIDER_STARTUP_INTS = [
  "startup_configured_devices",
  "startup_initialized_devices",
  "startup_failed_devices",
] as const;
const DEVICE_METRIC_INTS = [
  "io_ok",
  "io_failed",
  "io_retried_attempts",
  "watchdog_timeout_ms",
  "watchdog_trip_count",
  "sample_success_count",
  "sample_failure_count",
  "call_success_count",
  "call_failure_count",
] as const;
const DEVICE_METRIC_BOOLS = ["watchdog_armed", "watchdog_tripped", "missing", "excluded"] as const;
const DEVICE_METRIC_STRINGS = ["startup_firmware", "startup_product_code", "firmware_version"];

/** A provider health row (fields in the order docs/telemetry.md lists them). */
export function providerHealthRow(
  runtimeName: string,
  p: ProviderHealthView,
  timestampMs: number,
  names: MeasurementNames = MEASUREMENTS,
): Row {
  return {
    measurement: names.providerHealth,
    tags: [["runtime_name", runtimeName], ["provider_id", p.provider_id]],
    fields: [
      ["state", str(p.state)],
      ["lifecycle_state", str(p.lifecycle_state)],
      ["degraded", bool(p.degraded)],
      ["failed_device_count", int(p.failed_device_count)],
      ["device_count", int(p.device_count)],
      ["uptime_seconds", int(p.uptime_seconds)],
      ["supervision_enabled", bool(p.supervision.enabled)],
      ["crash_detected", bool(p.supervision.crash_detected)],
      ["circuit_open", bool(p.supervision.circuit_open)],
      ["attempt_count", int(p.supervision.attempt_count)],
      ...metricInts(p.reported?.metrics, PROVIDER_STARTUP_INTS),
    ],
    timestampMs,
  };
}

/**
 * A device health row (fields in the order docs/telemetry.md lists them). Every device of the
 * snapshot gets one, a device without signals (the sim's chaos_control) too, as later anolis
 * writes it (`collect_providers_health` walks every registered device): `health="UNKNOWN"` and no
 * staleness fields, since it is never polled.
 */
export function deviceHealthRow(
  runtimeName: string,
  providerId: string,
  d: ProviderDeviceHealthView,
  timestampMs: number,
  names: MeasurementNames = MEASUREMENTS,
): Row {
  const fields: Fields = [["health", str(d.health)], ["registered", bool(d.registered)]];
  if (d.last_poll_ms > 0) {
    fields.push(
      ["staleness_ms", int(d.staleness_ms)],
      ["stale_signal_count", int(d.stale_signal_count)],
      ["fault_signal_count", int(d.fault_signal_count)],
    );
  }
  if (d.type_version) {
    fields.push(["type_version", str(truncateUtf8(d.type_version, MAX_STRING_METRIC_BYTES))]);
  }
  const metrics = d.reported?.metrics;
  fields.push(
    ...metricInts(metrics, DEVICE_METRIC_INTS),
    ...metricBools(metrics, DEVICE_METRIC_BOOLS),
    ...metricStrings(metrics, DEVICE_METRIC_STRINGS),
  );
  return {
    measurement: names.deviceHealth,
    tags: [["runtime_name", runtimeName], ["provider_id", providerId], ["device_id", d.device_id]],
    fields,
    timestampMs,
  };
}

/** All rows of one health snapshot, sharing one timestamp. */
export function healthRows(
  runtimeName: string,
  providers: readonly ProviderHealthView[],
  timestampMs: number,
  names: MeasurementNames = MEASUREMENTS,
): Row[] {
  const rows: Row[] = [];
  for (const p of providers) {
    rows.push(providerHealthRow(runtimeName, p, timestampMs, names));
    for (const d of p.devices) {
      rows.push(deviceHealthRow(runtimeName, p.provider_id, d, timestampMs, names));
    }
  }
  return rows;
}

/** The run-event shape telemetry needs (structurally a runs/ RunEvent; no import upward). */
export interface RunEventRecord {
  readonly run_id: string;
  readonly sequence: number;
  readonly category: string;
  readonly type: string;
  readonly occurred_at_epoch_ms: number;
  readonly payload: Readonly<Record<string, unknown>>;
}

/**
 * A `runtime_run_event` row: run open/close and operator markers, for Grafana annotations.
 *
 * Tags: runtime_name, category (run_opened | run_closed | annotation) -- low cardinality only.
 * run_id is deliberately a string FIELD, never a tag (a run id as tag would create a new series
 * per run). Fields: run_id, type (close reason / marker type / ""), sequence (int),
 * experiment_label (run_opened only, when set), payload (compact JSON, only when non-empty,
 * truncated to 4096 bytes, then also `payload_truncated=true`). A payload that cannot be
 * serialised never costs the event its row: the row is written with `payload_error` (the reason)
 * instead of `payload`, and carries a payload {@link RowOmission} for the writer to count and log.
 * Timestamp: occurred_at_epoch_ms.
 */
export function runEventRow(
  runtimeName: string,
  event: RunEventRecord,
  experimentLabel: string | null,
  names: MeasurementNames = MEASUREMENTS,
): BuiltRow {
  const fields: Fields = [
    ["run_id", str(event.run_id)],
    ["type", str(event.type)],
    ["sequence", int(event.sequence)],
  ];
  if (event.category === "run_opened" && experimentLabel) {
    fields.push(["experiment_label", str(experimentLabel)]);
  }
  let omission: RowOmission | undefined;
  const payload = serialisePayload(event.payload);
  if (payload.error !== null) {
    omission = { kind: "payload", reason: payload.error };
    fields.push(["payload_error", str(truncateUtf8(payload.error, MAX_STRING_METRIC_BYTES))]);
  } else if (payload.json !== null) {
    const text = truncateUtf8(payload.json, MAX_RUN_PAYLOAD_BYTES);
    fields.push(["payload", str(text)]);
    if (text.length < payload.json.length) fields.push(["payload_truncated", bool(true)]);
  }
  return {
    measurement: names.runEvent,
    tags: [["runtime_name", runtimeName], ["category", event.category]],
    fields,
    timestampMs: event.occurred_at_epoch_ms,
    omission,
  };
}

/** Compact JSON of a run payload (null when empty or absent), or why it cannot be serialised. */
function serialisePayload(payload: unknown): { json: string | null; error: string | null } {
  try {
    if (payload === undefined || payload === null) return { json: null, error: null };
    if (typeof payload === "object" && Object.keys(payload).length === 0) {
      return { json: null, error: null };
    }
    const json = JSON.stringify(payload);
    if (typeof json !== "string") {
      return { json: null, error: `payload: a ${typeof payload} has no JSON form` };
    }
    return { json, error: null };
  } catch (err) {
    return { json: null, error: `payload: ${errorMessage(err)}` };
  }
}
