/**
 * The invariants that decide whether the machine may run, applied to a reload (docs/safety.md
 * "Reloads"). Entering AUTO is gated by the mode manager (control/mode_manager.ts: an AUTO -> FAULT
 * hook when anything actuates, `autoFaultHookProblem`), by the automation engine (the tree's
 * devices up and the tree loaded) and by the e-stop latch. A reload while AUTO runs must never
 * leave the machine in a state it would refuse to enter, nor change the running recipe behind the
 * operator's back; so while AUTO runs a reload refuses, section by section:
 *
 * - `automation.mode_transition_hooks`: a change after which AUTO -> FAULT is no longer covered
 *   (the same rule, `autoFaultHookProblem`, the AUTO gate applies), that removes a stop call of
 *   a hook into FAULT from a transition into FAULT it was made on (a `from` narrowed counts), or
 *   that turns `manual_gating_policy` from BLOCK to OVERRIDE (the section
 *   holds it: an operator's manual calls would reach the actuators the running tree drives);
 * - `safety`: a change that weakens the e-stop (a ladder call, `zero_is_safe` or an expectation
 *   taken away, a longer verification timeout is fine), judged on the ladder the e-stop runs (the
 *   adopted `* -> FAULT` hook calls without a `safety:` section);
 * - `alarms`: an interlock removed or changed, an alarm that faults or stops the machine removed
 *   or changed (additions and alarms without action apply);
 * - `polling`: a longer `polling.interval_ms` (alarms and interlocks see each change later, a
 *   device that drops out is found later: the device-loss latch waits 3 intervals), or a shorter
 *   one under which a device is polled less often (its poll period is the most whole intervals
 *   its poll hints allow);
 * - `health`: a `health.staleness` under which a sample would be found stale later than now, for
 *   any device or signal of the inventory (a frozen input would keep counting as good), or else
 *   a device polled less often (half a configured bound caps its poll period);
 * - `automation.parameters`: a change that would change a parameter's current value;
 * - `automation.behavior_tree` and provider removals/changes: refused by their owners.
 *
 * Outside AUTO every weakening applies, but each is recorded on the audit trail (origin `reload`)
 * and logged as a WARN: a protection never disappears without a trace. In any mode, a protection
 * of a provider the file removes or changes but that still runs (the providers section refused,
 * or its removal held back in AUTO) is never taken away: `keptProviderRefusal`.
 */
import { providerIdOf } from "../common/mod.ts";
import {
  type AlarmConfig,
  type CallConfig,
  type Config,
  type HookConfig,
  type InterlockConfig,
  MAX_ALARMS,
  MAX_INTERLOCKS,
} from "../config/mod.ts";
import { autoFaultHookProblem } from "../control/mod.ts";
import { effectiveSafeState, type SafeStateConfig } from "../safety/mod.ts";
import { deviceDownAfterMs } from "../state/mod.ts";
import { blockedHandles, same, sectionOf } from "./live_config.ts";

/** A protection a reload takes away or weakens, in words. */
export interface Weakening {
  /** The section (`safety`, `alarms`, `automation.mode_transition_hooks`). */
  readonly section: string;
  readonly what: string;
}

/**
 * A weakening with the providers whose protection it takes away (an alarm's, an interlock's, a
 * call's or an expectation's); empty when it is no provider's in particular (polling, a hook rule).
 */
export interface ProviderWeakening extends Weakening {
  readonly providers: readonly string[];
  /** The alarms-section entry it is about (an acting alarm or an interlock); absent elsewhere. */
  readonly entry?: { readonly list: "alarms" | "interlocks"; readonly id: string };
}

/** What a weakening depends on besides the two configurations: the machine as it runs. */
export interface RunningMachine {
  /** Actuating functions of the inventory (the AUTO -> FAULT hook rule). */
  readonly actuatingFunctions: number;
  /**
   * Where this `health.staleness` would find samples stale later than the bounds at the reload's
   * start (state/state_cache.ts `longerStaleBounds`): one text per device; empty when nowhere.
   */
  longerStaleBounds(staleness: Config["health"]["staleness"]): string[];
  /**
   * Where this `polling.interval_ms` and `health.staleness` would poll a device less often than
   * at the reload's start (state/state_cache.ts `slowerPolls`: a shorter interval may, a poll
   * period being whole intervals, and so may a laxer staleness bound): one text per device;
   * empty when nowhere.
   */
  slowerPolls(intervalMs: number, staleness: Config["health"]["staleness"]): string[];
}

/** At most this many devices are named in a weakening's text; the rest are counted. */
const NAMED_DEVICES = 3;

/** The first NAMED_DEVICES of a weakening's per-device texts, the rest counted. */
function namedDevices(texts: readonly string[]): string {
  const more = texts.length > NAMED_DEVICES
    ? `; and ${texts.length - NAMED_DEVICES} more device(s)`
    : "";
  return `${texts.slice(0, NAMED_DEVICES).join("; ")}${more}`;
}

