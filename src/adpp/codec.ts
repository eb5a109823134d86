import protobuf from "protobufjs";
import { type ExactInteger, exactInteger } from "../common/mod.ts";
import { ADPP_SCHEMA_JSON } from "./_schema.ts";

const PKG = "anolis.deviceprovider.v1";

/** A decoded 64-bit field: protobufjs gives a Long (low/high 32-bit halves) or a number. */
type LongLike = number | { low: number; high: number };

const TWO_POW_32 = 4294967296;

/**
 * A decoded 64-bit integer, exactly: a number when it is a safe integer, else a bigint. The
 * float sum is exact whenever the true value is safe, and lands outside the safe range whenever
 * it is not, so the check needs no bigint in the common case.
 */
export function exactFromLong(v: LongLike, unsigned: boolean): ExactInteger {
  if (typeof v === "number") return v;
  const lo = v.low >>> 0;
  const approx = (unsigned ? v.high >>> 0 : v.high | 0) * TWO_POW_32 + lo;
  if (Number.isSafeInteger(approx)) return approx;
  const bits = (BigInt(v.high >>> 0) << 32n) | BigInt(lo);
  return exactInteger(unsigned ? bits : BigInt.asIntN(64, bits));
}

interface ValueMessage {
  type?: number;
  bool_value?: boolean;
  int64_value?: LongLike;
  uint64_value?: LongLike;
  double_value?: number;
  string_value?: string;
  bytes_value?: Uint8Array;
}

/**
 * Value decodes with its 64-bit members exact (every other int64 field of the protocol, e.g.
 * timestamps and argument bounds, stays a plain number through `longs: Number`). Registered before
 * the first use of the root: protobufjs applies wrappers when it sets a type up.
 */
(protobuf.wrappers as Record<string, unknown>)[`.${PKG}.Value`] = {
  fromObject(this: { fromObject(o: unknown): unknown }, object: unknown) {
    return this.fromObject(object); // Long.fromValue accepts number, string and bigint
  },
  toObject(message: unknown, options?: protobuf.IConversionOptions) {
    return valueToObject(message as ValueMessage, options?.oneofs === true);
  },
};

/** Value -> plain object as the generated converter makes it under TO_OBJECT, 64-bit exact. */
function valueToObject(m: ValueMessage, oneofs: boolean): WireValue {
  const d: WireValue = {};
  const own = Object.hasOwn;
  if (own(m, "type")) d.type = m.type;
  let kind: WireValue["kind"];
  if (own(m, "bool_value")) d.bool_value = m.bool_value, kind = "bool_value";
  else if (own(m, "int64_value")) {
    d.int64_value = exactFromLong(m.int64_value!, false), kind = "int64_value";
  } else if (own(m, "uint64_value")) {
    d.uint64_value = exactFromLong(m.uint64_value!, true), kind = "uint64_value";
  } else if (own(m, "double_value")) d.double_value = m.double_value, kind = "double_value";
  else if (own(m, "string_value")) d.string_value = m.string_value, kind = "string_value";
  else if (own(m, "bytes_value")) d.bytes_value = m.bytes_value, kind = "bytes_value";
  if (oneofs && kind !== undefined) d.kind = kind;
  return d;
}

/** protobufjs root for anolis.deviceprovider.v1, built from the embedded descriptor. */
const root = protobuf.Root.fromJSON(ADPP_SCHEMA_JSON as unknown as protobuf.INamespace);
const RequestType = root.lookupType(`${PKG}.Request`);
const ResponseType = root.lookupType(`${PKG}.Response`);

/** Numeric enums of the wire (adpp-wire.md §6). */
export const StatusCode = {
  UNSPECIFIED: 0,
  OK: 1,
  INVALID_ARGUMENT: 10,
  NOT_FOUND: 11,
  FAILED_PRECONDITION: 12,
  OUT_OF_RANGE: 13,
  UNIMPLEMENTED: 14,
  DEADLINE_EXCEEDED: 20,
  UNAVAILABLE: 21,
  RESOURCE_EXHAUSTED: 22,
  INTERNAL: 30,
  DATA_LOSS: 31,
} as const;

export const WireValueType = {
  UNSPECIFIED: 0,
  BOOL: 1,
  INT64: 2,
  UINT64: 3,
  DOUBLE: 4,
  STRING: 5,
  BYTES: 6,
} as const;

export const WireQuality = { UNSPECIFIED: 0, OK: 1, STALE: 2, FAULT: 3, UNKNOWN: 4 } as const;
export const WireCategory = { UNSPECIFIED: 0, READ: 1, CONFIG: 2, ACTUATE: 3 } as const;
export const WireProviderState = { UNSPECIFIED: 0, OK: 1, DEGRADED: 2, FAULT: 3 } as const;
export const WireDeviceState = {
  UNSPECIFIED: 0,
  OK: 1,
  STALE: 2,
  UNREACHABLE: 3,
  FAULT: 4,
} as const;

// ---- Plain-object shapes of the messages (snake_case as in the schema; enums numeric). ----

export interface WireTimestamp {
  seconds?: number;
  nanos?: number;
}

/** A wire Value; 64-bit members decode exactly (a bigint only beyond ±(2^53-1)). */
export interface WireValue {
  type?: number;
  bool_value?: boolean;
  int64_value?: ExactInteger;
  uint64_value?: ExactInteger;
  double_value?: number;
  string_value?: string;
  bytes_value?: Uint8Array;
  /** Decoded only: the name of the member that is set (the `kind` oneof). */
  kind?:
    | "bool_value"
    | "int64_value"
    | "uint64_value"
    | "double_value"
    | "string_value"
    | "bytes_value";
}

