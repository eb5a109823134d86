import assert from "node:assert/strict";
import { type FunctionSpec, RuntimeError, type TypedValue } from "../../src/common/mod.ts";
import { validateArgs } from "../../src/control/mod.ts";

/** Mirrors the sim's set_motor_duty plus one arg of each other kind. */
const FN: FunctionSpec = {
  functionId: 10,
  name: "set_motor_duty",
  description: "",
  category: "ACTUATE",
  actuating: true,
  args: [
    {
      name: "motor_index",
      type: "int64",
      unit: "",
      description: "",
      required: true,
      min: 1,
      max: 2,
      allowedValues: [],
    },
    {
      name: "duty",
      type: "double",
      unit: "",
      description: "",
      required: true,
      min: 0,
      max: 1,
      allowedValues: [],
    },
    {
      name: "count",
      type: "uint64",
      unit: "",
      description: "",
      required: false,
      max: 10,
      allowedValues: [],
    },
    {
      name: "mode",
      type: "string",
      unit: "",
      description: "",
      required: false,
      allowedValues: ["open", "closed"],
    },
    { name: "note", type: "string", unit: "", description: "", required: false, allowedValues: [] },
    { name: "raw", type: null, unit: "", description: "", required: false, allowedValues: [] },
  ],
};

const ok = {
  motor_index: { type: "int64", int64: 1 },
  duty: { type: "double", double: 0.5 },
} as const;

const INVALID: Array<[string, Record<string, TypedValue>, RegExp]> = [
  [
    "required arg missing",
    { motor_index: ok.motor_index },
    /args\.duty: required argument missing/,
  ],
  ["unknown arg", { ...ok, speed: { type: "double", double: 1 } }, /args\.speed: unknown argument/],
  [
    "wrong type",
    { ...ok, duty: { type: "bool", bool: true } },
    /args\.duty: expected double, got bool/,
  ],
  [
    "below min",
    { ...ok, duty: { type: "double", double: -0.1 } },
    /args\.duty: -0\.1 is below the minimum 0/,
  ],
  [
    "above max",
    { ...ok, motor_index: { type: "int64", int64: 3 } },
    /args\.motor_index: 3 is above the maximum 2/,
  ],
  [
    "non-integer int64",
    { ...ok, motor_index: { type: "int64", int64: 1.5 } },
    /args\.motor_index: int64 must be an integer/,
  ],
  ["int64 beyond 2^53", { ...ok, motor_index: { type: "int64", int64: 2 ** 60 } }, /within ±2\^53/],
  [
    "negative into uint64",
    { ...ok, count: { type: "int64", int64: -1 } },
    /args\.count: -1 does not fit uint64/,
  ],
  [
    "uint64 above max",
    { ...ok, count: { type: "uint64", uint64: 11 } },
    /args\.count: 11 is above the maximum 10/,
  ],
  [
    "string not allowed",
    { ...ok, mode: { type: "string", string: "auto" } },
    /args\.mode: "auto" is not one of the allowed values/,
  ],
  [
    "double into int64",
    { ...ok, motor_index: { type: "double", double: 1 } },
    /expected int64, got double/,
  ],
  ["unspecified arg type", { ...ok, raw: { type: "string", string: "x" } }, /declared no type/],
];

for (const [name, args, message] of INVALID) {
  Deno.test(`validateArgs rejects ${name} with INVALID_ARGUMENT`, () => {
    assert.throws(() => validateArgs(FN, args), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "INVALID_ARGUMENT");
      assert.match(e.message, message);
      return true;
    });
  });
}

Deno.test("validateArgs accepts bounds inclusively and only checks present bounds", () => {
  assert.deepEqual(
    validateArgs(FN, {
      motor_index: { type: "int64", int64: 2 },
      duty: { type: "double", double: 1 },
    }),
    { motor_index: { type: "int64", int64: 2 }, duty: { type: "double", double: 1 } },
  );
  // `note` has no bounds or allowed values: anything goes.
  const r = validateArgs(FN, { ...ok, note: { type: "string", string: "anything" } });
  assert.equal((r.note as { string: string }).string, "anything");
});

