/**
 * Runtime modes (IDLE, MANUAL, AUTO, FAULT): the transition table (docs/http-api.md, "Modes and
 * calls"), the mode-transition hooks (docs/automation.md, "Configuration") and the mode gate on
 * every call.
 *
 * Gate decision (stricter than anolis, whose FAULT lets manual calls through;
 * docs/migrating-from-anolis.md, "Modes and arming"): IDLE **and FAULT** refuse actuating calls,
 * manual and automated alike -- FAULT means "something went wrong", so nothing actuates until an
 * operator re-arms by switching to MANUAL. Consequence: before_transition hooks leaving FAULT that
 * actuate are refused (they run in FAULT), exactly like hooks around IDLE; the hooks entering FAULT
 * are stop actions and pass (below). Read-only calls (category READ) always pass. In AUTO, manual
 * calls follow automation.manual_gating_policy; automated calls (behavior tree, hooks) pass --
 * except the tree's while a transition leaving AUTO runs its before_transition hooks (what they
 * stop stays stopped; the commit then halts the tree, a veto lets it carry on).
 *
 * Transitions into FAULT (operator, forced fault, e-stop) follow the stop rules of the e-stop
 * (docs/safety.md, "The stop, step by step"): FAULT is committed synchronously, before any await
 * (listeners halt the tree in the same step), and only then do the matching before_transition and
 * after_transition hooks run, as stop actions (origin "safety": they skip the mode and latch gates
 * -- they are how the machine is made safe). Every call of every matching hook is attempted
 * whatever failed before it, calls to different providers run concurrently (declared order is kept
 * within a provider), and every failed call is reported in the answer and as a `hook_failure`
 * event. FAULT cannot be vetoed. Leaving FAULT is refused while its hooks are still running: their
 * stop actions must not land after the operator's first commands (checked again at the commit: a
 * provider that comes back while the before-hooks run gets them again). Nor can a re-arm override
 * it: a FAULT requested while FAULT -> MANUAL runs its before-hooks (nothing to commit: the mode is
 * FAULT) refuses that transition.
 *
 * Arming checks (addArmCheck) may refuse a transition into MANUAL or AUTO -- the e-stop latch
 * refuses both while engaged, so releasing the latch never re-arms by itself; automation refuses
 * AUTO while a device its tree names is unavailable.
 */
import {
  causesWhy,
  type Clock,
  deviceHandle,
  deviceReturnWhy,
  DEVICES_ANSWERING,
  errorMessage,
  failedPrecondition,
  joinCauses,
  latestDate,
  type Logger,
  MAX_NAMED_IN_WARNING,
  namedDeviceId,
  namedHandle,
  namedList,
  namedProviderId,
  neverThrowing,
  onlyDeviceReturns,
  parseDeviceHandle,
  PROVIDER_BACK_WHY,
  type ProviderBackCause,
  providerIdOf,
  providerText,
  providerTextWithin,
  quoteProviderTextWithin,
  raceTimeout,
  readClockTwice,
  type RuntimeError,
  SpellLogs,
  toRuntimeError,
  transitionDate,
} from "../common/mod.ts";
import {
  atSourcePosition,
  type CallConfig,
  type HookConfig,
  type RuntimeMode,
} from "../config/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type { InventoryReader, ProviderSummary } from "../state/mod.ts";
import type { AuditOrigin, AuditSink } from "./audit_sink.ts";
import type { CallerRefusal, CallOrigin, CallRouter, GateContext } from "./call_router.ts";
import { allowedModesRefusal, leaseRefusal } from "./call_policy.ts";
import {
  declaredFunctionLabel,
  fanOutByProvider,
  findDeclaredTarget,
  registeredDevices,
  runDeclaredCall,
} from "./declared_calls.ts";

/** One hook call that failed (or timed out) during a transition. */
export interface HookFailure {
  /** `FROM->TO` of the transition. */
  readonly transition: string;
  readonly phase: "before" | "after";
  /** Config path of the hook, e.g. `automation.mode_transition_hooks.before_transition[0]`. */
  readonly hook: string;
  readonly device_handle: string;
  readonly function: string;
  /** `CODE: message`. */
  readonly error: string;
}

/** What a transition did: the mode after it and every hook call that failed. */
export interface TransitionReport {
  readonly mode: RuntimeMode;
  readonly hook_failures: readonly HookFailure[];
  /**
   * A FAULT request: the hooks of the FAULT entry it committed, or of the one in force, had not
   * finished within FAULT_HOOKS_ANSWER_WAIT_MS; `hook_failures` lists those known then.
   */
  readonly hooks_pending?: true;
  /**
   * The change a mode listener committed at once, superseding this transition as it committed
   * (`AUTO->FAULT`: FAULT forced on entering AUTO); its after-hooks were skipped. Absent otherwise.
   */
  readonly superseded_by?: string;
  /**
   * With `superseded_by`: why the listener committed that change, the reason it forced FAULT with
   * (`device-loss latch: ... is down (...)`), cut to SUPERSEDED_REASON_CHARS (it may quote a
   * provider). Absent when that change gave none.
   */
  readonly superseded_reason?: string;
}

/**
 * Longest `superseded_reason` a transition's answer carries: the reason FAULT was forced with may
 * quote a provider's text (a device's loss), which must not make an answer of any length.
 */
export const SUPERSEDED_REASON_CHARS = 300;

/**
 * How long a FAULT request made while FAULT is in force (an e-stop's, say) waits for the hooks of
 * that FAULT entry to finish before it answers `hooks_pending` (the e-stop runs them after its
 * ladder; each call has its own deadline).
 */
export const FAULT_HOOKS_ANSWER_WAIT_MS = 10_000;

/**
 * Longest FAULT reason a log line of the manager quotes (longer is cut, marked with an
 * ellipsis): a reason may carry a provider's text (the id of a device lost).
 */
export const QUOTED_FAULT_REASON_CHARS = 200;

/**
 * Longest error of a failed hook call (it carries the provider's message) its log line quotes
 * and a veto's reason names; longer is cut, marked with an ellipsis. The answer's and the
 * hook_failure event's `hook_failures` keep it whole.
 */
export const QUOTED_HOOK_ERROR_CHARS = 300;

/** What the HTTP layer needs. */
export interface ModeService {
  current(): RuntimeMode;
  /**
   * Runs the transition (hooks, events); resolves with the mode after it and the hook calls
   * that failed. Same mode = no-op (refused while a transition away from it has not committed).
   * Throws FAILED_PRECONDITION for a refused transition or a vetoing hook. `stillAdmitted`: asked
   * once the before-hooks have run, before MANUAL or AUTO is committed; a refusal it returns is
   * thrown (audited with its `refused_by`): the requester's token a reload removed or lowered
   * meanwhile arms nothing.
   */
  requestWithReport(
    mode: RuntimeMode,
    source?: AuditOrigin,
    stillAdmitted?: () => CallerRefusal | null,
  ): Promise<TransitionReport>;
}

/**
 * A check that may refuse arming: called for every transition into MANUAL or AUTO; returns the
 * refusal message, or null to allow.
 */
export type ArmCheck = (from: RuntimeMode, to: RuntimeMode) => string | ArmRefusal | null;

/** An arming check's refusal naming its own cause (audit `refused_by`) instead of the check's. */
export interface ArmRefusal {
  readonly message: string;
  readonly refusedBy: string;
}

/** What changed under a transition into AUTO (ModeManager.invalidateAutoEntry). */
interface AutoEntryInvalid {
  readonly why: string;
  readonly remedy: string;
  /** The audit `refused_by` of the refusal at the commit (`reload`, `device_loss`). */
  readonly refusedBy: string;
}

/** A FAULT entry committed synchronously; its hooks run when `runHooks` is called. */
export interface FaultEntry {
  /**
   * False when the mode was already FAULT (nothing was committed, no hooks of its own): its
   * `runHooks` then resolves, once they have run, with the failures of the hooks of the FAULT
   * entry in force if they had not finished when this entry was asked for; else with [].
   */
  readonly committed: boolean;
  readonly from: RuntimeMode;
  /**
   * Runs the matching hooks of those in force now (not at the commit: the e-stop calls it after
   * its ladder) once; later calls return the same promise.
   */
  runHooks(): Promise<HookFailure[]>;
  /**
   * The failures of the hooks `runHooks` resolves with that are known so far (a copy): for an
   * answer that cannot wait for every hook call (the e-stop's, bounded).
   */
  hookFailuresSoFar(): HookFailure[];
}

/**
 * The e-stop's securing of a provider host that became AVAILABLE while latched (setLatchSecuring):
 * resolves, once its ladder's calls to that provider have been made, with the declared calls among
 * them (each attempted); null when the e-stop secures none for this return (not latched then).
 */
export type LatchSecuring = (
  host: ProviderSummary,
  options?: {
    /**
     * Only a securing run that has not begun its calls (it makes the plan in force at its turn);
     * one still making its calls resolves with [] once it has made them (none left out: it began
     * with an earlier plan); null for one ended, whose calls may have been undone since.
     */
    readonly notBegun?: boolean;
  },
) => Promise<readonly CallConfig[]> | null;

/** A committed mode change, as listeners (the behavior-tree runner) receive it. */
export interface ModeChange {
  readonly previous: RuntimeMode;
  readonly current: RuntimeMode;
}

/** Called synchronously when a new mode is committed (before after_transition hooks run). */
export type ModeChangeListener = (change: ModeChange) => void;

/** Allowed targets per mode (docs/http-api.md); same-mode requests are a no-op, not listed. */
export const MODE_TRANSITIONS: Readonly<Record<RuntimeMode, readonly RuntimeMode[]>> = {
  IDLE: ["MANUAL", "FAULT"],
  MANUAL: ["IDLE", "AUTO", "FAULT"],
  AUTO: ["MANUAL", "FAULT"],
  FAULT: ["MANUAL"],
};

/** Whether `from -> to` is in the transition table (false for from === to). */
export function isTransitionAllowed(from: RuntimeMode, to: RuntimeMode): boolean {
  return MODE_TRANSITIONS[from].includes(to);
}

/** Whether a hook fires for `from -> to` ("*" matches any mode). */
export function hookMatches(hook: HookConfig, from: RuntimeMode, to: RuntimeMode): boolean {
  return (hook.from === "*" || hook.from === from) && (hook.to === "*" || hook.to === to);
}

/** How many actuating functions the inventory's devices declare. */
export function actuatingFunctionCount(
  inventory: InventoryReader,
  except?: ReadonlySet<string>,
): number {
  return registeredDevices(inventory)
    .filter((d) => except === undefined || !except.has(d.device.providerId))
    .reduce((n, d) => n + d.functions.filter((f) => f.actuating).length, 0);
}

