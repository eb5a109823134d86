import {
  type ArgSpec,
  type FunctionSpec,
  invalidArgument,
  type TypedValue,
  type ValueType,
} from "../common/mod.ts";

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/**
 * Checks call arguments against the function's ArgSpecs before anything reaches the provider:
 * required args present (ArgSpec order), no unknown names, type (with exact widening
 * int64 -> uint64/double and uint64 -> int64/double), integer validity, present bounds
 * (inclusive), allowed_values for strings. Returns the args converted to the declared types.
 * Throws INVALID_ARGUMENT naming the argument.
 */
export function validateArgs(
  fn: FunctionSpec,
  args: Readonly<Record<string, TypedValue>>,
): Record<string, TypedValue> {
  for (const spec of fn.args) {
    if (spec.required && !(spec.name in args)) {
      throw invalidArgument(`args.${spec.name}: required argument missing for ${fn.name}`);
    }
  }
  const specs = new Map(fn.args.map((a) => [a.name, a]));
  const out: Record<string, TypedValue> = {};
  for (const name of Object.keys(args).sort()) {
    const spec = specs.get(name);
    if (!spec) {
      const known = fn.args.map((a) => a.name).join(", ") || "none";
      throw invalidArgument(`args.${name}: unknown argument for ${fn.name} (known: ${known})`);
    }
    out[name] = checkArg(spec, args[name]);
  }
  return out;
}

function checkArg(spec: ArgSpec, value: TypedValue): TypedValue {
  const where = `args.${spec.name}`;
  if (spec.type === null) {
    throw invalidArgument(`${where}: the provider declared no type for this argument`);
  }
  const v = coerce(value, spec.type, where);
  switch (v.type) {
    case "double":
      checkBounds(spec, v.double, where);
      break;
    case "int64":
      checkBounds(spec, v.int64, where);
      break;
    case "uint64":
      checkBounds(spec, v.uint64, where);
      break;
    case "string":
      if (spec.allowedValues.length > 0 && !spec.allowedValues.includes(v.string)) {
        throw invalidArgument(
          `${where}: '${v.string}' is not one of the allowed values (${
            spec.allowedValues.join(", ")
          })`,
        );
      }
      break;
  }
  return v;
}

function coerce(value: TypedValue, target: ValueType, where: string): TypedValue {
  checkWellFormed(value, where);
  if (value.type === target) return value;
  const isInt = value.type === "int64" || value.type === "uint64";
  const n = value.type === "int64" ? value.int64 : value.type === "uint64" ? value.uint64 : NaN;
  if (isInt && target === "double") return { type: "double", double: n };
  if (isInt && target === "uint64") {
    if (n < 0) throw invalidArgument(`${where}: ${n} does not fit uint64`);
    return { type: "uint64", uint64: n };
  }
  if (isInt && target === "int64") return { type: "int64", int64: n };
  throw invalidArgument(`${where}: expected ${target}, got ${value.type}`);
}

function checkWellFormed(value: TypedValue, where: string): void {
  switch (value.type) {
    case "double":
      if (typeof value.double !== "number") {
        throw invalidArgument(`${where}: double must be a number`);
      }
      return;
    case "int64":
      if (!Number.isInteger(value.int64) || Math.abs(value.int64) > MAX_SAFE) {
        throw invalidArgument(`${where}: int64 must be an integer within ±2^53`);
      }
      return;
    case "uint64":
      if (!Number.isInteger(value.uint64) || value.uint64 < 0 || value.uint64 > MAX_SAFE) {
        throw invalidArgument(`${where}: uint64 must be a non-negative integer below 2^53`);
      }
      return;
    default:
      return;
  }
}

function checkBounds(spec: ArgSpec, n: number, where: string): void {
  // NaN fails both comparisons, so it passes bounds (as in anolis); the provider validates.
  if (spec.min !== undefined && n < spec.min) {
    throw invalidArgument(`${where}: ${n} is below the minimum ${spec.min}`);
  }
  if (spec.max !== undefined && n > spec.max) {
    throw invalidArgument(`${where}: ${n} is above the maximum ${spec.max}`);
  }
}
