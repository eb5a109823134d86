/**
 * The interlock condition language (`interlocks[].while`): comparisons of signals with literals
 * or other signals, `and`, `or`, `not`, parentheses, the literals `true`/`false`, and `bad(<signal>)`
 * for an input whose quality is not OK. No arithmetic, no function calls, no loops.
 *
 * ```
 * condition  := or
 * or         := and ("or" and)*
 * and        := unary ("and" unary)*
 * unary      := "not" unary | primary
 * primary    := "(" or ")" | "bad" "(" SIGNAL ")" | operand OP operand | "true" | "false"
 * operand    := SIGNAL | NUMBER | STRING | "true" | "false"
 * OP         := "<" | "<=" | ">" | ">=" | "==" | "!="
 * SIGNAL     := provider/device/signal  (each part of [A-Za-z0-9_.:-])
 * STRING     := "..." or '...'  (backslash escapes the quote and itself)
 * ```
 *
 * Parsed once, when the configuration is loaded; every error names the column (1-based, in
 * characters of the condition text) where the problem is. What can be checked without the
 * providers is checked here: `<`, `<=`, `>`, `>=` need a number (or a signal) on both sides, and a
 * comparison needs at least one signal. Signal types are checked against the providers' declared
 * types once they are known (src/alarms/).
 */

/** Longest condition text accepted (characters). */
export const MAX_CONDITION_LENGTH = 1024;
/** Deepest nesting of parentheses and `not` accepted. */
export const MAX_CONDITION_DEPTH = 16;

/** A comparison operator. */
export type CompareOp = "<" | "<=" | ">" | ">=" | "==" | "!=";

/** `provider/device/signal` as written in a condition, with its column. */
export interface ConditionSignal {
  readonly handle: string;
  readonly providerId: string;
  readonly deviceId: string;
  readonly signalId: string;
  /** 1-based column of the handle in the condition text. */
  readonly column: number;
}

/** One side of a comparison. */
export type ConditionOperand =
  | { readonly kind: "signal"; readonly signal: ConditionSignal }
  | {
    readonly kind: "literal";
    /** A bigint: an integer literal beyond +/-2^53, kept exact (an int64/uint64 signal's range). */
    readonly value: number | bigint | boolean | string;
    readonly column: number;
  };

/** A parsed condition (a tree of these nodes). */
export type ConditionNode =
  | { readonly kind: "and" | "or"; readonly left: ConditionNode; readonly right: ConditionNode }
  | { readonly kind: "not"; readonly operand: ConditionNode }
  | { readonly kind: "bad"; readonly signal: ConditionSignal }
  | { readonly kind: "constant"; readonly value: boolean }
  | {
    readonly kind: "compare";
    readonly op: CompareOp;
    readonly left: ConditionOperand;
    readonly right: ConditionOperand;
    /** 1-based column of the operator. */
    readonly column: number;
  };

/** A condition error: what is wrong and the 1-based column where. */
export interface ConditionError {
  readonly column: number;
  /** What is wrong, without the column (see formatConditionError). */
  readonly message: string;
}

/** `column N of the condition: <message>`. */
export function formatConditionError(e: ConditionError): string {
  return `column ${e.column} of the condition: ${e.message}`;
}

/** The outcome of parsing a condition. */
export type ConditionParse =
  | { readonly ok: true; readonly condition: ConditionNode }
  | { readonly ok: false; readonly error: ConditionError };

const OPERATORS: readonly string[] = ["<", "<=", ">", ">=", "==", "!="];
const KEYWORDS = new Set(["and", "or", "not", "bad", "true", "false"]);
const WORD_CHAR = /[A-Za-z0-9_.:/+-]/;
const NUMBER_RE = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const INTEGER_RE = /^[+-]?\d+$/;
const HANDLE_PART = /^[A-Za-z0-9_.:-]+$/;

type Token =
  | { kind: "("; column: number }
  | { kind: ")"; column: number }
  | { kind: "op"; op: CompareOp; column: number }
  | { kind: "keyword"; word: string; column: number }
  | { kind: "number"; value: number | bigint; column: number }
  | { kind: "string"; value: string; column: number }
  | { kind: "signal"; signal: ConditionSignal; column: number }
  | { kind: "end"; column: number };

/** Thrown inside the parser, turned into a ConditionError at the top. */
class ParseFailure extends Error {
  constructor(readonly column: number, message: string) {
    super(message);
  }
}

