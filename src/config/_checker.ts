/**
 * Typed reads of the plain YAML data for the semantic layer. Every read checks the type (and the
 * bounds when asked), records a positioned diagnostic naming the key on failure, and falls back to
 * the default so validation carries on and reports every problem, not just the first.
 */
import { MAX_INT } from "./_schema.ts";
import { isSecretKey, isSecretPath, printableKey, REDACTED } from "./_secrets.ts";
import { formatPath, type Path, type YamlSource } from "./_source.ts";
import type { Diagnostic } from "./types.ts";

/** A YAML mapping as plain data. */
export type Obj = Record<string, unknown>;

/** Bounds of an integer key; `enforce: false` skips them (e.g. http.port when http is off). */
export interface IntBounds {
  readonly min?: number;
  readonly max?: number;
  readonly enforce?: boolean;
}

/** True when `key` is given a non-null value (an empty YAML value counts as not given). */
export function present(obj: Obj, key: string): boolean {
  return obj[key] !== undefined && obj[key] !== null;
}

/** Collects diagnostics and reads typed values with defaults. */
export class Checker {
  readonly diagnostics: Diagnostic[] = [];
  /** Formatted paths that have an error, so `hasErrorAt` does not scan every diagnostic. */
  readonly #errorPaths = new Set<string>();
  #steps = 0;
  readonly #source: YamlSource;
  readonly #file: string;
  readonly #unknownKeys: "warning" | "error";

  /**
   * `unknownKeys`: the severity of a key the runtime does not know, "warning" (ignored) unless
   * `--check-config --strict` makes it an error.
   */
  constructor(
    source: YamlSource,
    file: string,
    o: { unknownKeys?: "warning" | "error" } = {},
  ) {
    this.#source = source;
    this.#file = file;
    this.#unknownKeys = o.unknownKeys ?? "warning";
  }

  /** Records an error at `path`. */
  error(path: Path, message: string): void {
    this.#add("error", path, message);
  }

  /** Records a warning at `path`. */
  warning(path: Path, message: string): void {
    this.#add("warning", path, message);
  }

  /** Work done by `hasErrorAt` (one step per call); see `YamlSource.lookupSteps`. */
  get lookupSteps(): number {
    return this.#steps;
  }

  /** Whether an error was recorded at exactly `path`. */
  hasErrorAt(path: Path): boolean {
    this.#steps++;
    return this.#errorPaths.has(formatPath(path));
  }

  #add(severity: "error" | "warning", path: Path, message: string): void {
    const { line, column } = this.#source.position(path);
    const formatted = formatPath(path);
    if (severity === "error") this.#errorPaths.add(formatted);
    this.diagnostics.push({ severity, path: formatted, message, line, column, file: this.#file });
  }

  /** `describeValue`, but a value at a secret-bearing key is described by its type only. */
  #show(path: Path, v: unknown): string {
    return isSecretPath(path) ? describeType(v) : describeValue(v);
  }

  /**
   * The mapping at `path`; `{}` when absent or null (an empty section is accepted) unless
   * `required`, null after an error.
   */
  mapping(value: unknown, path: Path, required = false): Obj | null {
    if (value === undefined || value === null) {
      if (required) {
        this.error(path, value === null ? "must be a mapping, got an empty value" : "is required");
        return null;
      }
      return {};
    }
    if (!isPlainMapping(value)) {
      this.error(path, `must be a mapping, got ${this.#show(path, value)}`);
      return null;
    }
    return value as Obj;
  }