/** Everything `next` weakens compared with `before` (empty when nothing protective is lost). */
export function protectionWeakenings(
  before: Config,
  next: Config,
  running: RunningMachine,
): Weakening[] {
  return providerWeakenings(before, next, running).map(({ section, what }) => ({ section, what }));
}

/** protectionWeakenings, each with the providers whose protection it takes away. */
export function providerWeakenings(
  before: Config,
  next: Config,
  running: RunningMachine,
): ProviderWeakening[] {
  const out: ProviderWeakening[] = [];
  const actuatingFunctions = running.actuatingFunctions;
  // Hooks into FAULT: their calls are stop actions.
  const hooksBefore = before.automation.modeTransitionHooks;
  const hooksNext = next.automation.modeTransitionHooks;
  const section = "automation.mode_transition_hooks";
  const problem = autoFaultHookProblem(hooksNext, actuatingFunctions);
  if (problem !== null && autoFaultHookProblem(hooksBefore, actuatingFunctions) === null) {
    out.push({ section, what: "no hook covers AUTO -> FAULT any more", providers: [] });
  }
  for (const lost of lostFaultCalls(hooksBefore, hooksNext)) out.push({ section, ...lost });
  // The gate between an operator's manual calls and what the tree drives (same section).
  if (
    before.automation.manualGatingPolicy === "BLOCK" &&
    next.automation.manualGatingPolicy === "OVERRIDE"
  ) {
    out.push({
      section,
      what: "manual_gating_policy BLOCK -> OVERRIDE: manual calls reach what AUTO drives",
      providers: [],
    });
  }
  // How soon the runtime sees a change: a value past a limit, a frozen input, a device gone.
  const ib = before.polling.intervalMs;
  const inext = next.polling.intervalMs;
  if (inext > ib) {
    // Below the floor (DEVICE_DOWN_MIN_MS) a dropout is found no later: not said.
    const downBefore = deviceDownAfterMs(ib);
    const downNext = deviceDownAfterMs(inext);
    const dropout = downNext > downBefore
      ? `, a device that drops out is found after ${downNext} ms instead of ${downBefore}`
      : "";
    out.push({
      section: "polling",
      what: `polling.interval_ms ${ib} -> ${inext} ms: alarms and interlocks see changes later` +
        dropout,
      providers: [],
    });
  } else if (inext < ib) {
    // Shorter, and yet a device may be polled less often: its period is the most whole intervals
    // its poll hints allow (5 Hz: every 110 ms at 110 ms, every 200 ms at 100 ms).
    const slower = running.slowerPolls(inext, before.health.staleness);
    if (slower.length > 0) {
      out.push({
        section: "polling",
        what: `polling.interval_ms ${ib} -> ${inext} ms: devices polled less often: ${
          namedDevices(slower)
        }`,
        providers: [],
      });
    }
  }
  if (!same(before.health.staleness, next.health.staleness)) {
    const later = running.longerStaleBounds(next.health.staleness);
    if (later.length > 0) {
      out.push({
        section: "health",
        what: `health.staleness: samples found stale later: ${namedDevices(later)}`,
        providers: [],
      });
    } else {
      // Half a configured bound caps a device's poll period: a laxer one polls it less often.
      const slower = running.slowerPolls(before.polling.intervalMs, next.health.staleness);
      if (slower.length > 0) {
        out.push({
          section: "health",
          what: `health.staleness: devices polled less often: ${namedDevices(slower)}`,
          providers: [],
        });
      }
    }
  }
  // The e-stop, as it runs: without a `safety:` section it adopts the `* -> FAULT` hooks' calls,
  // so a section added (or removed) changes its ladder even where the file's values do not, and
  // so does a hook change where it adopts them (each section is applied on its own: the safety
  // section over the hooks in force then, which are the file's only if their section applied).
  const estopBefore = effectiveSafeState(before).safeState;
  const safetyOnly = sectionOf("safety").take(before, next);
  for (const lost of estopWeakenings(estopBefore, effectiveSafeState(safetyOnly).safeState)) {
    out.push({ section: "safety", ...lost });
  }
  const hooksOnly = sectionOf(section).take(before, next);
  for (const lost of estopWeakenings(estopBefore, effectiveSafeState(hooksOnly).safeState)) {
    out.push({ section, ...lost });
  }
  // Interlocks (the providers they read and block) and acting alarms.
  for (const il of before.interlocks) {
    const now = next.interlocks.find((x) => x.id === il.id);
    const providers = [
      ...new Set([...il.signals.map((s) => s.providerId), ...il.block.map((b) => b.providerId)]),
    ];
    const entry = { list: "interlocks", id: il.id } as const;
    if (now === undefined) {
      out.push({ section: "alarms", what: `interlock ${il.id} removed`, providers, entry });
    } else if (!sameInterlock(il, now)) {
      out.push({ section: "alarms", what: `interlock ${il.id} changed`, providers, entry });
    }
  }
  for (const a of before.alarms) {
    if (a.action === "none") continue;
    const now = next.alarms.find((x) => x.id === a.id);
    const providers = [a.providerId];
    const entry = { list: "alarms", id: a.id } as const;
    if (now === undefined) {
      out.push({
        section: "alarms",
        what: `alarm ${a.id} (action ${a.action}) removed`,
        providers,
        entry,
      });
    } else if (!sameAlarm(a, now)) {
      out.push({
        section: "alarms",
        what: `alarm ${a.id} (action ${a.action}) changed`,
        providers,
        entry,
      });
    }
  }
  return out;
}

