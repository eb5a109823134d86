/**
 * The software e-stop: a latch (released | latched), the safe-state ladder (safe_state.ts) and the
 * read-back of the safe state (verify.ts); docs/safety.md, "The stop, step by step", describes it
 * for operators.
 *
 * Trigger order:
 *  1. synchronously, before any await: the latch engages (from then on the router's latch gate
 *     refuses every actuating call that is not a stop action, including calls already queued on a
 *     provider lock -- the gate is re-checked under the lock), FAULT is committed (the tree halts
 *     in the same step), the ladder's calls to each provider up then are counted for a reload's
 *     wait (stopActionsSettled) and `estop_change` is published;
 *  2. the ladder's calls, origin "safety" (bypass mode and latch gates, still validated, still
 *     need the provider up), fanned out per provider -- declared order within a provider, providers
 *     concurrently -- with every call attempted, each granted its provider right after the call on
 *     the wire (before the calls queued, which the latch lets through when they do not actuate);
 *     at the same time every provider's in-flight calls are drained (a barrier behind each
 *     provider's call queue, bounded and reported);
 *  3. the hooks of the transition into FAULT, as stop actions, every call attempted;
 *  4. verification: the expected signals read back fresh until they hold or the timeout passes.
 * The answer carries all of it. A re-trigger while a stop runs runs again after it, once: presses
 * are coalesced (#pendingStop). Each press latches, is counted, audited and announced in its own
 * step as above; a press while a stop runs queues one further whole stop, and a press while that
 * one waits for its turn joins it and is answered by it (a stop begun after the press). So at most
 * one stop runs and one waits, whatever the press rate.
 *
 * A provider that becomes AVAILABLE while the latch holds (the supervisor restarted it, a reload
 * started it or retried its open circuit, it came up late) is brought to the safe state too: the
 * ladder's calls for it run, in declared order behind any ladder call still running on that
 * provider, then its expectations are read back again and merged into the verification status
 * shows, which is published (`estop_verification`) and recorded in the audit trail (see #secure).
 * One mechanism for every path: the e-stop follows every provider host's availability, also of
 * hosts a reload adds; a reload that changes the ladder calls of a provider that is up secures it
 * again (reconfigure). A device that stopped answering while its provider stayed up secures its
 * provider again when it answers again while latched (DeviceOutages.onDeviceReturn).
 *
 * Releasing the latch changes nothing physical and never re-arms: the mode stays FAULT and
 * arming (MANUAL, AUTO) is refused while the latch holds.
 *
 * The latch is a software stop. It does not replace a hardware power cut.
 */
import {
  causesWhy,
  type Clock,
  type DeviceCapabilities,
  deviceHandle,
  DEVICES_ANSWERING,
  errorMessage,
  failedPrecondition,
  internal,
  joinCauses,
  type Logger,
  MAX_NAMED_IN_WARNING,
  namedDeviceId,
  namedList,
  namedProviderId,
  neverThrowing,
  onlyDeviceReturns,
  parseDeviceHandle,
  PROVIDER_BACK_WHY,
  type ProviderBackCause,
  type ProviderBackCauses,
  providerIdOf,
  providerTextWithin,
  quoteProviderTextWithin,
  raceTimeout,
  readClockTwice,
  reloadStartWords,
  type RuntimeError,
  scalarOf,
  silencedWhen,
  SpellLogs,
  type TimerId,
  toJsonText,
  toRuntimeError,
  transitionDate,
  type TypedValue,
} from "../common/mod.ts";
import type { CallConfig, RuntimeMode, SafeStateExpectation } from "../config/mod.ts";
import {
  type ArmCheck,
  type AuditOrigin,
  type AuditSink,
  type CallRouter,
  FAULT_HOOKS_ANSWER_WAIT_MS,
  type FaultEntry,
  findDeclaredTarget,
  type GateContext,
  type HookFailure,
  inventoryUnknown,
  type LatchSecuring,
  registeredDevices,
  runDeclaredCall,
  stopActionWorstCaseMs,
  toTypedArgs,
} from "../control/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type {
  DeviceCondition,
  FreshReader,
  InventoryReader,
  ProviderSummary,
} from "../state/mod.ts";
import {
  ESTOP_QUOTED_NAME_CHARS,
  type FunctionRef,
  type PlannedCall,
  planSafeState,
  planWithoutDevices,
  type SafeStateConfig,
  type SafeStatePlan,
  type SoftwareSafeState,
  uncoveredFunctions,
} from "./safe_state.ts";
import {
  ListedBefore,
  MAX_LISTED_BEFORE_DEVICES,
  namedSignalPath,
  unlistedLadderDevices,
  unresolvedExpectations,
  UNVERIFIED_NO_EXPECTATION,
  type UnverifiedDevice,
  unverifiedDevices,
  type Verification,
  type VerificationCheck,
  verificationOutcome,
  verifySafeState,
} from "./verify.ts";

/** One call the ladder made. */
export interface EstopAction {
  device_handle: string;
  function: string;
  success: boolean;
  error?: string;
}

/** Whether every provider's in-flight calls finished before the answer (bounded wait). */
export interface DrainReport {
  /**
   * True when every provider's call queue drained in time and its calls that timed out before
   * were answered late (CallRouter.drainFrom).
   */
  readonly complete: boolean;
  /** Providers whose in-flight calls had not finished when the bounded wait ended. */
  readonly pending_providers: readonly string[];
}

/** POST /v0/estop body without `status`. */
export interface EstopResult {
  /**
   * The latch as it stands when the stop answers: false when it was released (POST
   * /v0/estop/clear) while the stop ran and no press latched it again since.
   */
  latched: boolean;
  software_safe_state: SoftwareSafeState;
  actions: EstopAction[];
  /** Actuating functions the rung left untouched (count and list). */
  uncovered_actuating_functions: number;
  uncovered: FunctionRef[];
  /** Whenever the rung leaves any actuating function untouched (every rung). */
  warning?: string;
  /** Whether the mode is FAULT afterwards (false when the mode could not be read: not claimed). */
  fault_engaged: boolean;
  /**
   * Calls of the hooks into FAULT that failed (each one; every call is attempted); with
   * `hooks_pending`, those known when the answer stopped waiting. Hooks that failed to run at all
   * add one entry for them as a whole (device and function `*`).
   */
  hook_failures: HookFailure[];
  /**
   * Only when true: the hooks into FAULT had not finished within FAULT_HOOKS_ANSWER_WAIT_MS; they
   * run on (re-arming is refused until they have finished).
   */
  hooks_pending?: true;
  drain: DrainReport;
  /** The safe state read back fresh from the providers. */
  verification: Verification;
}

/** One call of the plan as status shows it. */
export interface PlannedCallView {
  device_handle: string;
  function: string;
  args: Record<string, TypedValue>;
}

/** What an e-stop would do now: every call with its arguments, and what it leaves untouched. */
export interface EstopPlanView {
  rung: SoftwareSafeState;
  calls: PlannedCallView[];
  uncovered: FunctionRef[];
}

/** GET /v0/runtime/status `.estop`. */
export interface EstopStatus {
  latched: boolean;
  /** The rung a trigger would run now. */
  software_safe_state: SoftwareSafeState;
  latched_at_epoch_ms: number | null;
  uncovered_actuating_functions: number;
  /**
   * What latched it (the first trigger since the latch engaged): `api` (POST /v0/estop),
   * `alarm:<id>` (an alarm with action estop) or `sparkplug` (a Sparkplug NCMD); null while
   * released.
   */
  cause: string | null;
  /**
   * When `cause` is `alarm:<id>` and a configuration reload has since taken that alarm out:
   * `removed` (no alarm of that id now: GET /v0/alarms/<id> answers 404) or `changed` (the alarm
   * of that id now is another definition, or one added back, not the one that latched), as the
   * latest such reload left it; null otherwise. The cause
   * itself stands (the latch does), as does this note until the latch is released.
   */
  cause_alarm_retired: CauseAlarmRetired | null;
  /** The exact plan. */
  plan: EstopPlanView;
  /**
   * Present only when the plan could not be made (the device inventory failed): why. `plan` is
   * then the one a stop would run without the devices (the declared hooks, else none);
   * `uncovered_actuating_functions` (0) and `unverified_devices` (empty) are then unknown.
   */
  plan_failed?: string;
  /**
   * Devices an e-stop cannot verify (`provider/device`): the actuating devices listed with no
   * expectation on any of their signals, then the devices the ladder is to secure (its calls', the
   * safety config's calls', those listed before) that no provider lists (a provider up with its
   * host check unmet, say) and no expectation covers.
   */
  unverified_devices: string[];
  /** Each of `unverified_devices`, in the same order, with why. */
  unverified_reasons: UnverifiedDevice[];
  /**
   * The last e-stop's read-back, whatever triggered it, with the expectations of providers that
   * came back while latched read again since (each check its latest fresh read); null before the
   * first. Each check also says whether its device can be read now (StatusVerificationCheck).
   */
  verification: StatusVerification | null;
}

/**
 * A check as status shows it: what was read back at the time (`outcome` keeps its meaning), and
 * whether its device is available now -- a `verified` check of a device whose provider crashed
 * since stands, but nobody can read that device any more.
 */
export interface StatusVerificationCheck extends VerificationCheck {
  /** True while the device is up now (its provider AVAILABLE, listing it, its reads answering). */
  readonly device_available: boolean;
  /** Present only when `device_available` is false: why (`down: provider sim1 is ...`). */
  readonly device_unavailable_reason?: string;
}

/** The status's `verification`: the read-back, each check with its device's availability now. */
export interface StatusVerification extends Omit<Verification, "checks"> {
  readonly checks: readonly StatusVerificationCheck[];
}

/** Who triggers an e-stop, for status and events (default {@link ESTOP_CAUSE_API}). */
export interface EstopTriggerOptions {
  /** `api`, `alarm:<id>` or `sparkplug` (EstopStatus.cause). */
  readonly cause?: string;
  /** Who triggered it, for the audit trail (default: an HTTP client, or the alarm of `cause`). */
  readonly source?: AuditOrigin;
  /**
   * Called once the latch is engaged, audited, FAULT entered and the change published (before the
   * ladder). Whatever throws after the latch (this callback included) is logged and the ladder
   * runs all the same: the trigger's promise settles with the stop.
   */
  readonly onLatched?: () => void;
}

/** How a reload took out the alarm that latched the e-stop (EstopStatus.cause_alarm_retired). */
export type CauseAlarmRetired = "removed" | "changed";

/** The cause of an e-stop requested over the API (POST /v0/estop). */
export const ESTOP_CAUSE_API = "api";

/** What the HTTP layer needs. */
export interface EstopService {
  /**
   * Latches at once. A reason that is still arriving (an HTTP body) may be passed as a promise:
   * it is logged when it arrives and never delays the latch.
   */
  trigger(
    reason?: string | PromiseLike<string | undefined>,
    options?: EstopTriggerOptions,
  ): Promise<EstopResult>;
  /** Releases the latch; `source` is who asked (audit trail; default an HTTP client). */
  clear(source?: AuditOrigin): { latched: false };
  status(): EstopStatus;
  /** Triggers since start, each one counted (GET /metrics); absent in older implementations. */
  readonly triggerCount?: number;
  /** True while latched (cheaper than status(), which builds the plan). */
  readonly latched?: boolean;
}

/**
 * A plan as status shows it: every call with its arguments (typed by the function `devices`
 * declare; as configured when none declares it), and what it leaves untouched.
 */
function planViewOf(plan: SafeStatePlan, devices: readonly DeviceCapabilities[]): EstopPlanView {
  return {
    rung: plan.rung,
    calls: plan.calls.map((c) => {
      if (c.kind === "zero") return { ...c.label, args: { ...c.args } };
      const target = findDeclaredTarget(c.call, devices);
      const args = "fn" in target ? toTypedArgs(target.fn, c.call.args) : { ...c.call.args };
      return { ...c.label, args };
    }),
    uncovered: [...plan.uncovered],
  };
}

/** The audit origin of a trigger that names none: the alarm of an `alarm:<id>` cause, else HTTP. */
function estopSource(cause: string): AuditOrigin {
  return cause.startsWith("alarm:")
    ? { kind: "alarm", alarm_id: cause.slice("alarm:".length) }
    : { kind: "http" };
}

/** What an operator must do, in order, to actuate again after an e-stop (gate refusals say it). */
export const LATCH_REMEDY =
  "release the latch (POST /v0/estop/clear), then re-arm (POST /v0/mode MANUAL)";

/** Latch states and events. */
export type LatchState = "released" | "latched";
export type LatchEvent = "trigger" | "clear";

/** The latch state machine: trigger latches (also when latched), clear releases (idempotent). */
export function latchTransition(_state: LatchState, event: LatchEvent): LatchState {
  return event === "trigger" ? "latched" : "released";
}

/**
 * The plan is logged again at most once per this interval when inventories change (a storm of
 * changes is logged once more at the interval's end, naming every change); the plan itself is
 * always current.
 */
export const PLAN_LOG_INTERVAL_MS = 1000;

/** Bound on the wait for one provider's in-flight calls, past its timeout_ms. */
export const DRAIN_MARGIN_MS = 1000;

/**
 * Cap on a reload's wait for one provider's stop actions (Estop.stopActionsSettled), which is
 * otherwise the calls left to run on it (at least 1) x one call's worst case
 * (stopActionWorstCaseMs: the call on the wire ahead of it, then its own, each up to timeout_ms) +
 * DRAIN_MARGIN_MS: the reload answers, and the next one begins, only after it. The demo's stop
 * (examples/demo.yaml) makes 13 calls to its one provider, 131 s if each waited for a call on the
 * wire and then ran, both to the default timeout_ms (5 s; 10 s a call); 180 s covers that with
 * room and still answers the reload within three minutes. It never cuts a single call's own bound
 * (its worst case + DRAIN_MARGIN_MS).
 */
export const STOP_ACTIONS_WAIT_MAX_MS = 180_000;

/** How a wait for a provider's stop actions ended (Estop.stopActionsSettled). */
export interface StopActionsWait {
  /** Whether it waited for ladder calls to the provider. */
  readonly ladder: boolean;
  /** Whether it waited for hook calls into FAULT to the provider. */
  readonly hooks: boolean;
  /** True when they had finished within `boundMs`. */
  readonly settled: boolean;
  /** Present when the caller's `until` ended it first (a runtime's stop: a second stop signal). */
  readonly cut?: true;
  /** How long it waited (null when the clock failed). */
  readonly waitedMs: number | null;
  /**
   * Its bound: the calls left to run on the provider when it began (ladder and hook calls, at
   * least 1) x one call's worst case (stopActionWorstCaseMs of its timeout_ms) + DRAIN_MARGIN_MS,
   * at most STOP_ACTIONS_WAIT_MAX_MS (never below one call's worst case + DRAIN_MARGIN_MS);
   * STOP_ACTIONS_WAIT_MAX_MS itself when it waited for a stop triggered while another ran; at
   * most the caller's cap (a runtime's stop: what its shutdown budget leaves), which may cut it.
   */
  readonly boundMs: number;
}

/**
 * Margin of a runtime's stop's wait for the read-back of the e-stop's stops under way
 * (Estop.readBackSettled) past `verify_timeout_ms`: the read-back's last read answered, merged,
 * published and audited.
 */
export const READ_BACK_WAIT_MARGIN_MS = 1000;

/** How a runtime's stop's wait for the e-stop's read-back ended (Estop.readBackSettled). */
export interface ReadBackWait {
  /** True when every read-back under way had answered within `boundMs`. */
  readonly settled: boolean;
  /** Present when the caller's `until` ended it first (a second stop signal). */
  readonly cut?: true;
  /** How long it waited (null when the clock failed). */
  readonly waitedMs: number | null;
  /**
   * Its bound: the stops under way (the one running and the one queued, at most 2) and the
   * re-verification batches under way (one more for the securing runs whose read-back is not
   * asked yet) x (`verify_timeout_ms` + READ_BACK_WAIT_MARGIN_MS), at most the caller's cap.
   */
  readonly boundMs: number;
}

/** One provider's drain as the latch took it (Estop.#drainsFromLatch). */
interface LatchDrain {
  readonly id: string;
  /** Its provider's timeout_ms + DRAIN_MARGIN_MS. */
  readonly boundMs: number;
  readonly wait: (timeoutMs: number) => Promise<boolean>;
}