Deno.test("validateArgs widens integers exactly where the ArgSpec needs it", () => {
  const r = validateArgs(FN, {
    motor_index: { type: "uint64", uint64: 1 },
    duty: { type: "int64", int64: 1 },
    count: { type: "int64", int64: 7 },
  });
  assert.deepEqual(r.motor_index, { type: "int64", int64: 1 });
  assert.deepEqual(r.duty, { type: "double", double: 1 });
  assert.deepEqual(r.count, { type: "uint64", uint64: 7 });
});

Deno.test("validateArgs lets NaN through bounds like anolis (the provider validates)", () => {
  const r = validateArgs(FN, { ...ok, duty: { type: "double", double: NaN } });
  assert.ok(Number.isNaN((r.duty as { double: number }).double));
});

/** Unbounded 64-bit arguments, for exact values beyond ±2^53. */
const WIDE: FunctionSpec = {
  ...FN,
  args: [
    { name: "i", type: "int64", unit: "", description: "", required: false, allowedValues: [] },
    { name: "u", type: "uint64", unit: "", description: "", required: false, allowedValues: [] },
    { name: "d", type: "double", unit: "", description: "", required: false, allowedValues: [] },
  ],
};

Deno.test("validateArgs accepts exact 64-bit integers across their whole range", () => {
  assert.deepEqual(
    validateArgs(WIDE, {
      i: { type: "int64", int64: -(2n ** 63n) },
      u: { type: "uint64", uint64: 2n ** 64n - 1n },
    }),
    {
      i: { type: "int64", int64: -(2n ** 63n) },
      u: { type: "uint64", uint64: 2n ** 64n - 1n },
    },
  );
  // A bigint that fits a number is normalised; uint64 beyond 2^53 widens to int64 exactly.
  assert.deepEqual(
    validateArgs(WIDE, {
      i: { type: "uint64", uint64: 2n ** 62n },
      u: { type: "int64", int64: 5n },
    }),
    { i: { type: "int64", int64: 2n ** 62n }, u: { type: "uint64", uint64: 5 } },
  );
});

Deno.test("validateArgs widens an integer of magnitude 2^53 to a double (exact), as anolis does", () => {
  // anolis CallRouter::coerce_arguments refuses only |n| > 2^53; 2^53 is a double exactly.
  assert.deepEqual(validateArgs(WIDE, { d: { type: "int64", int64: 2n ** 53n } }), {
    d: { type: "double", double: 2 ** 53 },
  });
  assert.deepEqual(validateArgs(WIDE, { d: { type: "int64", int64: -(2n ** 53n) } }), {
    d: { type: "double", double: -(2 ** 53) },
  });
  assert.deepEqual(validateArgs(WIDE, { d: { type: "uint64", uint64: 2n ** 53n } }), {
    d: { type: "double", double: 2 ** 53 },
  });
});

const INVALID_WIDE: Array<[string, Record<string, TypedValue>, RegExp]> = [
  ["int64 above 2^63-1", { i: { type: "int64", int64: 2n ** 63n } }, /args\.i: int64 .* outside/],
  [
    "uint64 above 2^64-1",
    { u: { type: "uint64", uint64: 2n ** 64n } },
    /args\.u: uint64 .*outside/,
  ],
  ["negative uint64 bigint", { u: { type: "uint64", uint64: -(2n ** 60n) } }, /outside/],
  ["uint64 beyond int64 into int64", { i: { type: "uint64", uint64: 2n ** 63n } }, /not fit int64/],
  [
    "integer beyond 2^53 into double",
    { d: { type: "int64", int64: 2n ** 53n + 1n } },
    /args\.d: 9007199254740993 cannot be given exactly as a double/,
  ],
  [
    "integer below -2^53 into double",
    { d: { type: "int64", int64: -(2n ** 53n) - 1n } },
    /args\.d: -9007199254740993 cannot be given exactly as a double/,
  ],
];

