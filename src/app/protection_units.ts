/**
 * The protections that compare a signal with numbers written in the configuration -- alarm
 * limits, interlock comparisons, safety.safe_state.expect's min/max (or a number it equals) --
 * hold those numbers in the unit the signal had when the file was written (an interlock comparing
 * it with another signal, that signal's unit). A provider that is
 * rediscovered (a crash-restart, a reload restarting it) declaring another unit for the signal
 * (SignalSpec.unit) makes them compare in the new unit; nothing else changes, so the runtime says
 * it: one WARN per protection, once per change (docs/alarms.md, docs/safety.md).
 */
import { type Logger, quoteProviderTextWithin } from "../common/mod.ts";
import {
  atSourcePosition,
  type ConditionNode,
  type ConditionOperand,
  type ConditionSignal,
  type Config,
} from "../config/mod.ts";
import type { InventoryReader } from "../state/mod.ts";

/**
 * Bound on the protections one unit check names, a line each; the rest are counted in one line
 * (the configuration lists them all).
 */
export const MAX_UNIT_CHANGE_LINES = 20;
/** Longest unit (the provider's text) a unit-change line quotes; longer is cut, marked. */
export const UNIT_QUOTED_CHARS = 64;

/** One protection comparing a signal with numbers of the file, or with another signal. */
interface NumericProtection {
  /** `alarm hot`, `interlock door`, `expectation`. */
  readonly what: string;
  /** The config entry (its path, its position when the loader noted one). */
  readonly entry: { readonly path: string };
  readonly signal: Pick<ConditionSignal, "providerId" | "deviceId" | "signalId">;
  /** `provider/device/signal` as written. */
  readonly handle: string;
  /** Compared with a number of the file (an alarm's, an expectation's always). */
  readonly numbers: boolean;
  /**
   * The signals (handles as written) an interlock compares it with, each once, in condition
   * order: bounded by the condition's length (MAX_CONDITION_LENGTH).
   */
  readonly signals: readonly string[];
}

/** What a signal of an interlock is compared with: numbers of the file, other signals. */
interface Compared {
  readonly signal: ConditionSignal;
  numbers: boolean;
  readonly signals: Set<string>;
}

/** Every protection in `config` that compares a signal with numbers, in file order. */
function numericProtections(config: Config): NumericProtection[] {
  const out: NumericProtection[] = [];
  for (const a of config.alarms) {
    if (a.alarmWhen !== undefined) continue; // a bool or a string: no unit
    out.push({
      what: `alarm ${a.id}`,
      entry: a,
      signal: a,
      handle: a.signal,
      numbers: true,
      signals: [],
    });
  }
  for (const il of config.interlocks) {
    const compared = new Map<string, Compared>();
    comparedSignals(il.condition, compared);
    for (const c of compared.values()) {
      out.push({
        what: `interlock ${il.id}`,
        entry: il,
        signal: c.signal,
        handle: c.signal.handle,
        numbers: c.numbers,
        signals: [...c.signals],
      });
    }
  }
  for (const e of config.safety.safeState.expect) {
    if (e.min === undefined && e.max === undefined && typeof e.equals !== "number") continue;
    out.push({
      what: "expectation",
      entry: e,
      signal: e,
      handle: e.signal,
      numbers: true,
      signals: [],
    });
  }
  return out;
}

/**
 * The signals of `node`'s comparisons with a number or with another signal, each once, with what
 * each is compared with.
 */
function comparedSignals(node: ConditionNode, out: Map<string, Compared>): void {
  switch (node.kind) {
    case "and":
    case "or":
      comparedSignals(node.left, out);
      comparedSignals(node.right, out);
      return;
    case "not":
      comparedSignals(node.operand, out);
      return;
    case "compare": {
      const numeric = (o: ConditionOperand) =>
        o.kind === "signal" || typeof o.value === "number" || typeof o.value === "bigint";
      if (!numeric(node.left) || !numeric(node.right)) return;
      noteCompared(node.left, node.right, out);
      noteCompared(node.right, node.left, out);
      return;
    }
    default:
      return;
  }
}

/**
 * The units the protected signals were last seen declared with, and the WARN lines when a
 * rediscovery changed one. Not on any hot path: run per inventory change and per reload.
 */
export class ProtectionUnits {
  readonly #inventory: InventoryReader;
  readonly #config: () => Config;
  /** `provider/device/signal` (JSON) -> its unit when last seen declared ("" for none). */
  #units = new Map<string, string>();

