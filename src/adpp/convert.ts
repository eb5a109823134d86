import {
  type ArgSpec,
  boolValue,
  type DeviceCapabilities,
  type DeviceInfo,
  doubleValue,
  type FunctionCategory,
  type FunctionSpec,
  int64Value,
  type Quality,
  type SignalSpec,
  stringValue,
  type TypedValue,
  uint64Value,
  type ValueType,
} from "../common/mod.ts";
import {
  type ResponsePayloads,
  type WireArgSpec,
  WireCategory,
  type WireDevice,
  type WireFunctionSpec,
  WireQuality,
  type WireSignalSpec,
  type WireTimestamp,
  type WireValue,
  WireValueType,
} from "./codec.ts";

const TYPE_FROM_WIRE: Record<number, ValueType> = {
  [WireValueType.BOOL]: "bool",
  [WireValueType.INT64]: "int64",
  [WireValueType.UINT64]: "uint64",
  [WireValueType.DOUBLE]: "double",
  [WireValueType.STRING]: "string",
  [WireValueType.BYTES]: "bytes",
};

const TYPE_TO_WIRE: Record<ValueType, number> = {
  bool: WireValueType.BOOL,
  int64: WireValueType.INT64,
  uint64: WireValueType.UINT64,
  double: WireValueType.DOUBLE,
  string: WireValueType.STRING,
  bytes: WireValueType.BYTES,
};

/** ValueType enum number -> name (null for UNSPECIFIED or unknown numbers). */
export function valueTypeFromWire(n: number | undefined): ValueType | null {
  return TYPE_FROM_WIRE[n ?? 0] ?? null;
}

export function valueTypeToWire(t: ValueType): number {
  return TYPE_TO_WIRE[t];
}

/**
 * Wire Value -> typed value, using the populated oneof member (as the runtime validates it).
 * Returns null for a Value with no member set. 64-bit integers stay exact; a non-finite double
 * carries its `non_finite` name.
 */
export function typedValueFromWire(v: WireValue | undefined): TypedValue | null {
  if (!v) return null;
  if (v.double_value !== undefined) return doubleValue(v.double_value);
  // Plain objects made without a literal (common/typed_value.ts: a literal may be pretenured).
  if (v.int64_value !== undefined) return int64Value(v.int64_value);
  if (v.uint64_value !== undefined) return uint64Value(v.uint64_value);
  if (v.bool_value !== undefined) return boolValue(v.bool_value);
  if (v.string_value !== undefined) return stringValue(v.string_value);
  if (v.bytes_value !== undefined) return { type: "bytes", base64: bytesToBase64(v.bytes_value) };
  return null;
}

/**
 * Typed value -> wire Value with both `type` and the oneof member set: the C++ runtime reads the
 * member, the reference providers read `type`.
 */
export function typedValueToWire(v: TypedValue): WireValue {
  switch (v.type) {
    case "double":
      return { type: WireValueType.DOUBLE, double_value: v.double };
    case "int64":
      return { type: WireValueType.INT64, int64_value: v.int64 };
    case "uint64":
      return { type: WireValueType.UINT64, uint64_value: v.uint64 };
    case "bool":
      return { type: WireValueType.BOOL, bool_value: v.bool };
    case "string":
      return { type: WireValueType.STRING, string_value: v.string };
    case "bytes":
      return { type: WireValueType.BYTES, bytes_value: fromBase64(v.base64) };
  }
}

/** Signal quality enum -> runtime quality (UNKNOWN/UNSPECIFIED -> UNAVAILABLE). */
export function qualityFromWire(q: number | undefined): Quality {
  switch (q) {
    case WireQuality.OK:
      return "OK";
    case WireQuality.STALE:
      return "STALE";
    case WireQuality.FAULT:
      return "FAULT";
    default:
      return "UNAVAILABLE";
  }
}

/** Timestamp -> epoch ms, or null when absent. */
export function timestampToMs(ts: WireTimestamp | undefined): number | null {
  if (!ts) return null;
  return Number(ts.seconds ?? 0) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

export function msToTimestamp(ms: number): WireTimestamp {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

const CATEGORY: Record<number, FunctionCategory> = {
  [WireCategory.READ]: "READ",
  [WireCategory.CONFIG]: "CONFIG",
  [WireCategory.ACTUATE]: "ACTUATE",
};

function argSpecFromWire(a: WireArgSpec): ArgSpec {
  const type = valueTypeFromWire(a.type);
  let min: number | undefined;
  let max: number | undefined;
  // Bounds are per type and enforced only when present (optional fields, ADPP v1.2.0).
  if (type === "double") [min, max] = [a.min_double, a.max_double];
  else if (type === "int64") [min, max] = [num(a.min_int64), num(a.max_int64)];
  else if (type === "uint64") [min, max] = [num(a.min_uint64), num(a.max_uint64)];
  return {
    name: a.name ?? "",
    type,
    unit: a.unit ?? "",
    description: a.description ?? "",
    required: a.required ?? false,
    ...(min !== undefined ? { min } : {}),
    ...(max !== undefined ? { max } : {}),
    allowedValues: a.allowed_values ?? [],
  };
}

function functionFromWire(f: WireFunctionSpec): FunctionSpec {
  const category = CATEGORY[f.policy?.category ?? 0] ?? "UNSPECIFIED";
  return {
    functionId: f.function_id ?? 0,
    name: f.name ?? "",
    description: f.description ?? "",
    category,
    actuating: category !== "READ",
    args: (f.args ?? []).map(argSpecFromWire),
    policy: {
      allowedModes: (f.policy?.allowed_modes ?? []).map((m) => m.trim()).filter((m) => m !== ""),
      requiresLease: f.policy?.requires_lease ?? false,
      minIntervalMs: f.policy?.min_interval_ms ?? 0,
      isIdempotent: f.policy?.is_idempotent ?? false,
      safetyProfile: f.policy?.safety_profile ?? "",
    },
  };
}

function signalFromWire(s: WireSignalSpec): SignalSpec {
  return {
    signalId: s.signal_id ?? "",
    name: s.name ?? "",
    description: s.description ?? "",
    valueType: valueTypeFromWire(s.value_type),
    unit: s.unit ?? "",
    pollHintHz: s.poll_hint_hz ?? 0,
    staleAfterMs: s.stale_after_ms ?? 0,
  };
}

export function deviceInfoFromWire(providerId: string, d: WireDevice): DeviceInfo {
  return {
    providerId,
    deviceId: d.device_id ?? "",
    providerName: d.provider_name ?? "",
    typeId: d.type_id ?? "",
    typeVersion: d.type_version ?? "",
    label: d.label ?? "",
    address: d.address ?? "",
    tags: { ...(d.tags ?? {}) },
  };
}

/**
 * DescribeDevice response -> capabilities (the Device from DescribeDevice, not ListDevices),
 * keyed by `deviceId`, the id that was asked for: the caller rejects an answer naming another.
 */
export function capabilitiesFromWire(
  providerId: string,
  deviceId: string,
  r: ResponsePayloads["describe_device"],
): DeviceCapabilities {
  const device = deviceInfoFromWire(providerId, r.device ?? { device_id: deviceId });
  return {
    device: { ...device, deviceId },
    functions: (r.capabilities?.functions ?? []).map(functionFromWire),
    signals: (r.capabilities?.signals ?? []).map(signalFromWire),
  };
}

function num(v: number | undefined): number | undefined {
  return v === undefined ? undefined : Number(v);
}

/** Bytes as base64 text (a bytes value as the runtime types it). */
export function bytesToBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

function fromBase64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
