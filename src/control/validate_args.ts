import {
  type ArgSpec,
  type ExactInteger,
  exactInteger,
  type FunctionSpec,
  INT64_MAX,
  INT64_MIN,
  invalidArgument,
  MAX_NAMED_IN_WARNING,
  namedList,
  PROVIDER_TEXT_CHARS,
  quoteProviderText,
  type TypedValue,
  UINT64_MAX,
  type ValueType,
} from "../common/mod.ts";

/**
 * An argument name as plain path text (`args.duty`): letters, digits, `_` and `-`, as declared
 * names are written. Any other name is quoted (`args["a b"]`).
 */
const PLAIN_ARG_NAME = /^[A-Za-z0-9_-]+$/;

/**
 * Where a message points, `args.<name>`: a declared name (a provider's text, any length) or one a
 * client sent (any character) as JSON would write its member -- `args.duty` when the name is plain
 * and at most PROVIDER_TEXT_CHARS long, else cut and quoted, `args["a\"b"]` (quoteProviderText),
 * so that 10 kB or a quote in a name neither floods nor forges the message.
 */
function argPath(name: string): string {
  return name.length <= PROVIDER_TEXT_CHARS && PLAIN_ARG_NAME.test(name)
    ? `args.${name}`
    : `args[${quoteProviderText(name)}]`;
}

/**
 * The declared allowed values (a provider's text: any number, any length) a refusal lists: each
 * cut and quoted (quoteProviderText), up to MAX_NAMED_IN_WARNING, the rest counted.
 */
function allowedValuesText(allowed: readonly string[]): string {
  return namedList(allowed, MAX_NAMED_IN_WARNING, quoteProviderText);
}

/**
 * Checks call arguments against the function's ArgSpecs before anything reaches the provider:
 * required args present (ArgSpec order), no unknown names, type (with exact widening
 * int64 -> uint64/double and uint64 -> int64/double), integer validity (exact: a safe-integer
 * number or a bigint within the type's 64-bit range), present bounds (inclusive),
 * allowed_values for strings. Returns the args converted to the declared types.
 * Throws INVALID_ARGUMENT naming the argument (argPath) and the function (quoted: a provider's
 * text); what it quotes (names, the client's value, the allowed values) is cut, and the names it
 * lists are bounded (MAX_NAMED_IN_WARNING), however many arguments a function declares.
 */
export function validateArgs(
  fn: FunctionSpec,
  args: Readonly<Record<string, TypedValue>>,
): Record<string, TypedValue> {
  // Names are own keys: `in` would find a missing 'constructor' or 'toString' on the prototype.
  for (const spec of fn.args) {
    if (spec.required && !Object.hasOwn(args, spec.name)) {
      throw invalidArgument(
        `${argPath(spec.name)}: required argument missing for ${quoteProviderText(fn.name)}`,
      );
    }
  }
  // A name declared twice is its first declaration, as discovery keeps it and toTypedArgs reads it.
  const specs = new Map<string, ArgSpec>();
  for (const a of fn.args) if (!specs.has(a.name)) specs.set(a.name, a);
  const out: Record<string, TypedValue> = {};
  for (const name of Object.keys(args).sort()) {
    const spec = specs.get(name);
    if (!spec) {
      const known = namedList([...specs.keys()], MAX_NAMED_IN_WARNING, quoteProviderText) ||
        "none";
      throw invalidArgument(
        `${argPath(name)}: unknown argument for ${quoteProviderText(fn.name)} (known: ${known})`,
      );
    }
    out[name] = checkArg(spec, args[name]!);
  }
  return out;
}

function checkArg(spec: ArgSpec, value: TypedValue): TypedValue {
  const where = argPath(spec.name);
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
          `${where}: ${quoteProviderText(v.string)} is not one of the allowed values (${
            allowedValuesText(spec.allowedValues)
          })`,
        );
      }
      break;
  }
  return v;
}

/** 2^53: the largest magnitude up to which every integer is a double exactly. */
const TWO_53 = 2n ** 53n;

function coerce(value: TypedValue, target: ValueType, where: string): TypedValue {
  checkWellFormed(value, where);
  value = normalised(value);
  if (value.type === target) return value;
  const isInt = value.type === "int64" || value.type === "uint64";
  if (!isInt) throw invalidArgument(`${where}: expected ${target}, got ${value.type}`);
  const n = value.type === "int64" ? value.int64 : (value as { uint64: ExactInteger }).uint64;
  switch (target) {
    case "double":
      // Every integer within +/-2^53 is a double exactly (2^53 itself too, as in anolis's
      // CallRouter::coerce_arguments); past it, some are not, and a setpoint must arrive as
      // written. Within +/-(2^53-1) the integer is already a number.
      if (typeof n === "bigint") {
        if (n !== TWO_53 && n !== -TWO_53) {
          throw invalidArgument(`${where}: ${n} cannot be given exactly as a double`);
        }
        return { type: "double", double: Number(n) };
      }
      return { type: "double", double: n };
    case "uint64":
      if (n < 0) throw invalidArgument(`${where}: ${n} does not fit uint64`);
      return { type: "uint64", uint64: n };
    case "int64":
      if (n > INT64_MAX) throw invalidArgument(`${where}: ${n} does not fit int64`);
      return { type: "int64", int64: n };
    default:
      throw invalidArgument(`${where}: expected ${target}, got ${value.type}`);
  }
}

function checkWellFormed(value: TypedValue, where: string): void {
  switch (value.type) {
    case "double":
      if (typeof value.double !== "number") {
        throw invalidArgument(`${where}: double must be a number`);
      }
      return;
    case "int64":
      checkExact(value.int64, INT64_MIN, INT64_MAX, `${where}: int64`);
      return;
    case "uint64":
      checkExact(value.uint64, 0n, UINT64_MAX, `${where}: uint64`);
      return;
  }
}

/**
 * An exact 64-bit integer within [min, max]: a number must be a safe integer (a larger number
 * was already rounded), a bigint carries any value of the range exactly.
 */
function checkExact(n: unknown, min: bigint, max: bigint, what: string): void {
  if (typeof n === "bigint") {
    if (n < min || n > max) throw invalidArgument(`${what} ${n} is outside ${min}..${max}`);
    return;
  }
  if (typeof n !== "number" || !Number.isSafeInteger(n)) {
    throw invalidArgument(
      min < 0n
        ? `${what} must be an integer within \u00b12^53 (or an exact 64-bit integer)`
        : `${what} must be a non-negative integer below 2^53 (or an exact 64-bit integer)`,
    );
  }
  if (n < min) throw invalidArgument(`${what} must be a non-negative integer below 2^53`);
}

/** The value with a 64-bit integer in its normal form (a number whenever it is safe). */
function normalised(value: TypedValue): TypedValue {
  // checkWellFormed ran first: the integer is a safe-integer number or an in-range bigint.
  switch (value.type) {
    case "int64":
      return { type: "int64", int64: exactInteger(BigInt(value.int64)) };
    case "uint64":
      return { type: "uint64", uint64: exactInteger(BigInt(value.uint64)) };
    default:
      return value;
  }
}

function checkBounds(spec: ArgSpec, n: number | bigint, where: string): void {
  // bigint and number compare exactly. NaN fails both comparisons, so it passes bounds (as in
  // anolis); the provider validates.
  if (spec.min !== undefined && n < spec.min) {
    throw invalidArgument(`${where}: ${n} is below the minimum ${spec.min}`);
  }
  if (spec.max !== undefined && n > spec.max) {
    throw invalidArgument(`${where}: ${n} is above the maximum ${spec.max}`);
  }
}
