/** The interlock condition language: what it parses to, and where each error is. */
import assert from "node:assert/strict";
import {
  type ConditionNode,
  conditionSignals,
  formatConditionError,
  MAX_CONDITION_DEPTH,
  MAX_CONDITION_LENGTH,
  parseCondition,
} from "../../src/config/mod.ts";

function parsed(text: string): ConditionNode {
  const r = parseCondition(text);
  if (!r.ok) throw new Error(`${text}: ${formatConditionError(r.error)}`);
  return r.condition;
}

function error(text: string): { column: number; message: string } {
  const r = parseCondition(text);
  if (r.ok) throw new Error(`${text}: parsed`);
  return { ...r.error };
}

const T = {
  handle: "sim0/tempctl0/tc1_temp",
  providerId: "sim0",
  deviceId: "tempctl0",
  signalId: "tc1_temp",
};

Deno.test("parseCondition reads a comparison of a signal with a number, with the columns", () => {
  assert.deepEqual(parsed("sim0/tempctl0/tc1_temp > 80"), {
    kind: "compare",
    op: ">",
    left: { kind: "signal", signal: { ...T, column: 1 } },
    right: { kind: "literal", value: 80, column: 26 },
    column: 24,
  });
  for (const op of ["<", "<=", ">", ">=", "==", "!="]) {
    const n = parsed(`sim0/tempctl0/tc1_temp${op}-1.5e1`);
    assert.equal(n.kind === "compare" && n.op, op);
    assert.equal(n.kind === "compare" && n.right.kind === "literal" && n.right.value, -15);
  }
});

Deno.test("parseCondition keeps an integer literal beyond 2^53 exact, as a bigint; other numbers are doubles", () => {
  const lit = (text: string) => {
    const n = parsed(`sim0/tempctl0/tc1_temp ${text}`);
    return n.kind === "compare" && n.right.kind === "literal" ? n.right.value : undefined;
  };
  assert.equal(lit("== 9007199254740993"), 9007199254740993n);
  assert.equal(lit("< -9223372036854775808"), -9223372036854775808n);
  assert.equal(lit("> +18446744073709551615"), 18446744073709551615n);
  assert.equal(lit("== 9007199254740991"), 9007199254740991, "the largest safe integer: a double");
  assert.equal(lit("== 9007199254740993.0"), 9007199254740992, "a decimal point: a double");
  assert.equal(lit("== 1e300"), 1e300);
});

Deno.test("parseCondition binds not tighter than and, and tighter than or; parentheses group", () => {
  const a = "p/d/a > 1";
  const b = "p/d/b > 2";
  const c = "p/d/c > 3";
  const shape = (n: ConditionNode): unknown =>
    n.kind === "and" || n.kind === "or"
      ? [n.kind, shape(n.left), shape(n.right)]
      : n.kind === "not"
      ? ["not", shape(n.operand)]
      : n.kind === "compare" && n.left.kind === "signal"
      ? n.left.signal.signalId
      : n.kind;
  assert.deepEqual(shape(parsed(`${a} or ${b} and ${c}`)), ["or", "a", ["and", "b", "c"]]);
  assert.deepEqual(shape(parsed(`(${a} or ${b}) and ${c}`)), ["and", ["or", "a", "b"], "c"]);
  assert.deepEqual(shape(parsed(`not ${a} and ${b}`)), ["and", ["not", "a"], "b"]);
  assert.deepEqual(shape(parsed(`not (${a} and ${b})`)), ["not", ["and", "a", "b"]]);
  assert.deepEqual(shape(parsed(`${a} and ${b} and ${c}`)), ["and", ["and", "a", "b"], "c"]);
});

Deno.test("parseCondition reads bad(), bool and string literals, signal-to-signal comparisons and constants", () => {
  assert.deepEqual(parsed("bad(p/d/s)"), {
    kind: "bad",
    signal: { handle: "p/d/s", providerId: "p", deviceId: "d", signalId: "s", column: 5 },
  });
  const eq = parsed(`p/d/mode == "open" or p/d/flag != false or p/d/name == 'it\\'s'`);
  assert.equal(eq.kind, "or");
  const values: unknown[] = [];
  const walk = (n: ConditionNode) => {
    if (n.kind === "or") {
      walk(n.left);
      walk(n.right);
    } else if (n.kind === "compare" && n.right.kind === "literal") values.push(n.right.value);
  };
  walk(eq);
  assert.deepEqual(values, ["open", false, "it's"]);
  const two = parsed("p/d/a >= p/d/b");
  assert.equal(two.kind === "compare" && two.right.kind, "signal");
  assert.deepEqual(parsed("true"), { kind: "constant", value: true });
  assert.deepEqual(parsed(" ( false ) "), { kind: "constant", value: false });
  const reversed = parsed("80 < p/d/s");
  assert.equal(reversed.kind === "compare" && reversed.left.kind, "literal");
});

Deno.test("conditionSignals lists every signal once, in order of appearance", () => {
  const n = parsed("p/d/a > 1 and (bad(p/d/b) or p/d/a < p/d/c) and not bad(p/d/b)");
  assert.deepEqual(conditionSignals(n).map((s) => s.handle), ["p/d/a", "p/d/b", "p/d/c"]);
});