/**
 * Ladder calls decided and not yet queued on their providers (Estop.#holdLadder): a trigger's, from
 * its latch until its stop's ladder queues its calls (a turn later, or after the stop running
 * then); a securing run's, from the step its provider became AVAILABLE until it queues its calls
 * (the next microtask). Counted meanwhile in Estop.#ladderCallsLeft, so a reload's wait for a
 * provider's stop actions (Estop.stopActionsSettled) covers them.
 */
interface LadderHold {
  /**
   * Per provider: the calls held (counted in #ladderCallsLeft until released); a trigger's grows
   * as presses join its stop (Estop.#joinLadder).
   */
  readonly counts: Map<string, number>;
  /** True when its calls wait for a stop that was running when it was decided. */
  readonly behindStop: boolean;
  /** Resolved once its calls are queued (#onProvider) or will never be. */
  readonly queued: PromiseWithResolvers<void>;
}

/**
 * A stop queued and not begun (Estop.#pendingStop), with what its presses took at their latches:
 * the presses made until it begins join it (Estop.trigger), each merging its own in the step it
 * latches. Fixed once it begins (Estop.#stop).
 */
interface QueuedStop {
  /**
   * Its ladder calls' audit origin: the cause of the press that queued it, or of the latest of its
   * presses that latched the e-stop again after a clear (the cause status shows then).
   */
  cause: string;
  /** Whether it waits for a stop under way (its ladder hold's `behindStop`). */
  readonly behindStop: boolean;
  /** The FAULT entry whose hooks it makes after its ladder (Estop.#joinFault). */
  fault: FaultEntry | null;
  /** The hold on those hook calls (holdFaultHookCalls), let go once their run has begun. */
  hooksHeld: (() => void) | null;
  /** Its ladder calls, held from the first press's latch (Estop.#joinLadder). */
  ladderHeld: LadderHold | null;
  /** Per provider, the drain of the first press that listed it (Estop.#joinDrains). */
  readonly drains: Map<string, LatchDrain>;
  /** True when a press could not list the providers: the drain is reported incomplete. */
  drainsUnlisted: boolean;
  /** Settles with its answer: that of every press it answers. */
  readonly answer: Promise<EstopResult>;
}

/** Warning returned with the "none" rung. */
export const NO_SAFE_STATE_WARNING =
  "No software safe state applies: safety.safe_state has no hooks, its setpoints do not cover " +
  "every actuating function and zero_is_safe is false. The latch blocks further actuating " +
  "calls but no output was changed; use the hardware emergency stop to remove power.";

/** Bound on the functions or devices a warning names (common/named_list.ts says it). */
export { MAX_NAMED_IN_WARNING };

/** Longest error of a safe-state call (it carries the provider's message) its log line quotes. */
export const ESTOP_QUOTED_ERROR_CHARS = 300;

/**
 * Longest e-stop reason (an HTTP client's or an alarm's text) the `E-STOP latched: ...` and
 * `E-STOP reason: ...` lines carry; longer is cut there, marked with an ellipsis. Only the line:
 * the stop, its reason in status, the event and the audit trail keep the reason as given.
 */
export const ESTOP_LOGGED_REASON_CHARS = 300;
/**
 * Longest reason of a failed read-back check (a provider's read error, a string value it read)
 * the verification's log line carries; longer is cut, marked with an ellipsis.
 */
export const ESTOP_LOGGED_CHECK_REASON_CHARS = 300;

/** Providers the re-arm refusal names by id at most (their securing runs); the rest counted. */
const ARM_REFUSAL_NAMED_PROVIDERS = 5;

/** A name in an e-stop log line: cut to ESTOP_QUOTED_NAME_CHARS and JSON-quoted. */
function quoteName(name: string): string {
  return quoteProviderTextWithin(name, ESTOP_QUOTED_NAME_CHARS);
}

/**
 * Warning returned whenever a rung other than "none" leaves actuating functions untouched (also
 * logged). Each device handle and function name (the provider's text) is quoted and cut as the
 * plan lines quote them (ESTOP_QUOTED_NAME_CHARS).
 */
export function uncoveredWarning(
  rung: SoftwareSafeState,
  uncovered: readonly FunctionRef[],
): string {
  const list = namedList(
    uncovered.map((u) => `${quoteName(u.device_handle)} ${quoteName(u.function)}`),
    MAX_NAMED_IN_WARNING,
  );
  return `The '${rung}' rung leaves ${uncovered.length} actuating function(s) untouched: ${list}. ` +
    "The e-stop did not change them; cover them with safety.safe_state.hooks and check the " +
    "outputs that matter with safety.safe_state.expect, or use the hardware emergency stop.";
}

/** The rung a stop would run now (Estop.ladderRung). */
export interface LadderRung {
  readonly rung: SoftwareSafeState;
  /** The actuating functions safety.safe_state.setpoints do not cover. */
  readonly setpointGaps: readonly FunctionRef[];
  /**
   * The devices judged (those listed now, but the providers left out) of which the rung reaches
   * an actuating function (`provider/device`).
   */
  readonly reached: readonly string[];
  /** The actuating functions of the devices judged the rung leaves untouched (plan uncovered). */
  readonly uncovered: readonly FunctionRef[];
}

/**
 * What a ladder covered when last judged (ladderCoverage): the devices listed then whose actuating
 * functions it reached (`provider/device`) and the actuating functions it left untouched
 * (`provider/device\u0000function`). Bounded by the inventory judged (and, for the providers a
 * judgement left out, the one before).
 */
export interface LadderCoverage {
  readonly reached: ReadonlySet<string>;
  readonly uncovered: ReadonlySet<string>;
}

function coverageKey(u: FunctionRef): string {
  return `${u.device_handle}\u0000${u.function}`;
}

/**
 * The coverage of the ladder judged `now`, to compare the next judgement with (coverageLost).
 * `except`: providers that judgement left out (a reload starting them). Such a judgement is no
 * ladder ever in force (as the rung it sees): it only ever lowers the coverage seen -- a device is
 * still reached only if both reach it, a function untouched if either leaves it so; what `seen`
 * had of the providers left out stays as it was.
 */
export function ladderCoverage(
  now: LadderRung,
  seen: LadderCoverage | null,
  except?: ReadonlySet<string>,
): LadderCoverage {
  const uncovered = new Set(now.uncovered.map(coverageKey));
  if (seen === null || except === undefined || except.size === 0) {
    return { reached: new Set(now.reached), uncovered };
  }
  const reachedNow = new Set(now.reached);
  const reached = new Set(
    [...seen.reached].filter((h) => reachedNow.has(h) || except.has(providerIdOf(h))),
  );
  for (const k of seen.uncovered) uncovered.add(k);
  return { reached, uncovered };
}

/**
 * The actuating functions the ladder judged `now` leaves untouched, of devices it reached when it
 * was last judged (`seen`), that it did not leave untouched then: a provider restarted with a
 * function the rung can no longer reach -- bounds that no longer admit the zero rung 3 sends, an
 * argument retyped, a function renamed -- weakens the stop of a device it stopped, within its
 * rung, as a rung that drops does. A device it reached nothing of (new, or none of its functions
 * covered: under rung 'none', say) is no loss: the stop is no weaker for it.
 */
export function coverageLost(seen: LadderCoverage | null, now: LadderRung): FunctionRef[] {
  if (seen === null) return [];
  return now.uncovered.filter((u) =>
    seen.reached.has(u.device_handle) && !seen.uncovered.has(coverageKey(u))
  );
}

/**
 * The line (and FAULT reason) of a ladder that, at the same rung, no longer reaches `lost`
 * (coverageLost; `cause`: what changed), quoted and cut as the plan lines quote them and named up
 * to MAX_NAMED_IN_WARNING.
 */
export function coverageLostText(
  rung: SoftwareSafeState,
  lost: readonly FunctionRef[],
  cause: string,
): string {
  return `the e-stop's safe-state ladder (rung '${rung}') no longer covers ${lost.length} ` +
    `actuating function(s) it covered (${cause}): ${
      namedList(
        lost.map((u) => `${quoteName(u.device_handle)} ${quoteName(u.function)}`),
        MAX_NAMED_IN_WARNING,
      )
    }`;
}

/**
 * The line (and FAULT reason) of a rung that dropped from `before` to `now.rung` (`cause`: what
 * changed): with setpoints declared, the functions they no longer cover, quoted and cut as the
 * plan lines quote them and named up to MAX_NAMED_IN_WARNING.
 */
export function rungDropText(before: SoftwareSafeState, now: LadderRung, cause: string): string {
  const gaps = now.setpointGaps;
  return `the e-stop's safe-state ladder dropped from rung '${before}' to '${now.rung}' (${cause})` +
    (before === "setpoints" && gaps.length > 0
      ? `: safety.safe_state.setpoints do not cover ${gaps.length} actuating function(s): ${
        namedList(
          gaps.map((u) => `${quoteName(u.device_handle)} ${quoteName(u.function)}`),
          MAX_NAMED_IN_WARNING,
        )
      }`
      : "");
}

/**
 * Warning returned when a stop's plan could not be made (`why`): `rung` is what it ran instead
 * (planWithoutDevices: the declared hooks, else none).
 */
export function planFailedWarning(rung: SoftwareSafeState, why: string): string {
  return `The safe-state plan could not be made (${why}). ` +
    (rung === "hooks"
      ? "The 'hooks' rung ran (safety.safe_state.hooks need no device inventory); which " +
        "actuating functions it leaves untouched is unknown. "
      : "Every rung but 'hooks' needs the device inventory: no output was changed. ") +
    "The latch blocks further actuating calls; check the machine, or use the hardware emergency " +
    "stop to remove power.";
}

/** The mode manager's part in an e-stop (ModeManager satisfies it). */
export interface EstopModes {
  current(): RuntimeMode;
  /**
   * Commits FAULT synchronously; its hooks run when asked. `notBefore`: the latch's date, which
   * its mode_change is dated no earlier than.
   */
  enterFault(reason: string, source?: AuditOrigin, notBefore?: number | null): FaultEntry;
  /**
   * Makes the hooks into FAULT of the entry in force again (a trigger while FAULT stood: its ladder
   * may have undone what they set), filling `failures`; null when none has run.
   */
  runFaultHooksAgain?(failures: HookFailure[]): Promise<HookFailure[]> | null;
  addArmCheck(check: ArmCheck, name?: string): void;
  /** Told how the e-stop secures a provider that comes back while latched (#ladderMade). */
  setLatchSecuring?(securing: LatchSecuring): void;
  /**
   * Told that a reload changed the ladder calls of `host`, up while latched: the e-stop secures
   * it again with them (a run not begun yet), after which the hooks into FAULT are made again, as
   * after a stop's ladder.
   */
  ladderReloaded?(host: ProviderSummary): void;
  /**
   * Resolves once the hook calls into FAULT to `providerId` running or queued now have finished
   * (unbounded, never rejects); null when none (stopActionsSettled).
   */
  faultHookCallsSettled?(providerId: string): Promise<void> | null;
  /**
   * How many hook calls into FAULT to `providerId` faultHookCallsSettled waits for now (running,
   * queued, held): what bounds that wait (stopActionsSettled). Synchronous.
   */
  faultHookCallsLeft?(providerId: string): number;
  /**
   * Holds the hook calls into FAULT a stop has committed to making and not begun (its own, made
   * after its ladder) until the returned release is called, once their run has begun: counted
   * meanwhile by faultHookCallsSettled. Synchronous; nothing but a reload's wait waits for it.
   */
  holdFaultHookCalls?(): () => void;
}

export interface EstopOptions {
  readonly router: CallRouter;
  /** Providers and their devices, read-only (the plan, availability, call bounds). */
  readonly inventory: InventoryReader;
  /** The read-back's fresh reads (the state cache). */
  readonly reads: FreshReader;
  readonly clock: Clock;
  readonly log: Logger;
  /** safety.safe_state after the adoption rule (effectiveSafeState). */
  readonly safeState: SafeStateConfig;
  /** The e-stop commits FAULT, refuses arming while latched and runs the FAULT hooks. */
  readonly modes?: EstopModes;
  /** Where estop_change / estop_verification are published. */
  readonly bus?: EventBus;
  /** Where triggers and clears are recorded (the ladder's calls are recorded by the router). */
  readonly audit?: AuditSink;
  /**
   * Device conditions (the state layer's DeviceOutages): a device that stopped answering while
   * its provider stayed up is secured again when it answers again while latched.
   */
  readonly devices?: {
    onDeviceReturn(listener: (providerId: string, deviceId: string) => void): () => void;
    /** The device's condition now (status: whether each check's device can be read now). */
    condition?(providerId: string, deviceId: string): DeviceCondition;
    /**
     * A safe-state call to the device failed with `err`: one its provider answered UNAVAILABLE
     * makes the device's next answer a return (secured again while latched), though no poll
     * found it out.
     */
    noteCallFailed?(providerId: string, deviceId: string, err: unknown): void;
  };
}

