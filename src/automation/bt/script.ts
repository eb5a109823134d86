/**
 * The BehaviorTree.CPP v4 script subset users write in Script, ScriptCondition, Precondition and
 * `_skipIf`-style attributes: blackboard variables, numbers, 'strings', true/false, + - * /,
 * `..` (string concatenation), comparisons, && || !, ternary `c ? a : b`, assignment `:=` and `=`,
 * compound `+= -= *= /=`, statements separated by `;`. Arithmetic yields doubles as in BT.CPP.
 */
import { quoteProviderText } from "../../common/mod.ts";
import {
  type BbValue,
  type Blackboard,
  convertValue,
  parseScalar,
  typeError,
} from "./blackboard.ts";

type Token =
  | { kind: "num"; text: string; pos: number }
  | { kind: "str"; text: string; pos: number }
  | { kind: "id"; text: string; pos: number }
  | { kind: "op"; text: string; pos: number }
  | { kind: "end"; text: ""; pos: number };

/** Parsed script AST node. */
export type ScriptExpr =
  | { kind: "literal"; value: BbValue }
  | { kind: "var"; name: string; pos: number }
  | { kind: "unary"; op: "!" | "-"; arg: ScriptExpr }
  | { kind: "binary"; op: string; left: ScriptExpr; right: ScriptExpr; pos: number }
  | { kind: "ternary"; cond: ScriptExpr; then: ScriptExpr; else: ScriptExpr }
  | { kind: "assign"; op: string; name: string; value: ScriptExpr; pos: number };

/** A parsed script: one or more statements; its value is the last statement's. */
export interface ScriptProgram {
  readonly source: string;
  readonly statements: readonly ScriptExpr[];
}

/** Parse failure with the 0-based character offset in the script text. */
export class ScriptSyntaxError extends Error {
  constructor(message: string, readonly offset: number) {
    super(message);
    this.name = "ScriptSyntaxError";
  }
}

const OPERATORS = [
  ":=",
  "+=",
  "-=",
  "*=",
  "/=",
  "==",
  "!=",
  "<=",
  ">=",
  "&&",
  "||",
  "..",
  "<",
  ">",
  "=",
  "+",
  "-",
  "*",
  "/",
  "!",
  "(",
  ")",
  ";",
  "?",
  ":",
];

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c!)) {
      i++;
      continue;
    }
    const start = i;
    if (/[0-9]/.test(c!) || (c === "." && /[0-9]/.test(src[i + 1] ?? ""))) {
      const m = /^(0[xX][0-9a-fA-F]+|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)/.exec(src.slice(i));
      const text = m ? m[0] : c!;
      // "1..2" is not a number followed by concat in practice; keep BT.CPP's greedy reading.
      out.push({ kind: "num", text, pos: start });
      i += text.length;
      if (/[A-Za-z_]/.test(src[i] ?? "")) {
        // The script's text (any length, any character), here and below: cut and quoted.
        throw new ScriptSyntaxError(`invalid number ${quoteProviderText(text + src[i])}`, start);
      }
      continue;
    }
    if (/[A-Za-z_@]/.test(c!)) {
      const m = /^@?[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
      if (!m) throw new ScriptSyntaxError(`invalid identifier after '@'`, start);
      out.push({ kind: "id", text: m[0], pos: start });
      i += m[0].length;
      continue;
    }
    if (c === "'" || c === '"') {
      const end = src.indexOf(c, i + 1);
      if (end < 0) throw new ScriptSyntaxError("unterminated string literal", start);
      out.push({ kind: "str", text: src.slice(i + 1, end), pos: start });
      i = end + 1;
      continue;
    }
    const op = OPERATORS.find((o) => src.startsWith(o, i));
    if (!op) throw new ScriptSyntaxError(`unexpected character ${quoteProviderText(c!)}`, start);
    out.push({ kind: "op", text: op, pos: start });
    i += op.length;
  }
  out.push({ kind: "end", text: "", pos: src.length });
  return out;
}

const ASSIGN_OPS = new Set([":=", "=", "+=", "-=", "*=", "/="]);