/**
 * The AUTO gate's rule on hooks (one place: entering AUTO, and every reload while AUTO runs):
 * with actuating functions registered, a mode_transition_hook must cover AUTO -> FAULT, so that
 * a fault stops what the tree drives. Null when it holds.
 */
export function autoFaultHookProblem(
  hooks: {
    readonly beforeTransition: readonly HookConfig[];
    readonly afterTransition: readonly HookConfig[];
  },
  actuating: number,
): string | null {
  if (actuating === 0) return null;
  const covered = [...hooks.beforeTransition, ...hooks.afterTransition].some((h) =>
    (h.from === "AUTO" || h.from === "*") && (h.to === "FAULT" || h.to === "*")
  );
  if (covered) return null;
  return `refusing AUTO: ${actuating} actuating function(s) are registered but no ` +
    "mode_transition_hook covers AUTO -> FAULT (add one with from AUTO or * and to FAULT or *)";
}

/**
 * The before_transition hooks that veto a transition every time: they run in the mode being left,
 * where a call may be refused whatever the machine does -- an actuating call in IDLE or FAULT (the
 * mode gate), a function whose provider's `allowed_modes` leave that mode out or that
 * `requires_lease` -- so such a call (of the inventory now) in a hook with fail_on_error fails and
 * vetoes the transition. One text per call and mode left, naming the hook's and the call's config
 * keys; empty when none. Hooks into FAULT are stop actions (never refused, never vetoing).
 */
export function vetoingHookProblems(
  hooks: { readonly beforeTransition: readonly HookConfig[] },
  inventory: InventoryReader,
): string[] {
  const devices = registeredDevices(inventory);
  const problems: string[] = [];
  for (const hook of hooks.beforeTransition) {
    if (!hook.failOnError) continue;
    const byFrom = new Map<RuntimeMode, string[]>();
    for (
      const [from, targets] of Object.entries(MODE_TRANSITIONS) as [RuntimeMode, RuntimeMode[]][]
    ) {
      const matched = targets.filter((to) => to !== "FAULT" && hookMatches(hook, from, to));
      if (matched.length > 0) byFrom.set(from, matched.map((to) => `${from} -> ${to}`));
    }
    for (const call of hook.calls) {
      const target = findDeclaredTarget(call, devices);
      if ("problem" in target) continue; // the declared-call preflight says it
      for (const [from, transitions] of byFrom) {
        const why = target.fn.actuating && (from === "IDLE" || from === "FAULT")
          ? `it is actuating, and the mode gate refuses actuating calls in ${from}`
          : (allowedModesRefusal(target.device, target.fn, from) ??
            leaseRefusal(target.device, target.fn))?.message;
        if (why === undefined) continue;
        problems.push(
          `${hook.path}${atSourcePosition(hook)} vetoes ${transitions.join(" and ")} every ` +
            `time: its call ${call.path}${atSourcePosition(call)} ` +
            `${
              namedCall(call.deviceHandle, declaredFunctionLabel(call))
            } is refused while the mode is ` +
            `still ${from} (${why}) and fail_on_error is true; set fail_on_error: false or move ` +
            "the call to after_transition",
        );
      }
    }
  }
  return problems;
}

export interface ModeManagerOptions {
  readonly router: CallRouter;
  /** Providers and their devices, read-only (the AUTO gate counts actuating functions). */
  readonly inventory: InventoryReader;
  readonly bus: EventBus;
  readonly clock: Clock;
  readonly log: Logger;
  /** automation.enabled: AUTO can be entered only when true. */
  readonly automationEnabled: boolean;
  readonly manualGatingPolicy: "BLOCK" | "OVERRIDE";
  readonly hooks: {
    readonly beforeTransition: readonly HookConfig[];
    readonly afterTransition: readonly HookConfig[];
  };
  /** Where mode requests (accepted or refused) are recorded. */
  readonly audit?: AuditSink;
  /**
   * Device conditions (the state layer's DeviceOutages): a device that stopped answering while
   * its provider stayed up gets the hooks into FAULT again when it answers again (#providerBack).
   */
  readonly devices?: {
    onDeviceReturn(listener: (providerId: string, deviceId: string) => void): () => void;
    /**
     * A hook call into FAULT to the device failed with `err`: one its provider answered
     * UNAVAILABLE makes the device's next answer a return (its hooks made again while FAULT
     * stands), though no poll found it out.
     */
    noteCallFailed?(providerId: string, deviceId: string, err: unknown): void;
  };
}

/** The origin of a mode change that names none (a runtime-internal one: a lost AUTO gate). */
const INTERNAL_ORIGIN: AuditOrigin = { kind: "automation" };

/** Marks the provider's latest securing run, asked of the e-stop at the turn (setLatchSecuring). */
const AT_TURN = "at turn";
/** A securing run of the e-stop (its ladder calls to one provider), or AT_TURN. */
type SecuringRun = Promise<readonly CallConfig[]> | typeof AT_TURN;

/** How #providerBack was reached: what the log says, the e-stop's securing, a return or not. */
interface ProviderBackOptions {
  /** What happened to the provider, for the log (default "is AVAILABLE again"). */
  readonly why?: string;
  /**
   * The e-stop's securing runs its calls wait for and leave out (each once; none: []). A return
   * begins a securing run of its own, after it is told: it asks for AT_TURN.
   */
  readonly securing: readonly SecuringRun[];
  /**
   * A return (it came back, or a device of it answers again): it may have missed the stop's
   * calls, so it gets the calls a reload dropped from the stop first (#stopHookCallsTo).
   */
  readonly stopsOwn?: boolean;
  /**
   * A device of it answers again (DeviceOutages.onDeviceReturn): its line is its provider's
   * device-return spell's (#deviceReturnLogs), not a WARN line each time.
   */
  readonly deviceReturn?: boolean;
  /** While `deviceReturn`: the devices answering again, named in `why` (deviceReturnWhy). */
  readonly devices?: readonly string[];
}

/** A hold on the hook calls into FAULT of an entry (holdFaultHookCalls). */
interface FaultHookHold {
  /** The mode the entry came from. */
  readonly from: RuntimeMode;
  /** The hooks in force at its commit. */
  readonly committedWith: ModeManagerOptions["hooks"];
  /** Resolved at the release. */
  readonly released: PromiseWithResolvers<void>;
}

/** The FAULT entry whose hooks have begun: the mode it came from, its runs, the hooks it began with. */
interface FaultInForce {
  from: RuntimeMode;
  run: Promise<unknown>;
  /** The hooks in force at its commit. */
  committedWith: ModeManagerOptions["hooks"];
  /** The hooks in force when its run began (a reload between the two dropped calls it made). */
  startedWith: ModeManagerOptions["hooks"];
}

/**
 * The runtime mode state machine. Starts in IDLE, always. Registers its gate on the router at
 * construction so no call can bypass it. Values of other subsystems (parameters) are untouched
 * by mode changes.
 */