/** The e-stop latch and ladder. Registers the latch gate on the router at construction. */
export class Estop implements EstopService {
  #o: EstopOptions;
  readonly #log: Logger;
  /**
   * #log for the stop path (the ladder, securing runs, drains, the hooks' wait, read-backs, a
   * reason arriving), run from promise reactions and timers: its lines never throw, so a logger
   * that fails (a closed stdout) takes no call, no answer and, as an unhandled rejection, not the
   * runtime away.
   */
  readonly #stopLog: Logger;
  #state: LatchState = "released";
  #latchedAtMs: number | null = null;
  /** The date of the latest trigger or release (#transitionAt); null before the first. */
  #lastTransitionAt: number | null = null;
  #triggerCount = 0;
  /**
   * The latch in force (or the last one): each press that latches it from released takes the
   * next number. A re-verification belongs to the latch its securing calls were made under.
   */
  #latchNo = 0;
  /**
   * The latch (#latchNo) under which the latest stop began, queueing its ladder calls behind those
   * queued on each provider before (#stop): a securing run of a released latch waiting for its
   * turn is skipped only once a stop of the latch in force has (#secure).
   */
  #ladderLatchNo = 0;
  #cause: string | null = null;
  /** What a reload did to the alarm of an `alarm:<id>` cause since the latch (null: nothing). */
  #causeRetired: CauseAlarmRetired | null = null;
  /** Stops run one after another (a re-trigger re-runs the ladder after the running one). */
  #stopTail: Promise<unknown> = Promise.resolve();
  /**
   * The stop queued and not begun yet (#queueStop), which a press joins. The one slot is the
   * bound: presses while a stop runs queue one further stop, not one each, so at most one stop
   * runs and one waits, and the answers waiting are those of the presses since the running one.
   */
  #pendingStop: QueuedStop | null = null;
  /**
   * Stops triggered and not answered yet, and securing runs making their calls: arming is refused
   * while any runs, latched or not, so no stop action lands after an operator's first command.
   */
  #stopsRunning = 0;
  /** Stops triggered and not finished (a trigger while one is under way runs its ladder after). */
  #stopsUnderWay = 0;
  #plan: SafeStatePlan | null = null;
  /** The actuating devices each provider listed since it was configured (#unverified). */
  readonly #listedBefore = new ListedBefore();
  /** The plan's calls by provider (#callsOf), for the plan it was made from. */
  #planIndex: { plan: SafeStatePlan; byProvider: Map<string, PlannedCall[]> } | null = null;
  /** What status shows as the verification (see #mergeVerification). */
  #verified: VerificationState | null = null;
  /**
   * Read-backs begun so far (a stop's, a re-verification's): the order #mergeVerification keeps,
   * known even when the clock fails.
   */
  #readBackSeq = 0;
  #logPlanChanges = false;
  /**
   * Monotonic ms the plan was last logged at for a change (#planChanged); null when the clock
   * failed then (the next change waits a whole interval).
   */
  #planLoggedAt: number | null = -Infinity;
  /** Why the plan changed since it was last logged (logged with it). */
  readonly #planLogReasons = new Set<string>();
  #planLogTimer: TimerId | undefined;
  /** After close(): no plan log is scheduled any more. */
  #closed = false;
  /** After endReadBacks(): no read-back reads a device again (VerifyOptions.ended). */
  #readBacksEnded = false;
  /** After endReadBackLines(): a read-back still under way writes no line (#readBackLog). */
  #readBackLinesEnded = false;
  /**
   * The lines of the read-backs (their verification, the stop's warning said after it, a
   * re-verification that failed): #stopLog until the runtime's stop has ended (endReadBackLines),
   * then none -- nothing of a read-back comes after `runtime stopped`.
   */
  readonly #readBackLog: Logger;
  /** Per provider: the end of the ladder calls queued on it (declared order within a provider). */
  readonly #providerTails = new Map<string, Promise<void>>();
  /**
   * Per provider: the ladder calls queued on it (#onProvider) not yet finished, a securing run not
   * begun counted as the plan's calls to it then (#countLadderCalls), and those held before they
   * are queued (#ladderHolds): what bounds a reload's wait (stopActionsSettled). Deleted at none.
   */
  readonly #ladderCallsLeft = new Map<string, number>();
  /**
   * Ladder calls decided and not queued yet (#holdLadder): a trigger's from its latch, a securing
   * run's from its provider's return; a reload's wait waits for them to be queued, then for them.
   */
  readonly #ladderHolds = new Set<LadderHold>();
  /** Per provider host: its securing run after it last became AVAILABLE while latched. */
  readonly #secureRuns = new WeakMap<ProviderSummary, SecureRun>();
  /**
   * Per provider id: the log of its securing runs for devices answering again while latched. A
   * device whose reads fail now and then secures its provider again after each (at most once per
   * DEVICE_RETURN_MIN_INTERVAL_MS), so the first run of a spell is said at WARN, the rest at DEBUG,
   * and the spell's end -- the release, or the provider's own return -- counts them at INFO. Each
   * run is audited as usual.
   */
  readonly #deviceReturnLogs = new SpellLogs((providerId) => ({
    log: this.#stopLog,
    firstNote: `its further securing runs for devices answering again are logged at DEBUG ` +
      `and counted until the latch is released or provider ${namedProviderId(providerId)} itself ` +
      "comes back",
    restLevel: "debug",
    recovered: (n) =>
      `e-stop: provider ${namedProviderId(providerId)}: ${n} securing run(s) for devices ` +
      "answering again while latched",
  }));
  /** The re-verification waiting to start, if any (providers join it until it starts). */
  #pendingReverify: ReverifyBatch | null = null;
  /** The end of the re-verifications begun so far (one runs at a time). */
  #reverifyTail: Promise<unknown> = Promise.resolve();
  /**
   * The read-backs under way outside a stop, each until it has answered, published and audited:
   * the securing runs begun and not ended (their calls, then their read-back), and the
   * re-verification batches asked and not done. A runtime's stop waits for them as for a stop's
   * (readBackSettled). Bounded: each ends on its own (its calls by their `timeout_ms`, its
   * read-back by `verify_timeout_ms`) and leaves the set then.
   */
  readonly #readBacksUnderWay = new Set<Promise<unknown>>();
  /** Of #readBacksUnderWay: the securing runs (the rest are re-verification batches). */
  #securingUnderWay = 0;
  /**
   * Per provider id: its securing runs making their calls (counted in #stopsRunning too), which
   * the re-arm refusal names (#stillRunning). Deleted at none.
   */
  readonly #securingCalls = new Map<string, number>();
  readonly #reasonListeners: ((
    reason: Promise<string | null>,
    cause: string,
    latchedAtMs: number | null,
  ) => void)[] = [];
  /** Told of each latch and release (onLatchChange), announced or not. */
  readonly #latchListeners = new Set<(latched: boolean) => void>();

  constructor(options: EstopOptions) {
    this.#o = options;
    this.#log = options.log.child("estop");
    this.#stopLog = neverThrowing(this.#log);
    this.#readBackLog = silencedWhen(this.#stopLog, () => this.#readBackLinesEnded);
    // First among the gates: while latched, the mode is FAULT too, and the mode gate's remedy
    // (re-arm with MANUAL) is refused until the latch is released.
    options.router.addGate(this.gate, "estop", "first");
    options.modes?.addArmCheck(
      (from, to) =>
        this.#state === "latched"
          ? `E-stop latched: ${from} -> ${to} refused; the latch must be released first ` +
            "(POST /v0/estop/clear), then re-arm deliberately"
          // Released while its stop still runs: the ladder's calls (and the hooks into FAULT after
          // them) skip every gate, and would land after the operator's first commands.
          : this.#stopsRunning > 0
          ? this.#stillRunning(from, to)
          : null,
      "estop",
    );
    // Providers added or removed by a configuration reload change the plan as an inventory does.
    // A restart that rediscovers the same inventory changes nothing: 40 providers restarting at
    // once must not replan and log the whole plan 40 times.
    // Every inventory is recorded as it is discovered: a device a later one leaves out is still
    // one the ladder is to secure (status names it, #unverified).
    // An inventory port that fails here fails status too (plan_failed): the e-stop is built all
    // the same, as the stop needs no inventory for rung 1.
    try {
      for (const p of options.inventory.providers()) this.#noteListed(p.id, p.devices);
    } catch (err) {
      this.#stopLog.error(
        `e-stop: the devices listed now could not be read (${errorMessage(err)}); ` +
          "a device no longer listed later is named only if listed after this",
      );
    }
    options.inventory.onChange((id, change) => {
      // Recorded before the plan is made again: a device no longer listed is in its `uncovered`.
      if (change === "changed") {
        // Contained: an inventory port that throws must not keep the stale plan in force.
        try {
          this.#noteListed(id, options.inventory.provider(id)?.devices ?? []);
        } catch (err) {
          this.#stopLog.error(
            `e-stop: the devices ${namedProviderId(id)} lists now could not be read ` +
              `(${errorMessage(err)}); a device it no longer lists later is named only if ` +
              "listed after this",
          );
        }
        this.#planChanged(`inventory of ${namedProviderId(id)} changed`);
      } else if (change === "removed") {
        // Its host taken out: one still configured (a reload restarting it, or retiring the host
        // whose start the reload before failed, its entry kept) keeps them, lost meanwhile. One
        // no longer configured is told `unconfigured` next, in this same step: its plan change is
        // that one (a plan logged now would still name its devices listed before as untouched).
        // Not "removed": that is a provider no longer in the file (docs/safety.md).
        if (options.inventory.configured?.(id) !== false) {
          this.#planChanged(
            `provider ${namedProviderId(id)} taken out by a configuration reload, still configured`,
          );
        }
      } else if (change === "unconfigured") {
        // Dropped from the configuration (with its host, or one never registered): gone.
        this.#listedBefore.forget(id);
        this.#planChanged(`provider ${namedProviderId(id)} removed`);
      }
    });
    options.inventory.onAvailability((p, up) => {
      if (!up) return;
      this.#deviceReturnLogs.end(p.id);
      this.#providerAvailable(p);
    });
    // At most one per DEVICE_RETURN_MIN_INTERVAL_MS per provider (DeviceOutages).
    options.devices?.onDeviceReturn((providerId, deviceId) => {
      const host = this.#o.inventory.provider(providerId);
      if (host?.available === true) {
        this.#providerAvailable(host, DEVICES_ANSWERING, deviceId);
      }
    });
    // The hooks into FAULT made again for a provider that comes back wait for its ladder calls
    // and leave out those the ladder made (the adopted hooks' own, without a safety: section).
    options.modes?.setLatchSecuring?.((host, o) => this.#ladderMade(host, o?.notBegun === true));
  }

  /**
   * The re-arm refusal while released with stop actions still running (#stopsRunning), saying what
   * it waits for: a stop not answered yet (its ladder, its hooks into FAULT, its read-back: its
   * trigger, POST /v0/estop or another, answers once it has ended), a securing run's safe-state
   * call still on the wire (no trigger waits for it: the release ends the run after that call), or
   * both.
   */
  #stillRunning(from: string, to: string): string {
    const waits: string[] = [];
    if (this.#stopsUnderWay > 0) {
      waits.push(
        "its stop has ended (its safe-state calls, the hooks into FAULT and its read-back; " +
          "a press by POST /v0/estop is answered then)",
      );
    }
    const ids = [...this.#securingCalls.keys()];
    if (ids.length > 0) {
      const named = namedList(ids, ARM_REFUSAL_NAMED_PROVIDERS, namedProviderId);
      waits.push(
        `the securing run of provider(s) ${named} (back while latched) has ended: the ` +
          "release ends it once its safe-state call on the wire has answered",
      );
    }
    return `E-stop still running: ${from} -> ${to} refused until ${waits.join(", and ")}; ` +
      "retry then";
  }

  /**
   * Records the actuating devices `providerId` lists now (#listedBefore). The first time a
   * provider's oldest devices listed before are let go of (past MAX_LISTED_BEFORE_DEVICES since it
   * was configured), one WARN says so: status no longer names them (once per provider until a
   * reload removes it; ListedBefore.dropped counts them).
   */
  #noteListed(providerId: string, devices: readonly DeviceCapabilities[]): void {
    const dropped = this.#listedBefore.note(providerId, devices);
    if (dropped === 0 || this.#listedBefore.dropped(providerId) !== dropped) return;
    this.#stopLog.warn(
      `e-stop: provider ${namedProviderId(providerId)} has listed more than ` +
        `${MAX_LISTED_BEFORE_DEVICES} actuating devices since it was configured (a device ` +
        "renamed at each restart, say): " +
        "the oldest it no longer lists are let go of, so estop.unverified_devices and " +
        "estop.plan.uncovered no longer name them though nothing secures them (said once " +
        "per provider)",
    );
  }

  /**
   * The securing run begun when `host` last became AVAILABLE, if it was latched then: resolves,
   * once its ladder calls have been made, with the declared ones among them ([] when the latch was
   * released before their turn); null when it came back unlatched. `notBegun`: only a run that has
   * not begun its calls leaves them out of what is made after it; one that has begun and is still
   * making them resolves with [] once it has made them (a hook call made meanwhile would land
   * between its calls, and a later one would undo it; it began with a ladder in force before, so
   * none of what follows is left out); null for one ended (the hooks made since may have undone its
   * calls).
   */
  #ladderMade(host: ProviderSummary, notBegun: boolean): Promise<readonly CallConfig[]> | null {
    const run = this.#secureRuns.get(host);
    if (run === undefined) return null;
    if (!notBegun || !run.started) return run.ladder;
    return run.laddered ? null : run.ladder.then(() => []);
  }

  /**
   * The plan is recomputed when next asked for, and logged (once logging began): at once, or when
   * PLAN_LOG_INTERVAL_MS has passed since it was last logged for a change, with every reason since.
   */
  #planChanged(why: string): void {
    this.#plan = null;
    if (!this.#logPlanChanges) return;
    this.#planLogReasons.add(why);
    if (this.#planLogTimer !== undefined || this.#closed) return;
    if (this.#planLoggedAt === -Infinity) return this.#logPendingPlan();
    // A reload while latched secures providers after this: a clock that fails must not take that
    // away. Asked once more; with no time to measure the interval by, the log waits a whole one.
    const loggedAt = this.#planLoggedAt;
    const now = loggedAt === null
      ? null
      : this.#readMono("e-stop plan log", "e-stop plan log: it waits a whole interval");
    const wait = loggedAt === null || now === null
      ? PLAN_LOG_INTERVAL_MS
      : loggedAt + PLAN_LOG_INTERVAL_MS - now;
    if (wait <= 0) return this.#logPendingPlan();
    this.#planLogTimer = this.#o.clock.setTimer(() => this.#logPendingPlan(), Math.ceil(wait));
  }

  #logPendingPlan(): void {
    this.#planLogTimer = undefined;
    // Also from a timer, where a throw would be an uncaught error: the plan is logged all the
    // same; the time unknown, the next change waits a whole interval.
    this.#planLoggedAt = this.#readMono(
      "e-stop plan log",
      "e-stop plan log: logged, the next one waits a whole interval",
    );
    const why = [...this.#planLogReasons].join("; ");
    this.#planLogReasons.clear();
    // From a timer a throw (a logger, the plan's view) is an uncaught error that ends the runtime,
    // and from reconfigure() it would keep a reload from securing providers while latched: one
    // ERROR line; the plan stays in force and the next change is logged as usual.
    try {
      this.logPlan(why);
    } catch (err) {
      try {
        this.#log.error(`e-stop plan log (${why}) failed: ${errorMessage(err)}`);
      } catch { /* a logger that throws does not end the runtime either */ }
    }
  }

  /**
   * The monotonic clock, read where a clock that fails must take nothing away: asked once more,
   * each failure one ERROR line (`what`, then `thenWhat`: what is left out) on `log` (a
   * read-back's own reads: #readBackLog, silent after endReadBackLines); null when it fails again.
   */
  #readMono(what: string, thenWhat: string, log: Logger = this.#stopLog): number | null {
    return readClockTwice(() => this.#o.clock.monoMs(), log, what, thenWhat);
  }

  /** The wall clock (epoch ms), read as #readMono reads the monotonic one. */
  #readNow(what: string, thenWhat: string, log: Logger = this.#stopLog): number | null {
    return readClockTwice(() => this.#o.clock.nowMs(), log, what, thenWhat);
  }

  /**
   * Dates a trigger, a release or a verification no earlier than the one before it, and records
   * it: a step back of the wall clock (NTP) must not date a release before the latch it ends, a
   * trigger before the release before it (as AlarmEngine dates an interlock's), nor a stop's
   * verification before its trigger. Only the date: the latch itself never waits on it.
   */
  #transitionAt(wall: number): number {
    const last = this.#lastTransitionAt;
    const at = transitionDate(wall, last);
    this.#lastTransitionAt = at;
    return at;
  }

  /** Cancels a plan log that waits for its turn (at shutdown). */
  close(): void {
    this.#closed = true;
    this.#o.clock.clearTimer(this.#planLogTimer);
    this.#planLogTimer = undefined;
    this.#planLogReasons.clear();
  }

  /**
   * A runtime's stop is about to stop the providers: the read-backs under way (a stop's, a
   * securing run's, a re-verification) and those still to come read no device again once their
   * read in flight has answered (a stopped provider's fails at once), so they end, said and
   * published, with the stop instead of running on to `verify_timeout_ms` after it. A check not
   * held by then is not verified. For good: the runtime is ending.
   */
  endReadBacks(): void {
    this.#readBacksEnded = true;
  }

  /**
   * A runtime's stop is done waiting for the read-backs (after endReadBacks and the providers'
   * stop, READ_BACKS_END_AT_STOP_MS at most): one still under way then (its WARN said so) writes
   * no line from now on, so none comes after `runtime stopped`. It still ends as endReadBacks has
   * it, its verdict kept in status only: neither published (estop_verification) nor audited -- the
   * journals are closed, nothing writes after the stop. For good: the runtime is ending.
   */
  endReadBackLines(): void {
    this.#readBackLinesEnded = true;
  }

  /**
   * Told, in a trigger's own synchronous step (after its `estop_change`), of a reason still
   * arriving (an HTTP body read after the latch): it resolves with the reason, or null (none,
   * empty, unreadable), and never rejects. The incident recorder puts it in the e-stop's record.
   */
  onReasonArriving(
    listener: (reason: Promise<string | null>, cause: string, latchedAtMs: number | null) => void,
  ): void {
    this.#reasonListeners.push(listener);
  }

  /** Triggers since start (a trigger while latched counts too). */
  get triggerCount(): number {
    return this.#triggerCount;
  }

  /** True while latched. */
  get latched(): boolean {
    return this.#state === "latched";
  }

  /**
   * The call gate: while latched, actuating (non-READ) calls are refused; safety calls skip gates.
   * It runs before every other gate, and its message gives the remedy in the order that works.
   */
  readonly gate = (ctx: GateContext): RuntimeError | null => {
    if (this.#state !== "latched" || !ctx.fn.actuating || ctx.origin === "safety") return null;
    return failedPrecondition(
      `E-stop latched: actuating call ${
        deviceHandle(ctx.device.device.providerId, ctx.device.device.deviceId)
      } ${ctx.fn.name} refused; ${LATCH_REMEDY}`,
    );
  };

  /** What a trigger would do now, for the current device inventory (cached per inventory). */
  plan(): SafeStatePlan {
    if (this.#plan !== null) return this.#plan;
    const devices = registeredDevices(this.#o.inventory);
    const plan = planSafeState(this.#o.safeState, devices);
    // A device listed before and no longer listed is one the ladder is to secure and no call
    // reaches, whatever the rung: uncovered, as status names it unverified (#unverified). It
    // takes no part in choosing the rung (setpoints cannot cover it: it would weaken the stop of
    // the devices listed).
    const listed = new Set(
      devices.map((d) => deviceHandle(d.device.providerId, d.device.deviceId)),
    );
    const vanished = this.#listedBefore.unlistedFunctions(listed);
    return this.#plan = vanished.length === 0
      ? plan
      : { ...plan, uncovered: [...plan.uncovered, ...vanished] };
  }

  /**
   * The rung a stop would run now, and the actuating functions safety.safe_state.setpoints do not
   * cover (the reason rung 2 does not apply), for the kernel's judgement of a rung that drops
   * (docs/safety.md, "The ladder"). `except`: providers whose devices are left out (a reload
   * starting them judges them once it has applied; leaving devices out never drops the rung). Null
   * when the plan cannot be made (status says so: plan_failed).
   */
  ladderRung(except?: ReadonlySet<string>): LadderRung | null {
    // Contained: called from inventory listeners and a reload's end, which a throw must not end.
    try {
      const all = except === undefined || except.size === 0;
      const devices = all
        ? registeredDevices(this.#o.inventory)
        : registeredDevices(this.#o.inventory).filter((d) => !except.has(d.device.providerId));
      const plan = all ? this.plan() : planSafeState(this.#o.safeState, devices);
      const handles = devices.map((d) => deviceHandle(d.device.providerId, d.device.deviceId));
      const judged = new Set(handles);
      // The plan's uncovered also names the devices listed before and no longer listed: their
      // provider's outage is no change of what the ladder reaches.
      const uncovered = plan.uncovered.filter((u) => judged.has(u.device_handle));
      const untouched = new Set(uncovered.map(coverageKey));
      return {
        rung: plan.rung,
        setpointGaps: uncoveredFunctions(this.#o.safeState.setpoints, devices),
        reached: handles.filter((h, i) =>
          devices[i]!.functions.some((f) =>
            f.actuating && !untouched.has(coverageKey({ device_handle: h, function: f.name }))
          )
        ),
        uncovered,
      };
    } catch {
      return null;
    }
  }

  /** The plan as status shows it: every call with its arguments, and what it leaves untouched. */
  planView(): EstopPlanView {
    return planViewOf(this.plan(), registeredDevices(this.#o.inventory));
  }

  /**
   * A configuration reload failed to start `providerId` (restarted or added;
   * ProviderRegistry.onStartFailed): the plan is logged again (as for any change, within
   * PLAN_LOG_INTERVAL_MS), so the last one names the failure, not "being restarted".
   */
  providerStartFailed(providerId: string): void {
    this.#planChanged(
      `provider ${namedProviderId(providerId)} failed to start at a configuration reload`,
    );
  }

  /**
   * Logs the plan (one line per call) and its gaps; done once at start-up and, after that,
   * whenever a provider's inventory changes. Also logs expectations that do not resolve. Throws
   * what the logger or the plan throws: at start-up that fails the start (src/app/kernel.ts); the
   * logs after a change are contained (#logPendingPlan).
   */
  logPlan(why: string): void {
    this.#logPlanChanges = true;
    const view = this.planView();
    this.#log.info(
      `e-stop plan (${why}): rung '${view.rung}', ${view.calls.length} call(s), ${view.uncovered.length} actuating function(s) untouched`,
    );
    for (const c of view.calls) {
      this.#log.info(
        `e-stop plan call: ${quoteName(c.device_handle)} ${quoteName(c.function)}(${
          Object.entries(c.args).map(([k, v]) => `${quoteName(k)}=${toJsonText(scalarOf(v))}`)
            .join(", ")
        })`,
      );
    }
    if (view.rung === "none") {
      // Logged while latched too (an inventory change): the latch is not to come, it is in force.
      this.#log.warn(
        this.#state === "latched"
          ? "safe-state ladder resolves to none: the e-stop is latched, and no call secures a " +
            "device that answers again while it stays latched"
          : "safe-state ladder resolves to none: an e-stop will latch without actuating",
      );
    } else if (view.uncovered.length > 0) {
      this.#log.warn(uncoveredWarning(view.rung, view.uncovered));
    }
    const devices = registeredDevices(this.#o.inventory);
    // Judged against the providers whose inventory is known (inventoryUnknown): one configured
    // that has not listed its inventory while it is not up (a reload restarting or starting it,
    // its start failed) is down, not misconfigured -- its checks say unreachable; judged again
    // once it lists its inventory. One that listed no device and went down is judged.
    const judged = this.#o.safeState.expect.filter((e) =>
      !inventoryUnknown(this.#o.inventory, e.providerId)
    );
    for (const problem of unresolvedExpectations(judged, devices)) {
      this.#log.warn(`safe-state expectation does not resolve: ${problem}`);
    }
    // The devices status names (estop.unverified_devices): the listed ones no expectation covers,
    // then those the ladder is to secure that no provider lists (listed before, or named by the
    // safety config), each with why it is not listed.
    const unverified = this.#unverified(this.plan());
    if (unverified.length > 0) {
      this.#log.warn(
        `no safe-state expectation covers ${unverified.length} actuating device(s): ${
          namedList(
            unverified.map((u) =>
              u.reason === UNVERIFIED_NO_EXPECTATION
                ? quoteName(u.device_handle)
                : `${quoteName(u.device_handle)} (${u.reason})`
            ),
            MAX_NAMED_IN_WARNING,
          )
        } (an e-stop cannot verify them; add safety.safe_state.expect entries)`,
      );
    }
  }

  async trigger(
    reason?: string | PromiseLike<string | undefined>,
    options: EstopTriggerOptions = {},
  ): Promise<EstopResult> {
    // Synchronous, before any await: latch (the gate refuses racing calls from here on), then
    // FAULT (listeners halt the tree in the same step).
    const latches = this.#state !== "latched";
    this.#state = latchTransition(this.#state, "trigger");
    this.#triggerCount++;
    if (latches) this.#latchNo++;
    // The stop that answers this press is taken here, before anything that calls out: the stop
    // queued and not begun yet, which this press joins (it begins after this press, so its answer
    // is of a stop begun after it), else a new one, queued behind the stop under way (#queueStop).
    // A mode listener that triggers again inside enterFault (below) joins this press's stop. Were
    // it ahead, it would wait for the hooks of this trigger's FAULT entry, which only this stop
    // runs: both would wait FAULT_HOOKS_ANSWER_WAIT_MS. What this press takes at its latch (its
    // FAULT entry, its holds, its drains) is merged into that stop in this same synchronous step,
    // before the stop begins (#joinFault, #joinLadder, #joinDrains).
    const cause = options.cause ?? ESTOP_CAUSE_API;
    const stop = this.#pendingStop ?? this.#queueStop(cause);
    // A press that latches it again (a clear came after the press that queued the stop it joins)
    // gives that stop its cause: the cause status shows from now on, that of the latch in force
    // its ladder answers; the released latch's press was answered by the stop it was made for.
    // One assignment to the stop not begun yet; nothing waits for it.
    if (latches) stop.cause = cause;
    // The calls admitted before the latch, taken at the latch: a reload that removes or restarts
    // a provider before this stop's turn still has its drain wait for them.
    this.#joinDrains(stop, this.#drainsFromLatch());
    // From the latch on, the ladder starts whatever fails before it (a port that throws, the clock
    // included): a latch without its stop would leave the machine as it was. Each step is
    // contained on its own, so an audit that throws neither skips FAULT nor the change's
    // announcement; each failure logged.
    const contained = <T>(step: string, run: () => T): T | null =>
      this.#contained(step, run, "the safe-state ladder runs");
    // A clock that failed is asked once more; if it fails again the time is unknown: status keeps
    // the latch time it had (null on a first trigger) and the announcement is skipped (logged).
    const readClock = () => this.#transitionAt(this.#o.clock.nowMs());
    const latchedAtMs = contained("reading the clock", readClock) ??
      contained("reading the clock again", readClock);
    if (latchedAtMs !== null) this.#latchedAtMs = latchedAtMs;
    // Status keeps what latched it: a later trigger while latched does not replace the cause.
    this.#cause ??= cause;
    const text = typeof reason === "string" ? reason : undefined;
    const source = options.source ?? estopSource(cause);
    contained(
      "logging the latch",
      () =>
        this.#log.warn(
          `E-STOP latched${text ? `: ${providerTextWithin(text, ESTOP_LOGGED_REASON_CHARS)}` : ""}`,
        ),
    );
    // Recorded as decided (the latch), before anything physical: the ladder's calls follow
    // as their own entries (origin estop).
    contained("auditing the latch", () =>
      this.#o.audit?.record({
        action: "estop",
        origin: source,
        outcome: "accepted",
        args: { reason: text ?? null, cause },
        latency_ms: 0,
      }));
    // The reason is on the line above; the mode manager logs the transition "(e-stop)".
    const fault = contained(
      "entering FAULT",
      () => this.#o.modes?.enterFault("e-stop", { kind: "estop", cause }, latchedAtMs) ?? null,
    );
    // The stop makes the hooks into FAULT after its ladder: held from here until their run has
    // begun, so that a reload stopping a provider while the ladder runs waits for them too.
    const hooksHeld = fault === null ? null : contained(
      "holding the hook calls into FAULT",
      () => this.#o.modes?.holdFaultHookCalls?.() ?? null,
    );
    contained("joining its FAULT entry to the stop", () => this.#joinFault(stop, fault, hooksHeld));
    // So are its ladder's calls, which it queues a turn later (or after the stop under way): a
    // reload stopping a provider meanwhile waits for them. Only counted: nothing waits for it.
    contained("holding the ladder's calls", () => this.#joinLadder(stop));
    contained("announcing the latch", () => {
      if (latchedAtMs === null) throw new Error("the time of the latch is unknown");
      this.#o.bus?.publish({
        kind: "estop_change",
        latched: true,
        reason: text ?? null,
        cause,
        timestamp_ms: latchedAtMs,
      });
    });
    // Told whether or not the change was announced (a clock that failed twice: no time, no
    // `estop_change`): what follows the latch (the Sparkplug node metrics) still learns of it.
    if (latches) this.#tellLatch(true);
    contained("onLatched", () => options.onLatched?.());
    if (typeof reason !== "string" && reason !== undefined) {
      contained(
        "following the reason still arriving",
        () => this.#followReason(reason, source, cause, latchedAtMs),
      );
    }
    return await stop.answer;
  }

  /**
   * Queues a new stop (steps 2-4) for a press whose `cause` is this: behind the stop under way, if
   * any (its whole stop: ladder, hooks, read-back), else at once (the next microtask). It waits for
   * its turn as #pendingStop, which the presses until then join; at its turn it begins with what
   * they merged into it. Synchronous.
   */
  #queueStop(cause: string): QueuedStop {
    // A stop under way runs first (its hooks and read-back too): this one's ladder waits for it.
    const behindStop = this.#stopsUnderWay > 0;
    this.#stopsRunning++;
    this.#stopsUnderWay++;
    const answer = this.#stopTail.then(() => {
      // Begun: what it runs is fixed now, and a press from here on queues the next stop.
      if (this.#pendingStop === queued) this.#pendingStop = null;
      return this.#stop(queued);
    }).finally(() => {
      this.#stopsRunning--;
      this.#stopsUnderWay--;
    });
    const queued: QueuedStop = {
      cause,
      behindStop,
      fault: null,
      hooksHeld: null,
      ladderHeld: null,
      drains: new Map(),
      drainsUnlisted: false,
      answer,
    };
    this.#stopTail = answer.catch(() => {});
    this.#pendingStop = queued;
    return queued;
  }

  /**
   * A press's FAULT entry and its hold on the hook calls into FAULT (`held`), merged into the stop
   * that answers it, not begun yet. It runs the hooks of one entry: the first press's, unless a
   * later press committed FAULT where that one found FAULT standing (or had none: its modes port
   * threw) -- the entry whose hooks nobody else runs. The hold kept is that entry's press's (or
   * the first taken); every other is let go at once (the stop's covers the same entry, the latest).
   */
  #joinFault(stop: QueuedStop, fault: FaultEntry | null, held: (() => void) | null): void {
    const release = (h: (() => void) | null) =>
      this.#contained(
        "releasing the hold on the hook calls into FAULT",
        () => h?.(),
        "a reload's wait for them ends at its bound",
      );
    if (
      fault !== null && (stop.fault === null || (fault.committed && !stop.fault.committed))
    ) {
      stop.fault = fault;
      release(stop.hooksHeld);
      stop.hooksHeld = held;
    } else if (stop.hooksHeld === null) {
      stop.hooksHeld = held;
    } else {
      release(held);
    }
  }

  /**
   * A press's ladder calls held from its latch (#latchLadderCounts), merged into the stop that
   * answers it, not begun yet: one hold per stop, per provider as many calls as the most any of
   * its presses counted (the plan may have grown between them), so the holds do not grow with the
   * presses. Synchronous; nothing on the stop path waits for it.
   */
  #joinLadder(stop: QueuedStop): void {
    const counts = this.#latchLadderCounts();
    const held = stop.ladderHeld;
    if (held === null || !this.#ladderHolds.has(held)) {
      stop.ladderHeld = this.#holdLadder(counts, stop.behindStop);
      return;
    }
    for (const [id, n] of counts) {
      const more = n - (held.counts.get(id) ?? 0);
      if (more <= 0) continue;
      held.counts.set(id, n);
      this.#countLadderCalls(id, more);
    }
  }

  /**
   * A press's drains (#drainsFromLatch; null: the providers could not be listed), merged into the
   * stop that answers it, not begun yet: per provider the first press's that listed it. A later
   * press's drain of the same provider would add only calls admitted since that press latched:
   * while its stop is under way the latch or FAULT holds (re-arming waits for the stop), so they
   * are calls that do not actuate; and the barrier behind the provider's queue is taken when the
   * stop begins, behind every call queued by then. Bounded by the providers, not the presses.
   */
  #joinDrains(stop: QueuedStop, drains: readonly LatchDrain[] | null): void {
    if (drains === null) {
      stop.drainsUnlisted = true;
      return;
    }
    for (const d of drains) if (!stop.drains.has(d.id)) stop.drains.set(d.id, d);
  }

  /**
   * A trigger's reason still arriving (an HTTP body): logged and audited when it arrives, and
   * handed to the reason listeners now (in the trigger's own synchronous step). Never rejects
   * later: what fails once the reason arrives is logged.
   */
  #followReason(
    reason: PromiseLike<string | undefined>,
    source: AuditOrigin,
    cause: string,
    latchedAtMs: number | null,
  ): void {
    const arriving = Promise.resolve(reason).then((r) => r || null, () => null);
    // The reason's audit entry measures its latency from the latch; only that latency needs the
    // time. A clock that fails is asked once more; when it fails again the entry is written all
    // the same, without a latency (null: none invented), and the listeners are still told.
    const latchedMono = this.#readMono(
      "e-stop reason",
      "e-stop reason: its audit latency is left out",
    );
    void arriving.then((r) => {
      if (!r) return;
      this.#stopLog.warn(`E-STOP reason: ${providerTextWithin(r, ESTOP_LOGGED_REASON_CHARS)}`);
      const arrivedMono = latchedMono === null
        ? null
        : this.#readMono("e-stop reason", "e-stop reason: its audit latency is left out");
      // The latch's entry was written before the reason was known: a second entry of the same
      // stop (function "reason") carries it.
      this.#o.audit?.record({
        action: "estop",
        origin: source,
        outcome: "accepted",
        function: "reason",
        args: { reason: r, cause },
        latency_ms: latchedMono === null || arrivedMono === null
          ? null
          : Math.round(arrivedMono - latchedMono),
      });
    }).catch((err) => {
      try {
        this.#stopLog.error(`e-stop: recording the reason failed: ${errorMessage(err)}`);
      } catch { /* a logger that throws: never an unhandled rejection (it ends the runtime) */ }
    });
    for (const l of this.#reasonListeners) {
      try {
        l(arriving, cause, latchedAtMs);
      } catch (err) {
        this.#stopLog.warn(`e-stop reason listener failed: ${errorMessage(err)}`);
      }
    }
  }

  /**
   * Replaces safety.safe_state (configuration reload): the plan is recomputed and logged. A stop
   * running now finishes with the safe state it started with (its plan, then its read-back).
   * While latched, each provider up now whose ladder calls the new plan changes is secured again
   * with it (#providerAvailable: its calls, then its read-back). `returned`: the providers the same
   * reload started before this applies (its providers section comes first), secured while latched
   * with the plan in force then; each whose calls it leaves
   * alone but whose expectations it changes is read back again against the new ones once its
   * securing run has ended. Any other provider whose expectations it changes (up all along, or
   * brought back earlier) is read back against the new ones too, after a stop that runs, so status
   * never shows checks of expectations no longer in force. Resolves, per such run, like `securing`
   * (with no calls for a read-back only).
   */
  reconfigure(
    safeState: SafeStateConfig,
    returned: readonly ProviderSummary[] = [],
  ): Promise<EstopAction[]>[] {
    const latched = this.#state === "latched";
    const started = new Set(returned.map((h) => h.id));
    // Every provider up now: one the reload started, or up all along (the latch's stop made the
    // old plan's calls to it), or back before (secured with the old plan).
    const up = latched ? this.#o.inventory.providers().filter((h) => h.available) : [];
    const before = up.map((h) => callsText(this.#callsOf(h.id)));
    const previous = this.#o.safeState;
    this.#o = { ...this.#o, safeState };
    this.#planChanged("configuration reloaded");
    if (!latched) return [];
    const runs = up.flatMap((host, i) => {
      const secured = this.#secureRuns.get(host);
      if (callsText(this.#callsOf(host.id)) !== before[i]) {
        this.#providerAvailable(
          host,
          started.has(host.id)
            ? "came back before a reload changed its ladder calls"
            : LADDER_RELOADED,
        );
        // The hooks into FAULT follow its new ladder calls, as they follow a stop's. Contained:
        // a modes port that throws for one provider must not keep the next from being secured,
        // nor may the line saying so when the logger fails too (#stopLog).
        try {
          this.#o.modes?.ladderReloaded?.(host);
        } catch (err) {
          this.#stopLog.error(
            "e-stop latched: re-applying the hooks into FAULT for provider " +
              `${namedProviderId(host.id)} after a reload of its ladder calls failed: ` +
              errorMessage(err),
          );
        }
        // Read back by its securing run (one waiting for its turn takes the new plan too: the
        // reload waits for it as for a new one, and counts its calls).
        started.add(host.id);
        const run = this.#secureRuns.get(host);
        return run !== undefined && (run !== secured || !run.started) ? [run.promise] : [];
      }
      if (!started.has(host.id)) return [];
      // The same calls, other expectations: read back again against those in force, once its
      // securing run (and its read-back of the old ones) has ended. A run still waiting for its
      // turn takes the safe state in force then.
      const used = secured?.secured;
      if (
        used === undefined
          ? secured?.started !== false || secured.latchNo !== this.#latchNo
          : used.latchNo !== this.#latchNo
      ) {
        // Secured under a latch released since (latched again): its read-back is skipped, and the
        // new latch's stop, begun before this reload, read back the old ones; so did it for one
        // secured by none (back while released, or released at its run's turn or before, its run
        // then skipped, then pressed; one made at its turn under the new latch, its stop not
        // begun, reads back the list in force then). Read back as a provider the reload did not
        // start (below: no calls, of the latch in force).
        started.delete(host.id);
        return [];
      }
      if (used === undefined) {
        // Still waiting for its turn (of this latch): its read-back checks the expectations in
        // force then. The reload waits for it when it changed them (its calls are its return's).
        return expectText(previous, host.id) === expectText(safeState, host.id)
          ? []
          : [secured!.promise.then(() => [])];
      }
      if (expectText(used.safeState, host.id) === expectText(safeState, host.id)) return [];
      return [
        secured!.promise.then(async (actions) => {
          // Its read-back (or a stop's), begun after this reload -- it waited for a stop under
          // way --, read the list in force back whole (this reload's, or a later reload's: that
          // one is what would be read now): read again, it would be a second record of the same
          // list and of the run's calls.
          if (this.#verified?.expect === this.#o.safeState.expect) return [];
          await this.#reverify(host.id, actions, used.rung, safeState, used.latchNo);
          return [];
        }),
      ];
    });
    // The providers it did not start whose expectations it changed: read back against the new
    // ones (one batch; the whole new list is read, replacing the checks of the old one), of the
    // latch in force: released (latched again) before its turn, it is skipped -- the new latch's
    // stop, begun after this reload, reads back the new list itself (one record per latch).
    const changed = [...new Set([...previous.expect, ...safeState.expect].map((e) => e.providerId))]
      .filter((id) => !started.has(id) && expectText(previous, id) !== expectText(safeState, id));
    if (changed.length > 0) {
      const rung = this.plan().rung;
      let done: Promise<void> = Promise.resolve();
      for (const id of changed) {
        done = this.#reverify(id, [], rung, safeState, this.#latchNo, EXPECTATIONS_RELOADED);
      }
      runs.push(done.then(() => []));
    }
    return runs;
  }

  /**
   * The securing run begun when `host` last became AVAILABLE, if it was latched then: resolves
   * with its ladder calls once its expectations have been read back again (a configuration reload
   * waits for the providers it started). Null when it last came up while released.
   */
  securing(host: ProviderSummary): Promise<EstopAction[]> | null {
    return this.#secureRuns.get(host)?.promise ?? null;
  }

  /**
   * Waits for the stop actions to `providerId` under way now to finish: the ladder calls running
   * or queued on it (a stop's, a securing run's; not those decided later), those decided and not
   * queued yet (#ladderHolds: a stop's from its latch, a securing run's from its provider's
   * return), and the hook calls into FAULT to it running or queued
   * (EstopModes.faultHookCallsSettled: the e-stop's, an operator's FAULT, those made again for a
   * provider that comes back), all at once, bounded by what is left to run on it now: those calls
   * (at least 1) x one call's worst case (stopActionWorstCaseMs of its provider's timeout_ms: the
   * call on the wire ahead, then its own deadline) + DRAIN_MARGIN_MS, at most
   * STOP_ACTIONS_WAIT_MAX_MS but never less than one call's -- STOP_ACTIONS_WAIT_MAX_MS itself
   * when it waits for a stop triggered while another ran (its ladder follows that whole stop): a
   * reload waits so before it stops that provider. `capMs` (default none) cuts that bound, one
   * call's included (a runtime's stop: what its shutdown budget leaves for the wait); `until`
   * (default none) ends it once it resolves (a runtime's stop: a second stop signal). Null at once
   * when none runs. Never rejects, and neither the ladder nor the hooks ever wait for it.
   */
  async stopActionsSettled(
    providerId: string,
    capMs: number = Infinity,
    until?: Promise<unknown>,
  ): Promise<StopActionsWait | null> {
    const what = `waiting for the stop actions to ${namedProviderId(providerId)}`;
    const tail = this.#providerTails.get(providerId);
    // Ladder calls decided and not queued yet (a trigger's since its latch, a securing run's since
    // its provider's return): waited for once queued, with those queued before them.
    const holds = [...this.#ladderHolds].filter((h) => (h.counts.get(providerId) ?? 0) > 0);
    const hookCalls = this.#contained(
      `${what}: reading its hook calls into FAULT`,
      () => this.#o.modes?.faultHookCallsSettled?.(providerId) ?? null,
      "the reload does not wait for them",
    );
    const ladder = tail !== undefined || holds.length > 0;
    if (!ladder && (hookCalls === null || hookCalls === undefined)) return null;
    const host = this.#contained(
      `${what}: reading its provider`,
      () => this.#o.inventory.provider(providerId),
      "the reload goes on",
    );
    if (host === null || host === undefined) return null;
    // A port that throws counts its calls as none: the wait is then one call's bound.
    const hooksLeft = this.#contained(
      `${what}: counting its hook calls into FAULT`,
      () => this.#o.modes?.faultHookCallsLeft?.(providerId) ?? 0,
      "the reload waits for one call's bound",
    ) ?? 0;
    const hooks = Number.isFinite(hooksLeft) && hooksLeft > 0 ? hooksLeft : 0;
    const calls = Math.max(1, (this.#ladderCallsLeft.get(providerId) ?? 0) + hooks);
    const callMs = stopActionWorstCaseMs(host.config.timeoutMs);
    // A stop triggered while another was under way queues its calls once that one has answered
    // (its calls to every provider, its hooks, its read-back): not counted here, the cap bounds it.
    const boundMs = Math.min(
      capMs,
      Math.max(
        callMs + DRAIN_MARGIN_MS,
        holds.some((h) => h.behindStop)
          ? STOP_ACTIONS_WAIT_MAX_MS
          : Math.min(STOP_ACTIONS_WAIT_MAX_MS, calls * callMs + DRAIN_MARGIN_MS),
      ),
    );
    const unknown = `${what}: how long it took is left out`;
    const startedAt = this.#readMono(what, unknown);
    const ladderDone = holds.length === 0
      ? tail
      : Promise.all(holds.map((h) => h.queued.promise)).then(() =>
        this.#providerTails.get(providerId)
      );
    const both = Promise.all([ladderDone, hookCalls?.catch(() => {})]).then(() => true as const);
    const ended = until === undefined
      ? both
      : Promise.race([both, until.then(() => "cut" as const, () => "cut" as const)]);
    let outcome: true | "cut" | false = false;
    try {
      outcome = await raceTimeout(this.#o.clock, ended, boundMs, false);
    } catch (err) {
      // A clock whose timer fails bounds nothing: the reload does not wait then.
      this.#stopLog.error(`e-stop: ${what} failed: ${errorMessage(err)}; the reload goes on`);
    }
    const endedAt = startedAt === null ? null : this.#readMono(what, unknown);
    const waitedMs = startedAt === null || endedAt === null
      ? null
      : Math.max(0, Math.round(endedAt - startedAt));
    return {
      ladder,
      hooks: hookCalls !== null && hookCalls !== undefined,
      settled: outcome === true,
      ...(outcome === "cut" ? { cut: true as const } : {}),
      waitedMs,
      boundMs,
    };
  }

  /** Whether a read-back readBackSettled would wait for is under way (a stop's, or outside one). */
  get readBackUnderWay(): boolean {
    return this.#stopsUnderWay > 0 || this.#readBacksUnderWay.size > 0;
  }

  /**
   * Waits, before a runtime's stop stops the providers, for the e-stop's stops under way to end:
   * their read-back of the safe state (step 4), which follows their ladder and hooks (a stop waits
   * for those first: stopActionsSettled), answered, published and audited -- a provider stopped
   * under it would have it say `unreachable` of a safe state the runtime's own stop did not let it
   * read. So too for the read-backs under way outside a stop (#readBacksUnderWay): the securing
   * runs of providers that came back while latched, and the re-verifications asked (a reload's);
   * cut, their record and audit entry would be lost or say `unreachable`. Bounded
   * (ReadBackWait.boundMs; `capMs`: what the stop's budget leaves); `until` (a second stop signal)
   * ends it at once. Null at once when none is under way. Never rejects.
   */
  async readBackSettled(
    capMs: number = Infinity,
    until?: Promise<unknown>,
  ): Promise<ReadBackWait | null> {
    const stops = this.#stopsUnderWay;
    const others = [...this.#readBacksUnderWay];
    if (stops === 0 && others.length === 0) return null;
    // The securing runs' read-backs join one batch (those of one plan and latch): one more.
    const batches = others.length - this.#securingUnderWay + (this.#securingUnderWay > 0 ? 1 : 0);
    const what = "waiting for the e-stop's read-back";
    const unknown = `${what}: how long it took is left out`;
    const boundMs = Math.max(
      0,
      Math.min(
        capMs,
        (stops + batches) * (this.#o.safeState.verifyTimeoutMs + READ_BACK_WAIT_MARGIN_MS),
      ),
    );
    const startedAt = this.#readMono(what, unknown);
    const done = Promise.all([this.#stopTail, ...others]).then(() => true as const);
    const ended = until === undefined
      ? done
      : Promise.race([done, until.then(() => "cut" as const, () => "cut" as const)]);
    let outcome: true | "cut" | false = false;
    try {
      outcome = await raceTimeout(this.#o.clock, ended, boundMs, false);
    } catch (err) {
      // A clock whose timer fails bounds nothing: the stop does not wait then.
      this.#stopLog.error(`e-stop: ${what} failed: ${errorMessage(err)}; the stop goes on`);
    }
    const endedAt = startedAt === null ? null : this.#readMono(what, unknown);
    return {
      settled: outcome === true,
      ...(outcome === "cut" ? { cut: true as const } : {}),
      waitedMs: startedAt === null || endedAt === null
        ? null
        : Math.max(0, Math.round(endedAt - startedAt)),
      boundMs,
    };
  }

  clear(source: AuditOrigin = { kind: "http" }): { latched: false } {
    const was = this.#state;
    // Recorded as decided, before the release. Contained as the latch's entry is: an audit sink
    // that throws must not leave the runtime unreleasable (the operator's deliberate act), nor
    // release it silently -- one ERROR line says the release's audit entry is lost, the release
    // goes on (and is logged and announced as usual).
    this.#contained(
      "auditing the release",
      () =>
        this.#o.audit?.record({
          action: "estop_clear",
          origin: source,
          outcome: "accepted",
          args: { was_latched: was === "latched" },
          latency_ms: 0,
        }),
      "its audit entry is lost (the release goes on)",
    );
    this.#state = latchTransition(this.#state, "clear");
    this.#latchedAtMs = null;
    this.#cause = null;
    this.#causeRetired = null;
    if (was === "latched") {
      // The release is in force: neither a logger nor a clock that fails may make clear() fail
      // as if it were not, nor keep the release from being announced (#stopLog: a line the
      // logger fails to write is lost).
      this.#stopLog.warn("E-stop latch cleared (mode unchanged; re-arm deliberately)");
      this.#deviceReturnLogs.endAll();
      // A clock that fails is asked once more; if it fails again the release is not announced
      // (no invented time), an ERROR line says so (status shows it).
      const now = this.#readNow(
        "e-stop clear",
        "e-stop clear: the release is in force but not announced",
      );
      const timestampMs = now === null ? null : this.#transitionAt(now);
      if (timestampMs !== null) {
        this.#o.bus?.publish({
          kind: "estop_change",
          latched: false,
          reason: null,
          cause: null,
          timestamp_ms: timestampMs,
        });
      }
      this.#tellLatch(false);
    }
    return { latched: false };
  }

  /**
   * Subscribes to the latch's changes (true: latched, false: released), each told once the change
   * is in force, after its `estop_change` -- also when that was not published (a clock that
   * failed twice: no time to date it). A listener that throws is logged; the others are told all
   * the same. Returns the unsubscribe function.
   */
  onLatchChange(listener: (latched: boolean) => void): () => void {
    this.#latchListeners.add(listener);
    return () => this.#latchListeners.delete(listener);
  }

  /** Tells the latch's listeners (onLatchChange); never throws. */
  #tellLatch(latched: boolean): void {
    for (const l of [...this.#latchListeners]) {
      try {
        l(latched);
      } catch (err) {
        this.#stopLog.error(`e-stop latch listener failed: ${errorMessage(err)}`);
      }
    }
  }

  /**
   * A configuration reload took alarm `alarmId` out (`removed`), or the alarm of that id now is
   * not the one it was (`changed`: another definition, or one added back after a removal). When
   * that alarm latched the e-stop now in force, status says so next to the cause
   * (`cause_alarm_retired`, the latest reload's word), so the cause does not point at an alarm that
   * is no longer there; the latch and its cause stand (a reload never undoes a stop). Never throws.
   */
  alarmRetired(alarmId: string, how: CauseAlarmRetired): void {
    if (this.#state !== "latched" || this.#cause !== `alarm:${alarmId}`) return;
    const was = this.#causeRetired;
    this.#causeRetired = how;
    if (was === how) return;
    this.#stopLog.warn(
      `e-stop latched by alarm ${alarmId}, which a reload ${this.#causeRetired}: ` +
        "the latch and its cause stand",
    );
  }

  /**
   * The latch and the plan. A plan that cannot be made (an inventory port that throws) must not
   * take the latch's status away exactly when an operator needs it: the status then shows the
   * plan a stop would run without the devices (#stopPlan: the declared hooks, else none), and
   * `plan_failed` says why (what is uncovered or unverified is then unknown: 0 and empty).
   */
  status(): EstopStatus {
    let planned: {
      plan: SafeStatePlan;
      view: EstopPlanView;
      unverified: UnverifiedDevice[];
      failed?: string;
    };
    try {
      const plan = this.plan();
      planned = { plan, view: this.planView(), unverified: this.#unverified(plan) };
    } catch (err) {
      const plan = planWithoutDevices(this.#o.safeState);
      planned = {
        plan,
        view: planViewOf(plan, []),
        unverified: [],
        failed: errorMessage(err),
      };
    }
    return {
      latched: this.#state === "latched",
      software_safe_state: planned.plan.rung,
      latched_at_epoch_ms: this.#latchedAtMs,
      uncovered_actuating_functions: planned.plan.uncovered.length,
      cause: this.#cause,
      cause_alarm_retired: this.#causeRetired,
      plan: planned.view,
      ...(planned.failed === undefined ? {} : { plan_failed: planned.failed }),
      unverified_devices: planned.unverified.map((u) => u.device_handle),
      unverified_reasons: planned.unverified,
      verification: this.#verified === null ? null : this.#statusVerification(this.#verified),
    };
  }

  /**
   * The devices an e-stop with `plan` cannot verify, and why (EstopStatus.unverified_devices):
   * a device no provider lists is unknown to the inventory, so it is named from what else says the
   * ladder is to secure it: the plan's calls, the safety config's calls (a setpoint rung 3 does not
   * apply) and the devices listed before (rung 3 zeroes listed devices only). Throws what the
   * inventory throws.
   */
  #unverified(plan: SafeStatePlan): UnverifiedDevice[] {
    const { expect, hooks, setpoints } = this.#o.safeState;
    const providers = this.#o.inventory.providers();
    const devices = providers.flatMap((p) => [...p.devices]);
    const before = this.#listedBefore.handles();
    return [
      ...unverifiedDevices(expect, devices).map((device_handle) => ({
        device_handle,
        reason: UNVERIFIED_NO_EXPECTATION,
      })),
      ...unlistedLadderDevices(
        expect,
        devices,
        [
          ...plan.calls.map((c) => c.label.device_handle),
          ...[...hooks, ...setpoints].map((c) => c.deviceHandle),
          ...before,
        ],
        (id) => providers.find((p) => p.id === id),
        {
          listedBefore: new Set(before),
          whyNotRunning: (providerId) => this.#o.inventory.whyNotRunning?.(providerId) ?? null,
          startFailure: (providerId) => this.#o.inventory.startFailure?.(providerId) ?? null,
          reloadStart: (providerId) => this.#o.inventory.reloadStart?.(providerId) ?? null,
        },
      ),
    ];
  }

  /**
   * Why a listed provider is not up, in its device conditions' words: the last reload failed to
   * start it (startFailureText), a running reload is restarting or starting it (reloadStart:
   * registered, not up yet; reloadStartWords), else its lifecycle ("is unavailable (DOWN)").
   */
  #providerDown(providerId: string, lifecycle: string): string {
    const failed = this.#o.inventory.startFailureText?.(providerId) ?? null;
    if (failed !== null) return failed;
    const start = this.#o.inventory.reloadStart?.(providerId) ?? null;
    return start !== null
      ? `provider ${namedProviderId(providerId)} ${reloadStartWords(start)}`
      : `provider ${namedProviderId(providerId)} is unavailable (${lifecycle})`;
  }

  /** The verification with each check's device availability now (EstopStatus.verification). */
  #statusVerification(s: VerificationState): StatusVerification {
    const v = verificationView(s);
    return {
      ...v,
      checks: v.checks.map((check, i) => {
        const e = s.expect[i];
        const why = e === undefined ? null : this.#deviceUnavailable(e.providerId, e.deviceId);
        return why === null
          ? { ...check, device_available: true }
          : { ...check, device_available: false, device_unavailable_reason: why };
      }),
    };
  }

  /**
   * Why the device cannot be read now, null while it is up: the device conditions' word
   * (`failing` or `down` and why), else the inventory's (its provider not AVAILABLE, or not
   * listing it) -- in the device conditions' words for a provider a reload restarts, starts or
   * failed to start (#providerDown). A condition port that throws must not take the status away:
   * the inventory's.
   */
  #deviceUnavailable(providerId: string, deviceId: string): string | null {
    try {
      const c = this.#o.devices?.condition?.(providerId, deviceId);
      if (c !== undefined) return c.kind === "up" ? null : `${c.kind}: ${c.reason}`;
    } catch { /* the inventory's word below */ }
    try {
      const host = this.#o.inventory.provider(providerId);
      if (host === undefined) {
        // Configured with no host registered (a reload restarting, starting or failed to register
        // it): lost, not gone -- said as its device conditions say it (whyNotRunning).
        const notRunning = this.#o.inventory.whyNotRunning?.(providerId) ?? null;
        return `down: ${notRunning ?? `provider ${namedProviderId(providerId)} is not configured`}`;
      }
      if (!host.available) return `down: ${this.#providerDown(providerId, host.lifecycle)}`;
      if (!host.devices.some((d) => d.device.deviceId === deviceId)) {
        return `down: not in the inventory of provider ${namedProviderId(providerId)}`;
      }
      return null;
    } catch (err) {
      // Nothing shows it can be read: not claimed available.
      return `unknown: the device inventory failed (${errorMessage(err)})`;
    }
  }

  /**
   * Steps 2-4 of the trigger (module comment), with what its presses merged into `queued` (it has
   * begun: none joins any more); its cause is that of the press that queued it, or of the latest
   * press joining it that latched again after a clear (QueuedStop.cause: the audit origin of its
   * ladder calls, whatever triggers while they run).
   */
  async #stop(queued: QueuedStop): Promise<EstopResult> {
    const { fault, cause, hooksHeld, ladderHeld } = queued;
    let ladder: {
      plan: SafeStatePlan;
      planFailed: string | null;
      actions: EstopAction[];
      drain: DrainReport;
    };
    let hooks: { failures: HookFailure[]; pending: boolean };
    // The safe state this stop starts with: a reload meanwhile (reconfigure) changes the next
    // stop's, not this one's read-back after its ladder.
    const safeState = this.#o.safeState;
    this.#ladderLatchNo = this.#latchNo;
    try {
      const { plan, failed } = this.#stopPlan(safeState);
      const [actions, drain] = await Promise.all([
        this.#runLadder(plan, cause, failed === null, ladderHeld),
        this.#drainAll([...queued.drains.values()], queued.drainsUnlisted),
      ]);
      ladder = { plan, planFailed: failed, actions, drain };
    } finally {
      // Queued by the ladder (which let it go), or never to be: not held past the ladder.
      this.#releaseLadder(ladderHeld);
      // Whatever the ladder did, even throw: FAULT without its stop actions would also hold every
      // FAULT request (an alarm's, forceFault) waiting for hooks that never run.
      hooks = fault ? await this.#faultHooks(fault, hooksHeld) : { failures: [], pending: false };
    }
    const { plan, planFailed, actions, drain } = ladder;
    const expect = safeState.expect;
    // Ordered by its start among the read-backs (#mergeVerification): no clock to fail here.
    const seq = ++this.#readBackSeq;
    const verification = await verifySafeState({
      reads: this.#o.reads,
      clock: this.#o.clock,
      expect,
      timeoutMs: safeState.verifyTimeoutMs,
      log: this.#readBackLog,
      ended: () => this.#readBacksEnded,
    });
    this.#mergeVerification(expect, expect.map((_, i) => i), verification, seq, {
      read_back: "stop",
      cause,
    });
    this.#reportVerification(verification, "e-stop verification");
    const result: EstopResult = {
      // As it stands now: a clear while this stop ran released it (the stop ran on all the same).
      latched: this.#state === "latched",
      software_safe_state: plan.rung,
      actions,
      uncovered_actuating_functions: plan.uncovered.length,
      uncovered: [...plan.uncovered],
      // After the ladder and the hooks: a modes port that throws must not take the answer away.
      // The mode unknown, FAULT is not claimed (a missing input counts as unsafe).
      fault_engaged: this.#contained(
        "reading the mode",
        () => this.#o.modes?.current(),
        "the answer does not claim FAULT",
      ) === "FAULT",
      hook_failures: hooks.failures,
      ...(hooks.pending ? { hooks_pending: true as const } : {}),
      drain,
      verification,
    };
    const warning = planFailed !== null
      ? planFailedWarning(plan.rung, planFailed)
      : plan.rung === "none"
      ? NO_SAFE_STATE_WARNING
      : plan.uncovered.length > 0
      ? uncoveredWarning(plan.rung, plan.uncovered)
      : undefined;
    if (warning !== undefined) {
      result.warning = warning;
      // Said after the read-back: not after the runtime's stop (#readBackLog).
      this.#readBackLog.warn(warning);
    }
    return result;
  }

  /**
   * The plan a stop runs (`safeState` is the one in force). One that cannot be made (an inventory
   * port that throws) must not take the stop away: the stop runs the safest plan it can make
   * without the devices (planWithoutDevices: rung 1, the hooks, when declared; else none), one
   * ERROR line says so, and `failed` says why (the answer's warning).
   */
  #stopPlan(safeState: SafeStateConfig): { plan: SafeStatePlan; failed: string | null } {
    try {
      return { plan: this.plan(), failed: null };
    } catch (err) {
      const plan = planWithoutDevices(safeState);
      const failed = errorMessage(err);
      this.#stopLog.error(
        `e-stop: making the safe-state plan failed: ${failed}; ${
          plan.rung === "hooks"
            ? "the 'hooks' rung runs its declared calls (they need no device inventory)"
            : "no safe-state call is made (every rung but 'hooks' needs the device inventory)"
        }`,
      );
      return { plan, failed };
    }
  }

  /**
   * The hooks into FAULT of `fault`, waited for at most FAULT_HOOKS_ANSWER_WAIT_MS as a whole
   * (each call has its own deadline, but a provider's calls run one after another): past that,
   * the failures known so far, pending. Never rejects: hooks that failed to run at all (their run
   * threw or rejected) are answered as the failures known then and one entry for them as a whole.
   * `held` (the trigger's holdFaultHookCalls) is released once their run has begun (it counts its
   * calls as it begins), or failed to.
   */
  async #faultHooks(
    fault: FaultEntry,
    held: (() => void) | null,
  ): Promise<{ failures: HookFailure[]; pending: boolean }> {
    const release = () =>
      this.#contained(
        "releasing the hold on the hook calls into FAULT",
        () => held?.(),
        "a reload's wait for them ends at its bound",
      );
    // FAULT stood already (a trigger while latched, or after another FAULT): its hooks, once run,
    // are made again after this ladder, which may have undone what they set -- a stop leaves the
    // machine as its ladder then the hooks do, however many triggers.
    // The answer says how the hooks left the machine after this stop: the failures of the run
    // made again when there is one (each hook call is made again, so an earlier failure either
    // repeats there or was mended), else those of the entry's own run.
    const again: HookFailure[] = [];
    let madeAgain = false;
    let done: Promise<HookFailure[]>;
    try {
      done = fault.committed ? fault.runHooks() : fault.runHooks().then((earlier) => {
        // A modes port that throws here must not take the answer away (its ladder has run): the
        // answer then has the failures of the entry's own run, and an ERROR line says so.
        const rerun = this.#contained(
          "making the hooks into FAULT again",
          () => this.#o.modes?.runFaultHooksAgain?.(again) ?? null,
          "the answer has the failures of their earlier run",
        );
        release();
        if (rerun === null) return earlier;
        madeAgain = true;
        return rerun;
      }, (err: unknown) => {
        release();
        throw err;
      });
    } catch (err) {
      release();
      done = Promise.reject(err);
    }
    // The entry's own run has begun (its calls counted): a run made again releases it above.
    if (fault.committed) release();
    // The failures known so far, read where a port that throws must take nothing away either:
    // one ERROR line, and the answer goes without them.
    const known = (then: string) =>
      this.#contained(
        "reading the failures of the hooks into FAULT",
        () => madeAgain ? [...again] : fault.hookFailuresSoFar(),
        then,
      ) ?? [];
    // Hooks that failed to run at all (a modes port that throws, at once or later) must not take
    // the answer away either: the latch, FAULT and the ladder's calls are in force. One ERROR line
    // (also when it comes after the answer); the answer lists the failures known then and one
    // entry for the hooks as a whole (which of their calls were made is unknown). Not
    // hooks_pending: that says they run on, and re-arming waits for them.
    const ran = done.catch((err: unknown) => {
      const e = toRuntimeError(err);
      this.#stopLog.error(`the hooks into FAULT failed to run: ${e.message}`);
      return [...known("the answer has only that they failed to run"), hooksFailedToRun(e)];
    });
    const failures = await raceTimeout(this.#o.clock, ran, FAULT_HOOKS_ANSWER_WAIT_MS, null);
    if (failures !== null) return { failures, pending: false };
    const soFar = known("the answer has none of them");
    this.#stopLog.warn(
      `e-stop: the hooks into FAULT had not finished within ${FAULT_HOOKS_ANSWER_WAIT_MS} ms; ` +
        `answering with the ${soFar.length} failure(s) so far (they run on)`,
    );
    return { failures: soFar, pending: true };
  }

  /**
   * `run`, a step of the stop path that calls out (a port): what it throws is logged as one ERROR
   * line (`then`: what happens instead) and gives null, so the stop goes on.
   */
  #contained<T>(step: string, run: () => T, then: string): T | null {
    try {
      return run();
    } catch (err) {
      this.#stopLog.error(`e-stop: ${step} failed: ${errorMessage(err)}; ${then}`);
      return null;
    }
  }

  /** Logs (`what`: how the lines begin) and publishes a verification. */
  #reportVerification(v: Verification, what: string): void {
    const failed = v.checks.filter((c) => c.outcome !== "verified");
    if (v.outcome === "verified") {
      this.#readBackLog.info(`${what}: verified after ${v.elapsed_ms} ms`);
    } else if (v.checks.length === 0) {
      // Nothing configured to read back (the start-up review warned of it): no read failed, so
      // no ERROR that reads as a failed read-back; what it means for the outputs is said.
      this.#readBackLog.warn(
        `${what}: unverifiable: safety.safe_state.expect lists no signal to read back, so the ` +
          `outputs' safe state is not verified`,
      );
    } else {
      this.#readBackLog.error(
        `${what}: ${v.outcome} after ${v.elapsed_ms} ms (${
          v.checks.length - failed.length
        }/${v.checks.length} verified)`,
      );
    }
    for (const c of failed) {
      this.#readBackLog.error(
        `${what} ${c.outcome}: ${namedSignalPath(c.signal)}: ${
          providerTextWithin(c.reason ?? "", ESTOP_LOGGED_CHECK_REASON_CHARS)
        }`,
      );
    }
    // Ended after the runtime's stop (endReadBackLines): status keeps it (GET /v0/estop), nothing
    // else -- no event for the run records or telemetry to write, no clock read that could log.
    if (this.#readBackLinesEnded) return;
    // On the stop path, after the ladder and the hooks: a clock that fails must not take the
    // trigger's answer away. It is asked once more; if it fails again the verification is not
    // published (no invented time), and an ERROR line says so (status shows it all the same).
    const wall = this.#readNow(what, `${what} not published`, this.#readBackLog);
    if (wall === null) return;
    // What a stop left behind, read back after it: dated no earlier than the trigger it verifies
    // (a step back of the wall clock during the stop, NTP, must not put it before that trigger),
    // and a release after it no earlier than it.
    const timestampMs = this.#transitionAt(wall);
    // Contained: a bus that throws (an injected one; EventBus itself catches its listeners') must
    // not take the trigger's answer away after the stop's calls were made, nor a re-verification's
    // audit entry. One ERROR line; status shows the verification all the same.
    this.#contained(
      `publishing ${what}`,
      () =>
        this.#o.bus?.publish({
          kind: "estop_verification",
          outcome: v.outcome,
          elapsed_ms: v.elapsed_ms,
          checks_total: v.checks.length,
          checks_verified: v.checks.length - failed.length,
          failed_signals: failed.map((c) => c.signal),
          timestamp_ms: timestampMs,
        }),
      "it is not published (status shows it)",
    );
  }

  /**
   * The ladder: fanned out per provider (declared order within a provider, behind ladder calls
   * still running on it), every call attempted. Actions are reported in plan order. Without
   * `uncoveredKnown` (a plan made without the devices) what it leaves untouched is unknown. `held`
   * (its stop's hold, #joinLadder) is let go once its calls are queued and counted.
   */
  async #runLadder(
    plan: SafeStatePlan,
    cause: string,
    uncoveredKnown: boolean,
    held: LadderHold | null,
  ): Promise<EstopAction[]> {
    // What it leaves untouched is the answer's warning, logged with it.
    const untouched = uncoveredKnown ? `${plan.uncovered.length}` : "an unknown number of";
    this.#stopLog.warn(
      `safe-state rung '${plan.rung}': ${plan.calls.length} call(s), ${untouched} actuating function(s) untouched`,
    );
    const actions: EstopAction[] = plan.calls.map((c) => ({ ...c.label, success: true }));
    const byProvider = new Map<string, number[]>();
    plan.calls.forEach((c, i) => {
      const id = providerOf(c);
      const group = byProvider.get(id);
      if (group) group.push(i);
      else byProvider.set(id, [i]);
    });
    const queued = [...byProvider].map(([id, indices]) => {
      let left = indices.length;
      this.#countLadderCalls(id, left);
      return this.#onProvider(id, async () => {
        try {
          for (const i of indices) {
            await this.#attempt(plan.calls[i]!, actions[i]!, plan.rung, cause);
            left--;
            this.#countLadderCalls(id, -1);
          }
        } finally {
          this.#countLadderCalls(id, -left);
        }
      });
    });
    // Queued and counted as they are now (the plan may differ from the latch's): the hold goes.
    this.#releaseLadder(held);
    await Promise.all(queued);
    return actions;
  }

  /** Adds `n` (less when negative) to the ladder calls left on `providerId` (#ladderCallsLeft). */
  #countLadderCalls(providerId: string, n: number): void {
    const left = (this.#ladderCallsLeft.get(providerId) ?? 0) + n;
    if (left > 0) this.#ladderCallsLeft.set(providerId, left);
    else this.#ladderCallsLeft.delete(providerId);
  }

  /**
   * Holds `counts` (per provider, ladder calls decided and not queued yet) in #ladderCallsLeft
   * until #releaseLadder: a reload's wait (stopActionsSettled) waits for them to be queued, then
   * for them. `behindStop`: they wait for a stop under way first. Synchronous; nothing on the stop
   * path waits for it.
   */
  #holdLadder(counts: Map<string, number>, behindStop: boolean): LadderHold {
    for (const [id, n] of counts) this.#countLadderCalls(id, n);
    const hold: LadderHold = { counts, behindStop, queued: Promise.withResolvers() };
    this.#ladderHolds.add(hold);
    return hold;
  }

  /** Lets a hold go (its calls queued and counted, or never to be): idempotent. */
  #releaseLadder(hold: LadderHold | null): void {
    if (hold === null || !this.#ladderHolds.delete(hold)) return;
    for (const [id, n] of hold.counts) this.#countLadderCalls(id, -n);
    hold.queued.resolve();
  }

  /**
   * The ladder calls of a stop latched now, to be held from its latch (#joinLadder, #holdLadder):
   * the plan's calls (the plan without the devices when it cannot be made, as the stop's) to each
   * provider up now. One down now fails its calls unsent (UNAVAILABLE) whatever a reload does, so
   * a reload restarting it does not wait; one that comes back before the ladder is held by its
   * securing run from its return. A provider whose availability cannot be read is held.
   */
  #latchLadderCounts(): Map<string, number> {
    let plan: SafeStatePlan;
    try {
      plan = this.plan();
    } catch {
      // The stop makes it again and says why it fails (#stopPlan).
      plan = planWithoutDevices(this.#o.safeState);
    }
    const counts = new Map<string, number>();
    for (const c of plan.calls) {
      const id = providerOf(c);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    for (const id of counts.keys()) {
      let up = true;
      try {
        up = this.#o.inventory.provider(id)?.available === true;
      } catch { /* held: its ladder call says what fails */ }
      if (!up) counts.delete(id);
    }
    return counts;
  }

  /**
   * The calls of a securing run of `providerId` decided now, held until it queues them (#secure):
   * the plan's calls to it now. Null when there are none, or the plan cannot be made (the run
   * fails and says so).
   */
  #holdSecuring(providerId: string): LadderHold | null {
    let n = 0;
    try {
      n = this.#callsOf(providerId).length;
    } catch { /* the run makes the plan again and fails with its ERROR line */ }
    return n === 0 ? null : this.#holdLadder(new Map([[providerId, n]]), false);
  }

  /** The plan's calls to one provider, in plan order (indexed once per plan, not per start). */
  #callsOf(providerId: string): readonly PlannedCall[] {
    const plan = this.plan();
    if (this.#planIndex?.plan !== plan) {
      const byProvider = new Map<string, PlannedCall[]>();
      for (const c of plan.calls) {
        const group = byProvider.get(providerOf(c));
        if (group) group.push(c);
        else byProvider.set(providerOf(c), [c]);
      }
      this.#planIndex = { plan, byProvider };
    }
    return this.#planIndex.byProvider.get(providerId) ?? [];
  }

  /**
   * Runs one ladder call of a plan whose rung is `rung`, for a stop whose cause is `cause` (its
   * audit origin: a reload meanwhile changes the plan a next trigger runs, and a trigger meanwhile
   * the cause of its own stop, not this one's) and records its outcome in `action` (never throws).
   */
  async #attempt(
    planned: PlannedCall,
    action: EstopAction,
    rung: SoftwareSafeState,
    cause: string,
  ): Promise<void> {
    try {
      await this.#run(planned, { kind: "estop", rung, cause });
    } catch (err) {
      const e = toRuntimeError(err);
      action.success = false;
      action.error = `${e.code}: ${e.message}`;
      const device = planned.kind === "zero"
        ? { providerId: planned.providerId, deviceId: planned.deviceId }
        : parseDeviceHandle(planned.call.deviceHandle);
      if (device !== null) {
        this.#contained(
          "noting the device that did not answer",
          () => this.#o.devices?.noteCallFailed?.(device.providerId, device.deviceId, err),
          "it is not secured again at its next answer",
        );
      }
      this.#stopLog.error(
        `safe-state call ${quoteName(action.device_handle)} ${quoteName(action.function)} ` +
          `failed: ${quoteProviderTextWithin(action.error, ESTOP_QUOTED_ERROR_CHARS)}`,
      );
    }
  }

  /**
   * Runs `work` after the ladder calls queued on `providerId` so far (at once when there are none:
   * a trigger's calls then queue on the provider before its drain barrier); later ones wait for it.
   */
  #onProvider<T>(providerId: string, work: () => Promise<T>): Promise<T> {
    const before = this.#providerTails.get(providerId);
    const run = before ? before.then(work) : work();
    const tail = run.then(() => {}, () => {});
    this.#providerTails.set(providerId, tail);
    void tail.then(() => {
      if (this.#providerTails.get(providerId) === tail) this.#providerTails.delete(providerId);
    });
    return run;
  }

  /**
   * `host` became AVAILABLE (or, `cause` says, a reload changed its ladder calls since, or its
   * device `returnedDevice` answers again: DEVICES_ANSWERING): while latched, and unless a securing
   * run of it begun under this latch is still waiting for its turn (it will find the provider up,
   * and take the plan then), one begins (#secure). A reason joining a waiting run adds its cause to
   * that run's line, each cause once in the order they joined (joinCauses, causesWhy: as the hook
   * calls into FAULT made again say theirs); a line with a cause other than device returns is said
   * at WARN, outside the device-return spell (the provider's own return ended that spell: the run
   * must not open another), and one a reload's ladder change joined is read back as the reload's.
   */
  #providerAvailable(
    host: ProviderSummary,
    cause: ProviderBackCause = PROVIDER_BACK_WHY,
    returnedDevice: string | null = null,
  ): void {
    const joining: ProviderBackCauses = {
      causes: [cause],
      ...(returnedDevice === null ? {} : { devices: [returnedDevice] }),
    };
    if (this.#o.inventory.provider(host.id) !== host) return;
    // A return while released is secured by nobody: an earlier return's run no longer says it
    // (the supervisor restarts a provider within the same host).
    if (this.#state !== "latched") return void this.#secureRuns.delete(host);
    const queued = this.#secureRuns.get(host);
    // One of a latch released since is skipped at its turn once this latch's stop has begun (its
    // calls right behind it), and a new one begins; before that stop begins, it is made at its
    // turn as a return under this latch (#secure): this return joins it, as it would a run of this
    // latch (a run of its own would make the same calls again right after it).
    if (
      queued && !queued.started &&
      (queued.latchNo === this.#latchNo || this.#ladderLatchNo !== this.#latchNo)
    ) {
      // Its line names every cause that joined it; a reload's ladder change is what the run does
      // now: its read-back says so.
      joinCauses(queued, joining);
      // Joined under this latch, it is this return's run, one of this latch: made at its turn
      // even once this latch's stop has begun (a reload starting the provider waits for its calls
      // and counts them). Its device-return spell, if any, is this latch's: a device return left
      // it one only when this return is one too (above).
      queued.latchNo = this.#latchNo;
      return;
    }
    const made = Promise.withResolvers<readonly CallConfig[]>();
    const run: SecureRun = {
      started: false,
      ...joining,
      latchNo: this.#latchNo,
      promise: Promise.resolve([]),
      ladder: made.promise,
    };
    // Not inside the host's own step of coming up: the calls start from the next microtask.
    // A securing run that fails (the plan cannot be made: an inventory port that throws) rejects
    // for whoever awaits it (a reload reports it) and is contained here: an unhandled rejection
    // would end the runtime (main.ts). One ERROR line; the run counts as ended, so the next
    // return secures the provider again, and whoever waits for its ladder calls is let go.
    // Its calls are held from this step, not from their queueing a microtask later: a reload that
    // stops the provider in this step waits for them too (a plan that cannot be made: none held,
    // the run fails below).
    const held = this.#holdSecuring(host.id);
    run.promise = Promise.resolve()
      .then(() => this.#secure(host, run, made.resolve, held))
      .catch(
        (err) => {
          this.#releaseLadder(held);
          run.started = true;
          run.laddered = true;
          made.resolve([]);
          const message = `e-stop latched: securing provider ${namedProviderId(host.id)} (${
            causesWhy(run.causes, run.devices?.map(namedDeviceId))
          }) failed: ${errorMessage(err)}; it is not known to be at the safe state`;
          this.#stopLog.error(message);
          throw internal(message, err);
        },
      );
    run.promise.catch(() => {});
    this.#secureRuns.set(host, run);
    const underWay = run.promise.catch(() => {}).finally(() => {
      this.#securingUnderWay--;
      this.#readBacksUnderWay.delete(underWay);
    });
    this.#securingUnderWay++;
    this.#readBacksUnderWay.add(underWay);
  }

  /**
   * Brings a provider that came up while latched to the safe state: the plan's calls for it, in
   * declared order behind ladder calls still running on it, every call attempted; then (still
   * latched) its expectations are read back again (#reverify). Resolves with the calls made;
   * `laddered` is told the declared ones once they have been made, before the read-back. `held`
   * (#holdSecuring, as it came back) is let go once its calls are queued and counted. Its line
   * says what brought it (causesWhy of its causes) as they stand at its turn (#providerAvailable).
   */
  async #secure(
    host: ProviderSummary,
    run: SecureRun,
    laddered: (made: readonly CallConfig[]) => void,
    held: LadderHold | null,
  ): Promise<EstopAction[]> {
    const id = host.id;
    let rung: SoftwareSafeState = this.plan().rung;
    let safeState = this.#o.safeState;
    let latchNo = this.#latchNo;
    let made: CallConfig[] = [];
    // Counted from its queueing as the plan's calls to it now, then as those it makes (held before
    // that from its return, #holdSecuring, let go once queued below).
    let left = this.#callsOf(id).length;
    this.#countLadderCalls(id, left);
    const queued = this.#onProvider(id, async () => {
      run.started = true;
      // Released since it was begun: the release ended its securing. Latched again, the new
      // latch's stop secures every provider up: once begun, its calls follow this run's turn
      // (skipped); still waiting for a stop under way (its whole stop), it would leave the
      // provider as it came back until then: secured now, as a return under the new latch
      // (its line at WARN: the return was seen under the released latch, whose spell ended).
      if (this.#securingEnded(run.latchNo) !== null) return null;
      // Its line, as its causes stand at its turn (none join it from here: started).
      const why = causesWhy(run.causes, run.devices?.map(namedDeviceId));
      // Its provider taken out by a reload before its turn (removed, or restarted: another host
      // under its id, secured by a run of its own once up): nothing of it is left to secure.
      // Dropped, counted as no calls, no read-back; one line (no failure: the reload chose it).
      if (this.#o.inventory.provider(id) !== host) {
        this.#stopLog.info(
          `e-stop latched: provider ${namedProviderId(id)} ${why}, but a configuration ` +
            "reload took it out before its securing run's turn: no longer listed, its " +
            "safe-state calls are not made",
        );
        return null;
      }
      const calls = this.#callsOf(id);
      this.#countLadderCalls(id, calls.length - left);
      left = calls.length;
      made = calls.flatMap((c) => c.kind === "declared" ? [c.call] : []);
      rung = this.plan().rung;
      safeState = this.#o.safeState;
      // Made for the latch in force: its cause (what latched it) is theirs, and so is their
      // read-back (a release ends it, a new latch reads back its own securing runs).
      latchNo = this.#latchNo;
      const latchCause = this.#cause ?? ESTOP_CAUSE_API;
      run.secured = { rung, safeState, latchNo };
      const line = `e-stop latched: provider ${namedProviderId(id)} ${why}; bringing it to ` +
        `the safe state (${calls.length} call(s))`;
      // In the device-return spell when begun for device returns only, none other joined, under
      // this latch: one begun under a released latch (made as a return under this one, above) is
      // said at WARN -- the release ended its spell. Not a cause: its line names no latch.
      if (onlyDeviceReturns(run.causes) && run.latchNo === this.#latchNo) {
        this.#deviceReturnLogs.fail(id, line);
      } else this.#stopLog.warn(line);
      const done: EstopAction[] = calls.map((c) => ({ ...c.label, success: true }));
      this.#stopsRunning++;
      this.#securingCalls.set(id, (this.#securingCalls.get(id) ?? 0) + 1);
      try {
        for (const [i, c] of calls.entries()) {
          // Released since its previous call (the operator owns the machine again), or latched
          // again with that latch's stop begun (its calls right behind this run): the rest are
          // not made, as a run released before its turn (above). The call on the wire then was
          // made and answered; it cannot be recalled. Resolves with the calls made.
          const ended = this.#securingEnded(latchNo);
          if (ended !== null) {
            this.#stopLog.warn(
              `e-stop: provider ${namedProviderId(id)}'s securing run ended after ${i} of ` +
                `${calls.length} safe-state call(s): ${ended}; ` +
                `the other ${calls.length - i} are not made`,
            );
            made = calls.slice(0, i).flatMap((c) => c.kind === "declared" ? [c.call] : []);
            return done.slice(0, i);
          }
          await this.#attempt(c, done[i]!, rung, latchCause);
          left--;
          this.#countLadderCalls(id, -1);
        }
      } finally {
        this.#stopsRunning--;
        const n = (this.#securingCalls.get(id) ?? 1) - 1;
        if (n > 0) this.#securingCalls.set(id, n);
        else this.#securingCalls.delete(id);
      }
      return done;
    }).finally(() => {
      this.#countLadderCalls(id, -left);
      left = 0;
      run.laddered = true;
      laddered(made);
    });
    this.#releaseLadder(held);
    const actions = await queued;
    if (actions === null) return [];
    // A reload's ladder change began it or joined it: its read-back is audited as the reload's,
    // whatever else its line names.
    const reason = run.causes.includes(LADDER_RELOADED)
      ? "ladder reloaded while latched"
      : undefined;
    await this.#reverify(id, actions, rung, safeState, latchNo, reason);
    return actions;
  }

  /**
   * Why a securing run made under latch `latchNo` ends before its next call, or null when it goes
   * on: the latch released since, or latched again with the new latch's stop begun (it secures
   * every provider up, its calls right behind the run). Read at its turn and between its calls,
   * never on the latch path.
   */
  #securingEnded(latchNo: number): string | null {
    if (this.#state !== "latched") return "the latch was released";
    if (this.#latchNo !== latchNo && this.#ladderLatchNo === this.#latchNo) {
      return "the latch was released and pressed again, and the new stop makes its own calls";
    }
    return null;
  }

  /**
   * Asks for `providerId`'s expectations to be read back again, with `actions` its securing calls.
   * Providers that come back while a re-verification waits for its turn join it: one runs at a
   * time, after the stop that was running when it was asked for (whose verification it merges
   * into), so a restart storm reads back in a few batches, not one per provider. `rung` is the
   * rung its securing calls ran with (the audit names it) and `safeState` the safe state of their
   * plan, whose expectations are read back: a provider secured under another rung or safe state
   * (a reload meanwhile) starts a batch of its own, and so does one secured under another latch
   * (`latchNo`: a release and a new press meanwhile; the released latch's batch is skipped). A
   * read-back with no calls (expectations reloaded) is of the latch in force when it is asked for.
   */
  #reverify(
    providerId: string,
    actions: readonly EstopAction[],
    rung: SoftwareSafeState,
    safeState: SafeStateConfig,
    latchNo: number,
    reason: string = AVAILABLE_WHILE_LATCHED,
  ): Promise<void> {
    const pending = this.#pendingReverify;
    if (
      pending?.rung === rung && pending.safeState === safeState && pending.reason === reason &&
      pending.latchNo === latchNo
    ) {
      // A provider back again before the batch ran (a restart storm): its calls add to those of
      // its securing run before, a failed one kept (the record says every call it made).
      const before = pending.providers.get(providerId) ?? [];
      pending.providers.set(providerId, [...before, ...actions]);
      return pending.done;
    }
    const batch: ReverifyBatch = {
      rung,
      safeState,
      latchNo,
      reason,
      providers: new Map([[providerId, actions]]),
      done: Promise.resolve(),
    };
    batch.done = Promise.all([this.#stopTail, this.#reverifyTail]).then(async () => {
      if (this.#pendingReverify === batch) this.#pendingReverify = null;
      await this.#runReverify(batch);
    }).catch((err) => {
      this.#readBackLog.error(`e-stop re-verification failed: ${toRuntimeError(err).message}`);
    });
    this.#pendingReverify = batch;
    this.#reverifyTail = batch.done;
    const underWay = batch.done.finally(() => this.#readBacksUnderWay.delete(underWay));
    this.#readBacksUnderWay.add(underWay);
    return batch.done;
  }

  /**
   * One re-verification: the batch's providers' expectations read back fresh, merged, logged,
   * published as `estop_verification` and audited. Those in force when it runs (a reload since
   * its securing calls were made changed what they must read back): when a reload changed the
   * expectations since the verification shown, that list is read back whole (it replaces the
   * shown one, whose checks were of another plan). Skipped once its latch is released (latched
   * again since: that latch's stop and securing runs read back their own), and, for a reload's
   * read-back with no calls, once the list in force has been read back whole since it was asked.
   */
  async #runReverify(batch: ReverifyBatch): Promise<void> {
    const shown = this.#verified;
    const released = batch.latchNo !== this.#latchNo;
    if (this.#state !== "latched" || released || shown === null) return;
    // The cause of the latch it reads back for, taken now: a release while it reads back (the
    // read-back is finished, shown and audited all the same) leaves no cause to name at its end.
    const cause = this.#cause ?? ESTOP_CAUSE_API;
    const ids = [...batch.providers.keys()];
    const safeState = this.#o.safeState;
    const expect = safeState.expect;
    // A reload's read-back with no calls (expectations reloaded) whose list in force has been read
    // back whole since it was asked (a stop begun after that reload -- one queued behind the stop
    // under way --, or a batch before it): nothing is left to read that is not fresher already;
    // read again, it would be a second event and record of the same list (one per latch).
    if (batch.reason === EXPECTATIONS_RELOADED && shown.expect === expect) return;
    const indices = expect.flatMap((e, i) =>
      expect !== shown.expect || ids.includes(e.providerId) ? [i] : []
    );
    // On the stop path: a clock that fails must not take the re-verification away (as the
    // trigger's). Asked once more; without a start it is audited without a latency (none
    // invented). Ordered by its start among the read-backs (#mergeVerification), clock or not.
    // The lines name the first MAX_NAMED_IN_WARNING providers, each cut as the e-stop cuts a
    // name, and count the rest (a restart storm of a large machine is one batch); the audit
    // record keeps every id (bounded by the providers configured).
    const named = namedList(ids, MAX_NAMED_IN_WARNING, namedProviderId);
    const what = `e-stop re-verification (${named})`;
    const seq = ++this.#readBackSeq;
    const startedAt = this.#readMono(what, `${what}: its start is unknown`, this.#readBackLog);
    const partial = await verifySafeState({
      reads: this.#o.reads,
      clock: this.#o.clock,
      expect: indices.map((i) => expect[i]!),
      timeoutMs: safeState.verifyTimeoutMs,
      log: this.#readBackLog,
      ended: () => this.#readBacksEnded,
    });
    const shownBefore = this.#mergeVerification(expect, indices, partial, seq, {
      read_back: "re-verification",
      provider_ids: ids,
      reason: batch.reason,
    });
    // Dropped by the merge (a newer read-back of another list is shown): not shown nor published
    // again, but its summary record still ends it, naming the read-back it was merged into (the
    // one status shows), whose verdict it carries.
    const mergedInto = shownBefore ? null : this.#verified!.by;
    const merged = verificationView(this.#verified!);
    const why = batch.reason === AVAILABLE_WHILE_LATCHED ? "back" : batch.reason;
    if (mergedInto === null) {
      this.#reportVerification(merged, `e-stop re-verification (${named} ${why})`);
    } else {
      this.#readBackLog.info(
        `e-stop re-verification (${named} ${why}): ended after a newer read-back ` +
          `(${readBackWords(mergedInto)}): merged into it, which status shows`,
      );
    }
    // Ended after the runtime's stop: its audit journal is closed, the entry not offered to it
    // (status keeps the verdict, as #reportVerification has it).
    if (this.#readBackLinesEnded) return;
    const actions = [...batch.providers.values()].flat();
    const failed = actions.filter((a) => !a.success).length;
    const endedAt = startedAt === null
      ? null
      : this.#readMono(what, `${what}: its audit latency is left out`, this.#readBackLog);
    // Contained as the latch's entry is: an audit sink that throws is one ERROR line naming the
    // entry lost, not "re-verification failed" from the batch's catch (it was read back, shown,
    // logged and published), and never reaches the batches after it.
    this.#contained(
      `auditing ${what}`,
      () =>
        this.#o.audit?.record({
          action: "estop",
          origin: { kind: "estop", rung: batch.rung, cause },
          outcome: failed === 0 ? "accepted" : "failed",
          args: { provider_ids: ids, reason: batch.reason },
          result: {
            actions: actions.length,
            actions_failed: failed,
            verification: merged.outcome,
            checks_total: merged.checks.length,
            checks_verified: merged.checks.filter((c) => c.outcome === "verified").length,
            ...(mergedInto === null ? {} : { merged_into: mergedInto }),
          },
          latency_ms: startedAt === null || endedAt === null
            ? null
            : Math.round(endedAt - startedAt),
        }),
      "its audit entry is lost (status shows its verdict)",
    );
  }

  /**
   * Merges a read-back of `expect[indices[k]]` (checks in that order), the `seq`th begun
   * (#readBackSeq), into what status shows: a check replaces the one shown unless that one comes
   * from a read-back begun later. A read-back of another expectation list (a trigger after a
   * reload of safety.safe_state, or one re-parsing the same list: another list all the same)
   * replaces it all, unless a check shown comes from a read-back begun later (dropped, false: an
   * older read-back ending last never replaces a newer one); a partial one of a list no longer
   * shown is dropped (false). `by` says which read-back it is (VerificationState.by).
   */
  #mergeVerification(
    expect: readonly SafeStateExpectation[],
    indices: readonly number[],
    v: Verification,
    seq: number,
    by: ReadBackOf,
  ): boolean {
    let shown = this.#verified;
    if (shown === null || shown.expect !== expect) {
      if (indices.length !== expect.length) return false;
      if (shown !== null && shown.seq.some((s) => s > seq)) return false;
      shown = this.#verified = {
        expect,
        checks: [...v.checks],
        seq: v.checks.map(() => seq),
        elapsedMs: v.elapsed_ms,
        by,
      };
      return true;
    }
    indices.forEach((index, k) => {
      if (shown.seq[index]! > seq) return;
      shown.checks[index] = v.checks[k]!;
      shown.seq[index] = seq;
    });
    shown.elapsedMs = v.elapsed_ms;
    shown.by = by;
    return true;
  }

  /**
   * Each provider's drain as of the latch (CallRouter.drainFrom): the providers listed then, and
   * those a reload took out and is still ending (a call one held when its session was closed may
   * still be carried out until its process has exited), and the calls sent to them so far; null
   * when they cannot be listed (the drain is then reported incomplete, with one ERROR line).
   */
  #drainsFromLatch(): LatchDrain[] | null {
    return this.#contained(
      "listing the providers to drain",
      () => {
        const listed = this.#o.inventory.providers();
        const ids = new Set(listed.map((h) => h.id));
        const stopping = (this.#o.inventory.stopping?.() ?? []).filter((h) => {
          if (ids.has(h.id)) return false;
          ids.add(h.id);
          return true;
        });
        return [...listed, ...stopping].map((h) => ({
          id: h.id,
          boundMs: h.config.timeoutMs + DRAIN_MARGIN_MS,
          wait: this.#o.router.drainFrom(h.id),
        }));
      },
      "the drain is reported incomplete",
    );
  }

  /**
   * Waits, per provider and bounded, for every call admitted before the latch to finish;
   * `unlisted`: a press could not list the providers (the drain is then incomplete).
   */
  async #drainAll(drains: readonly LatchDrain[], unlisted: boolean): Promise<DrainReport> {
    // Beside the ladder: a port that throws must not take the trigger's answer away (its calls
    // are made). Providers that could not be listed are named by none; a provider whose drain
    // fails is pending.
    if (unlisted && drains.length === 0) return { complete: false, pending_providers: [] };
    const pending: string[] = [];
    await Promise.all(
      drains.map(async ({ id, boundMs, wait }) => {
        try {
          if (await wait(boundMs)) return;
          this.#stopLog.error(
            `e-stop: in-flight calls to ${namedProviderId(id)} had not finished within ` +
              `${boundMs} ms`,
          );
        } catch (err) {
          this.#stopLog.error(
            `e-stop: waiting for the in-flight calls to ${namedProviderId(id)} failed: ` +
              errorMessage(err),
          );
        }
        pending.push(id);
      }),
    );
    return { complete: !unlisted && pending.length === 0, pending_providers: pending };
  }

  /**
   * One ladder call, audited with `source` (its stop's rung and cause). Its provider's queue takes
   * it before every call that is not a stop action, and never refuses it as full (CallRouter); a
   * provider that is down, or not configured, fails it at once.
   */
  #run(planned: PlannedCall, source: AuditOrigin): Promise<unknown> {
    if (planned.kind === "declared") {
      return runDeclaredCall(this.#o.router, planned.call, "safety", source);
    }
    return this.#o.router.call({
      providerId: planned.providerId,
      deviceId: planned.deviceId,
      functionId: planned.functionId,
      args: planned.args,
      origin: "safety",
      source,
    });
  }
}