/**
 * Why a section is refused because it takes away protections of providers a reload's file
 * removes or changes but that still run (`kept`: provider id -> why it still runs; the providers
 * section was refused, or held the removal back), or null when none of `weakens` is one of theirs.
 * The operator removed the provider with its protections; the provider stayed, so they stay too.
 */
export function keptProviderRefusal(
  weakens: readonly ProviderWeakening[],
  kept: ReadonlyMap<string, string>,
): string | null {
  const parts: string[] = [];
  for (const [id, why] of kept) {
    const theirs = weakens.filter((w) => w.providers.includes(id));
    if (theirs.length === 0) continue;
    parts.push(
      `provider ${id} still runs (${why}): its protections are kept: ${
        theirs.map((w) => w.what).join("; ")
      }`,
    );
  }
  return parts.length === 0 ? null : parts.join("; ");
}

/** The alarms section narrowed by keptAlarmsNarrowed. */
export interface NarrowedAlarms {
  /** `next` with the kept providers' alarms and interlocks as they are in effect. */
  readonly next: Config;
  /** The weakenings refused: the kept providers' protections. */
  readonly kept: readonly ProviderWeakening[];
  /** The weakenings of the rest of the section, which apply. */
  readonly rest: readonly ProviderWeakening[];
}

/**
 * The `alarms` section of `next` with every alarm and interlock that protects a kept provider
 * (`kept`, as keptProviderRefusal takes it) left as `current` has it -- removed ones kept, changed
 * ones at their old settings, in the file's order with the removed ones after -- so that the rest
 * of the file's alarms and interlocks can apply: the kept providers lose nothing, and each entry
 * of an alarms section stands on its own (no entry refers to another; ids stay unique). Null when
 * that cannot be done: a refused weakening names no entry, the result is the section in effect
 * (nothing else to apply), or it would hold more than MAX_ALARMS / MAX_INTERLOCKS entries.
 */
export function keptAlarmsNarrowed(
  current: Config,
  next: Config,
  weakens: readonly ProviderWeakening[],
  kept: ReadonlyMap<string, string>,
): NarrowedAlarms | null {
  const theirs = weakens.filter((w) => w.providers.some((p) => kept.has(p)));
  if (theirs.length === 0 || theirs.some((w) => w.entry === undefined)) return null;
  const ids = (list: "alarms" | "interlocks") =>
    new Set(theirs.filter((w) => w.entry!.list === list).map((w) => w.entry!.id));
  const keep = <T extends { readonly id: string }>(
    now: readonly T[],
    wanted: readonly T[],
    ids: ReadonlySet<string>,
  ): T[] => [
    ...wanted.map((e) => ids.has(e.id) ? now.find((x) => x.id === e.id) ?? e : e),
    ...now.filter((e) => ids.has(e.id) && !wanted.some((x) => x.id === e.id)),
  ];
  const alarms = keep(current.alarms, next.alarms, ids("alarms"));
  const interlocks = keep(current.interlocks, next.interlocks, ids("interlocks"));
  if (alarms.length > MAX_ALARMS || interlocks.length > MAX_INTERLOCKS) return null;
  // Where an entry is written in the file (`path`, its place in the list) is not a change to apply.
  const unplaced = (l: readonly { readonly id: string; readonly path: string }[]) =>
    l.map((e) => ({ ...e, path: "" })).sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  if (
    same(unplaced(alarms), unplaced(current.alarms)) &&
    same(unplaced(interlocks), unplaced(current.interlocks))
  ) return null;
  const narrowed = { ...next, alarms, interlocks };
  return { next: narrowed, kept: theirs, rest: weakens.filter((w) => !theirs.includes(w)) };
}

/** A lost protection in words, with the providers it protected. */
type Lost = { what: string; providers: string[] };

