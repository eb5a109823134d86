/**
 * One interlock: its condition compiled against shared signal inputs, and the rule that decides
 * whether it blocks. It blocks while its condition holds, and also -- fail safe -- while any signal
 * the condition compares is not usable (stale, unavailable, faulty, missing) or a comparison
 * meets a value of a type it cannot compare. A signal read only inside `bad(...)` is the
 * condition's own business: `bad(x)` is true exactly when x is not usable.
 *
 * Evaluating allocates nothing (but while a compared input with a declared type has no sample: its
 * comparisons are judged then); the texts saying why (reason, type problems) are built only when
 * someone asks (an engage event, GET /v0/interlocks, a refused call).
 */
import { scalarOf, type ValueType } from "../common/mod.ts";
import type { CompareOp, ConditionNode, ConditionOperand, InterlockConfig } from "../config/mod.ts";
import { type InputContext, InputProblem, isNumericType, SignalInput } from "./signal_input.ts";

/** Outcome of a (sub)condition: false, true, or a comparison that could not be made. */
const FALSE = 0;
const TRUE = 1;
const TYPE_ERROR = 2;
type Truth = typeof FALSE | typeof TRUE | typeof TYPE_ERROR;

type Operand =
  | { readonly input: SignalInput; readonly literal: null }
  | { readonly input: null; readonly literal: number | bigint | boolean | string };

type Node =
  | { readonly k: "and" | "or"; readonly a: Node; readonly b: Node }
  | { readonly k: "not"; readonly a: Node }
  | { readonly k: "bad"; readonly input: SignalInput }
  | { readonly k: "constant"; readonly value: boolean }
  | {
    readonly k: "compare";
    readonly op: CompareOp;
    readonly l: Operand;
    readonly r: Operand;
    readonly column: number;
  };

/** An interlock compiled for evaluation (see the module comment). */
export class Interlock {
  readonly config: InterlockConfig;
  /** Every signal the condition reads, each once. */
  readonly inputs: readonly SignalInput[];
  /** The signals it compares: any of them not usable makes it block. */
  readonly valueInputs: readonly SignalInput[];
  readonly #root: Node;
  readonly #ctx: InputContext;
  /** Each input's problem as the current evaluation classified it (by `inputs` position). */
  readonly #problems: Uint8Array;
  /** The `inputs` position of each of `valueInputs`. */
  readonly #valueAt: Uint32Array;
  /** What the last evaluation found: the bad input (and why), or a type error. */
  #badInput: SignalInput | null = null;
  #badProblem: InputProblem = InputProblem.GOOD;
  /** The kind of reason badProblem is told as (SignalInput.reasonKind). */
  #badKind: InputProblem = InputProblem.GOOD;
  #badDeclared = false;
  #typeError = false;

