/**
 * Blackboard with BehaviorTree.CPP v4 semantics: typed entries, SubTree scopes with explicit
 * remapping (`port="{parent_key}"`) and `_autoremap`, `@key` addressing the root scope, and private
 * `_keys` that are never auto-remapped.
 */
import { quoteProviderText, RuntimeError } from "../../common/mod.ts";

/** Declared type of an entry; "any" is BT.CPP's weakly typed entry (AnyTypeAllowed). */
export type BbType = "double" | "int64" | "bool" | "string" | "any";

/** A stored value with its dynamic type ("object" holds runtime handles such as services). */
export type BbValue =
  | { type: "double"; value: number }
  | { type: "int64"; value: number }
  | { type: "bool"; value: boolean }
  | { type: "string"; value: string }
  | { type: "object"; value: unknown };

/** One blackboard entry (shared by reference between remapped scopes). */
export interface BbEntry {
  declared: BbType;
  value: BbValue | undefined;
}

/** Error thrown on a blackboard type conflict or an impossible conversion. */
export function typeError(message: string): RuntimeError {
  return new RuntimeError("INVALID_ARGUMENT", message);
}

const BOOL_TEXT: Record<string, boolean> = {
  true: true,
  false: false,
  TRUE: true,
  FALSE: false,
  True: true,
  False: false,
  "1": true,
  "0": false,
};

const INT_RE = /^[+-]?\d+$/;
const HEX_RE = /^[+-]?0[xX][0-9a-fA-F]+$/;

/** Parses text the way BT.CPP's convertFromString does for our scalar types; undefined if invalid. */
export function parseScalar(
  text: string,
  type: "double" | "int64" | "bool" | "string",
): BbValue | undefined {
  const t = text.trim();
  switch (type) {
    case "string":
      return { type, value: text };
    case "bool": {
      const b = BOOL_TEXT[t];
      return b === undefined ? undefined : { type, value: b };
    }
    case "int64": {
      let n: number;
      if (INT_RE.test(t)) n = Number(t);
      else if (HEX_RE.test(t)) n = (t.startsWith("-") ? -1 : 1) * Number(t.replace(/^[+-]/, ""));
      else return undefined;
      return Number.isSafeInteger(n) ? { type, value: n } : undefined;
    }
    case "double": {
      if (
        t === "" || !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|infinity|nan)$/i.test(t)
      ) {
        return undefined;
      }
      const lower = t.toLowerCase().replace(/^\+/, "");
      if (lower === "nan" || lower === "-nan") return { type, value: NaN };
      if (lower.endsWith("inf") || lower.endsWith("infinity")) {
        return { type, value: lower.startsWith("-") ? -Infinity : Infinity };
      }
      return { type, value: Number(t) };
    }
  }
}

/** Text form of a scalar (numbers the way a user would write them). */
export function valueToString(v: BbValue): string {
  if (v.type === "object") return "[object]";
  return String(v.value);
}

/**
 * Converts a value to a target type, or undefined when it cannot be done without loss:
 * string -> parsed; int64 -> double; double -> int64 only when integral; bool <-> 0/1;
 * numbers and bools -> string as text.
 */
export function convertValue(v: BbValue, target: BbType): BbValue | undefined {
  if (target === "any" || v.type === target) return v;
  if (v.type === "object") return undefined;
  if (v.type === "string") return parseScalar(v.value, target);
  if (target === "string") return { type: "string", value: valueToString(v) };
  const n = typeof v.value === "boolean" ? (v.value ? 1 : 0) : v.value;
  switch (target) {
    case "double":
      return { type: "double", value: n };
    case "int64":
      return Number.isSafeInteger(n) ? { type: "int64", value: n } : undefined;
    case "bool":
      return n === 0 || n === 1 ? { type: "bool", value: n === 1 } : undefined;
  }
}

/** A blackboard scope (the root tree, or one SubTree instance). */
export class Blackboard {
  readonly #storage = new Map<string, BbEntry>();
  readonly #remap = new Map<string, string>();
  readonly #parent: Blackboard | undefined;
  #autoremap = false;

