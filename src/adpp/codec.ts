/**
 * ADPP messages as plain objects <-> protobuf bytes. The work is done by src/adpp/_codec.js,
 * plain JavaScript generated from proto/ by `deno task proto` (scripts/gen_proto_module.ts
 * documents its semantics): no protobuf library is loaded at run time.
 */
import type { ExactInteger } from "../common/mod.ts";
import {
  decodeRequest as decodeRequestObject,
  decodeResponse as decodeResponseObject,
  encodeRequest as encodeRequestObject,
  encodeResponse as encodeResponseObject,
} from "./_codec.js";

export { ENCODE_SLAB_BYTES } from "./_proto_writer.ts";

/** Numeric enums of the wire (proto/anolis/deviceprovider/v1/*.proto). */
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

/** A wire Value; 64-bit members decode exactly (a bigint only beyond +/-(2^53-1)). */
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

/**
 * Encodes a Request message (without the length prefix): canonical proto3, `payload` ignored.
 * Throws TypeError/RangeError naming the field on a malformed object.
 */
export function encodeRequest(msg: WireRequest): Uint8Array {
  return encodeRequestObject(msg);
}

/** Encodes a Response message (without the length prefix); throws like encodeRequest. */
export function encodeResponse(msg: WireResponse): Uint8Array {
  return encodeResponseObject(msg);
}

/** Decodes a Request; throws on bytes that are not a valid message. */
export function decodeRequest(bytes: Uint8Array): WireRequest {
  return decodeRequestObject(bytes) as WireRequest;
}

/** Decodes a Response; throws on bytes that are not a valid message. */
export function decodeResponse(bytes: Uint8Array): WireResponse {
  return decodeResponseObject(bytes) as WireResponse;
}
