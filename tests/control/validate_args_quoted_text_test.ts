/**
 * validateArgs' refusals quote what a provider declared (the function's name, its argument names,
 * their allowed values: any length, any number) and what a client sent (an argument's name, a
 * string value: up to a 64 KiB body) cut, so that a 400 answer, the audit's reason and a tree's
 * WARN line stay bounded and a quote in them forges nothing.
 */
import assert from "node:assert/strict";
import {
  type ArgSpec,
  type FunctionSpec,
  MAX_NAMED_IN_WARNING,
  PROVIDER_TEXT_CHARS,
  RuntimeError,
  type TypedValue,
} from "../../src/common/mod.ts";
import { validateArgs } from "../../src/control/mod.ts";

const TEN_KB = 10_000;

function arg(name: string, o: Partial<ArgSpec> = {}): ArgSpec {
  return {
    name,
    type: "string",
    unit: "",
    description: "",
    required: false,
    allowedValues: [],
    ...o,
  };
}

function fnOf(name: string, args: ArgSpec[]): FunctionSpec {
  return { functionId: 1, name, description: "", category: "ACTUATE", actuating: true, args };
}

/** The message validateArgs refuses `args` with (INVALID_ARGUMENT). */
function refusal(fn: FunctionSpec, args: Record<string, TypedValue>): string {
  try {
    validateArgs(fn, args);
  } catch (e) {
    assert.ok(e instanceof RuntimeError, String(e));
    assert.equal(e.code, "INVALID_ARGUMENT");
    return e.message;
  }
  assert.fail("validateArgs accepted the arguments");
}

/** `text`'s first PROVIDER_TEXT_CHARS characters and the ellipsis, JSON-quoted. */
function cutQuoted(text: string): string {
  return `"${text.slice(0, PROVIDER_TEXT_CHARS)}\u2026"`;
}

const LONG_FN = "F".repeat(TEN_KB);
const LONG_ARG = "a".repeat(TEN_KB);

Deno.test("validateArgs names a missing 10 kB argument of a 10 kB function cut and quoted", () => {
  const message = refusal(fnOf(LONG_FN, [arg(LONG_ARG, { required: true })]), {});
  assert.equal(
    message,
    `args[${cutQuoted(LONG_ARG)}]: required argument missing for ${cutQuoted(LONG_FN)}`,
  );
  // A short declared name reads as before; the function's name is quoted.
  assert.equal(
    refusal(fnOf("set_duty", [arg("duty", { required: true })]), {}),
    'args.duty: required argument missing for "set_duty"',
  );
});

Deno.test("validateArgs names a client's 10 kB unknown argument cut and quoted, and lists at most MAX_NAMED_IN_WARNING known ones", () => {
  const declared = Array.from({ length: 500 }, (_, i) => arg(`${i}_${"k".repeat(TEN_KB)}`));
  const sent = `x"y\n${"z".repeat(TEN_KB)}`;
  const message = refusal(fnOf(LONG_FN, declared), { [sent]: { type: "string", string: "v" } });
  const known = declared.slice(0, MAX_NAMED_IN_WARNING).map((a) => cutQuoted(a.name)).join(", ");
  assert.equal(
    message,
    `args[${cutQuoted(sent).replace("\n", "\\n").replace('x"y', 'x\\"y')}]: unknown argument ` +
      `for ${cutQuoted(LONG_FN)} (known: ${known} and ${500 - MAX_NAMED_IN_WARNING} more)`,
  );
  assert.ok(message.length < 2500, `${message.length} characters`);
  // A name of other characters than letters, digits, _ and - is quoted too, whatever its length.
  assert.equal(
    refusal(fnOf("f", [arg("a")]), { "a b": { type: "string", string: "v" } }),
    'args["a b"]: unknown argument for "f" (known: "a")',
  );
});

Deno.test("validateArgs quotes a client's 10 kB string cut and lists at most MAX_NAMED_IN_WARNING allowed values", () => {
  const allowed = Array.from({ length: 300 }, (_, i) => `${i}${"v".repeat(TEN_KB)}`);
  const value = `'forged' is one of them\n${"s".repeat(TEN_KB)}`;
  const message = refusal(fnOf("set_mode", [arg("mode", { allowedValues: allowed })]), {
    mode: { type: "string", string: value },
  });
  const listed = allowed.slice(0, MAX_NAMED_IN_WARNING).map(cutQuoted).join(", ");
  assert.equal(
    message,
    `args.mode: ${
      cutQuoted(value).replace("\n", "\\n")
    } is not one of the allowed values (${listed} and ${300 - MAX_NAMED_IN_WARNING} more)`,
  );
  assert.ok(message.length < 2500, `${message.length} characters`);
});
