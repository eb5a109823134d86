/**
 * The console's form checks (console/forms.js), run here under Deno: every argument type at its
 * bounds and one past them, required and optional, allowed values, and the typed values sent.
 * The rules mirror the runtime's (src/control/validate_args.ts), which checks again.
 */
import assert from "node:assert/strict";
import { describeSpec, MAX_JSON_INTEGER, readArg, readParameter } from "../../console/forms.js";

type Spec = Parameters<typeof readArg>[1];

const cases: Array<[string, Spec, string | boolean, unknown]> = [
  // double: bounds inclusive, one past refused, only plain decimal notation
  ["duty", { type: "double", required: true, min: 0, max: 1 }, "0", { double: 0 }],
  ["duty", { type: "double", required: true, min: 0, max: 1 }, "1", { double: 1 }],
  ["duty", { type: "double", required: true, min: 0, max: 1 }, " 0.5 ", { double: 0.5 }],
  ["duty", { type: "double", required: true, min: 0, max: 1 }, ".25", { double: 0.25 }],
  ["duty", { type: "double", required: true, min: 0, max: 1 }, "1e-1", { double: 0.1 }],
  ["duty", { type: "double", required: true, min: 0, max: 1 }, "1.0001", {
    error: "duty: 1.0001 is above the maximum 1",
  }],
  ["duty", { type: "double", required: true, min: 0, max: 1 }, "-0.0001", {
    error: "duty: -0.0001 is below the minimum 0",
  }],
  ["x", { type: "double", required: true }, "0x10", { error: 'x: must be a number, got "0x10"' }],
  ["x", { type: "double", required: true }, "Infinity", {
    error: 'x: must be a number, got "Infinity"',
  }],
  ["x", { type: "double", required: true }, "1e999", { error: 'x: must be a number, got "1e999"' }],
  ["x", { type: "double", required: true }, "1,5", { error: 'x: must be a number, got "1,5"' }],
  // int64: whole numbers within ±(2^53-1)
  ["i", { type: "int64", required: true, min: 1, max: 2 }, "1", { int64: 1 }],
  ["i", { type: "int64", required: true, min: 1, max: 2 }, "2", { int64: 2 }],
  ["i", { type: "int64", required: true, min: 1, max: 2 }, "3", {
    error: "i: 3 is above the maximum 2",
  }],
  ["i", { type: "int64", required: true, min: 1, max: 2 }, "0", {
    error: "i: 0 is below the minimum 1",
  }],
  ["i", { type: "int64", required: true }, "1.5", {
    error: 'i: must be a whole number, got "1.5"',
  }],
  ["i", { type: "int64", required: true }, "-9007199254740991", { int64: -MAX_JSON_INTEGER }],
  ["i", { type: "int64", required: true }, "9007199254740991", { int64: MAX_JSON_INTEGER }],
  ["i", { type: "int64", required: true }, "9007199254740992", {
    error: "i: must be within ±9007199254740991 (a JSON number), got 9007199254740992",
  }],
  // uint64: never negative
  ["u", { type: "uint64", required: true }, "0", { uint64: 0 }],
  ["u", { type: "uint64", required: true }, "-1", {
    error: "u: must not be negative (uint64), got -1",
  }],
  // bool: a checkbox's state, or the select's text
  ["b", { type: "bool", required: true }, true, { bool: true }],
  ["b", { type: "bool", required: true }, false, { bool: false }],
  ["b", { type: "bool", required: false }, "false", { bool: false }],
  ["b", { type: "bool", required: true }, "yes", { error: 'b: must be true or false, got "yes"' }],
  ["d", { type: "double", required: true }, true, { error: "d: must be a double" }],
  // string: allowed values; kept as typed (spaces included)
  ["m", { type: "string", required: true, allowed_values: ["open", "closed"] }, "open", {
    string: "open",
  }],
  ["m", { type: "string", required: true, allowed_values: ["open", "closed"] }, "Open", {
    error: 'm: "Open" is not one of the allowed values ("open", "closed")',
  }],
  ["s", { type: "string", required: true }, " a b ", { string: " a b " }],
  // bytes: padded standard base64
  ["y", { type: "bytes", required: true }, "AQID", { base64: "AQID" }],
  ["y", { type: "bytes", required: true }, "AQI=", { base64: "AQI=" }],
  ["y", { type: "bytes", required: true }, "AQI", {
    error: "y: must be base64 (A-Z a-z 0-9 + / with = padding)",
  }],
  ["y", { type: "bytes", required: true }, "A-_=", {
    error: "y: must be base64 (A-Z a-z 0-9 + / with = padding)",
  }],
  // required and optional
  ["r", { type: "double", required: true }, "  ", { error: "r: is required" }],
  ["o", { type: "double", required: false }, "", { omit: true }],
  ["o", { type: "string", required: false }, "", { omit: true }],
  ["t", { type: "unspecified", required: true }, "1", {
    error: "t: its provider declared no type (unspecified); the runtime refuses it",
  }],
];

Deno.test("readArg checks every argument type at its bounds and builds the typed value", () => {
  for (const [name, spec, raw, expected] of cases) {
    const got = readArg(name, spec, raw);
    const want = expected as Record<string, unknown>;
    const what = `${name} ${JSON.stringify(spec)} ${JSON.stringify(raw)}`;
    if ("error" in want || "omit" in want) assert.deepEqual(got, want, what);
    else assert.deepEqual(got, { value: { type: spec.type, ...want } }, what);
  }
});

Deno.test("readParameter gives the plain JSON value POST /v0/parameters takes", () => {
  const temp = { name: "target_temp", type: "double", min: 0, max: 120 };
  assert.deepEqual(readParameter(temp, "35"), { value: 35 });
  assert.deepEqual(readParameter(temp, "120"), { value: 120 });
  assert.deepEqual(readParameter(temp, "120.5"), {
    error: "target_temp: 120.5 is above the maximum 120",
  });
  assert.deepEqual(readParameter(temp, ""), { error: "target_temp: is required" });
  assert.deepEqual(readParameter({ name: "on", type: "bool" }, "true"), { value: true });
  assert.deepEqual(
    readParameter({ name: "recipe", type: "string", allowed_values: ["a", "b"] }, "c"),
    { error: 'recipe: "c" is not one of the allowed values ("a", "b")' },
  );
  assert.deepEqual(readParameter({ name: "n", type: "int64" }, "7"), { value: 7 });
});

Deno.test("describeSpec states type, unit, bounds, allowed values and whether required", () => {
  assert.equal(
    describeSpec({ type: "double", unit: "V", min: -10, max: 10, required: true }),
    "double, V, -10 … 10, required",
  );
  assert.equal(describeSpec({ type: "int64", min: 1 }), "int64, ≥ 1, optional");
  assert.equal(describeSpec({ type: "uint64", max: 5, required: true }), "uint64, ≤ 5, required");
  assert.equal(
    describeSpec({ type: "string", allowed_values: ["low", "high"], required: true }),
    "string, one of low, high, required",
  );
});
