/**
 * Typed values arriving as JSON (`{type, <member named like the type>}`), already checked by the
 * request schema (request_schemas.ts TYPED_VALUE_INPUT_SCHEMA), as the runtime's TypedValue; and
 * the JSON of a cached value as served.
 */
import type { TypedValue } from "../common/mod.ts";
import type { TypedValueInput } from "./request_schemas.ts";

/** A validated typed value as a TypedValue (its other members dropped). */
export function typedValueOf(v: TypedValueInput): TypedValue {
  switch (v.type) {
    case "double":
      return { type: "double", double: v.double! };
    case "int64":
      return { type: "int64", int64: v.int64! };
    case "uint64":
      return { type: "uint64", uint64: v.uint64! };
    case "bool":
      return { type: "bool", bool: v.bool! };
    case "string":
      return { type: "string", string: v.string! };
    case "bytes":
      return { type: "bytes", base64: v.base64! };
  }
}

/**
 * A validated call's `args` (absent = no args) by name. An int64/uint64 whose JSON text parsing
 * rounded never gets here: the body's validation refuses every such integer member
 * (request_validation.ts, roundedIntegerMember).
 */
export function callArgs(
  args: Readonly<Record<string, TypedValueInput>> | undefined,
): Record<string, TypedValue> {
  if (args === undefined) return {};
  // Null prototype: an arg named "__proto__" or "toString" is data, not an inherited member.
  const out: Record<string, TypedValue> = Object.create(null);
  for (const [name, value] of Object.entries(args)) out[name] = typedValueOf(value);
  return out;
}

/**
 * The JSON of a value-less signal in GET /v0/state: what the C++ runtime writes for a Value
 * without a type (a declared signal the provider answered without a value).
 */
export const NO_VALUE_JSON: { readonly type: "unknown" } = Object.freeze({ type: "unknown" });

/** A cached signal's value as served: the typed value, or NO_VALUE_JSON when it has none. */
export function signalValueJson(v: TypedValue | null): TypedValue | { readonly type: "unknown" } {
  return v ?? NO_VALUE_JSON;
}