/** The audit's `args.reason` of a re-verification of providers that came back while latched. */
const AVAILABLE_WHILE_LATCHED = "available while latched";

/** Why a provider up while latched is secured again: a reload changed its ladder calls. */
const LADDER_RELOADED = "had its ladder calls changed by a reload";

/** The audit's `args.reason` of a re-verification after a reload changed expectations. */
const EXPECTATIONS_RELOADED = "expectations reloaded while latched";

/**
 * The answer's entry for the hooks into FAULT as a whole when they failed to run at all (`err`):
 * the hooks of every transition into FAULT; which of their calls were made is unknown, so no device
 * or function is named (`*`) and the phase is the first one, where their run begins.
 */
function hooksFailedToRun(err: RuntimeError): HookFailure {
  return {
    transition: "*->FAULT",
    phase: "before",
    hook: "automation.mode_transition_hooks",
    device_handle: "*",
    function: "*",
    error: `${err.code}: the hooks into FAULT failed to run: ${err.message}`,
  };
}

/** A provider's planned calls as text: two plans make the same calls when these are equal. */
function callsText(calls: readonly PlannedCall[]): string {
  return toJsonText(
    calls.map((c) =>
      c.kind === "zero"
        ? [c.providerId, c.deviceId, c.functionId, c.args]
        : [c.call.deviceHandle, c.call.functionId, c.call.functionName, c.call.args]
    ),
  );
}

