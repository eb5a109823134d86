/**
 * Typed values arriving as JSON (`{type, <member named like the type>}`), validated strictly so a
 * call never reaches the router with a value that JSON could not carry exactly.
 */
import { invalidArgument, type TypedValue, VALUE_TYPES, type ValueType } from "../common/mod.ts";
import { isPlainObject } from "./json_body.ts";

/** Standard base64 alphabet, padded to a multiple of 4 (RFC 4648 §4). */
const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The JSON member that carries the value of each type (bytes travel as `base64`). */
const MEMBER: Readonly<Record<ValueType, string>> = {
  double: "double",
  int64: "int64",
  uint64: "uint64",
  bool: "bool",
  string: "string",
  bytes: "base64",
};

/**
 * Parses one typed value; `path` names it in errors (e.g. `args.duty`). Throws INVALID_ARGUMENT:
 * `args.duty: missing "double" member`, `args.n.int64: must be an integer within ±(2^53-1)`, ...
 */
export function parseTypedValue(json: unknown, path: string): TypedValue {
  if (!isPlainObject(json)) throw invalidArgument(`${path}: must be a typed value object`);
  if (!("type" in json)) throw invalidArgument(`${path}: missing "type"`);
  const type = json.type;
  if (typeof type !== "string") throw invalidArgument(`${path}.type: must be a string`);
  if (!(VALUE_TYPES as readonly string[]).includes(type)) {
    throw invalidArgument(
      `${path}.type: unknown value type "${type}" (expected one of ${VALUE_TYPES.join(", ")})`,
    );
  }
  const t = type as ValueType;
  const member = MEMBER[t];
  if (!(member in json)) throw invalidArgument(`${path}: missing "${member}" member`);
  const v = json[member];
  const at = `${path}.${member}`;
  switch (t) {
    case "double":
      if (typeof v !== "number") throw invalidArgument(`${at}: must be a number`);
      return { type: t, double: v };
    case "int64":
      if (typeof v !== "number" || !Number.isSafeInteger(v)) {
        throw invalidArgument(`${at}: must be an integer within ±(2^53-1)`);
      }
      return { type: t, int64: v };
    case "uint64":
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
        throw invalidArgument(`${at}: must be an integer from 0 to 2^53-1`);
      }
      return { type: t, uint64: v };
    case "bool":
      if (typeof v !== "boolean") throw invalidArgument(`${at}: must be a boolean`);
      return { type: t, bool: v };
    case "string":
      if (typeof v !== "string") throw invalidArgument(`${at}: must be a string`);
      return { type: t, string: v };
    case "bytes":
      if (typeof v !== "string" || !BASE64_RE.test(v)) {
        throw invalidArgument(`${at}: must be base64 (standard alphabet, padded)`);
      }
      return { type: t, base64: v };
  }
}

/** Parses a call's `args` object (absent = no args). */
export function parseArgs(json: unknown, path = "args"): Record<string, TypedValue> {
  if (json === undefined) return {};
  if (!isPlainObject(json)) throw invalidArgument(`${path}: must be an object of typed values`);
  // Null prototype: an arg named "__proto__" or "toString" is data, not an inherited member.
  const out: Record<string, TypedValue> = Object.create(null);
  for (const [name, value] of Object.entries(json)) {
    out[name] = parseTypedValue(value, `${path}.${name}`);
  }
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
