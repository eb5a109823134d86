import type { ValueType } from "../common/mod.ts";
import { type WireValue, WireValueType } from "../adpp/mod.ts";

/** A JS scalar carried by a wire Value (bytes as Uint8Array). */
export type ScalarValue = number | boolean | string | Uint8Array;

const TO_WIRE_TYPE: Readonly<Record<ValueType, number>> = {
  bool: WireValueType.BOOL,
  int64: WireValueType.INT64,
  uint64: WireValueType.UINT64,
  double: WireValueType.DOUBLE,
  string: WireValueType.STRING,
  bytes: WireValueType.BYTES,
};

const FROM_WIRE_TYPE: ReadonlyMap<number, ValueType> = new Map(
  Object.entries(TO_WIRE_TYPE).map(([name, n]) => [n, name as ValueType]),
);

/** The ValueType enum number for a value type name. */
export function wireValueTypeOf(type: ValueType): number {
  return TO_WIRE_TYPE[type];
}

/** The value type name for a ValueType enum number; null for UNSPECIFIED or unknown numbers. */
export function valueTypeFromWire(n: number | undefined): ValueType | null {
  return FROM_WIRE_TYPE.get(n ?? 0) ?? null;
}

/** Upper-case wire spelling, for error messages (`DOUBLE`, `INT64`, ...). */
export function wireTypeName(type: ValueType): string {
  return type.toUpperCase();
}

/**
 * Builds a wire Value with BOTH `type` and the matching oneof member set: the anolis runtime checks
 * the member, the reference provider checks `type`, so a Value must carry both. Throws TypeError
 * when the scalar does not fit the type (a provider bug, not bad input).
 */
export function toWireValue(type: ValueType, value: ScalarValue): WireValue {
  const t = TO_WIRE_TYPE[type];
  switch (type) {
    case "bool":
      if (typeof value !== "boolean") break;
      return { type: t, bool_value: value };
    case "int64":
      if (typeof value !== "number" || !Number.isInteger(value)) break;
      return { type: t, int64_value: value };
    case "uint64":
      if (typeof value !== "number" || !Number.isInteger(value) || value < 0) break;
      return { type: t, uint64_value: value };
    case "double":
      if (typeof value !== "number") break;
      return { type: t, double_value: value };
    case "string":
      if (typeof value !== "string") break;
      return { type: t, string_value: value };
    case "bytes":
      if (!(value instanceof Uint8Array)) break;
      return { type: t, bytes_value: value };
  }
  throw new TypeError(`value ${String(value)} does not fit type ${wireTypeName(type)}`);
}

/** Shorthands for the common cases. */
export const wireBool = (v: boolean): WireValue => toWireValue("bool", v);
export const wireInt64 = (v: number): WireValue => toWireValue("int64", v);
export const wireUint64 = (v: number): WireValue => toWireValue("uint64", v);
export const wireDouble = (v: number): WireValue => toWireValue("double", v);
export const wireString = (v: string): WireValue => toWireValue("string", v);
export const wireBytes = (v: Uint8Array): WireValue => toWireValue("bytes", v);

/**
 * Reads a wire Value the way the reference provider does: `Value.type` is the discriminator and
 * the matching member is taken (protobuf default when that member is absent). Null when the type
 * is UNSPECIFIED or unknown.
 */
export function fromWireValue(v: WireValue): { type: ValueType; value: ScalarValue } | null {
  const type = valueTypeFromWire(v.type);
  switch (type) {
    case null:
      return null;
    case "bool":
      return { type, value: v.bool_value ?? false };
    case "int64":
      return { type, value: Number(v.int64_value ?? 0) };
    case "uint64":
      return { type, value: Number(v.uint64_value ?? 0) };
    case "double":
      return { type, value: v.double_value ?? 0 };
    case "string":
      return { type, value: v.string_value ?? "" };
    case "bytes":
      return { type, value: v.bytes_value ?? new Uint8Array(0) };
  }
}
