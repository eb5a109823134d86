/**
 * Automation parameters (automation.parameters; docs/http-api.md, "Parameters and automation").
 * Values live in memory: they survive mode changes (modes never touch them) and reset to the
 * configured defaults on restart -- nothing is persisted.
 */
import {
  type Clock,
  DepartedDates,
  exactJsonInteger,
  invalidArgument,
  type Logger,
  MAX_NAMED_IN_WARNING,
  namedList,
  neverThrowing,
  notFound,
  providerTextWithin,
  quoteProviderTextWithin,
  readClockTwice,
  transitionDate,
} from "../common/mod.ts";
import {
  MAX_PARAMETER_NAME_CHARS,
  type ParameterConfig,
  type ParameterType,
} from "../config/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type { AuditOrigin, AuditSink } from "./audit_sink.ts";

/** A parameter value as JSON carries it. */
export type ParameterValue = number | boolean | string;

/** One declared parameter as GET /v0/parameters lists it. */
export interface ParameterView {
  name: string;
  type: ParameterType;
  value: ParameterValue;
  min?: number;
  max?: number;
  allowed_values?: string[];
}

/** What the HTTP layer (and the behavior tree) need. */
export interface ParameterService {
  list(): ParameterView[];
  /** Throws NOT_FOUND for an unknown name, INVALID_ARGUMENT naming the rule (type/min/max/allowed). */
  /**
   * `written`: the JSON text of a number that parsing rounded to an integer (an int64 parameter
   * refuses it; a double takes the number) or read as +/-Infinity (beyond any double: refused
   * whatever the type); a refusal names the number as written.
   */
  set(
    name: string,
    value: unknown,
    source?: AuditOrigin,
    written?: string,
  ): { name: string; value: ParameterValue };
  get(name: string): ParameterView | undefined;
}

/**
 * Longest string parameter value (a client's text, up to a request body) that a message quotes --
 * a change of the recipe (an AUTO entry a set refuses, a reload's change of it), a value refused
 * (checkParameterValue: the value, the allowed values, a number as written); longer is cut.
 */
export const QUOTED_PARAMETER_VALUE_CHARS = 64;

/**
 * A parameter's name in a message (a change of the recipe, a line about its clock): JSON-quoted,
 * cut to MAX_PARAMETER_NAME_CHARS -- the loader's bound on a configured name, so a declared one is
 * never cut; a declaration the loader did not judge (a test's, an embedder's) still makes no line
 * of any length, and a quote or a line break in a name can forge nothing.
 */
function quotedName(name: string): string {
  return quoteProviderTextWithin(name, MAX_PARAMETER_NAME_CHARS);
}

/** A string value in a message (a client's, a configured one): JSON-quoted and cut. */
function quotedValue(value: string): string {
  return quoteProviderTextWithin(value, QUOTED_PARAMETER_VALUE_CHARS);
}

/** A value in a message: a number or a bool as it is, a string JSON-quoted and cut. */
function changedValueText(value: ParameterValue): string {
  return typeof value === "string" ? quotedValue(value) : String(value);
}

/** Text of a value in `parameter_change` events: doubles with six decimals (as anolis). */
export function parameterValueText(type: ParameterType, value: ParameterValue): string {
  if (type === "double") return (value as number).toFixed(6);
  return String(value);
}

/**
 * `value` (of `prev`) if the redeclaration `def` still accepts it exactly as it is, whatever its
 * type was (double 5 is int64 5, 5.5 is no int64; an int64, within +/-2^53, is an exact double;
 * a bool or a string is never taken from a number, nor a number from them); else undefined. The
 * value kept is then of `def`'s type.
 */