export class ModeManager implements ModeService {
  #o: ModeManagerOptions;
  readonly #log: Logger;
  /**
   * #log for the stop path (the FAULT entry, its hooks, the listeners told of a change) and a
   * request's first line: a line it fails to write is lost, never the FAULT, a requested change,
   * a hook call, its failure in the answer, its hook_failure event nor a listener after a failing
   * one.
   */
  readonly #stopLog: Logger;
  #mode: RuntimeMode = "IDLE";
  /** The date of the latest mode change announced (#changeAt); null before the first. */
  #lastChangeAt: number | null = null;
  /** Transitions into FAULT committed since start (faultEntries). */
  #faultEntries = 0;
  /** Transitions into IDLE (disarming) committed since start (idleEntries). */
  #idleEntries = 0;
  /** The non-FAULT transition whose hooks are running; another one is refused meanwhile. */
  #busy: TransitionInProgress | null = null;
  /** FAULT entries whose hooks (stop actions) are running; leaving FAULT waits for them. */
  #faultHooksRunning = 0;
  /**
   * Resolves once the hooks of the FAULT entry in force have run (its committer runs them: the
   * e-stop after its ladder), or FAULT was left; null outside FAULT.
   */
  #faultHooksDone: PromiseWithResolvers<readonly HookFailure[]> | null = null;
  /** Whether the hooks of the FAULT entry in force have yet to finish. */
  #faultHooksPending = false;
  /** The failures of the FAULT entry in force's hooks so far (filled as they run). */
  #faultHookFailures: readonly HookFailure[] = [];
  /**
   * The FAULT entry in force once its hooks have begun to run: the mode it was entered from and
   * the promise its hooks resolve with; null outside FAULT. A provider that becomes AVAILABLE while
   * it stands gets the calls addressed to it of the hooks into FAULT in force then (#providerBack).
   */
  #faultInForce: FaultInForce | null = null;
  /** The e-stop's securing of a returning provider (setLatchSecuring); null without an e-stop. */
  #latchSecuring: LatchSecuring | null = null;
  /**
   * Per provider, the re-application of the hooks into FAULT running or waiting for its turn;
   * one waiting takes in what later ones would have made (mergeProviderBack).
   */
  readonly #reapplying = new Map<
    string,
    {
      waiting: boolean;
      done: Promise<void>;
      back: MergedProviderBack;
      /**
       * The calls it is expected to make, until it counts those it makes (#countedFaultHookCalls)
       * or ends: 0 from then (faultHookCallsLeft).
       */
      uncounted: number;
    }
  >();
  /**
   * Per provider, the return waiting (#providerBack) for the FAULT hooks to run while they have
   * yet to begin: the hooks' completion it waits for, and what the returns merged into it ask
   * for (mergeProviderBack). One waiting return per provider.
   */
  readonly #returnsAwaitingHooks = new Map<
    string,
    { done: PromiseWithResolvers<readonly HookFailure[]>; back: MergedProviderBack }
  >();
  /**
   * Per provider, the hook calls into FAULT to it that the runs under way (the FAULT entry's,
   * runFaultHooksAgain's, #providerBack's) have yet to finish, running or queued: what a reload
   * stopping that provider waits for (faultHookCallsSettled). Deleted at none.
   */
  readonly #faultHookCallsLeft = new Map<
    string,
    { left: number; done: PromiseWithResolvers<void> }
  >();
  /**
   * The latest FAULT entry committed: the mode it came from and the hooks in force at its commit
   * (what a hold covers: holdFaultHookCalls); null before the first.
   */
  #faultEntered: { from: RuntimeMode; committedWith: ModeManagerOptions["hooks"] } | null = null;
  /**
   * The holds on the hook calls into FAULT a stop has committed to making and not begun
   * (holdFaultHookCalls): a reload stopping a provider they cover waits for their release, then
   * for the calls counted by then (faultHookCallsSettled).
   */
  readonly #faultHookHolds = new Set<FaultHookHold>();
  /**
   * Per provider id: the log of the hook calls into FAULT made again for its devices answering
   * again. A device whose reads fail now and then gets them again after each (at most once per
   * DEVICE_RETURN_MIN_INTERVAL_MS), so the first run of a spell is said at WARN, the rest at
   * DEBUG, and the spell's end -- FAULT left, or the provider itself back -- counts them at INFO.
   * Each call is audited as usual. #stopLog: a line it fails to write is lost, never a call. At
   * most one spell per provider id (each ends with FAULT).
   */
  readonly #deviceReturnLogs = new SpellLogs((providerId) => ({
    log: this.#stopLog,
    firstNote: `its further runs for devices answering again are logged at DEBUG and ` +
      `counted until FAULT is left or provider ${namedProviderId(providerId)} itself comes back`,
    restLevel: "debug",
    recovered: (n) =>
      `FAULT: provider ${namedProviderId(providerId)}: hook calls into FAULT made again ${n} ` +
      "time(s) for devices answering again",
  }));
  /** Why FAULT was requested again while a transition leaving FAULT ran its hooks; else null. */
  #faultWhileLeaving: string | null = null;
  /**
   * What changed under a transition into AUTO while its before-hooks ran, and what the operator
   * does about it (invalidateAutoEntry); else null.
   */
  #autoEntryInvalid: AutoEntryInvalid | null = null;
  readonly #listeners = new Set<ModeChangeListener>();
  /** Commits so far (#commit): a listener's commit supersedes the one whose listeners it is in. */
  #commits = 0;
  /** The reason the last commit was made with (FAULT forced: enterFault's), else null. */
  #commitReason: string | null = null;
  readonly #armChecks: Array<{ check: ArmCheck; name: string }> = [];
  /** Which arm check refused, by the error it threw (audit `refused_by`). */
  readonly #armRefusals = new WeakMap<object, string>();

  constructor(options: ModeManagerOptions) {
    this.#o = options;
    this.#log = options.log.child("mode");
    this.#stopLog = neverThrowing(this.#log);
    options.router.addGate(this.gate, "mode");
    options.router.addGate(this.allowedModesGate, "allowed_modes");
    options.inventory.onAvailability((p, up) => {
      if (!up) return this.#hookedProviderDown(p.id);
      this.#deviceReturnLogs.end(p.id);
      this.#providerBack(p, { securing: [AT_TURN], stopsOwn: true });
    });
    // At most one per DEVICE_RETURN_MIN_INTERVAL_MS per provider (DeviceOutages).
    options.devices?.onDeviceReturn((providerId, deviceId) => {
      const host = this.#o.inventory.provider(providerId);
      if (host?.available === true) {
        this.#providerBack(host, {
          why: deviceReturnWhy([deviceId]),
          securing: [AT_TURN],
          stopsOwn: true,
          deviceReturn: true,
          devices: [deviceId],
        });
      }
    });
  }

  /**
   * Dates a mode change (or a hook call's failure) no earlier than the change or failure before
   * it, and records it: a step back of the wall clock (NTP) must not date a change before the one
   * it follows (as AlarmEngine dates an interlock's), nor a hook's failure before the change whose
   * hooks it ran in. Only the date: the change is committed before it is read.
   */
  #changeAt(wall: number): number {
    const last = this.#lastChangeAt;
    const at = transitionDate(wall, last);
    this.#lastChangeAt = at;
    return at;
  }

  /**
   * The e-stop says how it secures a provider that comes back while latched: the hooks into FAULT
   * made again for that provider (#providerBack) wait for its ladder's calls and leave out each
   * call the ladder made (without a `safety:` section the ladder is the `* -> FAULT` hooks' own
   * calls), so the provider gets each call once.
   */
  setLatchSecuring(securing: LatchSecuring): void {
    this.#latchSecuring = securing;
  }

  /**
   * Transitions into FAULT committed since start (a FAULT request while FAULT stands is none): a
   * stop count of the router (CallRouter.addStopCount).
   */
  get faultEntries(): number {
    return this.#faultEntries;
  }

  /**
   * Transitions into IDLE committed since start (MANUAL -> IDLE: the operator disarms): a stop
   * count of the router too, as FAULT entries are -- a command sent before the disarm is not
   * carried out after a re-arm (IDLE, like FAULT, drains no provider's queue).
   */
  get idleEntries(): number {
    return this.#idleEntries;
  }

  current(): RuntimeMode {
    return this.#mode;
  }

  /**
   * Resolves once the hook calls into FAULT to `providerId` that the runs under way make (running
   * or queued in them now, and any such run adds before then; a run made again for a provider that
   * came back from its return on, before its turn) have finished; null at once when none. Never
   * rejects; unbounded (each call has its own deadline): a reload waits for it before
   * it stops that provider, bounded by its caller (Estop.stopActionsSettled). No hook call waits
   * for it.
   */
  faultHookCallsSettled(providerId: string): Promise<void> | null {
    const counted = () => this.#faultHookCallsLeft.get(providerId)?.done.promise;
    // Made again for it (#providerBack): counted only once the e-stop's securing run of it and
    // the hooks' own run have ended, so waited for whole, from its return on.
    const madeAgain = () => this.#reapplying.get(providerId)?.done;
    const returning = this.#returnsAwaitingHooks.get(providerId)?.done.promise;
    const holds = [...this.#faultHookHolds].filter((hold) => this.#holdCovers(hold, providerId));
    const waits = [
      madeAgain(),
      // A return waiting for the hooks into FAULT to begin: its run is made as they end.
      returning?.then(madeAgain, madeAgain),
      // Held: the runs count their calls as they begin, before the hold is released.
      ...holds.map((hold) => hold.released.promise),
    ].filter((p) => p !== undefined);
    if (waits.length === 0) return counted() ?? null;
    // Then the calls counted by then.
    return Promise.all([counted(), ...waits]).then(() => counted());
  }

  /**
   * How many hook calls into FAULT to `providerId` are left to run now (faultHookCallsSettled
   * waits for them): those counted, running or queued; those a run made again for it
   * (#providerBack) is expected to make before it counts them (waiting for its turn, the e-stop's
   * securing run of it, the hooks' own run); and for each hold covering it the calls its run will
   * make (of the hooks in force at the commit or now, whichever has more). Each may take up to
   * stopActionWorstCaseMs of its provider's timeout_ms: a reload bounds its wait by it
   * (Estop.stopActionsSettled).
   */
  faultHookCallsLeft(providerId: string): number {
    let left = (this.#faultHookCallsLeft.get(providerId)?.left ?? 0) +
      (this.#reapplying.get(providerId)?.uncounted ?? 0);
    const entered = this.#faultEntered;
    if (this.#returnsAwaitingHooks.has(providerId) && entered !== null) {
      left += this.#faultHookCallsTo(providerId, entered.from).length;
    }
    for (const hold of this.#faultHookHolds) {
      left += Math.max(
        this.#faultHookCallsTo(providerId, hold.from, hold.committedWith).length,
        this.#faultHookCallsTo(providerId, hold.from).length,
      );
    }
    return left;
  }

  /**
   * Holds the hook calls into FAULT of the latest FAULT entry that a stop has committed to making
   * and not begun (the e-stop's, after its ladder: the entry's run, or runFaultHooksAgain's), until
   * the returned release is called once that run has begun (it counts its calls as it begins): a
   * reload stopping a provider they are addressed to (in the hooks in force at the commit or now)
   * waits meanwhile too (faultHookCallsSettled). Synchronous, never throws; the release is
   * idempotent. Nothing waits for the hold but such a reload, bounded by its caller.
   */
  holdFaultHookCalls(): () => void {
    const entered = this.#faultEntered;
    if (entered === null) return () => {};
    const hold: FaultHookHold = { ...entered, released: Promise.withResolvers() };
    this.#faultHookHolds.add(hold);
    return () => {
      if (!this.#faultHookHolds.delete(hold)) return;
      hold.released.resolve();
    };
  }

  /** Whether `hold` covers hook calls into FAULT to `providerId` (at its commit or in force now). */
  #holdCovers(hold: FaultHookHold, providerId: string): boolean {
    return this.#faultHookCallsTo(providerId, hold.from, hold.committedWith).length > 0 ||
      this.#faultHookCallsTo(providerId, hold.from).length > 0;
  }

  /**
   * Counts the hook calls into FAULT to these device handles as a run under way makes them
   * (faultHookCallsSettled); returns how many it counted per provider, which that run releases
   * (#releaseFaultHookCalls) as they finish, and what is left when it ends.
   */
  #countFaultHookCalls(handles: readonly string[]): Map<string, number> {
    const left = new Map<string, number>();
    for (const handle of handles) {
      const providerId = providerIdOf(handle);
      left.set(providerId, (left.get(providerId) ?? 0) + 1);
      const entry = this.#faultHookCallsLeft.get(providerId);
      if (entry === undefined) {
        this.#faultHookCallsLeft.set(providerId, { left: 1, done: Promise.withResolvers() });
      } else entry.left++;
    }
    return left;
  }

  /** Counts `n` hook calls into FAULT to `providerId` of a run under way finished (or not made). */
  #releaseFaultHookCalls(providerId: string, n = 1): void {
    const entry = this.#faultHookCallsLeft.get(providerId);
    if (entry === undefined || n <= 0) return;
    entry.left -= n;
    if (entry.left > 0) return;
    this.#faultHookCallsLeft.delete(providerId);
    entry.done.resolve();
  }

  /**
   * Runs `calls` (hook calls into FAULT) with `run`, counted while they run or wait their turn
   * (faultHookCallsSettled); every one counted is released, made or not.
   */
  async #countedFaultHookCalls(
    calls: readonly { readonly call: CallConfig }[],
    run: (made: (call: CallConfig) => void) => Promise<void>,
  ): Promise<void> {
    const left = this.#countFaultHookCalls(calls.map(({ call }) => call.deviceHandle));
    const made = (call: CallConfig) => {
      const providerId = providerIdOf(call.deviceHandle);
      const n = left.get(providerId) ?? 0;
      if (n <= 0) return;
      left.set(providerId, n - 1);
      this.#releaseFaultHookCalls(providerId);
    };
    try {
      await run(made);
    } finally {
      for (const [providerId, n] of left) this.#releaseFaultHookCalls(providerId, n);
    }
  }

  /** The e-stop's securing run of `host` still to begin its calls, if any (setLatchSecuring). */
  #notBegunSecuring(host: ProviderSummary): SecuringRun[] {
    const run = this.#latchSecuring?.(host, { notBegun: true }) ?? null;
    return run === null ? [] : [run];
  }

  /**
   * The e-stop secures `host` again while latched because a reload changed its ladder calls: the
   * calls addressed to it of the hooks into FAULT are made again after that securing run (begun
   * now, not yet making its calls), leaving out those it makes (#providerBack) -- the order of a
   * stop, ladder then hooks, so a ladder call does not undo a hook's (a cool-down after the stop).
   */
  ladderReloaded(host: ProviderSummary): void {
    this.#providerBack(host, {
      why: "had its e-stop ladder calls changed by a reload",
      securing: this.#notBegunSecuring(host),
    });
  }

  /**
   * Replaces the mode-transition hooks and the manual gating policy (configuration reload); the
   * next transition and the next gated call use them. A transition whose hooks are running
   * finishes with the hooks it started with; a provider that comes back while FAULT stands gets
   * the calls of these (#providerBack). While FAULT stands, every provider that is up whose hook
   * calls into FAULT (of the mode FAULT was entered from) these change gets the new ones made
   * (#providerBack: after the running hooks, the e-stop ladder's calls left out while latched):
   * an operator who fixes a stop action by reload while FAULT stands gets the fix, whether the
   * provider stayed up or the same reload restarted it (its providers section comes first).
   * `ladderFirst`: the same reload changes the e-stop's ladder next (its safety section follows);
   * the changed hook calls are made again once it settles, after that ladder's securing runs have
   * begun, so a stop's order holds (ladder, then hooks) and a hook call the ladder would undo is
   * not made before it.
   */
  reconfigure(
    hooks: ModeManagerOptions["hooks"],
    manualGatingPolicy: ModeManagerOptions["manualGatingPolicy"],
    ladderFirst?: Promise<unknown>,
  ): void {
    const before = this.#o.hooks;
    this.#o = { ...this.#o, hooks, manualGatingPolicy };
    const entry = this.#faultInForce;
    if (this.#mode !== "FAULT" || entry === null) return;
    if (ladderFirst !== undefined) {
      void ladderFirst.catch(() => {}).then(() => {
        if (this.#faultInForce === entry) this.#remakeChangedFaultHooks(entry, before);
      });
      return;
    }
    this.#remakeChangedFaultHooks(entry, before);
  }

  /** Makes again, on every provider up, its hook calls into FAULT that differ from `before`'s. */
  #remakeChangedFaultHooks(
    entry: FaultInForce,
    before: ModeManagerOptions["hooks"],
  ): void {
    for (const host of this.#o.inventory.providers()) {
      if (!host.available) continue;
      const was = this.#faultHookCallsTo(host.id, entry.from, before);
      const now = this.#faultHookCallsTo(host.id, entry.from);
      const same = was.length === now.length &&
        was.every((w, i) => w.phase === now[i]!.phase && sameDeclaredCall(w.call, now[i]!.call));
      if (same) continue;
      // Not a return: a securing run the e-stop made long ago (the provider came back then) says
      // nothing of now, the hooks made since may have undone its calls. Only one still to begin
      // (this reload's, when the e-stop adopts the hooks, or a return's waiting its turn) makes
      // its calls after now; its calls are left out. One still making its calls is waited for (a
      // later call of it would undo a hook call made meanwhile), none of its calls left out.
      this.#providerBack(host, {
        why: "had its hook calls into FAULT changed by a reload",
        securing: this.#notBegunSecuring(host),
      });
    }
  }

  /**
   * Says that what a transition into AUTO was judged on when requested (the protections in force,
   * the tree it will run) has changed: a reload applying outside AUTO while that transition's
   * before-hooks run (the mode is still MANUAL). That transition is then refused at its commit,
   * with `why` and `remedy` (by default: request AUTO again, judged on the configuration in force
   * then). `refusedBy` names the cause in the audit entry of that refusal, as an arm check's own
   * refusal does (ArmRefusal): by default `reload`, the configuration reload that changed it (as
   * the arm check of a reload restarting providers); `device_loss`: a device the tree depends on
   * was lost. No-op when no transition into AUTO is pending.
   */
  invalidateAutoEntry(
    why: string,
    remedy = "request AUTO again to enter it with the configuration now in force",
    refusedBy = "reload",
  ): void {
    if (this.#leaving()?.to !== "AUTO") return;
    this.#autoEntryInvalid ??= { why, remedy, refusedBy };
  }

  #autoEntryInvalidNow(): AutoEntryInvalid | null {
    return this.#autoEntryInvalid;
  }

  /** Runs a transition and resolves with the mode after it (see requestWithReport). */
  async request(mode: RuntimeMode): Promise<RuntimeMode> {
    return (await this.requestWithReport(mode)).mode;
  }

  /**
   * See ModeService.requestWithReport. FAULT is always reachable and cannot be vetoed. The
   * request, accepted or refused, is recorded with `source` (default: an HTTP client).
   */
  requestWithReport(
    mode: RuntimeMode,
    source: AuditOrigin = { kind: "http" },
    stillAdmitted?: () => CallerRefusal | null,
  ): Promise<TransitionReport> {
    if (mode === "FAULT") return this.#faultReport(this.enterFault("requested", source));
    const from = this.#mode;
    // The latency is the audit's alone: a clock that fails must neither keep the transition from
    // running nor fail a request whose mode changed (or replace a refusal's reason). Asked once
    // more; when it fails again the audit entry has no latency (null: none invented).
    const what = `mode request ${from} -> ${mode}`;
    const readMono = () =>
      readClockTwice(
        () => this.#o.clock.monoMs(),
        this.#log,
        what,
        `${what}: its audit latency is left out`,
      );
    const startedMs = this.#o.audit ? readMono() : null;
    const latencyMs = () => {
      const endedMs = startedMs === null ? null : readMono();
      return startedMs === null || endedMs === null ? null : endedMs - startedMs;
    };
    const audit = this.#o.audit;
    // A request for the current mode changes nothing and is not recorded, unless it is refused.
    const noop = from === mode && this.#leaving() === null;
    // Accepted: recorded when the mode changes, before anything that follows the change (the
    // listeners, the after-hooks, a FAULT one of them causes) is, so the trail reads in the order
    // things happened. `hook_failures`: the before-hooks' failed calls (the after-hooks' calls
    // have entries of their own, after this one).
    let committed = false;
    const onCommit = (beforeFailures: number) => {
      committed = true;
      audit?.record({
        action: "mode",
        origin: source,
        outcome: "accepted",
        function: mode,
        args: { from },
        result: { mode, hook_failures: beforeFailures },
        latency_ms: latencyMs(),
      });
    };
    const done = this.#transition(mode, audit && !noop ? onCommit : undefined, stillAdmitted);
    if (!audit || noop) return done;
    return done.catch((err) => {
      // Not expected once committed (hook failures are collected): the change stands, recorded.
      if (committed) throw err;
      const e = toRuntimeError(err);
      audit.record({
        action: "mode",
        origin: source,
        outcome: "refused",
        function: mode,
        args: { from },
        reason: `${e.code}: ${e.message}`,
        refused_by: this.#armRefusals.get(err as object) ?? "mode",
        latency_ms: latencyMs(),
      });
      throw err;
    });
  }

  /**
   * Commits FAULT now, synchronously (mode_change published, listeners told -- the tree halts),
   * unless the mode is FAULT already. The transition's hooks run when the caller calls
   * `runHooks()`: the e-stop runs its ladder first. A committed entry is recorded with `source`.
   * `notBefore`: the date of what commits it (an e-stop's latch, dated first): its mode_change is
   * dated no earlier, also when that date stands on one before it past a step back of the clock.
   */
  enterFault(
    reason: string,
    source: AuditOrigin = INTERNAL_ORIGIN,
    notBefore: number | null = null,
  ): FaultEntry {
    const from = this.#mode;
    if (from === "FAULT") {
      // Leaving FAULT is in progress (its before-hooks run): that transition must not commit
      // over this request (an alarm, another console), answered FAULT.
      if (this.#busy?.from === "FAULT") this.#faultWhileLeaving ??= `${source.kind}: ${reason}`;
      // Hooks of the entry in force not yet finished: this entry reports theirs, never [] early.
      const inForce = this.#faultHooksPending ? this.#faultHooksDone?.promise : undefined;
      const soFar = this.#faultHookFailures;
      return {
        committed: false,
        from,
        runHooks: () => inForce === undefined ? Promise.resolve([]) : inForce.then((f) => [...f]),
        hookFailuresSoFar: () => inForce === undefined ? [] : [...soFar],
      };
    }
    // Its line may be lost, never the FAULT it announces (a logger that throws).
    this.#stopLog.info(`transition ${from} -> FAULT (${quoteReason(reason)})`);
    // Never dated before its cause (#changeAt): the e-stop's latch is read first.
    this.#lastChangeAt = latestDate(this.#lastChangeAt, notBefore);
    // Before the commit: a mode listener may force FAULT again, and wait for these hooks.
    const done = Promise.withResolvers<readonly HookFailure[]>();
    const soFar: HookFailure[] = [];
    this.#faultHooksDone = done;
    this.#faultHooksPending = true;
    this.#faultHookFailures = soFar;
    const finished = (failures: readonly HookFailure[]) => {
      if (this.#faultHooksDone === done) this.#faultHooksPending = false;
      done.resolve(failures);
    };
    // Recorded as the mode changes, before the listeners (and what they record) are told.
    const audit = this.#o.audit;
    this.#commit(
      from,
      "FAULT",
      reason,
      audit && (() =>
        audit.record({
          action: "mode",
          origin: source,
          outcome: "accepted",
          function: "FAULT",
          args: { from, reason },
          latency_ms: 0,
        })),
    );
    let hooks: Promise<HookFailure[]> | null = null;
    // The hooks this stop started with: a reload before they run may add to them, never take
    // away (below).
    const committedWith = this.#o.hooks;
    this.#faultEntered = { from, committedWith };
    return {
      committed: true,
      from,
      runHooks: () => {
        if (hooks !== null) return hooks;
        // The hooks in force when they start (the e-stop runs them after its ladder, which may
        // take long): a reload meanwhile that fixed one is the fix the operator expects, as for a
        // provider that comes back while FAULT stands (#providerBack). But a stop under way never
        // ends with fewer stop actions than it started with, as the e-stop's own ladder finishes
        // with the plan it started with: each call of the hooks in force at the commit that the
        // reload dropped (or changed) is made too, before those in force now. Once begun, a
        // reload changes the next transition's.
        const startedWith = this.#o.hooks;
        hooks = this.#runFaultHooks(startedWith, from, soFar, committedWith).then((failures) => {
          finished(failures);
          return failures;
        }, (err) => {
          finished([]);
          throw err;
        });
        if (this.#faultHooksDone === done) {
          this.#faultInForce = { from, run: hooks, committedWith, startedWith };
        }
        return hooks;
      },
      hookFailuresSoFar: () => [...soFar],
    };
  }

  /**
   * Makes the hooks into FAULT again while FAULT stands with its hooks run (an e-stop triggered
   * again, or while FAULT stood: its ladder undid what they set): those of the mode FAULT was
   * entered from, in force now, as stop actions, every call attempted (re-arming waits for them);
   * `failures` is filled as calls fail, and the promise resolves with it. Null when no FAULT entry
   * in force has run its hooks (outside FAULT, or its committer never ran them).
   */
  runFaultHooksAgain(failures: HookFailure[]): Promise<HookFailure[]> | null {
    const entry = this.#faultInForce;
    if (this.#mode !== "FAULT" || entry === null) return null;
    const run = this.#runFaultHooks(this.#o.hooks, entry.from, failures);
    // Leaving FAULT waits for them (#faultHooksRunning), and so does a provider coming back from
    // now on (the same entry: re-applications under way carry on). One promise stands for all the
    // runs so far, settled once each has (a failed one included), keeping none of their results:
    // a press storm while latched must not grow what the entry holds.
    entry.run = Promise.allSettled([entry.run, run]).then(() => {});
    return run;
  }

  /**
   * Enters FAULT without any possible veto (lost AUTO preconditions, automation faults) and runs
   * its hooks; when FAULT was in force already, waits for the hooks of that entry instead (an
   * e-stop runs them after its ladder). Either wait ends after FAULT_HOOKS_ANSWER_WAIT_MS (the
   * hooks run on; a warning says so), so a committer that never runs its hooks cannot hold it.
   * Resolves true when the mode is FAULT afterwards.
   */
  async forceFault(reason: string, source: AuditOrigin = INTERNAL_ORIGIN): Promise<boolean> {
    const entry = this.enterFault(reason, source);
    const hooks = entry.runHooks().then(() => true, (err) => {
      // Not expected (hook failures are collected); never let it escape into a stop path.
      this.#stopLog.error(`FAULT hooks failed: ${toRuntimeError(err).message}`);
      return true;
    });
    if (!await raceTimeout(this.#o.clock, hooks, FAULT_HOOKS_ANSWER_WAIT_MS, false)) {
      this.#stopLog.warn(
        `FAULT (${quoteReason(reason)}): the FAULT hooks in force had not finished within ` +
          `${FAULT_HOOKS_ANSWER_WAIT_MS} ms; answering without waiting for them (they run on)`,
      );
    }
    return this.#mode === "FAULT";
  }

  /**
   * Adds a check that may refuse arming (transitions into MANUAL or AUTO); `name` says in the
   * audit trail which check refused (`estop`, `automation`).
   */
  addArmCheck(check: ArmCheck, name = "mode"): void {
    this.#armChecks.push({ check, name });
  }

  /** Subscribes to committed mode changes; returns the unsubscribe function. */
  onModeChange(listener: ModeChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The call gate (registered on the router): see the module comment for the rules. */
  readonly gate = (ctx: GateContext): RuntimeError | null => {
    if (!ctx.fn.actuating || ctx.origin === "safety") return null;
    const automated = ctx.origin === "automated" || ctx.origin === "hook";
    const what = `${
      deviceHandle(ctx.device.device.providerId, ctx.device.device.deviceId)
    } ${ctx.fn.name}`;
    switch (this.#mode) {
      case "IDLE":
        return failedPrecondition(
          `Call blocked in IDLE mode: ${what} is actuating (switch to MANUAL to arm)`,
        );
      case "FAULT":
        return failedPrecondition(
          `Call blocked in FAULT mode: ${what} is actuating (switch to MANUAL to re-arm)`,
        );
      case "AUTO": {
        // Leaving AUTO: its before_transition hooks run while the mode is still AUTO, and what
        // they stop must stay stopped -- the tree's calls wait for the outcome (refused until
        // the transition commits, which halts the tree, or is vetoed).
        const leaving = this.#leaving();
        if (ctx.origin === "automated" && leaving !== null) {
          return failedPrecondition(
            `Call blocked while leaving AUTO: ${what} is actuating and the ${leaving.from} -> ` +
              `${leaving.to} before_transition hooks are running`,
          );
        }
        if (!automated && this.#o.manualGatingPolicy === "BLOCK") {
          return failedPrecondition(
            `Manual call blocked in AUTO mode: ${what} is actuating (manual_gating_policy BLOCK)`,
          );
        }
        return null;
      }
      case "MANUAL":
        return null;
    }
  };

  /**
   * The provider's declared allowed_modes of the function (call_policy.ts), for every call but the
   * stop actions -- read-only functions included: the provider asked for it.
   */
  readonly allowedModesGate = (ctx: GateContext): RuntimeError | null =>
    ctx.origin === "safety" ? null : allowedModesRefusal(ctx.device, ctx.fn, this.#mode);

  /**
   * The refuse-hookless AUTO gate (as later anolis; docs/automation.md): entering AUTO needs a hook
   * covering AUTO -> FAULT while any actuating function is registered. A message when entering
   * AUTO must be refused, else null. `safety.safe_state` does not satisfy it.
   */
  autoGateProblem(except?: ReadonlySet<string>): string | null {
    return autoFaultHookProblem(this.#o.hooks, actuatingFunctionCount(this.#o.inventory, except));
  }

  /**
   * Re-checks the AUTO gate (after a provider rediscovery); forces FAULT when it now fails.
   * `except`: providers whose functions are left out (a reload starting them judges them once
   * it has applied, with the hooks its file brings).
   */
  async recheckAutoGate(except?: ReadonlySet<string>): Promise<void> {
    if (this.#mode !== "AUTO") return;
    const problem = this.autoGateProblem(except);
    if (problem) await this.forceFault(problem);
  }

  /**
   * A transition that is not into FAULT: gated, vetoable by before-hooks. `onCommit` is called
   * with the number of before-hook calls that failed once the mode is set, before the listeners
   * are told and the after-hooks run. A listener that commits another mode at once supersedes it:
   * the after-hooks are skipped then (one WARN line).
   */
  async #transition(
    target: RuntimeMode,
    onCommit?: (beforeFailures: number) => void,
    stillAdmitted?: () => CallerRefusal | null,
  ): Promise<TransitionReport> {
    const from = this.#mode;
    if (target === from) {
      // Not while a transition away from it has not committed yet: the answer would name a mode
      // about to change (the other transition would win over this request).
      const busy = this.#leaving();
      if (busy) {
        throw failedPrecondition(
          `Mode transition ${busy.from} -> ${busy.to} is in progress; retry ${target} when it has finished`,
        );
      }
      return { mode: from, hook_failures: [] };
    }
    // Arming checks first: "the e-stop is latched" is the reason an operator needs to see.
    this.#checkArming(from, target);
    if (!isTransitionAllowed(from, target)) {
      throw failedPrecondition(`Invalid mode transition: ${from} -> ${target}`);
    }
    if (target === "AUTO" && !this.#o.automationEnabled) {
      throw failedPrecondition(
        `Invalid mode transition: ${from} -> AUTO requires automation.enabled (automation is disabled)`,
      );
    }
    if (this.#busy) {
      throw failedPrecondition(
        `Mode transition ${this.#busy.from} -> ${this.#busy.to} is in progress; retry ${from} -> ${target}`,
      );
    }
    // Re-arming while the FAULT hooks still make the machine safe would let their stop actions
    // (which skip every gate) land after the operator's first commands.
    if (from === "FAULT" && this.#faultHooksRunning > 0) {
      throw failedPrecondition(
        `FAULT hooks are still running (making the machine safe); retry FAULT -> ${target} ` +
          "when they have finished",
      );
    }
    if (target === "AUTO") {
      const problem = this.autoGateProblem();
      if (problem) throw failedPrecondition(problem);
    }
    // Both phases run the hooks in force now: a reload while they run (it applies outside AUTO)
    // would otherwise run or skip a hook it moved between the phases.
    const hooks = this.#o.hooks;
    this.#busy = { from, to: target, hooks };
    this.#faultWhileLeaving = null;
    this.#autoEntryInvalid = null;
    try {
      // Through #stopLog: a line that throws (a custom logger) is lost, never the change.
      this.#stopLog.info(`transition ${from} -> ${target} (requested)`);
      const before = await this.#runHooks(hooks, "before", from, target);
      // A change meanwhile (FAULT always gets through) comes first: a hook call it refused is
      // its consequence, not the reason.
      if (this.#mode !== from) {
        throw failedPrecondition(
          `Mode changed concurrently during ${from} -> ${target} hooks (now ${this.#mode})`,
        );
      }
      if (before.veto) {
        throw failedPrecondition(`Mode transition ${from} -> ${target} vetoed: ${before.veto}`);
      }
      // An arming check may have become true while the before-hooks ran (e-stop latched).
      this.#checkArming(from, target);
      // So may the requester's admission: a reload may have removed or lowered its token.
      const unadmitted = target === "MANUAL" || target === "AUTO"
        ? stillAdmitted?.() ?? null
        : null;
      if (unadmitted !== null) {
        this.#armRefusals.set(unadmitted.error, unadmitted.refusedBy);
        throw unadmitted.error;
      }
      // So may a FAULT (an alarm, another console) while leaving FAULT: it was answered FAULT.
      if (this.#faultWhileLeaving !== null) {
        throw failedPrecondition(
          `FAULT was requested again (${this.#faultWhileLeaving}) while ${from} -> ${target} ` +
            "hooks ran; the mode stays FAULT",
        );
      }
      // So may a provider that came back meanwhile: the hooks into FAULT are made again for it
      // (#providerBack), and their stop actions must not land after the operator's first commands.
      if (from === "FAULT" && this.#faultHooksRunning > 0) {
        throw failedPrecondition(
          `FAULT hooks are still running (making the machine safe: a provider came back while ` +
            `FAULT -> ${target} hooks ran); retry FAULT -> ${target} when they have finished`,
        );
      }
      // So may the AUTO gate: a reload outside AUTO may drop the AUTO -> FAULT hook meanwhile.
      if (target === "AUTO") {
        const problem = this.autoGateProblem();
        if (problem) throw failedPrecondition(problem);
        // Or a reload may have weakened a protection the request was judged with, or replaced
        // the tree: AUTO is armed only with what the operator asked for it with.
        // Read through a method: set by a listener while the hooks ran, which the compiler's
        // narrowing (from the reset above) does not see.
        const invalid = this.#autoEntryInvalidNow();
        if (invalid !== null) {
          const err = failedPrecondition(
            `refusing AUTO: ${invalid.why} while ${from} -> AUTO hooks ran; ${invalid.remedy}`,
          );
          this.#armRefusals.set(err, invalid.refusedBy);
          throw err;
        }
      }
      const supersededBy = this.#commit(
        from,
        target,
        null,
        onCommit && (() => onCommit(before.failures.length)),
      );
      // A listener committed another mode at once (FAULT forced on entering AUTO): the machine
      // never stayed in `target`, so its after-hooks are not run (their calls would only be
      // refused by the mode gate, failures of a transition that no longer stands).
      if (supersededBy !== null) {
        const skipped = hooks.afterTransition.filter((h) => hookMatches(h, from, target))
          .reduce((n, h) => n + h.calls.length, 0);
        if (skipped > 0) {
          this.#stopLog.warn(
            `after_transition hooks of ${from}->${target} skipped: superseded by ${supersededBy} ` +
              `(${skipped} call(s) not made)`,
          );
        }
        const why = this.#commitReason;
        return {
          mode: this.#mode,
          hook_failures: [...before.failures],
          superseded_by: supersededBy,
          ...(why === null ? {} : {
            superseded_reason: providerTextWithin(why, SUPERSEDED_REASON_CHARS),
          }),
        };
      }
      const after = await this.#runHooks(hooks, "after", from, target);
      return { mode: this.#mode, hook_failures: [...before.failures, ...after.failures] };
    } finally {
      // Only this transition can have set it: another one is refused above while it is set.
      this.#busy = null;
    }
  }

  /**
   * `providerId` went down (crashed, restarting, its circuit open) while a transition into AUTO
   * runs its before_transition hooks: when they call it, what they set up on it is gone (a new
   * process starts from its own start-up values, one down has none), and that transition is
   * refused at its commit, as when a reload restarts a provider meanwhile -- whether it is back by
   * then or not, and whether its call was made yet or not (it may have been made to the process
   * that went down). Its devices the tree names are the device-loss latch's (refused the same).
   */
  #hookedProviderDown(providerId: string): void {
    const busy = this.#leaving();
    if (busy?.to !== "AUTO") return;
    const called = busy.hooks.beforeTransition.some((h) =>
      hookMatches(h, busy.from, "AUTO") &&
      h.calls.some((c) => providerIdOf(c.deviceHandle) === providerId)
    );
    if (!called) return;
    this.invalidateAutoEntry(
      `provider ${namedProviderId(providerId)}, called by the before_transition hooks, went down`,
      "request AUTO again once it is up (its hooks then set it up again)",
      "unavailable",
    );
  }

  /** The transition in progress while it has not committed (the mode is still its `from`). */
  #leaving(): TransitionInProgress | null {
    return this.#busy !== null && this.#mode === this.#busy.from ? this.#busy : null;
  }

  /** Throws the first arming check's refusal for a transition into MANUAL or AUTO. */
  #checkArming(from: RuntimeMode, target: RuntimeMode): void {
    if (target !== "MANUAL" && target !== "AUTO") return;
    for (const { check, name } of this.#armChecks) {
      const refusal = check(from, target);
      if (refusal) {
        const own = typeof refusal === "string" ? null : refusal;
        const err = failedPrecondition(own?.message ?? refusal as string);
        this.#armRefusals.set(err, own?.refusedBy ?? name);
        throw err;
      }
    }
  }

  /**
   * The answer to a FAULT request: the failures of the hooks it ran or, when FAULT was in force
   * already with its hooks not yet finished (an e-stop runs them after its ladder), of those
   * hooks once they have run. Either wait lasts at most FAULT_HOOKS_ANSWER_WAIT_MS as a whole (a
   * provider's hook calls run one after another, each up to its deadline): past it, the failures
   * known then and `hooks_pending`. Never an empty list as if hooks not yet run had not failed.
   */
  async #faultReport(entry: FaultEntry): Promise<TransitionReport> {
    // FAULT in force with its hooks run: this request changes nothing and runs nothing.
    if (!entry.committed && !this.#faultHooksPending) {
      return { mode: this.#mode, hook_failures: [] };
    }
    const done = entry.runHooks();
    const failures = await raceTimeout(this.#o.clock, done, FAULT_HOOKS_ANSWER_WAIT_MS, null);
    if (failures !== null) return { mode: this.#mode, hook_failures: [...failures] };
    done.catch((err) => this.#stopLog.error(`FAULT hooks failed: ${toRuntimeError(err).message}`));
    return { mode: this.#mode, hook_failures: entry.hookFailuresSoFar(), hooks_pending: true };
  }

  /**
   * The hooks of `from -> FAULT` as stop actions: before-phase hooks, then after-phase hooks,
   * each phase fanned out per provider, every call attempted; failures are collected, logged
   * and published.
   */
  async #runFaultHooks(
    hooks: ModeManagerOptions["hooks"],
    from: RuntimeMode,
    failures: HookFailure[],
    committedWith: ModeManagerOptions["hooks"] = hooks,
  ): Promise<HookFailure[]> {
    this.#faultHooksRunning++;
    try {
      return await this.#runFaultHookPhases(hooks, from, failures, committedWith);
    } finally {
      this.#faultHooksRunning--;
    }
  }

  /**
   * Fills `failures` as the calls fail (what the entry knows so far) and resolves with it. Per
   * phase: the calls of `committedWith` (the hooks in force at the commit) that `config` no longer
   * makes, then those of `config`.
   */
  async #runFaultHookPhases(
    config: ModeManagerOptions["hooks"],
    from: RuntimeMode,
    failures: HookFailure[],
    committedWith: ModeManagerOptions["hooks"],
  ): Promise<HookFailure[]> {
    const matching = (c: ModeManagerOptions["hooks"], phase: "before" | "after") =>
      (phase === "before" ? c.beforeTransition : c.afterTransition)
        .filter((h) => hookMatches(h, from, "FAULT"))
        .flatMap((hook) => hook.calls.map((call) => ({ hook, call })));
    const phases = (["before", "after"] as const).map((phase) => {
      const now = matching(config, phase);
      const dropped = committedWith === config ? [] : droppedCalls(
        matching(committedWith, phase),
        now.map(({ call }) => call),
      );
      return { phase, now, dropped };
    });
    // Counted from the start, both phases: a reload stopping a provider waits for its calls.
    const all = phases.flatMap(({ now, dropped }) => [...dropped, ...now]);
    await this.#countedFaultHookCalls(all, async (made) => {
      for (const { phase, now, dropped } of phases) {
        await this.#runFaultHookPhase(phase, from, now, dropped, failures, made);
      }
    });
    return failures;
  }

  /** One phase of #runFaultHookPhases: the calls dropped by a reload, then those in force. */
  async #runFaultHookPhase(
    phase: "before" | "after",
    from: RuntimeMode,
    now: readonly { hook: HookConfig; call: CallConfig }[],
    dropped: readonly { hook: HookConfig; call: CallConfig }[],
    failures: HookFailure[],
    made: (call: CallConfig) => void,
  ): Promise<void> {
    if (dropped.length > 0) {
      this.#stopLog.warn(
        `FAULT (${from}->FAULT): a reload since FAULT was entered dropped or changed ` +
          `${dropped.length} ${phase}_transition hook call(s) into FAULT; this stop makes them ` +
          `(${
            namedList(
              dropped.map(({ call }) => namedCall(call.deviceHandle, declaredFunctionLabel(call))),
              MAX_NAMED_IN_WARNING,
            )
          }), then those in force`,
      );
    }
    const calls = [...dropped, ...now];
    await fanOutByProvider(calls, ({ call }) => call.deviceHandle, async ({ hook, call }) => {
      try {
        const failure = await this.#runHookCall(phase, hook, call, from, "FAULT", "safety");
        if (failure) failures.push(failure);
      } finally {
        made(call);
      }
    });
  }

  /**
   * The calls addressed to `providerId` of the hooks of `from -> FAULT` in `config` (default those
   * in force now: the running configuration's, reloads included), in declared order: before
   * phase, then after.
   */
  #faultHookCallsTo(
    providerId: string,
    from: RuntimeMode,
    config: ModeManagerOptions["hooks"] = this.#o.hooks,
  ) {
    return (["before", "after"] as const).flatMap((phase) =>
      (phase === "before" ? config.beforeTransition : config.afterTransition)
        .filter((h) => hookMatches(h, from, "FAULT"))
        .flatMap((hook) => hook.calls.map((call) => ({ phase, hook, call })))
        .filter(({ call }) => providerIdOf(call.deviceHandle) === providerId)
    );
  }

  /**
   * The hook calls into FAULT addressed to `providerId` that the stop standing (`entry`) makes:
   * per phase, each call its own run made because a reload between its commit and that run
   * dropped (or changed) it (a reload never takes stop actions from a stop under way; dropped calls
   * first, as in that run) and the hooks in force do not make, then those of the hooks in force.
   * A reload after its run began fixes the hooks: what it dropped is not made again.
   */
  #stopHookCallsTo(providerId: string, entry: FaultInForce) {
    const now = this.#faultHookCallsTo(providerId, entry.from);
    if (entry.committedWith === entry.startedWith) return now;
    const began = this.#faultHookCallsTo(providerId, entry.from, entry.committedWith);
    const ran = this.#faultHookCallsTo(providerId, entry.from, entry.startedWith);
    return (["before", "after"] as const).flatMap((phase) => {
      const inForce = now.filter((c) => c.phase === phase);
      const dropped = droppedCalls(
        began.filter((c) => c.phase === phase),
        ran.filter((c) => c.phase === phase).map(({ call }) => call),
      );
      return [...droppedCalls(dropped, inForce.map(({ call }) => call)), ...inForce];
    });
  }

  /**
   * `providerId` became AVAILABLE while FAULT stands with its hooks begun: its process may be new
   * (a crash, a reload restarting it), with its own start-up values, and its hook calls may have
   * failed while it was down. So the calls addressed to it of the hooks into FAULT (from the mode
   * FAULT was entered from) are made again, as stop actions in declared order (before phase, then
   * after), once the hooks' own run has finished: those of the hooks in force when they start, not
   * those FAULT was entered with -- a reload while FAULT stands that fixed a hook is the fix the
   * operator expects; on a return (`stopsOwn`: it came back, or a device of it answers again: it
   * may have missed the stop's calls) also, first, each call of the hooks the stop began with that
   * a reload since dropped or changed (#stopHookCallsTo). One run per provider at a time, at most
   * one waiting (it finds the provider up; a later reason merges into it, mergeProviderBack). Each
   * call is audited and a failure published as the hooks' own are; re-arming waits for
   * them. Stops once FAULT is left.
   */
  #providerBack(host: ProviderSummary, options: ProviderBackOptions | MergedProviderBack): void {
    const { stopsOwn = false } = options;
    const providerId = host.id;
    // FAULT's hooks have yet to begin (an e-stop's ladder still runs): they wait for the stop's
    // ladder, not for the e-stop's securing of this provider (queued behind it), which may land
    // after them; so they are made again for it once they have run.
    const pending = this.#faultInForce === null && this.#faultHooksPending
      ? this.#faultHooksDone
      : null;
    if (this.#mode === "FAULT" && pending !== null) {
      // One return per provider waits (bounded by the providers, however often one comes back
      // before the hooks begin): the later ones would find the first's re-application waiting.
      // A return of its own among them (it may have missed the stop's calls: its securing run may
      // land after the hooks' run) gets the calls a reload dropped from the stop, as after them.
      const waiting = this.#returnsAwaitingHooks.get(providerId);
      if (waiting?.done === pending) {
        return mergeProviderBack(
          waiting.back,
          host,
          options,
          this.#o.inventory.provider(providerId),
        );
      }
      const wait = { done: pending, back: providerBackOf(host, options) };
      this.#returnsAwaitingHooks.set(providerId, wait);
      void pending.promise.then(() => {
        if (this.#returnsAwaitingHooks.get(providerId) === wait) {
          this.#returnsAwaitingHooks.delete(providerId);
        }
        this.#providerBack(wait.back.host, wait.back);
      });
      return;
    }
    const entry = this.#faultInForce;
    if (this.#mode !== "FAULT" || entry === null) return;
    const callsOf = (own: boolean) =>
      own ? this.#stopHookCallsTo(providerId, entry) : this.#faultHookCallsTo(
        providerId,
        entry.from,
      );
    const expected = callsOf(stopsOwn).length;
    if (expected === 0) return;
    const previous = this.#reapplying.get(providerId);
    // One waiting finds the provider up at its turn; it makes what this one asks for too.
    if (previous?.waiting) {
      previous.uncounted = Math.max(previous.uncounted, expected);
      return mergeProviderBack(
        previous.back,
        host,
        options,
        this.#o.inventory.provider(providerId),
      );
    }
    const run = {
      waiting: true,
      done: Promise.resolve(),
      back: providerBackOf(host, options),
      uncounted: expected,
    };
    this.#faultHooksRunning++;
    run.done = Promise.all([previous?.done, entry.run.catch(() => {})]).then(async () => {
      run.waiting = false;
      if (this.#faultInForce !== entry) return;
      // Latched when it came back: the e-stop's ladder secures it first (and reads it back); a
      // call it made is not made again. Released before the ladder's turn: it made none.
      // Its line says what brought it as it stands at its turn (mergeProviderBack).
      const { host: listed, securing, stopsOwn: own, causes, devices } = run.back;
      // Nothing merges into it from here (no longer waiting): read once.
      const why = causesWhy(causes, devices?.map(namedDeviceId));
      const deviceReturn = onlyDeviceReturns(causes);
      // Each once: the latest, asked for at the turn, may be one it was given.
      const runs = new Set<Promise<readonly CallConfig[]>>();
      for (const r of securing) {
        const p = r === AT_TURN ? this.#latchSecuring?.(listed) ?? null : r;
        if (p !== null) runs.add(p);
      }
      const made = runs.size === 0 ? [] : (await Promise.all(runs)).flat();
      if (this.#faultInForce !== entry) return;
      // Its provider taken out by a reload before its turn (removed, or restarted: another host
      // under its id, which gets a run of its own once up): nothing of it is left to make them
      // on. Not made, counted as none; one line (no failure: the reload chose it), as the
      // e-stop's securing run of it (Estop #secure).
      if (this.#o.inventory.provider(providerId) !== listed) {
        this.#stopLog.info(
          `FAULT: provider ${namedProviderId(providerId)} ${why}, but a configuration reload ` +
            `took it out before the turn of its hook calls into FAULT (${entry.from}->FAULT): no ` +
            "longer listed, they are not made again",
        );
        return;
      }
      const calls = callsOf(own).filter(({ call }) => {
        const i = made.findIndex((m) => sameDeclaredCall(m, call));
        if (i < 0) return true;
        made.splice(i, 1);
        return false;
      });
      if (calls.length === 0) {
        if (runs.size > 0) {
          // For a device return the e-stop's own spell says its securing run (once, counted).
          this.#stopLog[deviceReturn ? "debug" : "info"](
            `FAULT: provider ${namedProviderId(providerId)} ${why}; the e-stop's ladder made ` +
              `its hook call(s) into FAULT (${entry.from}->FAULT)`,
          );
        }
        return;
      }
      const line = `FAULT: provider ${namedProviderId(providerId)} ${why}; making its ` +
        `${calls.length} hook call(s) into FAULT (${entry.from}->FAULT) again`;
      if (deviceReturn) this.#deviceReturnLogs.fail(providerId, line);
      else this.#stopLog.warn(line);
      // Counted while they run or wait their turn: a reload stopping the provider waits for them.
      run.uncounted = 0;
      await this.#countedFaultHookCalls(calls, async (made) => {
        for (const { phase, hook, call } of calls) {
          if (this.#faultInForce !== entry) return;
          try {
            await this.#runHookCall(phase, hook, call, entry.from, "FAULT", "safety");
          } finally {
            made(call);
          }
        }
      });
    }).catch((err) => {
      this.#stopLog.error(
        `FAULT hooks for ${namedProviderId(providerId)} failed: ${
          quoteProviderTextWithin(toRuntimeError(err).message, QUOTED_HOOK_ERROR_CHARS)
        }`,
      );
    }).finally(() => {
      run.uncounted = 0;
      this.#faultHooksRunning--;
      if (this.#reapplying.get(providerId) === run) this.#reapplying.delete(providerId);
    });
    this.#reapplying.set(providerId, run);
  }

  /** Runs one hook call; returns its failure (logged and published), or null. */
  async #runHookCall(
    phase: "before" | "after",
    hook: HookConfig,
    call: HookConfig["calls"][number],
    from: RuntimeMode,
    to: RuntimeMode,
    origin: CallOrigin,
  ): Promise<HookFailure | null> {
    try {
      // A stop action (origin safety) is granted its provider before every call queued that is
      // not one, and is never refused for a full queue (CallRouter).
      await runDeclaredCall(this.#o.router, call, origin, {
        kind: "hook",
        transition: `${from}->${to}`,
        hook: hook.path,
      });
      return null;
    } catch (err) {
      const e = toRuntimeError(err);
      const failure: HookFailure = {
        transition: `${from}->${to}`,
        phase,
        hook: hook.path,
        device_handle: call.deviceHandle,
        function: declaredFunctionLabel(call),
        error: `${e.code}: ${e.message}`,
      };
      const text = hookFailureLine(failure);
      // The call's failure is what the caller must get (the answer, the event): a logger that
      // fails (a closed stderr) loses the line, never the failure (#stopLog).
      if (hook.failOnError || to === "FAULT") this.#stopLog.error(text);
      else this.#stopLog.warn(text);
      const device = to === "FAULT" ? parseDeviceHandle(call.deviceHandle) : null;
      if (device !== null) {
        try {
          this.#o.devices?.noteCallFailed?.(device.providerId, device.deviceId, err);
        } catch (noteErr) {
          this.#stopLog.error(
            `FAULT: noting the device that did not answer failed: ${errorMessage(noteErr)}`,
          );
        }
      }
      // A clock that fails is asked once more; if it fails again the event is not published (no
      // invented time), logged.
      const wall = readClockTwice(
        () => this.#o.clock.nowMs(),
        this.#stopLog,
        text,
        `${text}: hook_failure not published`,
      );
      if (wall === null) return failure;
      // Dated no earlier than the mode change it follows (a FAULT entry's hooks run after it): a
      // step back of the wall clock (NTP) while the hooks run must not put it before that change.
      const timestampMs = this.#changeAt(wall);
      this.#o.bus.publish({ kind: "hook_failure", ...failure, timestamp_ms: timestampMs });
      return failure;
    }
  }

  /**
   * Sets the mode, publishes `mode_change` and tells listeners. Done before after_transition
   * hooks (anolis publishes it after them): the event stream then always follows the
   * real mode history, even when an e-stop forces FAULT while after-hooks run, and a behavior
   * tree leaving AUTO is halted before any after-hook call. `committed` is called once the mode
   * is set, before anything else: what the change causes comes after it on the audit trail. A
   * listener that commits another mode supersedes this change: the listeners after it are told
   * only that one (every listener hears a change only while it is the mode in force). Returns
   * the change that superseded this one that way (`AUTO->FAULT`), else null; `reason` (why FAULT
   * was forced) is kept as #commitReason, the last commit's, for the superseded one's answer.
   */
  #commit(
    previous: RuntimeMode,
    next: RuntimeMode,
    reason: string | null,
    committed?: () => void,
  ): string | null {
    this.#mode = next;
    const commit = ++this.#commits;
    this.#commitReason = reason;
    if (next === "FAULT" && previous !== "FAULT") this.#faultEntries++;
    if (next === "IDLE" && previous !== "IDLE") this.#idleEntries++;
    try {
      committed?.();
    } catch (err) {
      // The mode is set: a failing record (a clock, a logger) must not undo the commit.
      try {
        this.#log.error(
          `mode change ${previous} -> ${next} not recorded: ${toRuntimeError(err).message}`,
        );
      } catch { /* a logger that throws does not stop the change either */ }
    }
    if (previous === "FAULT") {
      // Nobody waits for the hooks of a FAULT left behind.
      this.#faultHooksDone?.resolve([]);
      this.#faultHooksDone = null;
      this.#faultHooksPending = false;
      this.#faultHookFailures = [];
      this.#faultInForce = null;
      this.#deviceReturnLogs.endAll();
    }
    // The mode is set: what follows must not fail the commit (FAULT's hooks, a returning
    // provider's wait and the listeners -- the tree's halt -- come after it). A clock that fails is
    // asked once more; if it fails again the change is not announced (no invented time), logged.
    const change = `mode change ${previous} -> ${next}`;
    try {
      const now = readClockTwice(
        () => this.#o.clock.nowMs(),
        this.#log,
        change,
        `${change} not announced`,
      );
      const timestampMs = now === null ? null : this.#changeAt(now);
      if (timestampMs !== null) {
        this.#o.bus.publish({
          kind: "mode_change",
          previous_mode: previous,
          new_mode: next,
          timestamp_ms: timestampMs,
        });
      }
    } catch (err) {
      // A publish (a subscriber) or a logger that throws.
      try {
        this.#log.error(`${change} not announced: ${toRuntimeError(err).message}`);
      } catch { /* a logger that throws does not stop the change either */ }
    }
    for (const listener of [...this.#listeners]) {
      // A listener committed another mode (forced FAULT on entering AUTO): that commit told every
      // listener of its change; the ones after it here are not told this superseded one (the tree
      // runner would switch the tree on in AUTO while the mode is FAULT, and hear it after FAULT).
      if (this.#commits !== commit) break;
      try {
        listener({ previous, current: next });
      } catch (err) {
        // Never throws: the listeners after this one (the tree's halt) are told all the same.
        this.#stopLog.error(`mode change listener failed: ${toRuntimeError(err).message}`);
      }
    }
    return this.#commits === commit ? null : `${next}->${this.#mode}`;
  }

  /**
   * Runs the matching hooks of one phase of a transition that is not into FAULT, in config
   * order, each hook's calls in order, with origin "hook" (gated by the mode current at call
   * time). Before-phase: a failure in a hook with fail_on_error stops every remaining hook call
   * and is returned as the veto. Otherwise failures are collected and the rest run.
   */
  async #runHooks(
    config: ModeManagerOptions["hooks"],
    phase: "before" | "after",
    from: RuntimeMode,
    to: RuntimeMode,
  ): Promise<{ veto: string | null; failures: HookFailure[] }> {
    const hooks = phase === "before" ? config.beforeTransition : config.afterTransition;
    const failures: HookFailure[] = [];
    for (const hook of hooks) {
      if (!hookMatches(hook, from, to)) continue;
      for (const call of hook.calls) {
        const failure = await this.#runHookCall(phase, hook, call, from, to, "hook");
        if (!failure) continue;
        if (phase === "before" && hook.failOnError) {
          return { veto: describeHookFailure(failure), failures };
        }
        failures.push(failure);
      }
    }
    return { veto: null, failures };
  }
}