/** A provider's expectations as text (config paths left out): equal when read back alike. */
function expectText(safeState: SafeStateConfig, providerId: string): string {
  return toJsonText(
    safeState.expect.flatMap(({ path: _path, ...e }) => e.providerId === providerId ? [e] : []),
  );
}

/** The provider a planned call goes to. */
function providerOf(c: PlannedCall): string {
  return c.kind === "zero" ? c.providerId : providerIdOf(c.call.deviceHandle);
}

/**
 * A provider's securing run (#secure); `started` once its ladder calls had their turn, `laddered`
 * once they have all been made.
 */
interface SecureRun {
  started: boolean;
  /**
   * What brought it, each cause once in the order they joined (#providerAvailable, joinCauses):
   * at most one per kind (the provider's return, each kind of reload, its device returns).
   */
  causes: ProviderBackCause[];
  /**
   * The devices whose returns it secures for (the one that began it, then each that joined it),
   * named in its line (causesWhy, deviceReturnWhy) while DEVICES_ANSWERING is among its causes.
   * Bounded by the provider's devices: a device's returns are told only while its provider lists
   * it. Its line (causesWhy), whether it is in the device-return spell (onlyDeviceReturns) and
   * whether its read-back is the reload's (LADDER_RELOADED among its causes) are read from these
   * two at its turn (#secure), not kept beside them.
   */
  devices?: string[];
  /**
   * The latch it was begun under (Estop.#latchNo), or the one a return joined it under
   * (#providerAvailable): released before its turn, it is skipped (made under a new latch whose
   * stop has not begun, #secure).
   */
  latchNo: number;
  laddered?: boolean;
  /** Once started: the rung and safe state of its plan (its read-back's expectations). */
  secured?: {
    readonly rung: SoftwareSafeState;
    readonly safeState: SafeStateConfig;
    /** The latch it was made under (Estop.#latchNo). */
    readonly latchNo: number;
  };
  promise: Promise<EstopAction[]>;
  /** The declared calls its ladder made, once made (before the read-back). */
  readonly ladder: Promise<readonly CallConfig[]>;
}