  constructor(parent?: Blackboard) {
    this.#parent = parent;
  }

  /** The outermost scope. */
  root(): Blackboard {
    return this.#parent ? this.#parent.root() : this;
  }

  /** `internal` in this scope refers to `external` in the parent scope. */
  addSubtreeRemapping(internal: string, external: string): void {
    this.#remap.set(internal, external);
  }

  /** Unknown non-private keys are looked up and created in the parent scope. */
  enableAutoRemapping(on: boolean): void {
    this.#autoremap = on;
  }

  /** The entry for a key, following remapping; undefined when it does not exist. */
  getEntry(key: string): BbEntry | undefined {
    if (key.startsWith("@")) return this.root().getEntry(key.slice(1));
    const local = this.#storage.get(key);
    if (local) return local;
    const external = this.#remap.get(key);
    if (external !== undefined) return this.#parent?.getEntry(external);
    if (this.#autoremap && !key.startsWith("_")) return this.#parent?.getEntry(key);
    return undefined;
  }

  /** Creates the entry (where remapping says it lives) or returns the existing one. */
  createEntry(key: string, declared: BbType): BbEntry {
    if (key.startsWith("@")) return this.root().createEntry(key.slice(1), declared);
    const local = this.#storage.get(key);
    if (local) return local;
    const external = this.#remap.get(key);
    if (external !== undefined && this.#parent) return this.#parent.createEntry(external, declared);
    if (this.#autoremap && !key.startsWith("_") && this.#parent) {
      return this.#parent.createEntry(key, declared);
    }
    const entry: BbEntry = { declared, value: undefined };
    this.#storage.set(key, entry);
    return entry;
  }

  /**
   * Declares a port's entry at build time. Returns the previously declared type when it conflicts
   * (both strongly typed, different, and the earlier one is not a string: BT.CPP lets a string
   * entry be read by typed ports). A port that `writes` (output, inout) is not read: a typed one
   * conflicts with a string entry too, as set() refuses every number or bool written into one.
   */
  declare(key: string, declared: BbType, writes = false): { conflict?: BbType } {
    const existing = this.getEntry(key);
    if (!existing) {
      this.createEntry(key, declared);
      return {};
    }
    const prev = existing.declared;
    if (
      prev !== "any" && declared !== "any" && prev !== declared && (prev !== "string" || writes)
    ) {
      return { conflict: prev };
    }
    return {};
  }

  /** Current value, undefined when the key is missing or not yet written. */
  get(key: string): BbValue | undefined {
    return this.getEntry(key)?.value;
  }

  /**
   * Writes a value with BT.CPP's type rules: a weak entry takes the first non-string type written
   * to it; a typed entry accepts only values convertible without loss (strings are parsed).
   */
  set(key: string, value: BbValue): void {
    const entry = this.getEntry(key) ??
      this.createEntry(
        key,
        value.type === "string" || value.type === "object" ? "any" : value.type,
      );
    if (entry.declared === "any") {
      if (value.type !== "string" && value.type !== "object") entry.declared = value.type;
      entry.value = value;
      return;
    }
    const converted = convertValue(value, entry.declared);
    // A string entry keeps its type: BT.CPP refuses numbers written into it.
    if (!converted || (entry.declared === "string" && value.type !== "string")) {
      throw typeError(
        // The key (the tree's) and a string written (a device's text): cut and quoted.
        `blackboard entry ${
          quoteProviderText(key)
        }: once declared, the type of an entry shall not change ` +
          `(declared ${entry.declared}, written ${value.type} ${
            value.type === "string" ? quoteProviderText(value.value) : valueToString(value)
          })`,
      );
    }
    entry.value = converted;
  }

  /** Keys stored in this scope (not remapped ones), for diagnostics and tests. */
  localKeys(): string[] {
    return [...this.#storage.keys()];
  }
}
