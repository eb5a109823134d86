/**
 * The safe-state ladder: which rung an e-stop runs and which calls it makes.
 *
 *  1 hooks      safety.safe_state.hooks, when any are declared (coverage reported, not required)
 *  2 setpoints  safety.safe_state.setpoints, only when they cover every actuating function
 *  3 zero       when zero_is_safe: every zeroable actuating function set to zero (below)
 *  4 none       nothing is actuated; the latch still holds
 *
 * "Actuating" = every function whose category is not READ (project rule), on every registered
 * device, including devices of a provider that is currently down.
 *
 * "Cover": a declared call covers the function it resolves to (device_handle + function_id or
 * function_name). Coverage is per function, not per channel: one set_relay(relay_index 1) covers
 * set_relay although relay 2 is untouched -- listing every channel is the config author's job.
 *
 * "Zeroable" (rung 3) -- chosen to never guess an action: a function is zeroed only when every
 * required argument is one of
 *   - bool                  -> false                      (a level)
 *   - double whose bounds admit 0 -> 0                    (a level)
 *   - int64/uint64 with both bounds declared, min > 0 and at most 8 values -> each value in
 *     turn (a channel/index selector: 0 is not a legal value, so it cannot be a level)
 * and at least one argument is a level. Everything else is uncovered: string/bytes args,
 * integers whose range admits 0 (a level or an id? e.g. exit_code 0..255 -- unknowable), functions
 * without arguments or with selectors only (calling them performs an action, it sets no level).
 * Optional arguments are left out. A function fans out to at most 16 calls.
 */
import {
  type ArgSpec,
  type DeviceCapabilities,
  deviceHandle,
  type FunctionSpec,
  type TypedValue,
} from "../common/mod.ts";
import type { CallConfig, Config, SafeStateExpectation } from "../config/mod.ts";
import { declaredFunctionLabel, findDeclaredTarget } from "../control/mod.ts";

/** The rung of the ladder. */
export type SoftwareSafeState = "none" | "hooks" | "setpoints" | "zero";

/**
 * Longest device handle, function or argument name (the provider's text, when the plan comes from
 * the inventory) or signal id, a log line of the e-stop (its read-back's too) quotes or names;
 * longer is cut, marked with an ellipsis. A provider id alone is cut to QUOTED_PROVIDER_ID_CHARS
 * (src/common/), as every layer cuts it; a device id alone to QUOTED_DEVICE_ID_CHARS.
 */
export const ESTOP_QUOTED_NAME_CHARS = 128;

/** The rungs from the first (the strongest) to the last: a later one is a drop. */
export const RUNG_ORDER: readonly SoftwareSafeState[] = ["hooks", "setpoints", "zero", "none"];

/** True when `after` is a later rung of the ladder than `before` (RUNG_ORDER). */
export function rungDropped(before: SoftwareSafeState, after: SoftwareSafeState): boolean {
  return RUNG_ORDER.indexOf(after) > RUNG_ORDER.indexOf(before);
}

/** safety.safe_state after the adoption rule. */
export interface SafeStateConfig {
  readonly hooks: readonly CallConfig[];
  readonly setpoints: readonly CallConfig[];
  readonly zeroIsSafe: boolean;
  /** Read-back expectations (verification); empty = unverifiable. */
  readonly expect: readonly SafeStateExpectation[];
  readonly verifyTimeoutMs: number;
}

/** One call the ladder will make. */
export type PlannedCall =
  | { readonly kind: "declared"; readonly call: CallConfig; readonly label: ActionLabel }
  | {
    readonly kind: "zero";
    readonly providerId: string;
    readonly deviceId: string;
    readonly functionId: number;
    readonly args: Readonly<Record<string, TypedValue>>;
    readonly label: ActionLabel;
  };

/** How an action is named in the e-stop response. */
export interface ActionLabel {
  readonly device_handle: string;
  readonly function: string;
}

/** An actuating function, as `provider/device function_name`. */
export interface FunctionRef {
  readonly device_handle: string;
  readonly function: string;
}

/** What a trigger would do now. */
export interface SafeStatePlan {
  readonly rung: SoftwareSafeState;
  readonly calls: readonly PlannedCall[];
  /**
   * Actuating functions the rung does not touch; the e-stop adds, after them, those of each device
   * listed before and no longer listed (Estop.plan).
   */
  readonly uncovered: readonly FunctionRef[];
}

/** Bound on how many values an index argument may take for zeroing. */
export const MAX_ZERO_SELECTOR_VALUES = 8;
/** Bound on the calls one function fans out to when zeroing. */
export const MAX_ZERO_CALLS_PER_FUNCTION = 16;

/**
 * The adoption rule (docs/safety.md, "The ladder"): with no `safety:` section and automation
 * enabled, the calls of every hook with to=FAULT and from "*" (or empty) become safe-state hooks,
 * in config order (before_transition first). An explicit `safety:` block, even empty, disables
 * adoption.
 */
export function effectiveSafeState(
  config: Config,
): { safeState: SafeStateConfig; adopted: boolean } {
  if (config.safety.present || !config.automation.enabled) {
    return { safeState: config.safety.safeState, adopted: false };
  }
  const { beforeTransition, afterTransition } = config.automation.modeTransitionHooks;
  const hooks = [...beforeTransition, ...afterTransition]
    .filter((h) => h.to === "FAULT" && h.from === "*")
    .flatMap((h) => h.calls);
  if (hooks.length === 0) return { safeState: config.safety.safeState, adopted: false };
  return { safeState: { ...config.safety.safeState, hooks }, adopted: true };
}

