import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { type BbValue, Blackboard } from "../../../src/automation/bt/blackboard.ts";
import {
  MAX_SCRIPT_DEPTH,
  parseScript,
  runScript,
  ScriptSyntaxError,
} from "../../../src/automation/bt/script.ts";

function run(code: string, bb = new Blackboard()): BbValue {
  return runScript(parseScript(code), bb);
}

const VALUES: [string, BbValue][] = [
  ["1 + 2", { type: "double", value: 3 }],
  ["7 / 2", { type: "double", value: 3.5 }],
  ["2 + 3 * 4", { type: "double", value: 14 }],
  ["(2 + 3) * 4", { type: "double", value: 20 }],
  ["-(2 * 3)", { type: "double", value: -6 }],
  ["42", { type: "int64", value: 42 }],
  ["0x1F", { type: "int64", value: 31 }],
  ["1.5e2", { type: "double", value: 150 }],
  ["'ab' + 'cd'", { type: "string", value: "abcd" }],
  ["'x' .. 3", { type: "string", value: "x3" }],
  ["3 > 2 && 1 == 1", { type: "bool", value: true }],
  ["!(1 < 0) || false", { type: "bool", value: true }],
  ["true && false", { type: "bool", value: false }],
  ["2 >= 2 && 2 <= 2 && 1 != 2", { type: "bool", value: true }],
  ["'10' > 9", { type: "bool", value: true }],
  ["'OK' == 'OK'", { type: "bool", value: true }],
  ["a := 5; a += 2; a", { type: "int64", value: 7 }],
  ["a := 5; a -= 1; a *= 3; a /= 2; a", { type: "int64", value: 6 }],
  ["b := 'x'; b += 'y'; b", { type: "string", value: "xy" }],
  ["c := 1.5; c", { type: "double", value: 1.5 }],
  ["x := 2; x > 1 ? 'big' : 'small'", { type: "string", value: "big" }],
  ["n := 3; n = n * 2; n", { type: "int64", value: 6 }],
  ["flag := true; !flag", { type: "bool", value: false }],
  ["a := 1; ; b := 2;", { type: "int64", value: 2 }],
];

for (const [code, expected] of VALUES) {
  Deno.test(`runScript evaluates ${code}`, () => {
    deepStrictEqual(run(code), expected);
  });
}

const SYNTAX: [string, number, RegExp][] = [
  ["a := ", 5, /end of script/],
  ["1 +* 2", 3, /unexpected "\*"/],
  ["'abc", 0, /unterminated/],
  ["(1 + 2", 6, /expected '\)'/],
  ["a # b", 2, /unexpected character/],
  ["1 2", 2, /expected ';'/],
  ["3 = 4", 2, /left side/],
  ["", 0, /empty script/],
];

for (const [code, offset, message] of SYNTAX) {
  Deno.test(`parseScript reports a syntax error with its offset for '${code}'`, () => {
    throws(() => parseScript(code), (err: unknown) => {
      equal(err instanceof ScriptSyntaxError, true);
      const e = err as ScriptSyntaxError;
      equal(e.offset, offset);
      return message.test(e.message);
    });
  });
}

Deno.test("runScript refuses '=' on a missing entry and points at ':='", () => {
  throws(() => run("y = 1"), /use ':='/);
});

Deno.test("runScript reports an unknown variable", () => {
  throws(() => run("zz + 1"), /variable "zz" not found/);
});

Deno.test("runScript refuses arithmetic on a non-numeric string", () => {
  throws(() => run("'a' - 1"), /not a number/);
});

Deno.test("runScript keeps the declared type of a typed entry", () => {
  const bb = new Blackboard();
  bb.createEntry("d", "double");
  bb.createEntry("i", "int64");
  deepStrictEqual(run("d := 3; d", bb), { type: "double", value: 3 });
  deepStrictEqual(run("i := 2.0; i", bb), { type: "int64", value: 2 });
  throws(() => run("i := 2.5", bb), /cannot assign double 2.5 to entry "i" of type int64/);
});

Deno.test("parseScript refuses a script nested deeper than MAX_SCRIPT_DEPTH with a syntax error, not a stack overflow", () => {
  const cases = [
    "(".repeat(20_000) + "1" + ")".repeat(20_000), // parentheses
    "!".repeat(20_000) + "true", // unary operators
    "x := " + "1 + ".repeat(20_000) + "1", // a chain the evaluator would walk left-deep
    "a := ".repeat(20_000) + "1", // assignments
  ];
  for (const code of cases) {
    throws(() => parseScript(code), (err: unknown) => {
      equal(err instanceof ScriptSyntaxError, true, String(err));
      equal((err as Error).message, `nested deeper than MAX_SCRIPT_DEPTH (${MAX_SCRIPT_DEPTH})`);
      return true;
    });
  }
  // At the bound: parsed and run.
  const deep = "x := " + "(".repeat(MAX_SCRIPT_DEPTH - 2) + "1" + ")".repeat(MAX_SCRIPT_DEPTH - 2);
  equal(run(deep, new Blackboard()).value, 1);
  const chain = "x := " + "1 + ".repeat(MAX_SCRIPT_DEPTH - 2) + "1";
  equal(run(chain, new Blackboard()).value, MAX_SCRIPT_DEPTH - 1);
});

Deno.test("runScript compares numbers for equality within float epsilon, as BT.CPP: a float32 readback equals its double target", () => {
  const bb = new Blackboard();
  // A device that holds its duty as a float32 reads 0.6 back as 0.6000000238418579.
  bb.set("duty_now", { type: "double", value: Math.fround(0.6) });
  bb.set("duty", { type: "double", value: 0.6 });
  deepStrictEqual(run("duty_now == duty", bb), { type: "bool", value: true });
  deepStrictEqual(run("duty_now != duty", bb), { type: "bool", value: false });
  deepStrictEqual(run("0.1 + 0.2 == 0.3", bb), { type: "bool", value: true });
  // Beyond the tolerance, and the orderings, compare exactly (BT.CPP's `<` has no tolerance).
  deepStrictEqual(run("duty == 0.6001", bb), { type: "bool", value: false });
  deepStrictEqual(run("duty_now > duty", bb), { type: "bool", value: true });
  deepStrictEqual(run("duty_now <= duty", bb), { type: "bool", value: false });
});