function keptValue(
  prev: ParameterConfig | undefined,
  def: ParameterConfig,
  value: ParameterValue | undefined,
): ParameterValue | undefined {
  if (prev === undefined || value === undefined) return undefined;
  try {
    const checked = checkParameterValue(def, value);
    return checked === value ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The value a redeclaration `def` leaves a parameter with (as redeclare decides it): the value it
 * still accepts, else its default; undefined when the default itself is refused (it goes away).
 * A type change (double -> int64) whose new type accepts the value leaves the value as it is.
 */
function valueAfter(
  prev: ParameterConfig,
  def: ParameterConfig,
  value: ParameterValue | undefined,
): ParameterValue | undefined {
  const kept = keptValue(prev, def, value);
  if (kept !== undefined) return kept;
  try {
    return checkParameterValue(def, def.default);
  } catch {
    return undefined;
  }
}

/**
 * Checks `value` against a parameter's rules; returns the value or throws INVALID_ARGUMENT
 * whose message names the rule: type, min, max or allowed_values. Bounds belong to double and
 * int64 parameters, allowed_values to strings (examples/full.yaml; the loader refuses them
 * elsewhere).
 * What the client gave is named cut (quotedValue; a number as written to
 * QUOTED_PARAMETER_VALUE_CHARS): a refusal of a 64 KiB body's string is no 64 KiB answer.
 */
export function checkParameterValue(
  def: ParameterConfig,
  value: unknown,
  written?: string,
): ParameterValue {
  const bad = (rule: string, why: string) =>
    invalidArgument(`Invalid value for parameter '${def.name}': ${why} (rule: ${rule})`);
  const inBounds = (n: number): number => {
    // Bounds are compared as doubles, int64 included (as anolis stores them).
    if (def.min !== undefined && n < def.min) throw bad("min", `${n} is below min ${def.min}`);
    if (def.max !== undefined && n > def.max) throw bad("max", `${n} is above max ${def.max}`);
    return n;
  };
  // What was given: a number parsing changed is named as written (`1e400`, read as Infinity).
  const given = written === undefined
    ? describe(value)
    : `${providerTextWithin(written, QUOTED_PARAMETER_VALUE_CHARS)} (${
      typeof value === "number" && !Number.isFinite(value)
        ? "beyond any double"
        : "not an integer as written"
    }: JSON reads it as ${describe(value)})`;
  switch (def.type) {
    case "double":
      if (typeof value !== "number" || !Number.isFinite(value)) {
        throw bad("type", `expected a number (double), got ${given}`);
      }
      return inBounds(value);
    case "int64":
      if (
        written !== undefined || typeof value !== "number" || !Number.isSafeInteger(value)
      ) {
        throw bad("type", `expected an integer (int64) within \u00b1(2^53-1), got ${given}`);
      }
      return inBounds(value);
    case "bool":
      if (typeof value !== "boolean") {
        throw bad("type", `expected a boolean, got ${given}`);
      }
      return value;
    case "string":
      if (typeof value !== "string") throw bad("type", `expected a string, got ${given}`);
      if (def.allowedValues.length > 0 && !def.allowedValues.includes(value)) {
        throw bad(
          "allowed_values",
          `${quotedValue(value)} is not one of ${
            namedList(def.allowedValues, MAX_NAMED_IN_WARNING, quotedValue)
          }`,
        );
      }
      return value;
  }
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return `string ${quotedValue(v)}`;
  if (typeof v === "object") return "an object";
  return `${typeof v} ${String(v)}`;
}

export interface ParameterStoreOptions {
  readonly parameters: readonly ParameterConfig[];
  readonly bus: EventBus;
  readonly clock: Clock;
  readonly log: Logger;
  /** Where parameter sets (accepted or refused) are recorded. */
  readonly audit?: AuditSink;
  /**
   * Told of every value a set changes: a MANUAL -> AUTO whose before-hooks run now was judged
   * with the values before it, and is refused at its commit (ModeManager.invalidateAutoEntry).
   */
  readonly modes?: {
    invalidateAutoEntry(why: string, remedy?: string, refusedBy?: string): void;
  };
}

/** Whether two declarations are the same in every field (type, default, bounds, allowed values). */
function sameDeclaration(a: ParameterConfig, b: ParameterConfig): boolean {
  return a.type === b.type && a.default === b.default && a.min === b.min && a.max === b.max &&
    a.allowedValues.length === b.allowedValues.length &&
    a.allowedValues.every((v, i) => v === b.allowedValues[i]);
}

/**
 * Names of parameters a reload removed whose latest parameter_change date is kept for the parameter
 * declared again under the name (ParameterStore #departedAt): at most this many, the one removed
 * longest ago let go of first.
 */
export const MAX_DEPARTED_PARAMETER_DATES = 256;

/** The declared parameters and their current values (in memory only; see module comment). */
export class ParameterStore implements ParameterService {
  readonly #defs = new Map<string, ParameterConfig>();
  readonly #values = new Map<string, ParameterValue>();
  /**
   * Name -> the date of the parameter's latest parameter_change (#changeAt); dropped when the
   * parameter is no longer declared (bounded by the declared parameters).
   */
  readonly #changedAt = new Map<string, number>();
  /**
   * Name -> the date of its removal's parameter_change, for the parameter declared again under the
   * name: its changes are dated no earlier (a step back of the wall clock between the two reloads
   * must not date its return before its removal). Taken at its first change after.
   */
  readonly #departedAt = new DepartedDates(MAX_DEPARTED_PARAMETER_DATES);
  readonly #o: ParameterStoreOptions;
  /** The store's logger (`parameters`), made once: its declarations' warnings. */
  readonly #log: Logger;
  /** For a change's clock failures: a line that fails to be written is lost, never the change. */
  readonly #changeLog: Logger;

  constructor(options: ParameterStoreOptions) {
    this.#o = options;
    const log = this.#log = options.log.child("parameters");
    this.#changeLog = neverThrowing(log);
    for (const def of options.parameters) {
      if (this.#defs.has(def.name)) {
        log.warn(`Duplicate parameter '${def.name}' ignored (first definition wins)`);
        continue;
      }
      try {
        this.#values.set(def.name, checkParameterValue(def, def.default));
        this.#defs.set(def.name, def);
      } catch (err) {
        // As in anolis, a default outside its own rules is not an error here; the parameter is
        // absent at runtime. (The loader normally rejects it earlier.)
        log.warn(`Failed to define parameter '${def.name}': ${(err as Error).message}`);
      }
    }
  }

  /**
   * Replaces the declarations (configuration reload): a redeclared parameter keeps its value
   * while the new declaration still accepts it (else its new default), a new one starts at its
   * default, one no longer declared disappears. A value that changes (a reset to the default), a
   * new parameter (old value "") and a removed one (new value "") are published as
   * parameter_change and recorded in the audit trail with `source` (default: a configuration
   * reload).
   */
  redeclare(
    parameters: readonly ParameterConfig[],
    source: AuditOrigin = { kind: "reload" },
  ): void {
    const log = this.#log;
    const oldDefs = new Map(this.#defs);
    const oldValues = new Map(this.#values);
    this.#defs.clear();
    this.#values.clear();
    for (const def of parameters) {
      if (this.#defs.has(def.name)) {
        log.warn(`Duplicate parameter '${def.name}' ignored (first definition wins)`);
        continue;
      }
      const prev = oldDefs.get(def.name);
      if (prev !== undefined && sameDeclaration(prev, def)) {
        this.#defs.set(def.name, def);
        this.#values.set(def.name, oldValues.get(def.name)!);
        continue;
      }
      let value: ParameterValue;
      try {
        // A redeclared parameter keeps its value while the new declaration still accepts it
        // (bounds narrowed around it, allowed values that still list it, a new type that holds it
        // exactly); else its default.
        value = keptValue(prev, def, oldValues.get(def.name)) ??
          checkParameterValue(def, def.default);
      } catch (err) {
        log.warn(`Failed to define parameter '${def.name}': ${(err as Error).message}`);
        continue;
      }
      this.#defs.set(def.name, def);
      this.#values.set(def.name, value);
      const old = oldValues.get(def.name);
      // A new parameter is a change of what the machine runs with too (old_value "", from null).
      if (prev === undefined || old !== value) {
        this.#recordReset(def.name, prev ?? null, old ?? null, def, value, source);
      }
    }
    // A parameter no longer declared is gone with its value: as much a change of what the machine
    // runs with (an event with new_value "", an audit entry with value null).
    for (const [name, prev] of oldDefs) {
      if (!this.#defs.has(name)) {
        this.#recordReset(name, prev, oldValues.get(name)!, null, null, source);
      }
    }
  }

  /**
   * Publishes and records a value a redeclaration changed (`value` null: removed; `prev` and
   * `old` null: added).
   */
  #recordReset(
    name: string,
    prev: ParameterConfig | null,
    old: ParameterValue | null,
    def: ParameterConfig | null,
    value: ParameterValue | null,
    source: AuditOrigin,
  ): void {
    const timestampMs = this.#changeAt(name);
    if (timestampMs !== null) {
      this.#o.bus.publish({
        kind: "parameter_change",
        parameter_name: name,
        old_value: prev === null || old === null ? "" : parameterValueText(prev.type, old),
        new_value: def === null || value === null ? "" : parameterValueText(def.type, value),
        timestamp_ms: timestampMs,
      });
    }
    if (def === null) {
      // Gone: its date is kept only for the parameter declared again under the name.
      const at = this.#changedAt.get(name);
      if (at !== undefined) this.#departedAt.keep(name, at);
      this.#changedAt.delete(name);
    }
    // Nobody asked for this value, but it changed what the machine runs with: on record.
    this.#o.audit?.record({
      action: "parameter",
      origin: source,
      outcome: "accepted",
      function: name,
      args: { value, from: old },
      result: { value },
      latency_ms: 0,
    });
  }

  /**
   * The parameters whose current value a redeclaration with `parameters` would change: removed
   * ones, and redeclared ones whose value the new declaration refuses (they go to the default).
   * A reload in AUTO refuses such a change: it would change the running recipe.
   */
  valueChanges(parameters: readonly ParameterConfig[]): string[] {
    const next = new Map(parameters.map((p) => [p.name, p]));
    const out: string[] = [];
    for (const [name, prev] of this.#defs) {
      const def = next.get(name);
      const value = this.#values.get(name);
      if (def === undefined) out.push(`${quotedName(name)} (removed)`);
      else if (!sameDeclaration(prev, def) && valueAfter(prev, def, value) !== value) {
        out.push(
          `${quotedName(name)} (its value ${changedValueText(value!)} would go to the default ${
            changedValueText(def.default)
          })`,
        );
      }
    }
    return out;
  }

  list(): ParameterView[] {
    return [...this.#defs.keys()].map((name) => this.get(name)!);
  }

  get(name: string): ParameterView | undefined {
    const def = this.#defs.get(name);
    if (!def) return undefined;
    const view: ParameterView = { name, type: def.type, value: this.#values.get(name)! };
    if (def.min !== undefined) view.min = def.min;
    if (def.max !== undefined) view.max = def.max;
    if (def.allowedValues.length > 0) view.allowed_values = [...def.allowedValues];
    return view;
  }

  /** The current value, for the behavior tree's blackboard; undefined for an unknown name. */
  value(name: string): ParameterValue | undefined {
    return this.#values.get(name);
  }

  /** Sets a value; the set, accepted or refused, is recorded with `source` (default: HTTP). */
  set(
    name: string,
    value: unknown,
    source: AuditOrigin = { kind: "http" },
    written?: string,
  ): { name: string; value: ParameterValue } {
    const audit = this.#o.audit;
    if (!audit) return this.#set(name, value, written);
    // The value as sent (the trail bounds it as every entry: texts cut, a large one noted).
    const args = { value: auditedParameterValue(value, written) };
    try {
      const done = this.#set(name, value, written);
      audit.record({
        action: "parameter",
        origin: source,
        outcome: "accepted",
        function: name,
        args,
        result: { value: done.value },
        latency_ms: 0,
      });
      return done;
    } catch (err) {
      const e = err as { code?: string; message?: string };
      audit.record({
        action: "parameter",
        origin: source,
        outcome: "refused",
        function: name,
        args,
        reason: `${e.code ?? "INTERNAL"}: ${e.message ?? String(err)}`,
        refused_by: "validation",
        latency_ms: 0,
      });
      throw err;
    }
  }

  #set(name: string, value: unknown, written?: string): { name: string; value: ParameterValue } {
    const def = this.#defs.get(name);
    // A client's text of up to a request body: cut, unquoted as a device not found is named.
    if (!def) {
      throw notFound(`Parameter not found: ${providerTextWithin(name, MAX_PARAMETER_NAME_CHARS)}`);
    }
    const next = checkParameterValue(def, value, written);
    const old = this.#values.get(name)!;
    if (old === next) return { name, value: next };
    this.#values.set(name, next);
    // In force from here: a clock that fails leaves the change unpublished (#changeAt), never
    // the guard below undone nor the set answered as refused.
    const timestampMs = this.#changeAt(name);
    if (timestampMs !== null) {
      this.#o.bus.publish({
        kind: "parameter_change",
        parameter_name: name,
        old_value: parameterValueText(def.type, old),
        new_value: parameterValueText(def.type, next),
        timestamp_ms: timestampMs,
      });
    }
    // A MANUAL -> AUTO running its before-hooks was requested with the old value: AUTO is armed
    // only with the recipe it was asked with (as a reload's change of it: kernel.ts).
    // A string value is a client's text of up to a request body: quoted and cut in the refusal,
    // and so is the name (quotedName).
    this.#o.modes?.invalidateAutoEntry(
      `a parameter set changed the recipe (${quotedName(name)} ${changedValueText(old)} -> ${
        changedValueText(next)
      })`,
      "request AUTO again to enter it with the parameter values now in force",
      "parameter",
    );
    return { name, value: next };
  }

  /**
   * Dates a change of parameter `name` no earlier than its change before it, and records it: a
   * step back of the wall clock (NTP) must not date a change before the one it follows (as
   * AlarmEngine dates an interlock's). The value is in force when it is dated: a clock that fails
   * is asked once more; null when it fails again (the change is not published: no invented time),
   * each failure an ERROR line.
   */
  #changeAt(name: string): number | null {
    const what = `parameter ${quotedName(name)} changed`;
    const wall = readClockTwice(
      () => this.#o.clock.nowMs(),
      this.#changeLog,
      what,
      `${what}: parameter_change not published`,
    );
    if (wall === null) return null;
    const last = this.#changedAt.get(name) ?? this.#departedAt.take(name);
    const at = transitionDate(wall, last);
    this.#changedAt.set(name, at);
    return at;
  }
}