/**
 * The calls of `before` that `after` no longer makes (each call of `after` stands for one alike in
 * `before`), in `before`'s order.
 */
function droppedCalls<T extends { readonly call: CallConfig }>(
  before: readonly T[],
  after: readonly CallConfig[],
): T[] {
  const left = [...after];
  return before.filter(({ call }) => {
    const i = left.findIndex((c) => sameDeclaredCall(c, call));
    if (i < 0) return true;
    left.splice(i, 1);
    return false;
  });
}

/** A transition that is not into FAULT, while it runs (ModeManager #busy). */
interface TransitionInProgress {
  readonly from: RuntimeMode;
  readonly to: RuntimeMode;
  /** The hooks it runs: those in force when it began. */
  readonly hooks: ModeManagerOptions["hooks"];
}

/** What the reasons merged into one waiting #providerBack ask for, and what its line says. */
interface MergedProviderBack {
  /**
   * Its provider's host as the latest reason told it (one a reload restarted since is its
   * successor's): the one it is made for, if still listed at its turn.
   */
  host: ProviderSummary;
  securing: SecuringRun[];
  stopsOwn: boolean;
  /**
   * What brought it, each cause once in the order they joined (mergeProviderBack): distinct
   * reasons, at most one per kind (the provider's return, each kind of reload, its device
   * returns), so bounded by those kinds; said through namedList under MAX_NAMED_IN_WARNING.
   */
  causes: ProviderBackCause[];
  /**
   * The devices whose returns it is made for (the one that began it, then each that joined it),
   * named in its line (causesWhy, deviceReturnWhy) while DEVICES_ANSWERING is among its causes.
   * Bounded by the provider's devices: a device's returns are told only while its provider lists
   * it. Its line (causesWhy) and whether it is the device-return spell's (onlyDeviceReturns: begun
   * for device returns only, none other joined) are read from these two at its turn, not kept.
   */
  devices?: string[];
}