for (const [name, args, message] of INVALID_WIDE) {
  Deno.test(`validateArgs rejects ${name} with INVALID_ARGUMENT`, () => {
    assert.throws(() => validateArgs(WIDE, args), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "INVALID_ARGUMENT");
      assert.match(e.message, message);
      return true;
    });
  });
}

Deno.test("validateArgs compares exact integers with declared bounds exactly", () => {
  assert.throws(
    () => validateArgs(FN, { ...ok, motor_index: { type: "int64", int64: 2n ** 60n } }),
    /args\.motor_index: 1152921504606846976 is above the maximum 2/,
  );
});

// Exact messages: the argument, the rule and the offending value, as the HTTP answer carries them.
const MESSAGES: Array<[string, FunctionSpec, Record<string, TypedValue>, string]> = [
  [
    "an unknown argument lists the known ones",
    FN,
    { ...ok, speed: { type: "double", double: 1 } },
    'args.speed: unknown argument for "set_motor_duty" (known: "motor_index", "duty", "count", "mode", "note", "raw")',
  ],
  [
    "an unknown argument of a function without arguments",
    { ...FN, name: "reset", args: [] },
    { speed: { type: "double", double: 1 } },
    'args.speed: unknown argument for "reset" (known: none)',
  ],
  [
    "the first bad argument by name",
    WIDE,
    { u: { type: "int64", int64: -1 }, i: { type: "double", double: 1 } },
    "args.i: expected int64, got double",
  ],
  [
    "the first unknown argument by name",
    WIDE,
    { zeta: { type: "int64", int64: 1 }, alpha: { type: "int64", int64: 1 } },
    'args.alpha: unknown argument for "set_motor_duty" (known: "i", "u", "d")',
  ],
  [
    "a string outside allowed_values lists them",
    FN,
    { ...ok, mode: { type: "string", string: "auto" } },
    'args.mode: "auto" is not one of the allowed values ("open", "closed")',
  ],
  [
    "an integer for a string argument",
    FN,
    { ...ok, note: { type: "int64", int64: 5 } },
    "args.note: expected string, got int64",
  ],
  [
    "a uint64 for a bool argument",
    { ...FN, args: [{ ...FN.args[4]!, name: "on", type: "bool" }] },
    { on: { type: "uint64", uint64: 1 } },
    "args.on: expected bool, got uint64",
  ],
  [
    "a double that is not a number",
    FN,
    { ...ok, duty: { type: "double", double: "0.5" as unknown as number } },
    "args.duty: double must be a number",
  ],
  [
    "a non-integer int64",
    FN,
    { ...ok, motor_index: { type: "int64", int64: 1.5 } },
    "args.motor_index: int64 must be an integer within ±2^53 (or an exact 64-bit integer)",
  ],
  [
    "a non-integer uint64",
    FN,
    { ...ok, count: { type: "uint64", uint64: 1.5 } },
    "args.count: uint64 must be a non-negative integer below 2^53 (or an exact 64-bit integer)",
  ],
  [
    "a uint64 given as text",
    FN,
    { ...ok, count: { type: "uint64", uint64: "1" as unknown as number } },
    "args.count: uint64 must be a non-negative integer below 2^53 (or an exact 64-bit integer)",
  ],
  [
    "a negative uint64 number",
    FN,
    { ...ok, count: { type: "uint64", uint64: -1 } },
    "args.count: uint64 must be a non-negative integer below 2^53",
  ],
  [
    "an int64 beyond 2^63-1",
    WIDE,
    { i: { type: "int64", int64: 2n ** 63n } },
    "args.i: int64 9223372036854775808 is outside -9223372036854775808..9223372036854775807",
  ],
  [
    "a negative int64 into uint64",
    WIDE,
    { u: { type: "int64", int64: -1n } },
    "args.u: -1 does not fit uint64",
  ],
  [
    "a uint64 of 2^63 into int64",
    WIDE,
    { i: { type: "uint64", uint64: 2n ** 63n } },
    "args.i: 9223372036854775808 does not fit int64",
  ],
  [
    "a value below the minimum",
    FN,
    { ...ok, motor_index: { type: "int64", int64: 0 } },
    "args.motor_index: 0 is below the minimum 1",
  ],
];