/** What the e-stop's ladder `after` no longer does that `before` did, in words. */
function estopWeakenings(before: SafeStateConfig, after: SafeStateConfig): Lost[] {
  const out: Lost[] = [];
  // Rung 1 runs alone (safe_state.ts): hooks where there were none leave the setpoints and the
  // zeroing of `before` unmade, though the file still has them.
  const hooksAdded = before.hooks.length === 0 && after.hooks.length > 0;
  if (before.zeroIsSafe && !after.zeroIsSafe) {
    out.push({ what: "zero_is_safe turned off", providers: [] });
  } else if (before.zeroIsSafe && hooksAdded) {
    out.push({
      what: "zero_is_safe no longer applies: the safe_state.hooks added run alone (rung 1)",
      providers: [],
    });
  }
  for (const call of lostCalls(before.hooks, after.hooks)) {
    out.push({
      what: `the e-stop no longer calls ${callText(call)}`,
      providers: [callProvider(call)],
    });
  }
  for (const call of lostCalls(before.setpoints, hooksAdded ? [] : after.setpoints)) {
    out.push({
      what: `the e-stop no longer sets ${callText(call)}`,
      providers: [callProvider(call)],
    });
  }
  for (const e of before.expect) {
    if (!after.expect.some((x) => same({ ...x, path: "" }, { ...e, path: "" }))) {
      out.push({ what: `the e-stop no longer verifies ${e.signal}`, providers: [e.providerId] });
    }
  }
  return out;
}

/** The modes a transition into FAULT starts from (a hook's `from` is one of them or `*`). */
const MODES_INTO_FAULT = ["IDLE", "MANUAL", "AUTO"] as const;

/** The hooks of a configuration, both phases. */
interface Hooks {
  readonly beforeTransition: readonly HookConfig[];
  readonly afterTransition: readonly HookConfig[];
}

/** The calls the hooks make on the transition `from` -> FAULT (both phases). */
function faultCalls(hooks: Hooks, from: typeof MODES_INTO_FAULT[number]): CallConfig[] {
  return [...hooks.beforeTransition, ...hooks.afterTransition]
    .filter((h) => (h.to === "FAULT" || h.to === "*") && (h.from === from || h.from === "*"))
    .flatMap((h) => h.calls);
}

/**
 * The stop calls `after` no longer makes on a transition into FAULT that `before` made them on,
 * judged per mode left: a `* -> FAULT` hook narrowed to `MANUAL -> FAULT` keeps its calls in the
 * file but no longer makes them on AUTO -> FAULT. One text per call: the transitions it is lost
 * from are named when it is still made on others.
 */
function lostFaultCalls(before: Hooks, after: Hooks): Lost[] {
  const lostOn = new Map<string, string[]>();
  const madeOn = new Map<string, number>();
  for (const from of MODES_INTO_FAULT) {
    const made = faultCalls(before, from);
    for (const call of new Set(made.map(callText))) madeOn.set(call, (madeOn.get(call) ?? 0) + 1);
    for (const call of new Set(lostCalls(made, faultCalls(after, from)).map(callText))) {
      lostOn.set(call, [...(lostOn.get(call) ?? []), from]);
    }
  }
  return [...lostOn].map(([call, modes]) => ({
    what: modes.length === madeOn.get(call)
      ? `a hook into FAULT no longer calls ${call}`
      : `a hook into FAULT no longer calls ${call} on ${
        modes.map((m) => `${m} -> FAULT`).join(", ")
      }`,
    // callText starts with the device handle, `provider/device`.
    providers: [providerIdOf(call)],
  }));
}

/** A call as the weakenings name it: `device function`. */
function callText(c: CallConfig): string {
  return `${c.deviceHandle} ${c.functionName || `#${c.functionId}`}`;
}

/** The provider a call goes to (its device handle is `provider/device`). */
function callProvider(c: CallConfig): string {
  return providerIdOf(c.deviceHandle);
}

/**
 * Calls of `before` that `after` no longer makes (same device, function and arguments). Arguments
 * are named: the order they are written in is not part of the call.
 */
function lostCalls(before: readonly CallConfig[], after: readonly CallConfig[]): CallConfig[] {
  const key = (c: CallConfig) =>
    JSON.stringify([
      c.deviceHandle,
      c.functionName,
      c.functionId,
      Object.entries(c.args).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ]);
  const kept = new Set(after.map(key));
  return before.filter((c) => !kept.has(key(c)));
}

/**
 * The same condition (as written) blocking the same functions; message, place and the order the
 * functions are listed in may differ.
 */
export function sameInterlock(a: InterlockConfig, b: InterlockConfig): boolean {
  return a.conditionText.trim() === b.conditionText.trim() &&
    same(blockedHandles(a.block), blockedHandles(b.block));
}

export function sameAlarm(a: AlarmConfig, b: AlarmConfig): boolean {
  return same({ ...a, path: "", message: "" }, { ...b, path: "", message: "" });
}