/** A re-verification and the providers (with their securing calls) it reads back. */
interface ReverifyBatch {
  /** The rung its providers' securing calls ran with. */
  readonly rung: SoftwareSafeState;
  /** The safe state of their plan (batches are by it; the expectations in force are read back). */
  readonly safeState: SafeStateConfig;
  /**
   * The latch their calls were made under (Estop.#latchNo): a release ends the batch. For a
   * read-back with no calls (expectations reloaded): the latch in force when it was asked for.
   */
  readonly latchNo: number;
  /** Why they are read back (the audit's `args.reason`). */
  readonly reason: string;
  /** Per provider, the calls of every securing run that joined the batch, in the order made. */
  readonly providers: Map<string, readonly EstopAction[]>;
  done: Promise<void>;
}

/**
 * The verification status shows: for the expectation list of the last full read-back, each
 * check's latest fresh read, with the monotonic start of the read-back it comes from.
 */
interface VerificationState {
  readonly expect: readonly SafeStateExpectation[];
  readonly checks: VerificationCheck[];
  /** Per check: the #readBackSeq of the read-back it comes from (the order they began in). */
  readonly seq: number[];
  /** Duration of the last read-back merged in. */
  elapsedMs: number;
  /** The last read-back merged in (a dropped one's audit `result.merged_into`). */
  by: ReadBackOf;
}

/**
 * Which read-back a verification comes from, as a re-verification the merge dropped names the one
 * it was merged into (its audit `result.merged_into`): a stop's, by the cause of its ladder calls'
 * audit origin, or a re-verification's, by its audit `args`.
 */
type ReadBackOf =
  | { readonly read_back: "stop"; readonly cause: string }
  | {
    readonly read_back: "re-verification";
    readonly provider_ids: readonly string[];
    readonly reason: string;
  };

/** A read-back as its line names it (ReadBackOf). */
function readBackWords(by: ReadBackOf): string {
  return by.read_back === "stop"
    ? `a stop's, cause ${providerTextWithin(by.cause, ESTOP_LOGGED_REASON_CHARS)}`
    : `a re-verification of ${
      namedList(by.provider_ids, MAX_NAMED_IN_WARNING, namedProviderId)
    }, ${by.reason}`;
}

/** A verification state as status and events show it. */
function verificationView(s: VerificationState): Verification {
  return { outcome: verificationOutcome(s.checks), elapsed_ms: s.elapsedMs, checks: [...s.checks] };
}