/** Parses a condition; never throws. */
export function parseCondition(text: string): ConditionParse {
  try {
    // Characters (code points), as the editor schema's maxLength counts them (one outside the
    // BMP is two UTF-16 units); the column, as every column here, in UTF-16 units.
    if (text.length > MAX_CONDITION_LENGTH) {
      const chars = [...text];
      if (chars.length > MAX_CONDITION_LENGTH) {
        throw new ParseFailure(
          chars.slice(0, MAX_CONDITION_LENGTH).join("").length + 1,
          `is longer than ${MAX_CONDITION_LENGTH} characters (${chars.length})`,
        );
      }
    }
    const parser = new Parser(tokenize(text));
    const condition = parser.condition();
    return { ok: true, condition };
  } catch (err) {
    if (err instanceof ParseFailure) {
      return { ok: false, error: { column: err.column, message: err.message } };
    }
    throw err;
  }
}

/** Every signal a condition reads, in order of appearance, each handle once. */
export function conditionSignals(node: ConditionNode): ConditionSignal[] {
  const out: ConditionSignal[] = [];
  const seen = new Set<string>();
  const add = (s: ConditionSignal) => {
    if (seen.has(s.handle)) return;
    seen.add(s.handle);
    out.push(s);
  };
  const walk = (n: ConditionNode): void => {
    switch (n.kind) {
      case "and":
      case "or":
        walk(n.left);
        walk(n.right);
        return;
      case "not":
        walk(n.operand);
        return;
      case "bad":
        add(n.signal);
        return;
      case "constant":
        return;
      case "compare":
        if (n.left.kind === "signal") add(n.left.signal);
        if (n.right.kind === "signal") add(n.right.signal);
        return;
    }
  };
  walk(node);
  return out;
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const column = i + 1;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
    } else if (c === "(" || c === ")") {
      tokens.push({ kind: c, column });
      i++;
    } else if ("<>=!&|".includes(c!)) {
      let j = i;
      while (j < text.length && "<>=!&|".includes(text[j]!)) j++;
      const op = text.slice(i, j);
      if (!OPERATORS.includes(op)) {
        throw new ParseFailure(
          column,
          `unknown operator '${op}' (comparisons: < <= > >= == !=; ` +
            "combine with and, or, not)",
        );
      }
      tokens.push({ kind: "op", op: op as CompareOp, column });
      i = j;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      let value = "";
      for (;;) {
        if (j >= text.length) {
          throw new ParseFailure(column, "unterminated string");
        }
        const d = text[j];
        if (d === "\\" && j + 1 < text.length) {
          value += text[j + 1];
          j += 2;
        } else if (d === c) {
          j++;
          break;
        } else {
          value += d;
          j++;
        }
      }
      tokens.push({ kind: "string", value, column });
      i = j;
    } else if (WORD_CHAR.test(c!)) {
      let j = i;
      while (j < text.length && WORD_CHAR.test(text[j]!)) j++;
      tokens.push(word(text.slice(i, j), column));
      i = j;
    } else {
      throw new ParseFailure(column, `unexpected character '${c}'`);
    }
  }
  tokens.push({ kind: "end", column: text.length + 1 });
  return tokens;
}

function word(w: string, column: number): Token {
  if (KEYWORDS.has(w)) return { kind: "keyword", word: w, column };
  if (NUMBER_RE.test(w)) {
    const value = Number(w);
    if (!Number.isFinite(value)) {
      throw new ParseFailure(column, `number out of range: ${w}`);
    }
    // An integer no double holds exactly is kept as written (a 64-bit counter's value).
    if (INTEGER_RE.test(w) && !Number.isSafeInteger(value)) {
      return { kind: "number", value: BigInt(w), column };
    }
    return { kind: "number", value, column };
  }
  if (w.includes("/")) {
    const parts = w.split("/");
    if (parts.length !== 3 || !parts.every((p) => HANDLE_PART.test(p))) {
      throw new ParseFailure(
        column,
        `malformed signal handle '${w}': write provider/device/signal`,
      );
    }
    const [providerId, deviceId, signalId] = parts as [string, string, string];
    return {
      kind: "signal",
      signal: { handle: w, providerId, deviceId, signalId, column },
      column,
    };
  }
  const lower = w.toLowerCase();
  const hint = KEYWORDS.has(lower)
    ? ` (keywords are lower case: '${lower}')`
    : " (a signal is written provider/device/signal, a string in quotes)";
  throw new ParseFailure(column, `unknown word '${w}'${hint}`);
}

class Parser {
  readonly #tokens: Token[];
  #at = 0;
  #depth = 0;

  constructor(tokens: Token[]) {
    this.#tokens = tokens;
  }

  condition(): ConditionNode {
    const node = this.#or();
    const next = this.#peek();
    if (next.kind !== "end") {
      throw new ParseFailure(
        next.column,
        next.kind === ")"
          ? "unmatched ')'"
          : `expected and, or or the end of the condition, got ${describe(next)}`,
      );
    }
    return node;
  }

