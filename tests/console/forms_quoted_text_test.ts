/**
 * The console's form checks (console/forms.js) word a refused value as the runtime does
 * (src/control/validate_args.ts, which checks again): the value typed and the allowed values cut
 * and quoted alike, at the runtime's bounds, so that a 10 kB paste or a provider's 10 kB allowed
 * values make no error of that length and the two refusals read the same.
 */
import assert from "node:assert/strict";
import { ERROR_TEXT_CHARS, MAX_NAMED_IN_ERROR, readArg } from "../../console/forms.js";
import {
  type FunctionSpec,
  MAX_NAMED_IN_WARNING,
  PROVIDER_TEXT_CHARS,
  RuntimeError,
} from "../../src/common/mod.ts";
import { validateArgs } from "../../src/control/mod.ts";

const TEN_KB = 10_000;

/** The runtime's refusal of string `value` for argument `name` declaring `allowed`. */
function runtimeRefusal(name: string, allowed: string[], value: string): string {
  const fn: FunctionSpec = {
    functionId: 1,
    name: "f",
    description: "",
    category: "ACTUATE",
    actuating: true,
    args: [{
      name,
      type: "string",
      unit: "",
      description: "",
      required: true,
      allowedValues: allowed,
    }],
  };
  try {
    validateArgs(fn, { [name]: { type: "string", string: value } });
  } catch (e) {
    assert.ok(e instanceof RuntimeError, String(e));
    return e.message;
  }
  assert.fail("the runtime accepted the value");
}

Deno.test("readArg cuts and quotes a 10 kB value and lists the allowed values as the runtime does", () => {
  assert.equal(ERROR_TEXT_CHARS, PROVIDER_TEXT_CHARS);
  assert.equal(MAX_NAMED_IN_ERROR, MAX_NAMED_IN_WARNING);
  const cases: Array<[string[], string]> = [
    [["open", "closed"], "Open"],
    [["a"], `it's "quoted"\u2028`],
    [Array.from({ length: 100 }, (_, i) => `${i}${"v".repeat(TEN_KB)}`), "x".repeat(TEN_KB)],
    // A cut before a character beyond U+FFFF leaves it out whole.
    [["\u{1F600}".repeat(TEN_KB)], `${"y".repeat(ERROR_TEXT_CHARS - 1)}\u{1F600}`],
  ];
  for (const [allowed, value] of cases) {
    const got = readArg("mode", { type: "string", required: true, allowed_values: allowed }, value);
    assert.ok("error" in got, JSON.stringify(got));
    assert.equal(`args.${got.error}`, runtimeRefusal("mode", allowed, value));
    assert.ok(got.error.length < 2500, `${got.error.length} characters`);
  }
  const long = readArg(
    "mode",
    { type: "string", required: true, allowed_values: ["on"] },
    `'${"x".repeat(TEN_KB)}`,
  );
  assert.deepEqual(long, {
    error: `mode: "'${"x".repeat(ERROR_TEXT_CHARS - 1)}\u2026" is not one of the allowed values ` +
      '("on")',
  });
});

Deno.test("readArg cuts a 10 kB name and a 10 kB text typed in its errors", () => {
  const name = "n".repeat(TEN_KB);
  const cutName = `${"n".repeat(ERROR_TEXT_CHARS)}\u2026`;
  const typed = `1${"0".repeat(TEN_KB)}x`;
  const cutTyped = `"${typed.slice(0, ERROR_TEXT_CHARS)}\u2026"`;
  assert.deepEqual(readArg(name, { type: "double", required: true }, typed), {
    error: `${cutName}: must be a number, got ${cutTyped}`,
  });
  assert.deepEqual(readArg(name, { type: "int64", required: true }, typed), {
    error: `${cutName}: must be a whole number, got ${cutTyped}`,
  });
  assert.deepEqual(readArg(name, { type: "bool", required: true }, typed), {
    error: `${cutName}: must be true or false, got ${cutTyped}`,
  });
  const digits = "9".repeat(TEN_KB);
  assert.deepEqual(readArg("i", { type: "int64", required: true }, digits), {
    error: `i: must be within \u00b1${Number.MAX_SAFE_INTEGER} (a JSON number), got ${
      "9".repeat(ERROR_TEXT_CHARS)
    }\u2026`,
  });
  // A finite double of 301 digits.
  const big = `2${"0".repeat(300)}`;
  assert.deepEqual(readArg("d", { type: "double", required: true, max: 1 }, big), {
    error: `d: 2${"0".repeat(ERROR_TEXT_CHARS - 1)}\u2026 is above the maximum 1`,
  });
  assert.deepEqual(readArg(name, { type: "double", required: true }, " "), {
    error: `${cutName}: is required`,
  });
});