  /** `inputFor` returns the shared input of a handle (one per signal across the engine). */
  constructor(
    config: InterlockConfig,
    ctx: InputContext,
    inputFor: (handle: string, p: string, d: string, s: string) => SignalInput,
  ) {
    this.config = config;
    this.#ctx = ctx;
    const compared = new Set<SignalInput>();
    const operand = (o: ConditionOperand): Operand => {
      if (o.kind === "literal") return { input: null, literal: o.value };
      const s = o.signal;
      const input = inputFor(s.handle, s.providerId, s.deviceId, s.signalId);
      compared.add(input);
      return { input, literal: null };
    };
    const compile = (n: ConditionNode): Node => {
      switch (n.kind) {
        case "and":
        case "or":
          return { k: n.kind, a: compile(n.left), b: compile(n.right) };
        case "not":
          return { k: "not", a: compile(n.operand) };
        case "bad": {
          const s = n.signal;
          return { k: "bad", input: inputFor(s.handle, s.providerId, s.deviceId, s.signalId) };
        }
        case "constant":
          return { k: "constant", value: n.value };
        case "compare":
          return {
            k: "compare",
            op: n.op,
            l: operand(n.left),
            r: operand(n.right),
            column: n.column,
          };
      }
    };
    this.#root = compile(config.condition);
    this.inputs = config.signals.map((s) =>
      inputFor(s.handle, s.providerId, s.deviceId, s.signalId)
    );
    this.valueInputs = [...compared];
    this.#problems = new Uint8Array(this.inputs.length);
    this.#valueAt = Uint32Array.from(this.valueInputs, (input) => {
      const at = this.inputs.indexOf(input);
      if (at < 0) {
        throw new Error(
          `interlock ${config.id}: compared signal ${input.handle} is not among the signals its condition reads`,
        );
      }
      return at;
    });
  }

  /**
   * Whether it blocks now (see the module comment); `nowMono` is the monotonic clock. `told`: the
   * bad input last told while it kept blocking (null: none, or not blocking): named again while
   * it stays bad, not another that comes before it in the condition and goes bad and usable by
   * turns meanwhile (each turn would be another reason told). Once `told` is usable (or a reload
   * dropped it), the input bad the longest is named, not the first bad one: inputs before it that
   * go bad and usable by turns would each be another reason told at each turn.
   */
  evaluate(nowMono: number, told: SignalInput | null = null): boolean {
    // Every input is classified, once, also those after the first bad one and those a comparison
    // that cannot be made leaves unread: the engine's wake-up is set for when the first usable
    // input goes stale (staleAtMono), and an outdated instant, once past, would wake it at once,
    // again and again, for as long as the evaluation stops short of that input.
    const all = this.inputs;
    const problems = this.#problems;
    for (let i = 0; i < all.length; i++) problems[i] = all[i]!.classify(this.#ctx, nowMono);
    // The compared inputs that are bad: the first, the told one, the one bad the longest (the
    // earliest badSinceMono; the first of equals).
    const valueAt = this.#valueAt;
    let first = -1;
    let kept = -1;
    let longest = -1;
    for (let v = 0; v < valueAt.length; v++) {
      const i = valueAt[v]!;
      if (problems[i] === InputProblem.GOOD) continue;
      if (first < 0) first = i;
      if (all[i] === told) kept = i;
      if (longest < 0 || all[i]!.badSinceMono! < all[longest]!.badSinceMono!) longest = i;
    }
    if (first >= 0) {
      const at = kept >= 0 ? kept : told !== null ? longest : first;
      const input = all[at]!;
      // Stale (by age, or kept and marked STALE by the cache) while its device fails: the
      // device's condition, which stays (not the age or the mark, which come and go with each
      // fresh answer).
      const problem = input.problemOfDevice(problems[at]! as InputProblem, this.#ctx);
      // What reason() describes first: a compared input with no sample whose declared type a
      // comparison cannot take, whatever else is bad and whether its device is up (the text
      // stays, so nothing new is told).
      const declared = this.#declaredBad();
      this.#badInput = declared ?? input;
      this.#badProblem = declared !== null ? InputProblem.NO_SAMPLE : problem;
      // Its kind of reason as told (SignalInput.reasonKind): stale by age and a STALE mark are
      // one (they take turns on one stale input), no sample of a device failing is the
      // device's.
      this.#badKind = declared !== null
        ? InputProblem.NO_SAMPLE
        : input.reasonKind(problem, this.#ctx);
      this.#badDeclared = declared !== null;
      this.#typeError = false;
      return true;
    }
    // GOOD without a bad input (badProblem): a problem left from an earlier evaluation would tell
    // a reason anew after a reload, whose new Interlock starts from GOOD.
    this.#badInput = null;
    this.#badProblem = InputProblem.GOOD;
    this.#badKind = InputProblem.GOOD;
    this.#badDeclared = false;
    const t = this.#eval(this.#root, nowMono);
    this.#typeError = t === TYPE_ERROR;
    return t !== FALSE;
  }

  /**
   * The first compared input with no sample whose declared type a comparison cannot take
   * (SignalInput.describeDeclared), as reason() finds it; null when none. Allocates only for an
   * input with no sample and a declared type (the comparisons are judged then).
   */
  #declaredBad(): SignalInput | null {
    const inputs = this.valueInputs;
    for (let i = 0; i < inputs.length; i++) {
      const input = inputs[i]!;
      const t = input.binding.declaredType;
      if (t === undefined || t === null || input.binding.problem !== null) continue;
      if (this.#problems[this.#valueAt[i]!] !== InputProblem.NO_SAMPLE) continue;
      if (this.#declaredProblems(input) !== null) return input;
    }
    return null;
  }

  /**
   * The bad input the last evaluation found, as reason() names it (one with a declared type a
   * comparison cannot take first); null when every compared input was usable.
   */
  get badInput(): SignalInput | null {
    return this.#badInput;
  }

  /** Why badInput is not usable (GOOD without one), as reason() describes it. */
  get badProblem(): InputProblem {
    return this.#badProblem;
  }

  /**
   * The kind of reason badProblem is told as (SignalInput.reasonKind; GOOD without a bad input):
   * the engine tells another reason on a new kind, not when stale by age and a STALE mark of the
   * same input take turns.
   */
  get badKind(): InputProblem {
    return this.#badKind;
  }

  /**
   * Whether badInput is bad for its declared type (no sample, a type a comparison cannot take):
   * another reason than its NO_SAMPLE alone, which a restart retyping it can make either way.
   */
  get badDeclared(): boolean {
    return this.#badDeclared;
  }

  /** Whether the last evaluation met a comparison it could not make (with every input usable). */
  get typeError(): boolean {
    return this.#typeError;
  }

  /**
   * Why it blocks, as the last evaluation found it: the bad input (first one whose declared type a
   * comparison cannot take, else the one last told while it stays bad, else -- the one told usable
   * again -- the one bad the longest, else the first bad one), the comparison that met a wrong
   * type, or the values its condition saw.
   */
  reason(nowMono: number): string {
    // A signal with no sample whose declared type a comparison cannot take stays bad once samples
    // come: it, not one that only waits for its first sample, is why (evaluate chose it first:
    // #declaredBad).
    if (this.#badInput !== null) {
      return `bad input: ${this.describeInput(this.#badInput, this.#badProblem, nowMono)}`;
    }
    if (this.#typeError) return `type mismatch: ${this.typeProblems(true).join("; ")}`;
    return this.valuesText(nowMono);
  }

  /**
   * Why one of its inputs is not usable (`problem`): with no sample of a signal declared of a
   * type a comparison cannot make, those comparisons (SignalInput.describeDeclared); else as the
   * input says it.
   */
  describeInput(input: SignalInput, problem: InputProblem, nowMono: number): string {
    return input.describeDeclared(problem, () => this.#declaredProblems(input)) ??
      input.describe(problem, this.#ctx, nowMono);
  }

  /** The comparisons the declared type of `input` cannot make, joined; null when none. */
  #declaredProblems(input: SignalInput): string | null {
    const problems = this.typeProblems(false, input);
    return problems.length === 0 ? null : problems.join("; ");
  }

  /** `handle = value` of every signal the condition reads, or why it has none. */
  valuesText(nowMono: number): string {
    return this.inputs.map((i) => i.describe(i.classify(this.#ctx, nowMono), this.#ctx, nowMono))
      .join(", ");
  }

  /**
   * Comparisons whose operand types do not fit: with `cached`, judged on the cached values;
   * otherwise on the types the providers declared (unknown types are not reported). With `of`,
   * only the comparisons that read that input and whose fault its type is: not one where its type
   * fits the operator and the other side's does not.
   */
  typeProblems(cached: boolean, of?: SignalInput): string[] {
    const out: string[] = [];
    const typeOf = (o: Operand): ValueType | "number" | "boolean" | "string" | null => {
      if (o.input === null) {
        return typeof o.literal === "bigint"
          ? "number"
          : typeof o.literal as "number" | "boolean" | "string";
      }
      if (cached) return o.input.sample(this.#ctx)?.value?.type ?? null;
      return o.input.binding.declaredType ?? null;
    };
    const walk = (n: Node): void => {
      switch (n.k) {
        case "and":
        case "or":
          walk(n.a);
          walk(n.b);
          return;
        case "not":
          walk(n.a);
          return;
        case "compare": {
          if (of !== undefined && n.l.input !== of && n.r.input !== of) return;
          const l = typeOf(n.l);
          const r = typeOf(n.r);
          if (l === null || r === null || comparable(n.op, kindOf(l), kindOf(r))) return;
          // An input whose type fits the operator is not at fault when the other side's does not
          // ('>' of a double with a string blames the string); '==' of two fitting kinds, both.
          if (of !== undefined) {
            const mine = n.l.input === of ? kindOf(l) : kindOf(r);
            const other = n.l.input === of ? kindOf(r) : kindOf(l);
            if (fits(n.op, mine) && !fits(n.op, other)) return;
          }
          out.push(
            `column ${n.column} of the condition: '${n.op}' cannot compare ${
              describeOperand(n.l, l)
            } with ${describeOperand(n.r, r)}`,
          );
          return;
        }
        default:
          return;
      }
    };
    walk(this.#root);
    return out;
  }

  #eval(n: Node, nowMono: number): Truth {
    switch (n.k) {
      case "and": {
        const a = this.#eval(n.a, nowMono);
        if (a === TYPE_ERROR) return a;
        const b = this.#eval(n.b, nowMono);
        if (b === TYPE_ERROR) return b;
        return a === TRUE && b === TRUE ? TRUE : FALSE;
      }
      case "or": {
        const a = this.#eval(n.a, nowMono);
        if (a === TYPE_ERROR) return a;
        const b = this.#eval(n.b, nowMono);
        if (b === TYPE_ERROR) return b;
        return a === TRUE || b === TRUE ? TRUE : FALSE;
      }
      case "not": {
        const a = this.#eval(n.a, nowMono);
        return a === TYPE_ERROR ? a : a === TRUE ? FALSE : TRUE;
      }
      case "bad":
        return n.input.classify(this.#ctx, nowMono) === InputProblem.GOOD ? FALSE : TRUE;
      case "constant":
        return n.value ? TRUE : FALSE;
      case "compare":
        return compare(n.op, this.#scalar(n.l), this.#scalar(n.r));
    }
  }

  /** The operand's scalar; undefined for a value that cannot be compared (bytes, none). */
  #scalar(o: Operand): number | bigint | boolean | string | undefined {
    if (o.input === null) return o.literal;
    const v = o.input.sample(this.#ctx)?.value;
    if (v === null || v === undefined || v.type === "bytes") return undefined;
    return scalarOf(v);
  }
}

type Kind = "number" | "boolean" | "string" | "other";

function kindOf(t: ValueType | "number" | "boolean" | "string"): Kind {
  if (t === "number" || t === "boolean" || t === "string") return t;
  if (isNumericType(t)) return "number";
  if (t === "bool") return "boolean";
  return "other"; // bytes
}

/** Whether `op` can compare values of these kinds. */
function comparable(op: CompareOp, l: Kind, r: Kind): boolean {
  if (l === "other" || r === "other") return false;
  if (op === "==" || op === "!=") return l === r;
  return l === "number" && r === "number";
}

/** Whether a value of kind `k` can be one side of `op` (any kind but bytes for '==' and '!='). */
function fits(op: CompareOp, k: Kind): boolean {
  if (k === "other") return false;
  return op === "==" || op === "!=" || k === "number";
}

function describeOperand(o: Operand, t: ValueType | "number" | "boolean" | "string"): string {
  if (o.input === null) {
    return typeof o.literal === "string"
      ? `the string ${JSON.stringify(o.literal)}`
      : String(o.literal);
  }
  return `${o.input.handle} (${t})`;
}

function compare(
  op: CompareOp,
  a: number | bigint | boolean | string | undefined,
  b: number | bigint | boolean | string | undefined,
): Truth {
  if (a === undefined || b === undefined) return TYPE_ERROR;
  const ta = typeof a === "bigint" ? "number" : typeof a;
  const tb = typeof b === "bigint" ? "number" : typeof b;
  if (op === "==" || op === "!=") {
    if (ta !== tb) return TYPE_ERROR;
    // Loose equality compares a bigint with a number by value; both sides have the same kind.
    // deno-lint-ignore eqeqeq
    const equal = ta === "number" ? a == b : a === b;
    return equal === (op === "==") ? TRUE : FALSE;
  }
  if (ta !== "number" || tb !== "number") return TYPE_ERROR;
  const x = a as number | bigint;
  const y = b as number | bigint;
  switch (op) {
    case "<":
      return x < y ? TRUE : FALSE;
    case "<=":
      return x <= y ? TRUE : FALSE;
    case ">":
      return x > y ? TRUE : FALSE;
    case ">=":
      return x >= y ? TRUE : FALSE;
  }
}