Deno.test("parseCondition names the column of each error", () => {
  const cases: [string, number, RegExp][] = [
    ["p/d/s => 80", 7, /^unknown operator '=>'/],
    ["p/d/s = 80", 7, /^unknown operator '='/],
    ["p/d/s > 1 && p/d/t < 2", 11, /^unknown operator '&&' .*and, or, not/],
    ["!(p/d/s > 1)", 1, /^unknown operator '!'/],
    ["p/d > 80", 1, /^malformed signal handle 'p\/d': write provider\/device\/signal/],
    ["p/d/s/x > 80", 1, /^malformed signal handle 'p\/d\/s\/x'/],
    ["p//s > 80", 1, /^malformed signal handle/],
    ["temp > 80", 1, /^unknown word 'temp' \(a signal is written provider\/device\/signal/],
    ["p/d/s > 80 AND p/d/t < 1", 12, /^unknown word 'AND' \(keywords are lower case: 'and'\)/],
    ['p/d/s == "open', 10, /^unterminated string$/],
    ["(p/d/s > 80", 12, /^expected '\)' to close '\(' at column 1, got the end of the condition/],
    ["p/d/s > 80)", 11, /^unmatched '\)'$/],
    [
      "p/d/s > 80 p/d/t",
      12,
      /^expected and, or or the end of the condition, got the signal p\/d\/t/,
    ],
    ["p/d/s", 6, /^expected a comparison operator .*, got the end of the condition/],
    ["p/d/s >", 8, /^expected a signal or a value, got the end of the condition/],
    ["p/d/s > and", 9, /^expected a signal or a value, got 'and'/],
    ["p/d/s > 80 and", 15, /^expected a signal or a value, got the end/],
    ['p/d/s > "hot"', 9, /^'>' at column 7 compares numbers, got the string "hot"/],
    ["true < p/d/s", 1, /^'<' at column 6 compares numbers, got true/],
    ["1 == 2", 3, /^the comparison compares two values: one side must be a signal/],
    ["bad(80)", 1, /^bad takes one signal: bad\(provider\/device\/signal\)/],
    ["bad p/d/s", 1, /^bad takes one signal/],
    ["p/d/s > 1e999", 9, /^number out of range: 1e999/],
    ["p/d/s > 80 ; p/d/t > 1", 12, /^unexpected character ';'/],
  ];
  for (const [text, column, message] of cases) {
    const e = error(text);
    assert.equal(e.column, column, text);
    assert.match(e.message, message, text);
  }
});

Deno.test("parseCondition bounds the nesting depth and the length", () => {
  const nested = (n: number) => `${"(".repeat(n)}p/d/s > 1${")".repeat(n)}`;
  assert.equal(parseCondition(nested(MAX_CONDITION_DEPTH)).ok, true);
  const deep = error(nested(MAX_CONDITION_DEPTH + 1));
  assert.equal(deep.column, MAX_CONDITION_DEPTH + 1);
  assert.equal(deep.message, `nested deeper than ${MAX_CONDITION_DEPTH} levels`);
  const nots = (n: number) => `${"not ".repeat(n)}p/d/s > 1`;
  assert.equal(parseCondition(nots(MAX_CONDITION_DEPTH)).ok, true);
  assert.equal(error(nots(MAX_CONDITION_DEPTH + 1)).column, 4 * MAX_CONDITION_DEPTH + 1);

  const long = (n: number) => `p/d/s > 1${" ".repeat(n - 9)}`;
  assert.equal(long(MAX_CONDITION_LENGTH).length, MAX_CONDITION_LENGTH);
  assert.equal(parseCondition(long(MAX_CONDITION_LENGTH)).ok, true);
  assert.deepEqual(error(long(MAX_CONDITION_LENGTH + 1)), {
    column: MAX_CONDITION_LENGTH + 1,
    message: `is longer than ${MAX_CONDITION_LENGTH} characters (${MAX_CONDITION_LENGTH + 1})`,
  });
  // Characters, as the editor schema counts them: one outside the BMP is one, not two (before:
  // a condition of 1024 characters with emoji in a string was refused as longer).
  const emoji = (n: number) => `p/d/s == '${"\u{1F525}".repeat(n - 11)}'`;
  assert.equal([...emoji(MAX_CONDITION_LENGTH)].length, MAX_CONDITION_LENGTH);
  assert.equal(parseCondition(emoji(MAX_CONDITION_LENGTH)).ok, true);
  assert.deepEqual(error(emoji(MAX_CONDITION_LENGTH + 1)), {
    column: 10 + 2 * (MAX_CONDITION_LENGTH - 10) + 1, // the closing quote
    message: `is longer than ${MAX_CONDITION_LENGTH} characters (${MAX_CONDITION_LENGTH + 1})`,
  });
});

Deno.test("formatConditionError says the column is the condition's", () => {
  assert.equal(
    formatConditionError({ column: 7, message: "unknown operator '=>'" }),
    "column 7 of the condition: unknown operator '=>'",
  );
});
