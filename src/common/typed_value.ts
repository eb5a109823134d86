/**
 * Typed values: the ADPP value encoding in the JSON shape of the HTTP API (docs/http-api.md)
 * (`{type, <member named like the type>}`). Used unchanged inside the runtime, on HTTP and SSE.
 *
 * int64/uint64 are exact: a JS number while the value is a safe integer (|v| <= 2^53-1), a bigint
 * only beyond that range (normalised where values are made, see `exactInteger`), so equality
 * stays `Object.is` and the common case allocates nothing new. JSON writes either as the exact
 * decimal digits (see `toJsonText`).
 *
 * A double that is NaN or +/-Infinity carries `non_finite` naming it, because JSON has no such
 * numbers: its JSON is `{"type":"double","double":null,"non_finite":"NaN"}` (see `doubleValue`).
 */
export type ValueType = "double" | "int64" | "uint64" | "bool" | "string" | "bytes";

export const VALUE_TYPES: readonly ValueType[] = [
  "double",
  "int64",
  "uint64",
  "bool",
  "string",
  "bytes",
];

/** How a non-finite double is named in JSON (`non_finite`). */
export type NonFiniteName = "NaN" | "Infinity" | "-Infinity";

/** An exact 64-bit integer: a number when safe, else a bigint (never a bigint that fits). */
export type ExactInteger = number | bigint;

export type TypedValue =
  | { type: "double"; double: number; non_finite?: NonFiniteName }
  | { type: "int64"; int64: ExactInteger }
  | { type: "uint64"; uint64: ExactInteger }
  | { type: "bool"; bool: boolean }
  | { type: "string"; string: string }
  | { type: "bytes"; base64: string };

/** Signal quality as the runtime reports it. */
export type Quality = "OK" | "STALE" | "UNAVAILABLE" | "FAULT";

/** Rank for "worst quality" roll-ups: OK < STALE < FAULT < UNAVAILABLE. */
export const QUALITY_RANK: Readonly<Record<Quality, number>> = {
  OK: 0,
  STALE: 1,
  FAULT: 2,
  UNAVAILABLE: 3,
};

/** Worst of a list of qualities; an empty list is OK. */
export function worstQuality(qualities: Iterable<Quality>): Quality {
  let worst: Quality = "OK";
  for (const q of qualities) if (QUALITY_RANK[q] > QUALITY_RANK[worst]) worst = q;
  return worst;
}

/** Inclusive ranges of the 64-bit integer types. */
export const INT64_MIN = -(1n << 63n);
export const INT64_MAX = (1n << 63n) - 1n;
export const UINT64_MAX = (1n << 64n) - 1n;

/** The normal form of an exact integer: a number when it is a safe integer, else the bigint. */
export function exactInteger(v: bigint): ExactInteger {
  return v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v;
}

/*
 * The typed values the poll path makes for every sample come from constructors whose instances
 * are plain objects (their prototype is Object.prototype: to every reader, `assert.deepStrictEqual`
 * and JSON they are object literals), not from object literals. V8 may pretenure a literal's
 * allocation site -- allocate its objects straight into old space -- once it judges that they
 * outlive the young generation, and a sample lives as long as its device's poll period. It did so
 * for the poll path's literals once the on-board history was on: ~0.2 MB/s of samples went to old
 * space as garbage, and V8 sized the heap ~6 MiB larger (bench/README.md, "Where history's RSS
 * goes"). A constructor call has no allocation site to pretenure.
 */

type Typed<K extends TypedValue["type"]> = Extract<TypedValue, { type: K }>;

/**
 * Makes `ctor` a constructor of plain objects: its instances get Object.prototype (see above).
 * `ctor` sets the fields on `this` itself (no rest parameters: nothing is allocated per call but
 * the object).
 */
export function plainObjectConstructor<A extends unknown[], T>(
  ctor: (this: Record<string, unknown>, ...args: A) => void,
): new (...args: A) => T {
  (ctor as { prototype: object }).prototype = Object.prototype;
  return ctor as unknown as new (...args: A) => T;
}

const DoubleValue = plainObjectConstructor<[number], Typed<"double">>(function (x) {
  this.type = "double";
  this.double = x;
});
const Int64Value = plainObjectConstructor<[ExactInteger], Typed<"int64">>(function (x) {
  this.type = "int64";
  this.int64 = x;
});
const Uint64Value = plainObjectConstructor<[ExactInteger], Typed<"uint64">>(function (x) {
  this.type = "uint64";
  this.uint64 = x;
});
const BoolValue = plainObjectConstructor<[boolean], Typed<"bool">>(function (x) {
  this.type = "bool";
  this.bool = x;
});
const StringValue = plainObjectConstructor<[string], Typed<"string">>(function (x) {
  this.type = "string";
  this.string = x;
});

/** An int64 typed value (a plain object made without a literal: see above). */
export function int64Value(x: ExactInteger): TypedValue {
  return new Int64Value(x);
}

/** A uint64 typed value (a plain object made without a literal: see above). */
export function uint64Value(x: ExactInteger): TypedValue {
  return new Uint64Value(x);
}

/** A bool typed value (a plain object made without a literal: see above). */
export function boolValue(x: boolean): TypedValue {
  return new BoolValue(x);
}

/** A string typed value (a plain object made without a literal: see above). */
export function stringValue(x: string): TypedValue {
  return new StringValue(x);
}

/** A double typed value; NaN and +/-Infinity get their `non_finite` name. */
export function doubleValue(x: number): TypedValue {
  if (Number.isFinite(x)) return new DoubleValue(x);
  // String() spells a non-finite number exactly as its JSON name: NaN, Infinity, -Infinity.
  return { type: "double", double: x, non_finite: String(x) as NonFiniteName };
}

/** The number inside a numeric typed value (double, int64, uint64); null for any other type. */
export function numericOf(v: TypedValue): number | bigint | null {
  switch (v.type) {
    case "double":
      return v.double;
    case "int64":
      return v.int64;
    case "uint64":
      return v.uint64;
    default:
      return null;
  }
}

/** The JS scalar inside a typed value (bytes stay base64 text). */
export function scalarOf(v: TypedValue): number | bigint | boolean | string {
  switch (v.type) {
    case "double":
      return v.double;
    case "int64":
      return v.int64;
    case "uint64":
      return v.uint64;
    case "bool":
      return v.bool;
    case "string":
      return v.string;
    case "bytes":
      return v.base64;
  }
}

/**
 * Equality for change detection: doubles compare bitwise (NaN equals NaN, 0 differs from -0);
 * 64-bit integers by value (normalised, so a number never equals a bigint).
 */
export function sameValue(a: TypedValue, b: TypedValue): boolean {
  if (a.type !== b.type) return false;
  const x = scalarOf(a);
  const y = scalarOf(b);
  return Object.is(x, y);
}