/**
 * What one reason for #providerBack asks for, to be merged into (mergeProviderBack). A function of
 * its own: a closure over `host` in #providerBack would keep each return's host reachable while
 * it waits for FAULT's hooks to begin (one return per provider is kept, the latest). A run handed
 * on (a return that waited for FAULT's hooks) keeps its causes.
 */
function providerBackOf(
  host: ProviderSummary,
  options: ProviderBackOptions | MergedProviderBack,
): MergedProviderBack {
  const causes: ProviderBackCause[] = "causes" in options
    ? [...options.causes]
    : [options.deviceReturn === true ? DEVICES_ANSWERING : options.why ?? PROVIDER_BACK_WHY];
  const devices = causes.includes(DEVICES_ANSWERING) ? [...options.devices ?? []] : undefined;
  return {
    host,
    securing: [...options.securing],
    stopsOwn: options.stopsOwn === true,
    causes,
    ...(devices === undefined ? {} : { devices }),
  };
}

/**
 * Merges a later reason for the same provider into one waiting (`into`): a return of its own
 * (`stopsOwn`) makes it a return -- it may have missed the stop's calls, so it gets the calls a
 * reload dropped from the stop -- and each securing run it names is waited for too, its calls
 * left out: the hook calls then land after every one of those runs' ladder calls, never between
 * them. A return asks for the provider's latest run at the turn (AT_TURN); a run named before is
 * kept beside it: there is none at the turn when the latch was released and the provider (or a
 * device of it) came back since, while a run begun before the release may still make its calls.
 * Its line names every cause that joined it (causesWhy), each once: a device's return joining
 * names that device too (deviceReturnWhy), except where the provider's own return is among them
 * (its return covers its devices: said in their place); a line with a cause other than device
 * returns is said at WARN, outside the device-return spell. `host` is the provider's host as this
 * reason told it: a return of the successor of a host a reload restarted makes the run its
 * successor's (listed at its turn), and its line the successor's (the old host's causes dropped,
 * and its securing runs: a ladder call made on the old process never reached the successor; and
 * its return, `stopsOwn`: the successor gets the stop's dropped calls only on a return of its own).
 * `listed` is the host listed under its id now: one no longer listed never replaces it -- a return
 * of the old host told before the reload, waiting for FAULT's hooks to begin, joins a run of its
 * successor's only once those hooks have run, and would leave the successor no calls at the turn
 * -- nor adds its causes to the successor's line, nor its securing runs to those left out, nor
 * makes the successor's run a return.
 */