/**
 * How deep a script may nest: parentheses, unary operators, assignments, ternaries and the
 * operators of one chain (`1 + 1 + ...`, evaluated left-deep) each count a level. The parser and
 * the evaluator recurse per level: past it the script is a syntax error (at load, in
 * --check-config) instead of a stack overflow there or at a tick.
 */
export const MAX_SCRIPT_DEPTH = 256;

class Parser {
  #i = 0;
  /** Levels entered (MAX_SCRIPT_DEPTH). */
  #depth = 0;
  constructor(readonly tokens: Token[]) {}

  /** Runs `f` one level deeper; past MAX_SCRIPT_DEPTH a syntax error where it goes too deep. */
  #nested<T>(f: () => T, levels = 1): T {
    this.#depth += levels;
    try {
      if (this.#depth > MAX_SCRIPT_DEPTH) {
        throw new ScriptSyntaxError(
          `nested deeper than MAX_SCRIPT_DEPTH (${MAX_SCRIPT_DEPTH})`,
          this.#t().pos,
        );
      }
      return f();
    } finally {
      this.#depth -= levels;
    }
  }

  #t(): Token {
    return this.tokens[this.#i]!;
  }

  #isOp(text: string): boolean {
    return this.#t().kind === "op" && this.#t().text === text;
  }

  #expectOp(text: string): void {
    if (!this.#isOp(text)) {
      throw new ScriptSyntaxError(
        `expected '${text}' but found ${describe(this.#t())}`,
        this.#t().pos,
      );
    }
    this.#i++;
  }

  program(): ScriptExpr[] {
    const statements: ScriptExpr[] = [];
    while (this.#t().kind !== "end") {
      if (this.#isOp(";")) {
        this.#i++;
        continue;
      }
      statements.push(this.expression());
      if (this.#t().kind !== "end") this.#expectOp(";");
    }
    if (statements.length === 0) throw new ScriptSyntaxError("empty script", 0);
    return statements;
  }

  expression(): ScriptExpr {
    const t = this.#t();
    const next = this.tokens[this.#i + 1];
    if (t.kind === "id" && next!.kind === "op" && ASSIGN_OPS.has(next!.text)) {
      if (t.text === "true" || t.text === "false") {
        throw new ScriptSyntaxError(`cannot assign to '${t.text}'`, t.pos);
      }
      this.#i += 2;
      const value = this.#nested(() => this.expression());
      return { kind: "assign", op: next!.text, name: t.text, value, pos: t.pos };
    }
    const e = this.ternary();
    if (this.#t().kind === "op" && ASSIGN_OPS.has(this.#t().text)) {
      throw new ScriptSyntaxError("left side of an assignment must be a variable", this.#t().pos);
    }
    return e;
  }

  ternary(): ScriptExpr {
    const cond = this.binary(0);
    if (!this.#isOp("?")) return cond;
    this.#i++;
    const thenE = this.#nested(() => this.expression());
    this.#expectOp(":");
    return { kind: "ternary", cond, then: thenE, else: this.#nested(() => this.expression()) };
  }

  static readonly LEVELS: readonly (readonly string[])[] = [
    ["||"],
    ["&&"],
    ["==", "!=", "<", "<=", ">", ">="],
    ["+", "-", ".."],
    ["*", "/"],
  ];

  binary(level: number): ScriptExpr {
    if (level >= Parser.LEVELS.length) return this.unary();
    let left = this.binary(level + 1);
    // Each operator of a chain is one level more of the left-deep tree the evaluator walks.
    let chain = 0;
    while (this.#t().kind === "op" && Parser.LEVELS[level]!.includes(this.#t().text)) {
      const op = this.#t();
      this.#i++;
      const right = this.#nested(() => this.binary(level + 1), ++chain);
      left = { kind: "binary", op: op.text, left, right, pos: op.pos };
    }
    return left;
  }

  unary(): ScriptExpr {
    if (this.#isOp("!") || this.#isOp("-")) {
      const op = this.#t().text as "!" | "-";
      this.#i++;
      return { kind: "unary", op, arg: this.#nested(() => this.unary()) };
    }
    return this.primary();
  }

  primary(): ScriptExpr {
    const t = this.#t();
    switch (t.kind) {
      case "num": {
        this.#i++;
        const isInt = /^(0[xX][0-9a-fA-F]+|\d+)$/.test(t.text);
        const value = isInt ? parseScalar(t.text, "int64") : parseScalar(t.text, "double");
        if (!value) {
          throw new ScriptSyntaxError(`invalid number ${quoteProviderText(t.text)}`, t.pos);
        }
        return { kind: "literal", value };
      }
      case "str":
        this.#i++;
        return { kind: "literal", value: { type: "string", value: t.text } };
      case "id":
        this.#i++;
        if (t.text === "true" || t.text === "false") {
          return { kind: "literal", value: { type: "bool", value: t.text === "true" } };
        }
        return { kind: "var", name: t.text, pos: t.pos };
      case "op":
        if (t.text === "(") {
          this.#i++;
          const e = this.#nested(() => this.expression());
          this.#expectOp(")");
          return e;
        }
        throw new ScriptSyntaxError(`unexpected ${describe(t)}`, t.pos);
      case "end":
        throw new ScriptSyntaxError("unexpected end of script", t.pos);
    }
  }
}

function describe(t: Token): string {
  return t.kind === "end" ? "end of script" : quoteProviderText(t.text);
}

/** Parses a script; throws ScriptSyntaxError with the offset of the problem. */
export function parseScript(source: string): ScriptProgram {
  const statements = new Parser(tokenize(source)).program();
  return { source, statements };
}

function fail(message: string): never {
  throw typeError(message);
}

function asNumber(v: BbValue, what: string): number {
  switch (v.type) {
    case "double":
    case "int64":
      return v.value;
    case "bool":
      return v.value ? 1 : 0;
    case "string": {
      const p = parseScalar(v.value, "double");
      if (p?.type === "double") return p.value;
      // A blackboard string (a device's value, the tree's text), any length: cut and quoted.
      return fail(`${what}: ${quoteProviderText(v.value)} is not a number`);
    }
    case "object":
      return fail(`${what}: not a number`);
  }
}

/** Truthiness as BT.CPP casts to bool: numbers non-zero, strings "true"/"false"/"1"/"0". */
export function scriptTruthy(v: BbValue): boolean {
  switch (v.type) {
    case "bool":
      return v.value;
    case "double":
    case "int64":
      return v.value !== 0;
    case "string": {
      const b = parseScalar(v.value, "bool");
      if (b?.type === "bool") return b.value;
      return fail(`cannot convert the string ${quoteProviderText(v.value)} to a boolean`);
    }
    case "object":
      return fail("cannot convert an object to a boolean");
  }
}

/**
 * How far apart two numbers may be and still compare equal with `==` (and not with `!=`):
 * BT.CPP's `IsSame`, the float epsilon (2^-23). A device that holds a value as a float32 reads
 * 0.6 back as 0.6000000238418579: compared exactly, a tree that calls only when the readback
 * differs from its target would call at every tick. The orderings (`<`, `<=`, ...) are exact, as
 * in BT.CPP.
 */
export const SCRIPT_EQUALITY_EPSILON = 2 ** -23;

function isNumeric(v: BbValue): boolean {
  return v.type === "double" || v.type === "int64" || v.type === "bool";
}

function compare(op: string, a: BbValue, b: BbValue): boolean {
  let x: number | string;
  let y: number | string;
  if (a.type === "string" && b.type === "string") {
    x = a.value;
    y = b.value;
  } else if (isNumeric(a) || isNumeric(b)) {
    x = asNumber(a, `comparison '${op}'`);
    y = asNumber(b, `comparison '${op}'`);
  } else {
    return fail(`comparison '${op}': operands cannot be compared`);
  }
  // Numbers are equal within SCRIPT_EQUALITY_EPSILON (infinities of one sign too); strings exactly.
  const same = x === y ||
    (typeof x === "number" && Math.abs(x - (y as number)) <= SCRIPT_EQUALITY_EPSILON);
  switch (op) {
    case "==":
      return same;
    case "!=":
      return !same;
    case "<":
      return x < y;
    case "<=":
      return x <= y;
    case ">":
      return x > y;
    default:
      return x >= y;
  }
}

function arithmetic(op: string, a: BbValue, b: BbValue): BbValue {
  if (op === "..") {
    return { type: "string", value: textOf(a) + textOf(b) };
  }
  if (op === "+" && a.type === "string" && b.type === "string") {
    return { type: "string", value: a.value + b.value };
  }
  const x = asNumber(a, `operator '${op}'`);
  const y = asNumber(b, `operator '${op}'`);
  switch (op) {
    case "+":
      return { type: "double", value: x + y };
    case "-":
      return { type: "double", value: x - y };
    case "*":
      return { type: "double", value: x * y };
    default:
      return { type: "double", value: x / y };
  }
}

function textOf(v: BbValue): string {
  return v.type === "object" ? "[object]" : String(v.value);
}

function readVar(bb: Blackboard, name: string): BbValue {
  const entry = bb.getEntry(name);
  // The script's variable name, any length: cut and quoted, here and in assign.
  if (!entry) {
    return fail(`script: variable ${quoteProviderText(name)} not found on the blackboard`);
  }
  if (!entry.value) return fail(`script: variable ${quoteProviderText(name)} has no value yet`);
  return entry.value;
}

function assign(bb: Blackboard, op: string, name: string, value: BbValue): BbValue {
  let entry = bb.getEntry(name);
  if (!entry) {
    if (op !== ":=") {
      return fail(
        `script: blackboard entry ${
          quoteProviderText(name)
        } does not exist yet; use ':=' to create it`,
      );
    }
    entry = bb.createEntry(name, "any");
  }
  let result = value;
  if (op !== ":=" && op !== "=") {
    if (!entry.value) {
      return fail(`script: variable ${quoteProviderText(name)} has no value yet for '${op}'`);
    }
    const prev = entry.value;
    if (op === "+=" && prev.type === "string" && value.type === "string") {
      result = { type: "string", value: prev.value + value.value };
    } else {
      if (!isNumeric(prev)) {
        return fail(`script: '${op}' needs a numeric variable ${quoteProviderText(name)}`);
      }
      result = arithmetic(op[0]!, prev, value);
    }
  }
  // A typed entry keeps its type (BT.CPP copyInto): convert, refusing lossy conversions.
  const target = entry.declared !== "any"
    ? entry.declared
    : entry.value && entry.value.type !== "object"
    ? entry.value.type
    : "any";
  const stored = target === "any" ? result : convertValue(result, target);
  if (!stored || (target === "string" && result.type !== "string")) {
    return fail(
      `script: cannot assign ${result.type} ${
        result.type === "string" ? quoteProviderText(result.value) : textOf(result)
      } to entry ${quoteProviderText(name)} of type ${target}`,
    );
  }
  entry.value = stored;
  return stored;
}

function evaluate(e: ScriptExpr, bb: Blackboard): BbValue {
  switch (e.kind) {
    case "literal":
      return e.value;
    case "var":
      return readVar(bb, e.name);
    case "unary": {
      const v = evaluate(e.arg, bb);
      if (e.op === "!") return { type: "bool", value: !scriptTruthy(v) };
      return { type: "double", value: -asNumber(v, "unary '-'") };
    }
    case "ternary":
      return scriptTruthy(evaluate(e.cond, bb)) ? evaluate(e.then, bb) : evaluate(e.else, bb);
    case "assign":
      return assign(bb, e.op, e.name, evaluate(e.value, bb));
    case "binary": {
      if (e.op === "&&") {
        return {
          type: "bool",
          value: scriptTruthy(evaluate(e.left, bb)) && scriptTruthy(evaluate(e.right, bb)),
        };
      }
      if (e.op === "||") {
        return {
          type: "bool",
          value: scriptTruthy(evaluate(e.left, bb)) || scriptTruthy(evaluate(e.right, bb)),
        };
      }
      const a = evaluate(e.left, bb);
      const b = evaluate(e.right, bb);
      if (["==", "!=", "<", "<=", ">", ">="].includes(e.op)) {
        return { type: "bool", value: compare(e.op, a, b) };
      }
      return arithmetic(e.op, a, b);
    }
  }
}

/** Runs a parsed script against a blackboard; returns the value of the last statement. */
export function runScript(program: ScriptProgram, bb: Blackboard): BbValue {
  let last: BbValue = { type: "bool", value: true };
  for (const s of program.statements) last = evaluate(s, bb);
  return last;
}