export interface WireStatus {
  code?: number;
  message?: string;
  details?: Record<string, string>;
}

export interface WireDevice {
  device_id?: string;
  provider_name?: string;
  type_id?: string;
  type_version?: string;
  label?: string;
  address?: string;
  tags?: Record<string, string>;
}

export interface WireArgSpec {
  name?: string;
  type?: number;
  unit?: string;
  description?: string;
  required?: boolean;
  min_double?: number;
  max_double?: number;
  min_int64?: number;
  max_int64?: number;
  min_uint64?: number;
  max_uint64?: number;
  allowed_values?: string[];
}

export interface WireFunctionPolicy {
  category?: number;
  allowed_modes?: string[];
  requires_lease?: boolean;
  safety_profile?: string;
  min_interval_ms?: number;
  is_idempotent?: boolean;
}

export interface WireFunctionSpec {
  function_id?: number;
  name?: string;
  description?: string;
  policy?: WireFunctionPolicy;
  args?: WireArgSpec[];
  results?: WireArgSpec[];
}

export interface WireSignalSpec {
  signal_id?: string;
  name?: string;
  description?: string;
  value_type?: number;
  unit?: string;
  poll_hint_hz?: number;
  stale_after_ms?: number;
}

export interface WireSignalValue {
  signal_id?: string;
  value?: WireValue;
  timestamp?: WireTimestamp;
  quality?: number;
  metadata?: Record<string, string>;
}

export interface WireDeviceHealth {
  device_id?: string;
  state?: number;
  message?: string;
  last_seen?: WireTimestamp;
  metrics?: Record<string, string>;
}

export interface WireProviderHealth {
  state?: number;
  message?: string;
  metrics?: Record<string, string>;
}

/** Request payloads by oneof member name. */
export interface RequestPayloads {
  hello: { protocol_version?: string; client_name?: string; client_version?: string };
  list_devices: { include_health?: boolean };
  describe_device: { device_id?: string };
  read_signals: { device_id?: string; signal_ids?: string[]; min_timestamp?: WireTimestamp };
  call: {
    device_id?: string;
    function_id?: number;
    function_name?: string;
    args?: Record<string, WireValue>;
    idempotency_key?: string;
    deadline?: WireTimestamp;
  };
  get_health: Record<string, never>;
  wait_ready: { max_wait_ms_hint?: number };
}

/** Response payloads by oneof member name. */
export interface ResponsePayloads {
  hello: {
    protocol_version?: string;
    provider_name?: string;
    provider_version?: string;
    metadata?: Record<string, string>;
  };
  list_devices: { devices?: WireDevice[]; device_health?: WireDeviceHealth[] };
  describe_device: {
    device?: WireDevice;
    capabilities?: { functions?: WireFunctionSpec[]; signals?: WireSignalSpec[] };
  };
  read_signals: { device_id?: string; values?: WireSignalValue[] };
  call: { device_id?: string; results?: Record<string, WireValue>; operation_id?: string };
  get_health: { provider?: WireProviderHealth; devices?: WireDeviceHealth[] };
  wait_ready: { diagnostics?: Record<string, string> };
}

export type PayloadKind = keyof RequestPayloads;
export const PAYLOAD_KINDS: readonly PayloadKind[] = [
  "hello",
  "list_devices",
  "describe_device",
  "read_signals",
  "call",
  "get_health",
  "wait_ready",
];

/** A decoded Request: id plus at most one payload member (`payload` names it). */
export type WireRequest =
  & { request_id: number; payload?: PayloadKind }
  & {
    [K in PayloadKind]?: RequestPayloads[K];
  };

/** A decoded Response. */
export type WireResponse =
  & { request_id: number; status?: WireStatus; payload?: PayloadKind }
  & {
    [K in PayloadKind]?: ResponsePayloads[K];
  };

/** Longs as numbers, enums numeric, bytes left as Uint8Array, `payload` names the oneof member. */
const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: Number, oneofs: true };

/** Encodes a Request message (without the length prefix). Throws on a malformed object. */
export function encodeRequest(msg: WireRequest): Uint8Array {
  return RequestType.encode(RequestType.fromObject(stripPayloadName(msg))).finish();
}

/** Encodes a Response message (without the length prefix). */
export function encodeResponse(msg: WireResponse): Uint8Array {
  return ResponseType.encode(ResponseType.fromObject(stripPayloadName(msg))).finish();
}

/** Decodes a Request; throws on bytes that are not a valid message. */
export function decodeRequest(bytes: Uint8Array): WireRequest {
  const m = RequestType.decode(bytes);
  return RequestType.toObject(m, TO_OBJECT) as WireRequest;
}

/** Decodes a Response; throws on bytes that are not a valid message. */
export function decodeResponse(bytes: Uint8Array): WireResponse {
  const m = ResponseType.decode(bytes);
  return ResponseType.toObject(m, TO_OBJECT) as WireResponse;
}

function stripPayloadName<T extends { payload?: unknown }>(msg: T): Omit<T, "payload"> {
  if (!("payload" in msg)) return msg;
  const { payload: _p, ...rest } = msg;
  return rest;
}