function mergeProviderBack(
  into: MergedProviderBack,
  host: ProviderSummary,
  next: ProviderBackOptions | MergedProviderBack,
  listed: ProviderSummary | undefined,
): void {
  const said = host === listed || into.host !== listed;
  if (said && host !== into.host) {
    // Another host under its id (a reload restarted it): the run is its now, and so is its line.
    // The old host's securing runs go too: a call the ladder made on the old process never reached
    // this one, so it must not leave that call out of this host's calls.
    // Never awaited now: never an unhandled rejection.
    for (const run of into.securing) if (run !== AT_TURN) run.catch(() => {});
    into.host = host;
    into.causes = [];
    into.securing = [];
    // And its return: the stop's calls the old process may have missed are no reason to make them
    // on this one (its own return, if it joins, says so).
    into.stopsOwn = false;
    delete into.devices;
  }
  // A reason of a host no longer listed: its return was the old process's, not the successor's.
  if (said && next.stopsOwn === true) into.stopsOwn = true;
  if (said) {
    joinCauses(into, providerBackOf(host, next));
  }
  for (const run of next.securing) {
    if (into.securing.includes(run)) continue;
    // Awaited at its turn only (not when FAULT is left before it): never an unhandled rejection.
    if (run !== AT_TURN) run.catch(() => {});
    // A reason of a host no longer listed joining its successor's run: its securing runs secured
    // that host, not the successor (none left out of the successor's calls).
    if (!said) continue;
    into.securing.push(run);
  }
}

