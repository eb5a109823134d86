/**
 * Sparkplug B topics, datatypes and metrics (Eclipse Sparkplug 3.0, "Topics and messages" and
 * "Payloads"): pure functions from the runtime's values and capabilities to the plain objects the
 * generated codec (`_codec.js`, from Eclipse Tahu's sparkplug_b.proto) encodes.
 */
import type {
  DeviceCapabilities,
  FunctionSpec,
  Quality,
  SignalSpec,
  TypedValue,
  ValueType,
} from "../common/mod.ts";
import { decodePayload, encodePayload } from "./_codec.js";

/** The Sparkplug B topic namespace. */
export const NAMESPACE = "spBv1.0";

/** Message types of an edge node. */
export type MessageType =
  | "NBIRTH"
  | "NDEATH"
  | "DBIRTH"
  | "DDEATH"
  | "NDATA"
  | "DDATA"
  | "NCMD"
  | "DCMD";

/** `spBv1.0/<group>/<type>/<edge node>[/<device>]`. */
export function topicOf(
  groupId: string,
  type: MessageType,
  edgeNodeId: string,
  deviceId?: string,
): string {
  const base = `${NAMESPACE}/${groupId}/${type}/${edgeNodeId}`;
  return deviceId === undefined ? base : `${base}/${deviceId}`;
}

/**
 * The size of an MQTT 3.1.1 PUBLISH as Mosquitto counts it against `max_packet_size`: the fixed
 * header's first byte plus the remaining length (the topic's 2-byte length and its UTF-8 bytes, a
 * 2-byte packet id at QoS 1, the payload). The 1 to 4 bytes that encode the remaining length are
 * not counted (Mosquitto 2.0 closes the connection when `remaining_length + 1` exceeds its bound:
 * tests/sparkplug/max_message_bytes_broker_test.ts pins it at the boundary).
 */
export function mqttPacketBytes(topic: string, payloadBytes: number, qos: 0 | 1): number {
  return 1 + 2 + new TextEncoder().encode(topic).length + (qos === 1 ? 2 : 0) + payloadBytes;
}

/** A parsed edge-node topic, or null when it is none. */
export interface ParsedTopic {
  readonly groupId: string;
  readonly type: string;
  readonly edgeNodeId: string;
  readonly deviceId: string | null;
}

export function parseTopic(topic: string): ParsedTopic | null {
  const parts = topic.split("/");
  if (parts[0] !== NAMESPACE || parts.length < 4 || parts.length > 5) return null;
  return {
    groupId: parts[1]!,
    type: parts[2]!,
    edgeNodeId: parts[3]!,
    deviceId: parts[4] ?? null,
  };
}

/**
 * What a device id's Sparkplug form percent-encodes: what a topic level cannot hold (`/`, `+`,
 * `#`), the separator `:`, `%` itself, the control characters (U+0000..U+001F, U+007F..U+009F)
 * and the Unicode non-characters (U+FDD0..U+FDEF, U+xFFFE, U+xFFFF). MQTT 3.1.1 4.7.3 forbids
 * U+0000 and asks not to use the others; Mosquitto closes the connection of a client that
 * publishes to a topic holding one.
 */
