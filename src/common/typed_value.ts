/**
 * Typed values: the ADPP value encoding in the JSON shape of the HTTP contract
 * (`{type, <member named like the type>}`). Used unchanged inside the runtime, on HTTP and SSE.
 *
 * int64/uint64 are JS numbers: values beyond ±2^53 are refused at the HTTP boundary (JSON numbers
 * that large are already lossy) and rounded when a provider reports them.
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

export type TypedValue =
  | { type: "double"; double: number }
  | { type: "int64"; int64: number }
  | { type: "uint64"; uint64: number }
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

/** The JS scalar inside a typed value (bytes stay base64 text). */
export function scalarOf(v: TypedValue): number | boolean | string {
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

/** Equality for change detection: doubles compare bitwise (NaN equals NaN, 0 differs from -0). */
export function sameValue(a: TypedValue, b: TypedValue): boolean {
  if (a.type !== b.type) return false;
  const x = scalarOf(a);
  const y = scalarOf(b);
  return Object.is(x, y);
}

/** Builds a typed value from a type name and a scalar (caller guarantees the scalar fits). */
export function makeTypedValue(type: ValueType, scalar: number | boolean | string): TypedValue {
  switch (type) {
    case "double":
      return { type, double: Number(scalar) };
    case "int64":
      return { type, int64: Number(scalar) };
    case "uint64":
      return { type, uint64: Number(scalar) };
    case "bool":
      return { type, bool: Boolean(scalar) };
    case "string":
      return { type, string: String(scalar) };
    case "bytes":
      return { type, base64: String(scalar) };
  }
}