/** Whether two declared calls are the same call: device, function and arguments alike. */
function sameDeclaredCall(a: CallConfig, b: CallConfig): boolean {
  if (a === b) return true;
  if (
    a.deviceHandle !== b.deviceHandle || a.functionId !== b.functionId ||
    a.functionName !== b.functionName
  ) return false;
  const names = Object.keys(a.args);
  return names.length === Object.keys(b.args).length && names.every((n) => {
    const x = a.args[n]!;
    const y = b.args[n];
    return y !== undefined && x.type === y.type &&
      (x as Record<string, unknown>)[x.type] === (y as Record<string, unknown>)[y.type];
  });
}

/**
 * What names the hook call that failed and why (a veto's reason, answered to the client): its
 * call named as namedCall, its error (it carries the provider's message) cut to
 * QUOTED_HOOK_ERROR_CHARS, so a provider's 20 kB message makes no 20 kB answer. `error` is how
 * it is written (hookFailureLine quotes it). The event's and the answer's `hook_failures` keep
 * both whole.
 */
function describeHookFailure(
  f: HookFailure,
  error = providerTextWithin(f.error, QUOTED_HOOK_ERROR_CHARS),
): string {
  return `${f.phase}_transition hook ${f.hook} call ${
    namedCall(f.device_handle, f.function)
  } failed: ${error}`;
}

/**
 * The log line of a failed hook call: as describeHookFailure, its error quoted (cut to
 * QUOTED_HOOK_ERROR_CHARS), so a line break or a quote in it can neither end nor forge the line.
 */
function hookFailureLine(f: HookFailure): string {
  return describeHookFailure(f, quoteProviderTextWithin(f.error, QUOTED_HOOK_ERROR_CHARS));
}

/**
 * A hook call as a log line or a veto names it, `provider/device function`: the device as
 * namedHandle (its configured handle), the function (its configured name, or its id) cut as
 * providerText.
 */
function namedCall(handle: string, fn: string): string {
  return `${namedHandle(handle)} ${providerText(fn)}`;
}

/** A FAULT reason in a log line: cut to QUOTED_FAULT_REASON_CHARS and JSON-quoted. */
function quoteReason(reason: string): string {
  return quoteProviderTextWithin(reason, QUOTED_FAULT_REASON_CHARS);
}