const DEVICE_ID_ENCODED = /[%/+#:\p{Cc}\p{Noncharacter_Code_Point}]/gu;

/**
 * The Sparkplug device id of a runtime device: `provider:device`, each character of
 * DEVICE_ID_ENCODED written as its UTF-8 bytes percent-encoded in lower case (`/` is `%2f`, a CR
 * `%0d`, U+FFFF `%ef%bf%bf`), so the mapping is one-to-one and every id is a topic level a
 * broker takes.
 */
export function sparkplugDeviceId(providerId: string, deviceId: string): string {
  const enc = (s: string) =>
    s.replace(DEVICE_ID_ENCODED, (c) => encodeURIComponent(c).toLowerCase());
  return `${enc(providerId)}:${enc(deviceId)}`;
}

/**
 * The provider id a Sparkplug device id names (sparkplugDeviceId's inverse), or null for an id
 * that is no device id's encoding (no `:`, a raw `:` in the device part, an escape it never
 * writes): so ownership is exact, never a string prefix.
 */
export function sparkplugDeviceProvider(id: string): string | null {
  const i = id.indexOf(":");
  if (i < 0) return null;
  let providerId: string;
  let deviceId: string;
  try {
    providerId = decodeURIComponent(id.slice(0, i));
    deviceId = decodeURIComponent(id.slice(i + 1));
  } catch {
    return null; // an escape that is no UTF-8
  }
  return sparkplugDeviceId(providerId, deviceId) === id ? providerId : null;
}

/** Sparkplug B datatype codes (sparkplug_b.proto, "Indexes of Data Types"). */
export const DataType = {
  Int8: 1,
  Int16: 2,
  Int32: 3,
  Int64: 4,
  UInt32: 7,
  UInt64: 8,
  Double: 10,
  Boolean: 11,
  String: 12,
  Bytes: 17,
} as const;

/** The Sparkplug datatype of a runtime value type (null: the provider left it unspecified). */
export function dataTypeOf(t: ValueType | null): number {
  switch (t) {
    case "double":
      return DataType.Double;
    case "int64":
      return DataType.Int64;
    case "uint64":
      return DataType.UInt64;
    case "bool":
      return DataType.Boolean;
    case "bytes":
      return DataType.Bytes;
    case "string":
    case null:
      return DataType.String;
  }
}

/**
 * Quality codes as Sparkplug hosts read them in the `Quality` property (Ignition's convention,
 * also Tahu's): 192 good, 500 stale, 0 bad.
 */
export const QUALITY_CODE: Readonly<Record<Quality, number>> = {
  OK: 192,
  STALE: 500,
  FAULT: 0,
  UNAVAILABLE: 0,
};

/** A metric as the codec takes it. */
export type Metric = Record<string, unknown>;
/** A payload as the codec takes it. */
export interface Payload {
  timestamp: number;
  seq?: number;
  metrics: Metric[];
}

/** The value fields of a metric for a runtime value (`is_null` for none). */
export function valueFields(v: TypedValue | null): Metric {
  if (v === null) return { is_null: true };
  switch (v.type) {
    case "double":
      return { double_value: v.double };
    case "int64":
      // Sparkplug carries Int64 in the uint64 field, two's complement.
      return { long_value: BigInt.asUintN(64, BigInt(v.int64)) };
    case "uint64":
      return { long_value: v.uint64 };
    case "bool":
      return { boolean_value: v.bool };
    case "string":
      return { string_value: v.string };
    case "bytes":
      return { bytes_value: Uint8Array.from(atob(v.base64), (c) => c.charCodeAt(0)) };
  }
}

/**
 * The value fields of a signal's value as its birth declares the signal: a typeless signal (no
 * declared type) is born as a String, and Sparkplug reads a metric's value from the field its
 * datatype names, so its values travel as text (`string_value`; bytes as base64), whatever type a
 * poll returned.
 */
export function signalValueFields(v: TypedValue | null, declared: ValueType | null): Metric {
  if (v === null || declared !== null) return valueFields(v);
  switch (v.type) {
    case "double":
      return { string_value: String(v.double) };
    case "int64":
      return { string_value: String(v.int64) };
    case "uint64":
      return { string_value: String(v.uint64) };
    case "bool":
      return { string_value: String(v.bool) };
    case "string":
      return { string_value: v.string };
    case "bytes":
      return { string_value: v.base64 };
  }
}

/** A property set from plain values (strings, booleans, integers as Int32/Int64). */
export function propertySet(props: Record<string, string | boolean | number>): Metric {
  const keys = Object.keys(props);
  return {
    keys,
    values: keys.map((k) => {
      const v = props[k]!;
      if (typeof v === "string") return { type: DataType.String, string_value: v };
      if (typeof v === "boolean") return { type: DataType.Boolean, boolean_value: v };
      if (Number.isInteger(v) && v >= -2147483648 && v <= 2147483647) {
        return { type: DataType.Int32, int_value: v >>> 0 };
      }
      return { type: DataType.Double, double_value: v };
    }),
  };
}

/** A signal's birth metric: name, alias, datatype, value, unit and quality. */
export function signalBirthMetric(
  spec: SignalSpec,
  alias: number,
  value: TypedValue | null,
  quality: Quality,
  timestampMs: number,
): Metric {
  const props: Record<string, string | number> = { Quality: QUALITY_CODE[quality] };
  if (spec.unit !== "") props.engUnit = spec.unit;
  if (spec.description !== "") props.Documentation = spec.description;
  return {
    name: spec.signalId,
    alias,
    timestamp: timestampMs,
    datatype: dataTypeOf(spec.valueType),
    properties: propertySet(props),
    ...signalValueFields(value, spec.valueType),
  };
}

/** The metric name under which a device's function is described in its DBIRTH. */
export function functionMetricName(name: string): string {
  return `Functions/${name}`;
}

/**
 * A function's birth metric: a String metric (its description) whose properties say whether it
 * actuates, its id and each argument with type, unit and bounds.
 */
export function functionBirthMetric(fn: FunctionSpec, alias: number, timestampMs: number): Metric {
  const props: Record<string, string | boolean | number> = {
    actuating: fn.actuating,
    function_id: fn.functionId,
    category: fn.category,
  };
  for (const a of fn.args) {
    const bounds = [
      a.type ?? "unspecified",
      a.required ? "required" : "optional",
      ...(a.unit === "" ? [] : [`unit ${a.unit}`]),
      ...(a.min === undefined ? [] : [`min ${a.min}`]),
      ...(a.max === undefined ? [] : [`max ${a.max}`]),
      ...(a.allowedValues.length === 0 ? [] : [`one of ${a.allowedValues.join("|")}`]),
    ];
    props[`arg/${a.name}`] = bounds.join(", ");
  }
  return {
    name: functionMetricName(fn.name),
    alias,
    timestamp: timestampMs,
    datatype: DataType.String,
    string_value: fn.description,
    properties: propertySet(props),
  };
}

/** Every metric name of a device's DBIRTH, signals first, in capability order. */
export function deviceMetricNames(caps: DeviceCapabilities): string[] {
  return [
    ...caps.signals.map((s) => s.signalId),
    ...caps.functions.map((f) => functionMetricName(f.name)),
  ];
}

/**
 * Encodes a payload (a copy: the codec's buffer is reused). One without a timestamp (an NDEATH
 * whose clock read failed: edge_node.ts #deathPayload) leaves the field out.
 */
export function encode(p: Omit<Payload, "timestamp"> & { timestamp?: number }): Uint8Array {
  return encodePayload(p).slice();
}

/** Decodes a payload; throws on malformed bytes. */
export function decode(bytes: Uint8Array): Record<string, unknown> & {
  metrics?: Array<Record<string, unknown>>;
  seq?: number;
  timestamp?: number;
} {
  return decodePayload(bytes);
}