  #peek(): Token {
    return this.#tokens[this.#at]!;
  }

  #next(): Token {
    return this.#tokens[this.#at++]!;
  }

  #isKeyword(t: Token, word: string): boolean {
    return t.kind === "keyword" && t.word === word;
  }

  #or(): ConditionNode {
    let left = this.#and();
    while (this.#isKeyword(this.#peek(), "or")) {
      this.#next();
      left = { kind: "or", left, right: this.#and() };
    }
    return left;
  }

  #and(): ConditionNode {
    let left = this.#unary();
    while (this.#isKeyword(this.#peek(), "and")) {
      this.#next();
      left = { kind: "and", left, right: this.#unary() };
    }
    return left;
  }

  #enter(column: number): void {
    if (++this.#depth > MAX_CONDITION_DEPTH) {
      throw new ParseFailure(
        column,
        `nested deeper than ${MAX_CONDITION_DEPTH} levels`,
      );
    }
  }

  #unary(): ConditionNode {
    const t = this.#peek();
    if (this.#isKeyword(t, "not")) {
      this.#next();
      this.#enter(t.column);
      const operand = this.#unary();
      this.#depth--;
      return { kind: "not", operand };
    }
    return this.#primary();
  }

  #primary(): ConditionNode {
    const t = this.#peek();
    if (t.kind === "(") {
      this.#next();
      this.#enter(t.column);
      const inner = this.#or();
      this.#depth--;
      const close = this.#next();
      if (close.kind !== ")") {
        throw new ParseFailure(
          close.column,
          `expected ')' to close '(' at column ${t.column}, got ${describe(close)}`,
        );
      }
      return inner;
    }
    if (this.#isKeyword(t, "bad")) {
      this.#next();
      const open = this.#next();
      const sig = this.#next();
      const close = this.#next();
      if (open.kind !== "(" || sig.kind !== "signal" || close.kind !== ")") {
        throw new ParseFailure(
          t.column,
          "bad takes one signal: bad(provider/device/signal)",
        );
      }
      return { kind: "bad", signal: sig.signal };
    }
    const left = this.#operand();
    const op = this.#peek();
    if (op.kind !== "op") {
      if (left.kind === "literal" && typeof left.value === "boolean") {
        return { kind: "constant", value: left.value };
      }
      throw new ParseFailure(
        op.column,
        `expected a comparison operator (< <= > >= == !=), got ${describe(op)}`,
      );
    }
    this.#next();
    const right = this.#operand();
    checkComparison(left, op.op, right, op.column);
    return { kind: "compare", op: op.op, left, right, column: op.column };
  }

  #operand(): ConditionOperand {
    const t = this.#next();
    switch (t.kind) {
      case "signal":
        return { kind: "signal", signal: t.signal };
      case "number":
        return { kind: "literal", value: t.value, column: t.column };
      case "string":
        return { kind: "literal", value: t.value, column: t.column };
      case "keyword":
        if (t.word === "true" || t.word === "false") {
          return { kind: "literal", value: t.word === "true", column: t.column };
        }
        break;
    }
    throw new ParseFailure(
      t.column,
      `expected a signal or a value, got ${describe(t)}`,
    );
  }
}

/** What can be checked without the providers: literal types and a signal on one side at least. */
function checkComparison(
  left: ConditionOperand,
  op: CompareOp,
  right: ConditionOperand,
  column: number,
): void {
  if (left.kind === "literal" && right.kind === "literal") {
    throw new ParseFailure(
      column,
      "the comparison compares two values: one side must be a signal",
    );
  }
  if (op === "==" || op === "!=") return;
  for (const side of [left, right]) {
    if (
      side.kind === "literal" && typeof side.value !== "number" && typeof side.value !== "bigint"
    ) {
      throw new ParseFailure(
        side.column,
        `'${op}' at column ${column} compares numbers, got ${
          typeof side.value === "string" ? `the string ${JSON.stringify(side.value)}` : side.value
        } (use == or != for bool and string values)`,
      );
    }
  }
}

function describe(t: Token): string {
  switch (t.kind) {
    case "end":
      return "the end of the condition";
    case "(":
    case ")":
      return `'${t.kind}'`;
    case "op":
      return `'${t.op}'`;
    case "keyword":
      return `'${t.word}'`;
    case "number":
      return `the number ${t.value}`;
    case "string":
      return `the string ${JSON.stringify(t.value)}`;
    case "signal":
      return `the signal ${t.signal.handle}`;
  }
}