  /** The sequence at `path`; `[]` when absent or null, null after an error. */
  sequence(value: unknown, path: Path): unknown[] | null {
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) {
      this.error(path, `must be a sequence, got ${this.#show(path, value)}`);
      return null;
    }
    return value;
  }

  /**
   * Reports every key of `obj` not in `known`: a warning (the key is ignored), or an error under
   * `--check-config --strict` -- a misspelled `auth_enabled` must not pass a strict check.
   */
  knownKeys(obj: Obj, path: Path, known: readonly string[]): void {
    for (const key of Object.keys(obj)) {
      if (known.includes(key)) continue;
      const near = closest(key, known);
      const hint = near ? ` (did you mean '${near}'?)` : "";
      if (this.#unknownKeys === "error") {
        this.error(
          [...path, key],
          `unknown key '${printableKey(key)}'${hint}: --strict refuses keys the runtime does ` +
            "not know (it would ignore them)",
        );
      } else {
        this.warning([...path, key], `unknown key '${printableKey(key)}' will be ignored${hint}`);
      }
    }
  }

  /** An integer key, default when absent; bounds checked when enforced. */
  integer(obj: Obj, parent: Path, key: string, def: number, bounds: IntBounds = {}): number {
    const v = obj[key];
    if (v === undefined || v === null) return def;
    const path = [...parent, key];
    if (typeof v !== "number" || !Number.isInteger(v)) {
      this.error(path, `must be an integer, got ${this.#show(path, v)}`);
      return def;
    }
    const enforce = bounds.enforce ?? true;
    const min = enforce ? bounds.min : undefined;
    // Without an explicit bound, MAX_INT (the largest timer delay) keeps values sane.
    const max = enforce && bounds.max !== undefined ? bounds.max : MAX_INT;
    if ((min !== undefined && v < min) || v > max) {
      this.error(path, rangeMessage(isSecretPath(path) ? null : v, min, max));
      return def;
    }
    return v;
  }

  /** A sequence of integers, default when absent. */
  integerList(
    obj: Obj,
    parent: Path,
    key: string,
    def: readonly number[],
    opts: { min?: number | undefined; nonEmpty?: boolean },
  ): readonly number[] {
    const path = [...parent, key];
    if (!present(obj, key)) return def;
    const list = this.sequence(obj[key], path);
    if (list === null) return def;
    if (opts.nonEmpty && list.length === 0) {
      this.error(path, "must have at least 1 item");
      return def;
    }
    const out: number[] = [];
    list.forEach((item, i) => {
      if (typeof item !== "number" || !Number.isInteger(item)) {
        this.error([...path, i], `must be an integer, got ${this.#show(path, item)}`);
      } else if ((opts.min !== undefined && item < opts.min) || item > MAX_INT) {
        this.error([...path, i], rangeMessage(isSecretPath(path) ? null : item, opts.min, MAX_INT));
      } else {
        out.push(item);
      }
    });
    return out.length === list.length ? out : def;
  }

  /** A boolean key, default when absent. */
  boolean(obj: Obj, parent: Path, key: string, def: boolean): boolean {
    const v = obj[key];
    if (v === undefined || v === null) return def;
    if (typeof v !== "boolean") {
      const path = [...parent, key];
      this.error(path, `must be a boolean (true or false), got ${this.#show(path, v)}`);
      return def;
    }
    return v;
  }

  /** A string key, default when absent; `nonEmpty` refuses "". */
  string(obj: Obj, parent: Path, key: string, def: string, nonEmpty = false): string {
    const v = obj[key];
    if (v === undefined || v === null) return def;
    if (typeof v !== "string") {
      const path = [...parent, key];
      this.error(path, `must be a string, got ${this.#show(path, v)}`);
      return def;
    }
    if (nonEmpty && v === "") {
      this.error([...parent, key], "must not be empty");
      return def;
    }
    const lone = loneSurrogateAt(v);
    if (lone >= 0) {
      // Only a YAML escape ("\ud800") makes one: the file itself is well-formed UTF-8.
      this.error(
        [...parent, key],
        `holds a lone UTF-16 surrogate (\\u${v.charCodeAt(lone).toString(16)} as character ${
          lone + 1
        }), which no UTF-8 text can carry: written to a topic, a log or ` +
          `a file it becomes U+FFFD, so two such values become one (write the character itself)`,
      );
      return v; // the error is said; its default would only add errors about an empty value
    }
    return v;
  }

  /** A required non-empty string; "" after an error. */
  requiredString(obj: Obj, parent: Path, key: string): string {
    if (!present(obj, key)) {
      this.error([...parent, key], "is required");
      return "";
    }
    return this.string(obj, parent, key, "", true);
  }

  /** A string restricted to `allowed`, default when absent. */
  oneOf<T extends string>(obj: Obj, parent: Path, key: string, allowed: readonly T[], def: T): T {
    const v = obj[key];
    if (v === undefined || v === null) return def;
    if (typeof v !== "string" || !(allowed as readonly string[]).includes(v)) {
      const path = [...parent, key];
      this.error(path, `must be one of ${allowed.join(", ")}, got ${this.#show(path, v)}`);
      return def;
    }
    return v as T;
  }
}

/** The index of the first lone UTF-16 surrogate in `s`, or -1 when it is well-formed. */
export function loneSurrogateAt(s: string): number {
  if (s.isWellFormed()) return -1;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
      else return i;
    } else if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

/** The range error; `v` null when the value is a secret (then the bounds alone are named). */
function rangeMessage(v: number | null, min: number | undefined, max: number): string {
  const got = v === null ? "" : `, got ${v}`;
  if (min !== undefined && max !== MAX_INT) return `must be between ${min} and ${max}${got}`;
  if (min !== undefined && v !== null && v < min) return `must be >= ${min}${got}`;
  if (min !== undefined && v === null) return `must be >= ${min} and <= ${max}`;
  return `must be <= ${max}${got}`;
}

/**
 * Short description of a YAML value for messages: `"abc"`, `12`, `a sequence`. A string that
 * mentions a secret key (`"auth_token=abc123"`, a line missing its colon) is not echoed.
 */
/**
 * Whether `v` is a mapping as YAML's plain `{...}` and block mappings give it: not a sequence,
 * and not what a tag makes (`!!omap` a Map, `!!set` a Set, `!!timestamp` a Date, `!!binary`
 * bytes), which would read as a mapping without keys: its entries silently not applied.
 */
export function isPlainMapping(v: unknown): v is Obj {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

export function describeValue(v: unknown): string {
  if (v === null || v === undefined) return "an empty value";
  if (Array.isArray(v)) return "a sequence";
  if (v instanceof Map) return "an ordered map (!!omap): write a plain mapping";
  if (v instanceof Set) return "a set (!!set)";
  if (v instanceof Date) return "a timestamp (!!timestamp)";
  if (v instanceof Uint8Array) return "bytes (!!binary)";
  if (typeof v === "object") return "a mapping";
  if (typeof v === "string") {
    if (isSecretKey(v)) return `a string (${REDACTED}: it mentions a secret key)`;
    return JSON.stringify(v.length > 40 ? `${v.slice(0, 37)}...` : v);
  }
  return String(v);
}

/** The type of a value without the value: what messages show for a secret. */
function describeType(v: unknown): string {
  if (v === null || v === undefined || Array.isArray(v) || typeof v === "object") {
    return describeValue(v);
  }
  const kind = typeof v === "number"
    ? "a number"
    : typeof v === "boolean"
    ? "a boolean"
    : "a string";
  return `${kind} (${REDACTED})`;
}

/** The known key closest to a misspelt one (edit distance <= 2), for "did you mean". */
function closest(key: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = 3;
  for (const k of known) {
    const d = editDistance(key.toLowerCase(), k);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(
        prev[j]! + 1,
        cur[j - 1]! + 1,
        prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = cur;
  }
  return prev[b.length]!;
}