/** Picks the rung and its calls for the given devices (pure; see module comment). */
export function planSafeState(
  safeState: SafeStateConfig,
  devices: readonly DeviceCapabilities[],
): SafeStatePlan {
  const actuating = devices.flatMap((d) =>
    d.functions.filter((f) => f.actuating).map((fn) => ({ device: d, fn }))
  );
  const ref = (d: DeviceCapabilities, fn: FunctionSpec): FunctionRef => ({
    device_handle: deviceHandle(d.device.providerId, d.device.deviceId),
    function: fn.name,
  });
  const uncoveredBy = (calls: readonly CallConfig[]) => uncoveredFunctions(calls, devices);

  if (safeState.hooks.length > 0) {
    return {
      rung: "hooks",
      calls: declaredCalls(safeState.hooks),
      uncovered: uncoveredBy(safeState.hooks),
    };
  }
  if (safeState.setpoints.length > 0 && uncoveredBy(safeState.setpoints).length === 0) {
    return { rung: "setpoints", calls: declaredCalls(safeState.setpoints), uncovered: [] };
  }
  if (safeState.zeroIsSafe) {
    const calls: PlannedCall[] = [];
    const uncovered: FunctionRef[] = [];
    for (const { device, fn } of actuating) {
      const argSets = zeroArgSets(fn);
      const label = ref(device, fn);
      if (argSets === null) {
        uncovered.push(label);
        continue;
      }
      for (const args of argSets) {
        calls.push({
          kind: "zero",
          providerId: device.device.providerId,
          deviceId: device.device.deviceId,
          functionId: fn.functionId,
          args,
          label,
        });
      }
    }
    return { rung: "zero", calls, uncovered };
  }
  return { rung: "none", calls: [], uncovered: actuating.map((a) => ref(a.device, a.fn)) };
}

/** The actuating functions of `devices` that none of `calls` resolves to (see "Cover" above). */
export function uncoveredFunctions(
  calls: readonly CallConfig[],
  devices: readonly DeviceCapabilities[],
): FunctionRef[] {
  const covered = new Set<FunctionSpec>();
  for (const call of calls) {
    const t = findDeclaredTarget(call, devices);
    if ("fn" in t) covered.add(t.fn);
  }
  return devices.flatMap((d) =>
    d.functions.filter((f) => f.actuating && !covered.has(f)).map((fn) => ({
      device_handle: deviceHandle(d.device.providerId, d.device.deviceId),
      function: fn.name,
    }))
  );
}

/**
 * The plan when the devices cannot be read (an inventory port that fails): rung 1 is decided and
 * made from the configuration alone, so with hooks declared it is the plan planSafeState makes,
 * except that what it leaves untouched is unknown (empty). Every other rung needs the devices
 * (coverage, zeroable functions) and is never guessed: "none", no call.
 */
export function planWithoutDevices(safeState: SafeStateConfig): SafeStatePlan {
  if (safeState.hooks.length > 0) {
    return { rung: "hooks", calls: declaredCalls(safeState.hooks), uncovered: [] };
  }
  return { rung: "none", calls: [], uncovered: [] };
}

/** Declared calls (safety.safe_state hooks or setpoints) as the ladder makes them. */
function declaredCalls(calls: readonly CallConfig[]): PlannedCall[] {
  return calls.map((call) => ({
    kind: "declared",
    call,
    label: { device_handle: call.deviceHandle, function: declaredFunctionLabel(call) },
  }));
}

/** How one required argument is set when zeroing: a level (one value) or a selector (each value). */
interface ArgPlan {
  readonly level: boolean;
  readonly values: readonly TypedValue[];
}

/** The argument sets that zero one function, or null when it is not zeroable (module comment). */
export function zeroArgSets(fn: FunctionSpec): Record<string, TypedValue>[] | null {
  if (!fn.actuating) return null;
  const plans: Array<[string, ArgPlan]> = [];
  for (const arg of fn.args) {
    if (!arg.required) continue;
    const plan = zeroPlanFor(arg);
    if (plan === null) return null;
    plans.push([arg.name, plan]);
  }
  if (!plans.some(([, p]) => p.level)) return null;
  let sets: Record<string, TypedValue>[] = [{}];
  for (const [name, plan] of plans) {
    sets = sets.flatMap((s) => plan.values.map((v) => ({ ...s, [name]: v })));
    if (sets.length > MAX_ZERO_CALLS_PER_FUNCTION) return null;
  }
  return sets;
}

function zeroPlanFor(arg: ArgSpec): ArgPlan | null {
  const admitsZero = (arg.min === undefined || arg.min <= 0) &&
    (arg.max === undefined || arg.max >= 0);
  switch (arg.type) {
    case "bool":
      return { level: true, values: [{ type: "bool", bool: false }] };
    case "double":
      return admitsZero ? { level: true, values: [{ type: "double", double: 0 }] } : null;
    case "int64":
    case "uint64": {
      // A selector: both bounds declared, 0 not among them, 1 to 8 integers in between.
      const { min, max } = arg;
      if (min === undefined || max === undefined || min <= 0) return null;
      const first = Math.ceil(min);
      const last = Math.floor(max);
      const count = last - first + 1;
      if (count < 1 || count > MAX_ZERO_SELECTOR_VALUES) return null;
      const values: TypedValue[] = [];
      for (let v = first; v <= last; v++) {
        values.push(
          arg.type === "int64" ? { type: "int64", int64: v } : { type: "uint64", uint64: v },
        );
      }
      return { level: false, values };
    }
    default:
      return null;
  }
}