/**
 * Deepest nesting of arrays and objects a set's value is recorded with as it is: an HTTP body's
 * own bound (MAX_JSON_DEPTH, 32 levels with the body's object), so every value sent is.
 */
export const AUDITED_VALUE_MAX_DEPTH = 32;

/**
 * A set's value for its audit entry (JSON): a JSON value as it is, an array an array and an
 * object an object; a number parsing changed (`written`: rounded to an integer, or beyond any
 * double) as written, never as the number parsing made of it -- an integer exactly
 * (`9007199254740993`, a bigint: its digits), else its text (`9007199254740991.4`, `1e400`: JSON
 * has no Infinity); anything else JSON cannot carry (undefined, a cycle, deeper than
 * AUDITED_VALUE_MAX_DEPTH) as its text.
 */
export function auditedParameterValue(value: unknown, written: string | undefined): unknown {
  if (typeof value === "number" && written !== undefined) {
    return exactJsonInteger(written) ?? written;
  }
  return isJsonValue(value, 0) ? value : String(value); // NaN, Infinity: their text
}

/** Whether `v` is a JSON value nested at most AUDITED_VALUE_MAX_DEPTH levels from `depth`. */
function isJsonValue(v: unknown, depth: number): boolean {
  switch (typeof v) {
    case "string":
    case "boolean":
    case "bigint": // written as its digits (toJsonText)
      return true;
    case "number":
      return Number.isFinite(v);
    case "object": {
      if (v === null) return true;
      if (depth >= AUDITED_VALUE_MAX_DEPTH) return false;
      if (Array.isArray(v)) return v.every((x) => isJsonValue(x, depth + 1));
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return false;
      return Object.values(v).every((x) => isJsonValue(x, depth + 1));
    }
    default:
      return false;
  }
}