  constructor(o: { inventory: InventoryReader; config: () => Config }) {
    this.#inventory = o.inventory;
    this.#config = o.config;
  }

  /** Notes the units declared now, saying nothing (start-up: the file is judged as written). */
  note(): void {
    this.#check(undefined, "", null);
  }

  /**
   * A reload's file was written against the units declared as it begins: a signal `next`'s
   * protections compare that none in force compares yet (an alarm added, or moved to another
   * signal) is noted with its unit now, saying nothing, so a provider the same reload restarts
   * declaring another unit is said at its end, not taken as a first sighting.
   */
  noteAhead(next: Config): void {
    for (const p of numericProtections(next)) {
      const s = p.signal;
      const key = JSON.stringify([s.providerId, s.deviceId, s.signalId]);
      if (this.#units.has(key)) continue;
      const unit = this.#declaredUnit(s);
      if (unit !== undefined) this.#units.set(key, unit);
    }
  }

  /** The unit `s` is declared with now ("" for none); undefined when not declared. */
  #declaredUnit(s: NumericProtection["signal"]): string | undefined {
    return this.#inventory.capabilities(s.providerId, s.deviceId)?.signals.find((x) =>
      x.signalId === s.signalId
    )?.unit;
  }

  /**
   * Says each protection in force whose signal is declared now with another unit than when last
   * seen (`providerId`: only that provider's signals); a signal seen for the first time, or not
   * declared now, says nothing. `cause`: what changed, for the line.
   */
  check(providerId: string | undefined, cause: string, log: Logger): void {
    this.#check(providerId, cause, log);
  }

  #check(providerId: string | undefined, cause: string, log: Logger | null): void {
    const lines: string[] = [];
    let more = 0;
    const seen = new Map<string, string>();
    for (const p of numericProtections(this.#config())) {
      const s = p.signal;
      const key = JSON.stringify([s.providerId, s.deviceId, s.signalId]);
      const before = this.#units.get(key);
      if (providerId !== undefined && s.providerId !== providerId) {
        if (before !== undefined) seen.set(key, before);
        continue;
      }
      const unit = this.#declaredUnit(s);
      if (unit === undefined) {
        // Not declared now (its provider down, its device gone): the unit last seen stays.
        if (before !== undefined) seen.set(key, before);
        continue;
      }
      seen.set(key, unit);
      if (log === null || before === undefined || before === unit) continue;
      if (lines.length >= MAX_UNIT_CHANGE_LINES) {
        more++;
        continue;
      }
      lines.push(
        `${p.entry.path}${atSourcePosition(p.entry)}: ${p.what} compares ${p.handle} with ` +
          `${comparedWith(p)}, and its declared unit changed from ${quoteUnit(before)} to ` +
          `${quoteUnit(unit)} (${cause}): they now compare in ${quoteUnit(unit)}; check them`,
      );
    }
    // Forgotten: the signals no protection in force reads (bounded by the configuration).
    this.#units = seen;
    if (log === null) return;
    for (const line of lines) log.warn(line);
    if (more > 0) {
      log.warn(
        `and ${more} more protection(s) compare a signal whose declared unit changed (${cause}); ` +
          `named up to ${MAX_UNIT_CHANGE_LINES} (MAX_UNIT_CHANGE_LINES)`,
      );
    }
  }
}

/** Notes what `side` (when a signal) is compared with: `other`, a signal or a number. */
function noteCompared(
  side: ConditionOperand,
  other: ConditionOperand,
  out: Map<string, Compared>,
): void {
  if (side.kind !== "signal") return;
  let c = out.get(side.signal.handle);
  if (c === undefined) {
    c = { signal: side.signal, numbers: false, signals: new Set() };
    out.set(side.signal.handle, c);
  }
  if (other.kind === "signal") c.signals.add(other.signal.handle);
  else c.numbers = true;
}

/**
 * What `p` compares its signal with, as a unit-change line says it: `numbers of the file`,
 * `signal a/b/c` (`signals a/b/c, d/e/f`), or both joined by `and with`.
 */
function comparedWith(p: NumericProtection): string {
  const signals = p.signals.length === 0
    ? ""
    : `${p.signals.length === 1 ? "signal" : "signals"} ${p.signals.join(", ")}`;
  if (!p.numbers) return signals;
  return signals === "" ? "numbers of the file" : `numbers of the file and with ${signals}`;
}

function quoteUnit(unit: string): string {
  return quoteProviderTextWithin(unit, UNIT_QUOTED_CHARS);
}