for (const [name, fn, args, message] of MESSAGES) {
  Deno.test(`validateArgs message: ${name}`, () => {
    assert.throws(() => validateArgs(fn, args), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "INVALID_ARGUMENT");
      assert.equal(e.message, message);
      return true;
    });
  });
}

Deno.test("validateArgs accepts the exact edges of the widening conversions", () => {
  assert.deepEqual(
    validateArgs(WIDE, {
      i: { type: "uint64", uint64: 2n ** 63n - 1n }, // INT64_MAX still fits int64
      u: { type: "int64", int64: 0 }, // zero fits uint64
    }),
    { i: { type: "int64", int64: 2n ** 63n - 1n }, u: { type: "uint64", uint64: 0 } },
  );
  assert.deepEqual(
    validateArgs(FN, { ...ok, count: { type: "uint64", uint64: 0 } }).count,
    { type: "uint64", uint64: 0 },
  );
});

Deno.test("validateArgs normalises small bigints to numbers before converting", () => {
  assert.deepEqual(
    validateArgs(WIDE, {
      u: { type: "uint64", uint64: 5n },
      i: { type: "int64", int64: -7n },
      d: { type: "uint64", uint64: 9n },
    }),
    {
      u: { type: "uint64", uint64: 5 },
      i: { type: "int64", int64: -7 },
      d: { type: "double", double: 9 },
    },
  );
  assert.deepEqual(validateArgs(WIDE, { d: { type: "int64", int64: 3n } }), {
    d: { type: "double", double: 3 },
  });
  assert.deepEqual(validateArgs(WIDE, { d: { type: "double", double: 0.5 } }), {
    d: { type: "double", double: 0.5 },
  });
});

Deno.test("validateArgs with an allowed_values list of one entry accepts that value only", () => {
  const ONE: FunctionSpec = {
    ...FN,
    name: "set_mode",
    args: [{
      name: "mode",
      type: "string",
      unit: "",
      description: "",
      required: true,
      allowedValues: ["on"],
    }],
  };
  const on: TypedValue = { type: "string", string: "on" };
  assert.deepEqual(validateArgs(ONE, { mode: on }), { mode: on });
  for (const other of ["off", "", "On", "on ", "onn"]) {
    assert.throws(
      () => validateArgs(ONE, { mode: { type: "string", string: other } }),
      (e: RuntimeError) => {
        assert.equal(e.code, "INVALID_ARGUMENT", other);
        assert.equal(
          e.message,
          `args.mode: ${JSON.stringify(other)} is not one of the allowed values ("on")`,
        );
        return true;
      },
    );
  }
});

Deno.test("validateArgs reads argument names as own keys: a missing 'constructor' or 'toString' is missing", () => {
  const arg = (name: string) => ({
    name,
    type: "string" as const,
    unit: "",
    description: "",
    required: true,
    allowedValues: [],
  });
  for (const name of ["constructor", "toString"]) {
    const fn: FunctionSpec = { ...FN, name: "odd", args: [arg(name)] };
    assert.throws(
      () => validateArgs(fn, {}),
      (e: unknown) =>
        e instanceof RuntimeError &&
        e.message === `args.${name}: required argument missing for "odd"`,
      name,
    );
    const given = { [name]: { type: "string", string: "a" } } as Record<string, TypedValue>;
    assert.deepEqual(validateArgs(fn, given), given);
  }
});
