/**
 * AutomationEngine: the behavior-tree automation as the runtime runs it. Loads the configured
 * tree at start-up (every diagnostic fails the start), adapts the kernel (state cache, call router,
 * parameters, clock) to BtServices, ticks only in AUTO (every committed mode change toggles the
 * runner; leaving AUTO -- including the FAULT an e-stop forces -- halts the tree), turns a tick that
 * throws into a forced FAULT, and answers GET /v0/automation/tree and /status.
 *
 * Around the tree (docs/safety.md, "A device that drops out, and the device-loss latch"): entering
 * AUTO is refused while a device the tree names literally is failing or down
 * (state/device_outage.ts); the device-loss latch refuses automated calls to a device lost since
 * AUTO was last entered and, in AUTO, forces FAULT when a device the tree depends on goes down;
 * status says why the tree is not running (`not_running`, one line in `why_not_running`, the
 * devices that block it) and names every device the tree's recent calls to all failed (an outage).
 */
import {
  type Clock,
  type DeviceCapabilities,
  deviceHandle,
  errorMessage,
  escapeControl,
  type FunctionSpec,
  invalidArgument,
  type Logger,
  MAX_NAMED_IN_WARNING,
  namedDeviceHandle,
  namedHandle,
  namedList,
  namedProviderId,
  notFound,
  parseDeviceHandle,
  providerText,
  type Quality,
  quoteProviderText,
  RuntimeError,
  type TypedValue,
} from "../common/mod.ts";
import {
  type Diagnostic,
  formatDiagnostic,
  type ParameterConfig,
  type RuntimeMode,
} from "../config/mod.ts";
import {
  allowedModesRefusal,
  type ArmCheck,
  type ArmRefusal,
  type AuditOrigin,
  type CallGate,
  type CallRouter,
  leaseRefusal,
  type ModeChangeListener,
  type ParameterService,
  reachedProvider,
  refusedBeforeSending,
  validateArgs,
} from "../control/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type { DeviceConditionChange, DeviceOutages, StateCache } from "../state/mod.ts";
import type {
  AutomationStatus,
  AutomationVersion,
  BtRunner,
  BtRunnerOptions,
  TickScheduler,
} from "./bt/bt_runner.ts";
import { DeviceLossLatch, type LossEntry, type ProviderLossEntry } from "./device_loss_latch.ts";
import type { LiteralDeviceCall } from "./bt/device_handles.ts";
import type { EntryWriter } from "./bt/blackboard_writers.ts";
import type { DeclaredParameters, ParameterRead, parameterReadProblems } from "./bt/mod.ts";
import type { BtQuality, BtServices, ReadFileAsyncFn, ReadFileFn } from "./bt/services.ts";
import { parseCallArgs } from "./call_args.ts";
import { CallHeldBack } from "./call_held_back.ts";

/** Why a call of `fn` with these literal args would be refused by validation; null: it passes. */
function literalArgsProblem(fn: FunctionSpec, text: string): string | null {
  const parsed = parseCallArgs(text);
  if (!parsed.ok) return parsed.error;
  try {
    validateArgs(fn, parsed.args);
    return null;
  } catch (err) {
    if (err instanceof RuntimeError) return err.message;
    throw err;
  }
}

/** The part of the mode manager automation depends on (ModeManager satisfies it). */
export interface AutomationModes {
  current(): RuntimeMode;
  onModeChange(listener: ModeChangeListener): () => void;
  /** Un-vetoable transition to FAULT (automation faults). */
  forceFault(reason: string, source?: AuditOrigin): Promise<boolean>;
  /** Registers a check that may refuse arming (entering AUTO with a device down). */
  addArmCheck?(check: ArmCheck, name?: string): void;
  /** Refuses a transition into AUTO whose before-hooks run now at its commit (a tree swap). */
  invalidateAutoEntry?(why: string, remedy?: string, refusedBy?: string): void;
}

/** What automation needs to know about providers and their inventories. */
export interface AutomationInventory {
  providerAvailable(providerId: string): boolean;
  /** Device ids the provider has now ([] for an unknown provider). */
  devicesOf(providerId: string): readonly string[];
  /**
   * The device's declared capabilities (undefined: not in the inventory now): the AUTO gate reads
   * the policies of the functions the tree calls.
   */
  capabilities?(providerId: string, deviceId: string): DeviceCapabilities | undefined;
  /**
   * Subscribes to providers a reload removed (told once each): what the tree's calls found of
   * their devices is forgotten then, not when status is next read -- a reload configuring the id
   * again brings a new process, whose devices no call has reached.
   */
  onProviderRemoved?(listener: (providerId: string) => void): () => void;
  /**
   * Subscribes to a provider's (re)discovery, its devices' conditions current when told: the
   * device-loss latch announces a device its provider-wide entry refuses listed anew.
   */
  onProviderListed?(listener: (providerId: string) => void): () => void;
}

/** Consecutive failed calls to one device after which status reports an outage. */
export const DEVICE_OUTAGE_FAILURES = 2;

/**
 * Devices whose recent failed calls are kept, each record apart (and, apart from them, device
 * functions whose recent calls were refused): a tree computing its handles (`{dev}`) can name
 * without end, so beyond it the least recently updated record goes (its streak starts again at
 * its next failure or refusal).
 */
export const MAX_CALL_RECORDS = 256;

/**
 * Outages whose wall date the engine keeps (devices not up, as the outage monitor told them, named
 * by the tree or not: a reload's tree may name one later); past it the oldest of a device the
 * running tree does not name is let go (counted back at the first status read that names it), the
 * oldest of all only when the tree names every one. Up devices hold none.
 */
export const MAX_OUTAGE_DATES = 4096;

/** The key of a device function's refusals (JSON: a handle as written may hold any text). */
function refusalKey(handle: string, fn: string): string {
  return JSON.stringify([handle, fn]);
}

/** Sets `key` as the most recent entry of `map`, the least recent going beyond `max`. */
function setNewest<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  // One entry in at most: one out at most.
  if (map.size > max) map.delete(map.keys().next().value!);
}

/** A device the tree's recent calls to all failed (GET /v0/automation/status). */
export interface DeviceOutage {
  device_handle: string;
  consecutive_failures: number;
  last_error: string;
  since_epoch_ms: number;
}

/**
 * A device function the tree's recent calls of were all refused by a gate -- an interlock, the
 * device-loss latch, the mode or e-stop gate -- or by a check about the caller -- requires_lease,
 * argument validation (a malformed device handle too), min_interval, a function the device does
 * not declare, a provider id not configured (GET /v0/automation/status `refused_calls`): nothing
 * was sent, so the device is not out; 2 or more in a row, until a call is not refused.
 */
export interface RefusedCalls {
  device_handle: string;
  /**
   * The function refused (counted per device and function: another function of the device that
   * is called meanwhile neither ends nor extends this one's streak).
   */
  function: string;
  consecutive_refusals: number;
  /**
   * What refused the last one: `interlock <id>`, `device_loss_latch`, `estop`, `stopped` (asked
   * before a stop, its turn after the re-arm), `mode`,
   * `allowed_modes`, `requires_lease`, `validation`, `min_interval`, `unknown_function` (the
   * tree calls a function the device does not declare), `unknown_provider` (no provider has the
   * handle's id): the last two are tree or configuration errors.
   */
  refused_by: string;
  /** The last refusal's message. */
  last_refusal: string;
  since_epoch_ms: number;
}

/** A device the tree names that is failing or down (AUTO is refused while there is one). */
export interface BlockedDevice {
  device_handle: string;
  /** `failing`: its reads fail (within the bound); `down`: lost (state/device_outage.ts). */
  condition: "failing" | "down";
  reason: string;
  /** Wall time it started failing or went down; null when not known. */
  since_epoch_ms: number | null;
}

/** Why the tree does not tick now (GET /v0/automation/status `not_running`). */
export interface NotRunning {
  /**
   * `no_definition` (no tree configured), `stopped` (engine not started), `mode` (the mode is
   * not AUTO), `device_loss_latch` (FAULT forced by a device the tree depends on going down),
   * `automation_fault` (the last tick threw), `stalled` (ticking, but failing for more than
   * bt_runner's STALL_FAILURE_TICKS ticks in a row).
   */
  cause:
    | "no_definition"
    | "stopped"
    | "mode"
    | "device_loss_latch"
    | "automation_fault"
    | "stalled";
  /** The mode now. */
  mode: RuntimeMode;
}

/** AutomationStatus plus the project's additions (why the tree does not run, lost devices). */
export type EngineStatus = AutomationStatus & {
  /** The runtime mode now. */
  mode: RuntimeMode;
  /** Why the tree does not tick (null while it runs in AUTO). */
  not_running: NotRunning | null;
  /** The same as one line an operator reads, with the remedy; null while it runs. */
  why_not_running: string | null;
  /** Devices the tree names that are failing or down (they block entering AUTO). */
  blocked_devices: BlockedDevice[];
  /** Devices automation may not command until AUTO is entered again. */
  device_loss_latched: string[];
  /**
   * Providers past MAX_LATCHED_DEVICES_PER_PROVIDER latched devices: their further lost devices,
   * held as one entry (automation may command only the devices it exempts: exempt_device_ids).
   */
  device_loss_latched_providers: LatchedProvider[];
  device_outages: DeviceOutage[];
  /**
   * Device functions the tree's recent calls of were all refused by a gate or a caller check (not
   * outages), one entry per device and function.
   */
  refused_calls: RefusedCalls[];
};

/**
 * What a reload did to the tree: "replaced" another tree (path or content) was swapped in;
 * "retimed" the same tree (path and content) now ticks at another rate (its automation_version
 * is unchanged); "unchanged" (no tree before nor after is unchanged whatever the rate);
 * "refused_auto"; refused in AUTO with `does_not_load`, the new tree's load error (every
 * diagnostic, as outside AUTO) when it does not load either.
 */
export type TreeReload =
  | "unchanged"
  | "replaced"
  | "retimed"
  | "refused_auto"
  | { readonly refused_auto: { readonly does_not_load: string } };

/** A provider-wide device-loss latch entry as status shows it (ProviderLossEntry). */
export interface LatchedProvider {
  provider_id: string;
  /** Losses held as one entry (a device lost again after an entry into AUTO counts again). */
  losses: number;
  /** When the first was lost. */
  since_epoch_ms: number;
  /** The latest device held, and why it was lost. */
  last_device_handle: string;
  last_reason: string;
  /**
   * How many of its devices it exempts: listed and not down (up or failing) when it was made or
   * when AUTO was last entered, not lost since. Automation may command them.
   */
  exempt_devices: number;
  /** Those devices' ids (at most the devices the provider lists: MAX_DEVICES_PER_PROVIDER). */
  exempt_device_ids: string[];
}

/** Construction options of AutomationEngine. */
export interface AutomationEngineOptions {
  /** automation.behavior_tree (absolute path), or null when none is configured. */
  readonly behaviorTree: string | null;
  /** automation.tick_rate_hz. */
  readonly tickRateHz: number;
  readonly cache:
    & Pick<StateCache, "signal">
    & Partial<Pick<StateCache, "device" | "qualityNow">>;
  readonly router: Pick<CallRouter, "call"> & { addGate?(gate: CallGate, name?: string): void };
  /** Provider availability and inventories (AUTO preconditions, device-loss latch). */
  readonly inventory?: AutomationInventory;
  /**
   * Whether a device is failing or down, and its changes (state/device_outage.ts): the AUTO
   * gate, the device-loss latch and status use it. Absent: only provider availability and the
   * inventory are judged (unit tests), and no device-loss latch is kept.
   */
  readonly outages?: Pick<DeviceOutages, "condition" | "onChange">;
  /**
   * The declared parameters: GetParameter* reads them; a tree reading a literal name that is not
   * declared (or of a type its node does not read) does not load. Absent: every GetParameter*
   * node fails (no parameters declared), unchecked.
   */
  readonly parameters?: Pick<ParameterService, "get" | "list">;
  readonly modes: AutomationModes;
  readonly bus: EventBus;
  readonly clock: Clock;
  readonly log: Logger;
  /** Reads a tree file at start-up's load (the composition root injects the host's reading). */
  readonly readFile: ReadFileFn;
  /**
   * Reads a tree file for a reload (reloadTree), the tree and its includes read before they are
   * loaded: off the event loop's thread and bounded (the composition root's), so a hung mount
   * holds neither the API nor the e-stop, and fails the reload naming the file. Absent: the
   * reload reads through `readFile`.
   */
  readonly readFileAsync?: ReadFileAsyncFn;
  /** Tick scheduling (default: global timers). */
  readonly scheduler?: TickScheduler;
  /**
   * Builds the runner of a tree that loaded (default `new BtRunner`): called once per tree built,
   * at load() and by a reload whose tree changed (unit tests count the builds through it).
   */
  readonly newRunner?: (options: BtRunnerOptions) => BtRunner;
}

/** The kind of value a blackboard port or a signal's reads carry (uint64 counts as int64). */
type ValueKind = "double" | "int64" | "bool" | "string";

/** The type an entry takes from `use` as its first write: a ReadSignal's number is a double. */
function entryTypeOf(use: EntryUse): ValueKind {
  return use.signal && use.kind !== "string" ? "double" : use.kind;
}

/**
 * The type a tick fixed for an entry (a value written into it, its type no longer `any`):
 * undefined while no tick has written it, or it takes any type.
 */
function heldEntryType(entry: EntryWriter["entry"]): ValueKind | undefined {
  return entry.value === undefined || entry.declared === "any" ? undefined : entry.declared;
}

/** One port or signal of the tree naming a blackboard entry, as the AUTO gate judges it. */
interface EntryUse {
  readonly key: string;
  readonly text: string;
  readonly kind: ValueKind;
  /** Writes it, only types it (the first input port naming it), or reads it as `kind`. */
  readonly role: "write" | "declare" | "read";
  /** A ReadSignal's value (written as a double, whatever the signal's numeric type). */
  readonly signal: boolean;
}

/**
 * Whether every value of kind `from` converts to `to` without loss (Blackboard's convertValue):
 * an int64 or a bool is a double, a bool an int64 (0/1); a double is no int64 nor bool in general.
 */
function convertsWhole(from: ValueKind, to: ValueKind): boolean {
  if (from === to) return true;
  if (to === "double") return from === "int64" || from === "bool";
  return to === "int64" && from === "bool";
}

/** Behavior-tree automation wired to the runtime kernel; satisfies the HTTP AutomationService. */
export class AutomationEngine {
  #o: AutomationEngineOptions;
  readonly #log: Logger;
  readonly #services: BtServices;
  #runner: BtRunner | null = null;
  /** Between start() and stop(): a tree loaded meanwhile (a reload) starts ticking in AUTO. */
  #started = false;
  #openRunId: () => string | null = () => null;
  #unsubscribe: (() => void) | null = null;
  #handles: readonly string[] = [];
  /** #handles as a set: an outage date of a device the tree names is let go last. */
  #named: ReadonlySet<string> = new Set();
  /** The calls the loaded tree makes with device and function written literally. */
  #literalCalls: readonly LiteralDeviceCall[] = [];
  /** The loaded tree's output ports that write an entry with a known type or a named signal. */
  #writers: readonly EntryWriter[] = [];
  /** The loaded tree's parameter reads against declarations (a reload's); null without a tree. */
  #parameterReads: ParameterReads | null = null;
  /** Digest of every file of the loaded tree (includes too); null without one. */
  #contentDigest: string | null = null;
  /** The files the loaded tree was read from (top-level first, includes too); empty without one. */
  #treeFiles: readonly string[] = [];
  /**
   * The loaded tree's top-level file as it was read to build it (GET /v0/automation/tree): the
   * tree that runs, not the file on disk an edit or a reload refused in AUTO changed since.
   */
  #treeText: string | null = null;
  readonly #calls = new Map<string, { failures: number; lastError: string; sinceMs: number }>();
  /**
   * Calls of one function of a device refused (a gate, a caller check) in a row, by refusalKey:
   * they neither count nor end `#calls`; a call of another function neither ends nor extends them.
   */
  readonly #refusals = new Map<
    string,
    {
      handle: string;
      fn: string;
      refusals: number;
      refusedBy: string;
      lastRefusal: string;
      sinceMs: number;
    }
  >();
  /**
   * A node's last refusal listed under a key that names no device (its device_handle port as
   * written, `{dev}`, whose entry had no value; a malformed handle it computed), by node path:
   * no call can end such a record, so it ends once that node names another handle (bounded by the
   * tree's nodes; emptied with the refusals).
   */
  readonly #nodeKeys = new Map<string, string>();
  readonly #lossLatch: DeviceLossLatch | null = null;
  /**
   * Devices the tree commanded since AUTO was last entered (it depends on them), and those its
   * calls were still in flight to when it was entered (or when a reload swapped it in: a replaced
   * tree's other calls say nothing of the new one).
   */
  readonly #commanded = new Set<string>();
  /**
   * Automated calls admitted to their provider's queue and not settled yet, by device handle (an
   * entry leaves at 0): bounded by the provider queues. A call a halt did not stop (one sent, up
   * to the provider's timeout_ms) still commands its device when AUTO is entered again; one it
   * caught before it was sent (its decision being written ahead) leaves at the halt: the router
   * never sends it.
   */
  readonly #inFlight = new Map<string, number>();
  /**
   * Counts the trees a reload swapped in: a call records its outcome only under the tree it was
   * made by (a replaced tree's call settling after the swap says nothing of the new one's).
   */
  #treeGeneration = 0;
  /** Ticks and tick errors of the trees a reload replaced (tickCounts counts from start). */
  readonly #retired = { ticks: 0, errors: 0 };
  /**
   * The wall date each device not up started failing or went down (its condition's
   * sinceMono), as it was when its condition changed (else when status first read it; a start
   * that moved untold, from the date kept: #outageDate): counted back from the monotonic clock at
   * every read, a step of the wall clock (NTP) would move it.
   * Only devices not up (let go when told up), at most MAX_OUTAGE_DATES.
   */
  readonly #outageSince = new Map<string, { sinceMono: number; atMs: number }>();
  #unsubscribeOutages: (() => void) | null = null;

  constructor(options: AutomationEngineOptions) {
    this.#o = options;
    this.#log = options.log.child("automation");
    this.#services = kernelServices(
      options,
      () => this.#treeGeneration,
      (handle) => this.#noteCommand(handle),
      (handle, delta) => this.#noteInFlight(handle, delta),
      (handle, fn, err, generation, refusedBy) =>
        this.#noteCall(handle, fn, err, generation, refusedBy),
      (node, handle, generation) => this.#noteNodeKey(node, handle, generation),
    );
    options.modes.onModeChange((change) => {
      if (change.current !== "AUTO" || change.previous === "AUTO") return;
      this.#commanded.clear();
      // A call of a previous session still in flight may yet act on its device: the tree depends
      // on that device until the call settles (at least), as on one it commands in this session.
      for (const handle of this.#inFlight.keys()) this.#commanded.add(handle);
      // `refused_calls` are the recent automated calls' refusals: the gates behind them (the
      // mode, the e-stop and device-loss latches) are decided again by entering AUTO, so the
      // previous session's say nothing of this one. Outages are kept: they are what the device
      // answered, and no call has reached it since (docs/safety.md section 5).
      this.#refusals.clear();
      this.#nodeKeys.clear();
    });
    options.inventory?.onProviderRemoved?.((providerId) => this.#forgetProvider(providerId));
    const outages = options.outages;
    if (outages) {
      this.#unsubscribeOutages = outages.onChange((c) => this.#noteOutage(c));
      const latch = new DeviceLossLatch({
        outages,
        modes: options.modes,
        bus: options.bus,
        clock: options.clock,
        log: this.#log,
        treeDependsOn: (handle) => this.#handles.includes(handle) || this.#commanded.has(handle),
        ...(options.inventory ? { devicesOf: (id) => options.inventory!.devicesOf(id) } : {}),
        ...(options.inventory?.onProviderListed
          ? { onListed: (l) => options.inventory!.onProviderListed!(l) }
          : {}),
      });
      this.#lossLatch = latch;
      options.router.addGate?.(latch.gate, "device_loss");
      options.modes.onModeChange((change) => latch.onModeChange(change));
    }
    if (options.inventory || outages) {
      options.modes.addArmCheck?.(
        (_from, to) => to === "AUTO" ? this.#autoRefusal() : null,
        "device_loss",
      );
    }
  }

  /**
   * Why entering AUTO must be refused now: a device the tree names is failing or down, or a
   * function the tree calls is one its provider's declared policy never lets run in AUTO
   * (`allowed_modes` without AUTO, or `requires_lease`), one the device does not declare, or one
   * with literal args that fail validation: refused here, not at its every call; or
   * the tree reads a parameter not declared as it reads it (a reload replaced the tree and its
   * parameters section was refused, or has not been applied yet).
   */
  autoProblem(): string | null {
    return this.#autoRefusal()?.message ?? null;
  }

  /** autoProblem with what refuses (audit `refused_by`): device_loss, the policy, validation. */
  #autoRefusal(): ArmRefusal | null {
    const blocked = this.#blockedDevices();
    if (blocked.length > 0) {
      return {
        message: `refusing AUTO: the behavior tree names ${blockedNamed(blocked)}`,
        refusedBy: "device_loss",
      };
    }
    const refused = this.#refusedCalls();
    if (refused.length > 0) {
      return {
        message: `refusing AUTO: the behavior tree calls ${refused.map((r) => r.text).join("; ")}`,
        refusedBy: refused[0]!.refusedBy,
      };
    }
    const conflicts = this.#entryTypeConflicts();
    if (conflicts.length > 0) {
      return {
        message: `refusing AUTO: the behavior tree writes ${conflicts.join("; ")} (an entry ` +
          `takes the type of its first write: the tick that writes the other faults the runtime)`,
        refusedBy: "validation",
      };
    }
    // A reload replaced the tree, and the parameters it reads are not (yet) declared.
    const parameters = this.#o.parameters;
    const reads = parameters === undefined ? [] : this.parameterReadProblems(parameters.list());
    if (reads.length === 0) return null;
    return {
      message: `refusing AUTO: the behavior tree reads parameters that are not declared: ${
        reads.join("; ")
      }`,
      refusedBy: "validation",
    };
  }

  /**
   * The tree's literal calls to devices of `providerId` (all of them without it) that the AUTO
   * gate refuses for what the devices declare now (#refusedCalls), one text each
   * (`p0/act set_x (Call refused: ...)`): said at start-up, when a reload swaps the tree in and
   * when the provider's inventory changes (a restart), before an operator requests AUTO.
   */
  refusedCallsOf(providerId?: string): string[] {
    return this.#refusedCalls(providerId).map((r) => r.text);
  }

  /**
   * The tree's literal calls the call router would refuse at every run in AUTO, one text each,
   * with what refuses: the declared policy (allowed_modes, requires_lease), a function the device
   * does not declare (unknown_function), or literal args that fail validation (validation) --
   * the last two naming the CallDevice node (`at FILE:LINE:COL`). A device not listed is
   * #blockedDevices' (device_loss). `providerId`: only the calls to its devices.
   */
  #refusedCalls(providerId?: string): { text: string; refusedBy: string }[] {
    const capabilitiesOf = this.#o.inventory?.capabilities;
    if (capabilitiesOf === undefined) return [];
    const out: { text: string; refusedBy: string }[] = [];
    const policyJudged = new Set<string>();
    for (const call of this.#literalCalls) {
      const dev = parseDeviceHandle(call.deviceHandle);
      if (!dev || (providerId !== undefined && dev.providerId !== providerId)) continue;
      const caps = capabilitiesOf(dev.providerId, dev.deviceId);
      if (caps === undefined) continue;
      // The function name is the tree file's, any length and any character: cut and escaped,
      // quoted as the call router quotes it where the device declares no such function. The
      // handle's ids (a configured provider id, a device id: any length) are cut as the call
      // router names them (namedDeviceHandle).
      const device = namedDeviceHandle(dev.providerId, dev.deviceId);
      const named = `${device} ${escapeControl(providerText(call.functionName))}`;
      // Judged once per call of the whole handle and name (two cut alike are still two).
      const judged = `${call.deviceHandle}\u0000${call.functionName}`;
      // A name declared twice reaches the last declaration (CallRouter, as anolis): its policy.
      const fn = caps.functions.findLast((f) => f.name === call.functionName);
      if (fn === undefined) {
        out.push({
          text: `${named} at ${call.at} (Function not found: ${device} ${
            quoteProviderText(call.functionName)
          })`,
          refusedBy: "unknown_function",
        });
        continue;
      }
      if (!policyJudged.has(judged)) {
        policyJudged.add(judged);
        const modes = allowedModesRefusal(caps, fn, "AUTO");
        const err = modes ?? leaseRefusal(caps, fn);
        if (err !== null) {
          out.push({
            text: `${named} (${err.message})`,
            refusedBy: modes !== null ? "allowed_modes" : "requires_lease",
          });
        }
      }
      const argsProblem = call.args === null ? null : literalArgsProblem(fn, call.args);
      if (argsProblem !== null) {
        out.push({ text: `${named} at ${call.at} (${argsProblem})`, refusedBy: "validation" });
      }
    }
    return out;
  }

  /**
   * The blackboard entries the tree writes or reads with types that do not fit, one text each
   * (`entry 'x' with W1 and with W2`), where a ReadSignal's kind is its signal's declared type now:
   * what verify cannot see (docs/automation.md, "Blackboard types"). Written both as a string and
   * as a number (the first writer of each kind in tree order); else a signal's values written into
   * an entry a port typed first (a double into one CheckBool declared bool), or read by a typed
   * port that cannot convert them all (a double signal read by Sleep's int64 `msec`). An entry a
   * tick of an earlier run typed is judged with that type as its first write (the blackboard
   * survives leaving AUTO). A signal not declared now, or of type bytes, is left out.
   */
  #entryTypeConflicts(): string[] {
    const capabilitiesOf = this.#o.inventory?.capabilities;
    const byEntry = new Map<EntryWriter["entry"], EntryUse[]>();
    for (const w of this.#writers) {
      let kind: ValueKind;
      let what: string;
      let signal = false;
      if ("type" in w.writes) {
        kind = w.writes.type;
        what = w.reads !== undefined
          ? `${w.node} ${w.reads} (reads it as ${kind})`
          : w.declares === undefined
          ? `${w.node} (${kind})`
          : `${w.node} ${w.declares} (declares it ${kind})`;
      } else {
        const { deviceHandle, signalId } = w.writes;
        const dev = parseDeviceHandle(deviceHandle);
        if (!dev) continue;
        const caps = capabilitiesOf?.(dev.providerId, dev.deviceId);
        const declared = caps?.signals.find((s) => s.signalId === signalId)?.valueType;
        if (declared === undefined || declared === null || declared === "bytes") continue;
        kind = declared === "uint64" ? "int64" : declared;
        signal = true;
        // The device's ids and its signal id, any length: cut (not escaped: a device's ids hold
        // no control character, refused at discovery, and a configured provider id is a
        // log line's to escape).
        what = `${w.node} ${namedDeviceHandle(dev.providerId, dev.deviceId)} ${
          providerText(signalId)
        } (a ${declared} signal)`;
      }
      const uses = byEntry.get(w.entry) ?? [];
      byEntry.set(w.entry, uses);
      uses.push({
        key: w.key,
        text: `${what}${w.at ? ` at ${w.at}` : ""}`,
        kind,
        role: w.reads !== undefined ? "read" : w.declares !== undefined ? "declare" : "write",
        signal,
      });
    }
    const out: string[] = [];
    const conflict = (a: EntryUse, b: EntryUse) =>
      // The entry's key is the tree file's, of any length (a port refuses other characters than
      // letters, digits, `_`, `.` and `-`): cut and quoted, as config text is.
      out.push(`blackboard entry ${quoteProviderText(a.key)} with ${a.text} and with ${b.text}`);
    for (const [entry, uses] of byEntry) {
      // A tick typed the entry already (its first write, in an earlier run): it keeps that type
      // for the tree's life, whatever the signals declare now (a restart that retyped one).
      const held = heldEntryType(entry);
      const treeFirst = uses.find((u) => u.role !== "read");
      if (held !== undefined && (treeFirst === undefined || entryTypeOf(treeFirst) !== held)) {
        uses.unshift({
          key: uses[0]!.key,
          text: `its value from an earlier tick (${held}, kept until a restart or a reload ` +
            `replaces the tree)`,
          kind: held,
          role: "declare",
          signal: false,
        });
      }
      const typing = uses.filter((u) => u.role !== "read");
      const first = typing[0];
      // A string entry refuses numbers, a number entry strings that do not parse: any order.
      const other = first &&
        typing.find((u) => (u.kind === "string") !== (first.kind === "string"));
      if (first && other) {
        conflict(first, other);
        continue;
      }
      // The entry's type: the first port's, or what a ReadSignal first writes (always a double).
      const entryType: ValueKind | undefined = first === undefined ? undefined : entryTypeOf(first);
      const badWrite = entryType === undefined
        ? undefined
        : typing.find((u) => u.role === "write" && !convertsWhole(u.kind, entryType));
      if (first && badWrite) {
        conflict(first, badWrite);
        continue;
      }
      const reader = uses.find((r) =>
        r.role === "read" &&
        typing.some((u) => u.role === "write" && !convertsWhole(u.kind, r.kind))
      );
      if (reader) {
        conflict(
          typing.find((u) => u.role === "write" && !convertsWhole(u.kind, reader.kind))!,
          reader,
        );
      }
    }
    return out;
  }

  /** The devices the tree names that are failing or down now. */
  #blockedDevices(): BlockedDevice[] {
    const out: BlockedDevice[] = [];
    const outages = this.#o.outages;
    const inventory = this.#o.inventory;
    for (const handle of this.#handles) {
      const dev = parseDeviceHandle(handle);
      if (!dev) continue;
      if (outages) {
        const c = outages.condition(dev.providerId, dev.deviceId);
        if (c.kind === "up") {
          this.#outageSince.delete(handle);
          continue;
        }
        out.push({
          device_handle: handle,
          condition: c.kind,
          reason: c.reason,
          since_epoch_ms: c.sinceMono === null ? null : this.#outageDate(handle, c.sinceMono, null),
        });
      } else if (inventory && !inventory.providerAvailable(dev.providerId)) {
        // The tree's provider id, any length: cut as every reason naming a provider cuts it.
        const provider = namedProviderId(dev.providerId);
        out.push(blockedNow(handle, `provider ${provider} is UNAVAILABLE`));
      } else if (inventory && !inventory.devicesOf(dev.providerId).includes(dev.deviceId)) {
        const provider = namedProviderId(dev.providerId);
        out.push(blockedNow(handle, `not in the inventory of provider ${provider}`));
      }
    }
    return out;
  }

  /**
   * A device's condition changed: the wall date it started failing or went down, kept for
   * #blockedDevices (as the change was told: `atWallMs` then), also when the tree does not name it
   * (yet): a reload's tree that names a device already out dates it from then, not from the first
   * read after the reload (a wall-clock step before that read would move it).
   */
  #noteOutage(c: DeviceConditionChange): void {
    const handle = deviceHandle(c.providerId, c.deviceId);
    const since = c.condition.sinceMono;
    if (c.condition.kind === "up" || since === null) return void this.#outageSince.delete(handle);
    this.#outageDate(handle, since, c.atWallMs);
  }

  /**
   * The outage date let go when MAX_OUTAGE_DATES are kept: the oldest of a device the running tree
   * does not name (its date is what blocked_devices reads), else the oldest. Only when full. The
   * oldest is the one written longest ago (#outageDate re-inserts a date it writes anew).
   */
  #outageDateToLetGo(): string {
    for (const handle of this.#outageSince.keys()) {
      if (!this.#named.has(handle)) return handle;
    }
    return this.#outageSince.keys().next().value!;
  }

  /**
   * The wall date of `handle`'s outage since `sinceMono`: the one kept for it, else counted back
   * from `toldAtMs` (the wall date of the change told) on the monotonic clock, and kept. Read with
   * no change told (null): a start that moved untold (DeviceOutages never dates a down device
   * later, but may date an undated one) is counted on the monotonic clock from the date kept of
   * that outage, not back from the wall clock now (a step since would move it); one never seen,
   * from now. A date added to MAX_OUTAGE_DATES kept lets one go (#outageDateToLetGo), read or
   * told.
   */
  #outageDate(handle: string, sinceMono: number, toldAtMs: number | null): number {
    const kept = this.#outageSince.get(handle);
    if (kept?.sinceMono === sinceMono) return kept.atMs;
    if (kept === undefined && this.#outageSince.size >= MAX_OUTAGE_DATES) {
      this.#outageSince.delete(this.#outageDateToLetGo());
    }
    const atMs = toldAtMs === null && kept !== undefined
      ? Math.round(kept.atMs + (sinceMono - kept.sinceMono))
      : Math.round((toldAtMs ?? this.#o.clock.nowMs()) - (this.#o.clock.monoMs() - sinceMono));
    // Re-dated: moved to the end, so that the Map's order stays the order of the dates written
    // (#outageDateToLetGo lets the first go), not of the outages' first notes.
    if (kept !== undefined) this.#outageSince.delete(handle);
    this.#outageSince.set(handle, { sinceMono, atMs });
    return atMs;
  }

  /** The services the tree's custom nodes use (exposed for tests). */
  get services(): BtServices {
    return this.#services;
  }

  /** The runner once the tree is loaded; null before load() or with no tree configured. */
  get runner(): BtRunner | null {
    return this.#runner;
  }

  /**
   * Loads, verifies and builds the configured tree and computes its version. Throws
   * INVALID_ARGUMENT listing every diagnostic (`FILE:LINE:COL: error: ...`, one per line) when
   * the tree does not load; warnings are logged. Idempotent.
   */
  async load(): Promise<void> {
    if (this.#runner) return;
    const path = this.#o.behaviorTree;
    if (path === null) {
      this.#log.warn("automation enabled without a behavior tree: nothing will tick in AUTO");
      return;
    }
    const built = await this.#buildTree(path, this.#o.tickRateHz, this.#o.readFile);
    this.#warnOf(built.warnings);
    const parameters = this.#o.parameters;
    if (parameters !== undefined) {
      checkParameterReads(path, built.parameterReads, declaredOf(parameters.list()));
    }
    this.#parameterReads = built.parameterReads;
    this.#handles = built.handles;
    this.#named = new Set(built.handles);
    this.#literalCalls = built.calls;
    this.#writers = built.writers;
    this.#contentDigest = built.contentDigest;
    this.#treeFiles = built.fileList;
    this.#treeText = built.text;
    this.#runner = built.runner;
    this.#log.info(
      `behavior tree ${path} loaded (main tree ${
        quoteProviderText(built.mainTreeId ?? "")
      }, ${built.files} file(s))`,
    );
  }

  /**
   * Loads, verifies and builds the tree at `path`, with the handles and calls it names literally
   * and its verify warnings, for the caller to log when the tree is new to it; INVALID_ARGUMENT
   * listing every diagnostic when it does not load (its warnings logged).
   */
  async #buildTree(path: string, tickRateHz: number, readFile: ReadFileFn): Promise<{
    parameterReads: ParameterReads;
    runner: BtRunner;
    handles: readonly string[];
    calls: readonly LiteralDeviceCall[];
    writers: readonly EntryWriter[];
    contentDigest: string;
    /** The top-level file's text, as read to build the tree. */
    text: string;
    mainTreeId: string | undefined;
    files: number;
    /** The files read to build it, top-level first (includes too). */
    fileList: readonly string[];
    /** The verify warnings, one formatted line each. */
    warnings: readonly string[];
  }> {
    // The engine is loaded here, not at start-up: a runtime without a tree never loads it.
    const {
      blackboardWriters,
      BtRunner,
      computeTreeContentDigest,
      literalDeviceCalls,
      literalDeviceHandles,
      literalParameterReads,
      loadBehaviorTree,
      parameterReadProblems,
    } = await import("./bt/mod.ts");
    const { tree, diagnostics } = loadBehaviorTree(path, readFile);
    const warnings = diagnostics.filter((d) => d.severity === "warning").map(formatDiagnostic);
    if (!tree) {
      this.#warnOf(warnings);
      throw treeLoadError(path, diagnostics);
    }
    const newRunner = this.#o.newRunner ?? ((options) => new BtRunner(options));
    const runner = newRunner({
      parsed: tree,
      services: this.#services,
      events: this.#o.bus,
      tickRateHz,
      log: this.#log,
      onFault: (error) => this.#fault(error),
      ...(this.#o.scheduler ? { scheduler: this.#o.scheduler } : {}),
    });
    await runner.ready;
    return {
      // The reads only, not the parsed tree: the engine keeps this for the tree's life.
      parameterReads: readsAgainst(literalParameterReads(tree), parameterReadProblems),
      runner,
      handles: literalDeviceHandles(tree),
      calls: literalDeviceCalls(tree),
      writers: blackboardWriters(runner.tree),
      contentDigest: await computeTreeContentDigest(tree),
      text: tree.texts[0]!,
      mainTreeId: tree.mainTreeId,
      files: tree.files.length,
      fileList: tree.files,
      warnings,
    };
  }

  /** Logs a tree's verify warnings, one WARN line each. */
  #warnOf(warnings: readonly string[]): void {
    for (const w of warnings) this.#log.warn(w);
  }

  /**
   * Starts the tick engine (after load and after providers are up). Ticks happen only while the
   * mode is AUTO; every committed mode change is followed at once.
   */
  start(): void {
    this.#started = true;
    const runner = this.#runner;
    if (!runner || this.#unsubscribe) return;
    this.#unsubscribe = this.#o.modes.onModeChange(({ previous, current }) => {
      // Leaving FAULT re-arms: status no longer reports the throw that forced it as the state.
      if (previous === "FAULT" && current !== "FAULT") runner.rearm();
      // Synchronous with the commit: a tree leaving AUTO is halted (its pending calls aborted)
      // before any after_transition hook runs.
      runner.setActive(current === "AUTO");
    });
    runner.start();
    runner.setActive(this.#o.modes.current() === "AUTO");
  }

  /**
   * Halts the tree and stops ticking: the runtime's stop (its "automation" stage). Idempotent. A
   * tree that was ticking (the mode AUTO) says so, once: the stop itself leaves the mode AUTO, and
   * nothing else tells that the stop, not a mode change, ended the tree's ticking.
   */
  stop(): void {
    if (this.#started && this.#runner?.active === true) {
      this.#log.info(
        `behavior tree ${this.#o.behaviorTree} halted by the runtime's stop (mode ` +
          `${this.#o.modes.current()}): it ticks no more, its calls in flight are abandoned`,
      );
    }
    this.#started = false;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#runner?.stop();
    this.#lossLatch?.dispose();
    this.#unsubscribeOutages?.();
  }

  /**
   * Configuration reload of automation.behavior_tree / tick_rate_hz: loads the tree (throws
   * INVALID_ARGUMENT with every diagnostic when it does not load, keeping the running one) and
   * swaps it in unless it is the same (path, tick rate and the text of every file it reads,
   * its includes too): "unchanged" (also without a tree before and after, whatever the rate); the same tree at another tick rate is retimed in place,
   * keeping its state, and answers "retimed" (its automation_version is the same). A new tree must read only the `parameters` the new
   * configuration declares (given: as load() checks the declared ones). Refused while
   * the mode is AUTO ("refused_auto": a running tree is never swapped under the machine); checked
   * again after the load, synchronously with the swap. `read`: the tree's files as already read
   * for this reload (the configuration's checks: readTreeFiles), loaded without reading them
   * again; absent, they are read here (readFileAsync, else readFile). The tree in force (the same
   * path, every file it was built from read with the same text) is neither parsed nor built again.
   */
  async reloadTree(
    behaviorTree: string | null,
    tickRateHz: number,
    parameters?: readonly ParameterConfig[],
    read?: ReadFileFn,
  ): Promise<TreeReload> {
    const before = this.#runner;
    if (behaviorTree === null && this.#o.behaviorTree === null) {
      // No tree before nor after: nothing ticks, so nothing is retimed (nor protected in AUTO);
      // the rate is kept for the comparisons of the next reloads.
      this.#o = { ...this.#o, tickRateHz };
      return "unchanged";
    }
    // The tree and its includes, read before anything is loaded, without a synchronous read: a
    // file that does not answer fails the load below, naming it, the tree in force kept.
    const readFile = behaviorTree === null
      ? this.#o.readFile
      : (read ?? await this.#reloadReads(behaviorTree));
    // The tree in force, every file it was built from read again with the same text: nothing it
    // is built from changed (the engine's services, bus and log are its own), so it is neither
    // parsed nor built again (a retime keeps it, at the new rate).
    const unchanged = before !== null && behaviorTree !== null &&
      await this.#isTreeInForce(behaviorTree, readFile);
    if (this.#o.modes.current() === "AUTO") {
      // A file that does not load is answered with why, as outside AUTO (still not swapped).
      const next = behaviorTree === null || unchanged
        ? null
        : await this.#digestOf(behaviorTree, readFile);
      if (next !== null && "error" in next) return { refused_auto: { does_not_load: next.error } };
      const same = behaviorTree === this.#o.behaviorTree && tickRateHz === this.#o.tickRateHz &&
        (next === null || next.digest === this.#contentDigest);
      return same ? "unchanged" : "refused_auto";
    }
    let next: BtRunner | null = null;
    let handles: readonly string[] = [];
    let calls: readonly LiteralDeviceCall[] = [];
    let writers: readonly EntryWriter[] = [];
    let contentDigest: string | null = null;
    let text: string | null = null;
    let fileList: readonly string[] = [];
    let reads: ParameterReads | null = unchanged ? this.#parameterReads : null;
    let warnings: readonly string[] = [];
    if (behaviorTree !== null && !unchanged) {
      const built = await this.#buildTree(behaviorTree, tickRateHz, readFile);
      reads = built.parameterReads;
      next = built.runner;
      handles = built.handles;
      calls = built.calls;
      writers = built.writers;
      contentDigest = built.contentDigest;
      fileList = built.fileList;
      text = built.text;
      warnings = built.warnings;
    }
    const sameTree = unchanged ||
      (behaviorTree === this.#o.behaviorTree && contentDigest === this.#contentDigest);
    // The tree in force was warned of when it was loaded: only a new tree (another path, or a file
    // it reads edited) is, whether it is swapped in or refused below.
    if (!sameTree) this.#warnOf(warnings);
    if (sameTree && tickRateHz === this.#o.tickRateHz) return "unchanged";
    if (reads !== null && parameters !== undefined) {
      checkParameterReads(behaviorTree!, reads, declaredOf(parameters));
    }
    if (this.#o.modes.current() === "AUTO") return "refused_auto"; // entered AUTO meanwhile
    if (sameTree && before !== null) {
      // A MANUAL -> AUTO running its before-hooks was requested to run the tree at the rate in
      // force (AUTO refuses a retime as it refuses a swap): refused at its commit.
      this.#o.modes.invalidateAutoEntry?.(
        `a configuration reload retimed the behavior tree (${this.#o.tickRateHz} -> ${tickRateHz} Hz)`,
      );
      // The same tree at another rate: retimed in place, its state (blackboard, RunOnce, a
      // SequenceWithMemory's step), counters and the outages its calls found kept.
      before.retime(tickRateHz);
      this.#o = { ...this.#o, tickRateHz };
      this.#log.info(
        `behavior tree ${behaviorTree} retimed by a configuration reload (${tickRateHz} Hz)`,
      );
      return "retimed";
    }
    // MANUAL -> AUTO running its before-hooks was requested to run the tree in force: it is
    // refused at its commit, not armed with one the operator did not choose.
    this.#o.modes.invalidateAutoEntry?.(
      behaviorTree === null
        ? "a configuration reload removed the behavior tree"
        : `a configuration reload replaced the behavior tree (now ${behaviorTree})`,
    );
    // Started with no tree (none configured, or a reload removed it), #unsubscribe is null.
    const started = this.#started;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    before?.stop();
    if (before) {
      const d = before.status().engine_diagnostics;
      this.#retired.ticks += d.total_ticks;
      this.#retired.errors += d.error_count;
    }
    this.#o = { ...this.#o, behaviorTree, tickRateHz };
    this.#runner = next;
    this.#parameterReads = reads;
    this.#handles = handles;
    this.#named = new Set(handles);
    this.#literalCalls = calls;
    this.#writers = writers;
    this.#contentDigest = contentDigest;
    this.#treeFiles = fileList;
    this.#treeText = text;
    // Outages are what the tree's recent calls found: the replaced tree's say nothing of this one
    // (nor do its calls still in flight, when they settle).
    this.#treeGeneration++;
    this.#calls.clear();
    this.#refusals.clear();
    this.#nodeKeys.clear();
    // Nor does what it commanded make the new tree depend on a device (the device-loss latch's
    // treeDependsOn): only its calls still in flight may yet act, as at an entry into AUTO.
    this.#commanded.clear();
    for (const handle of this.#inFlight.keys()) this.#commanded.add(handle);
    this.#log.info(
      behaviorTree === null
        ? "behavior tree removed by a configuration reload"
        : `behavior tree ${behaviorTree} loaded by a configuration reload` +
          (sameTree ? ` (tick rate ${tickRateHz} Hz)` : ""),
    );
    if (started) this.start();
    return sameTree ? "retimed" : "replaced";
  }

  /**
   * What the loaded tree reads by a literal name that `parameters` (a reload's declarations) no
   * longer declares, or declares with a type its node does not read: one line each (the file's
   * diagnostics); empty without a tree or when every read is declared.
   */
  parameterReadProblems(
    parameters: readonly { readonly name: string; readonly type: ParameterConfig["type"] }[],
  ): string[] {
    return (this.#parameterReads?.(declaredOf(parameters)) ?? []).map(formatDiagnostic);
  }

  /**
   * Whether the tree at `path`, read through `readFile`, is the tree in force: the same path, and
   * every file it was built from (includes too) read again with the same text, without parsing
   * them. A file that cannot be read now answers no (the load then says why).
   */
  async #isTreeInForce(path: string, readFile: ReadFileFn): Promise<boolean> {
    if (path !== this.#o.behaviorTree || this.#contentDigest === null) return false;
    const { rereadContentDigest } = await import("./bt/mod.ts");
    return await rereadContentDigest(this.#treeFiles, readFile) === this.#contentDigest;
  }

  /**
   * The content digest a tree file would get (includes too), or the error listing every
   * diagnostic when it does not load (load()'s message).
   */
  async #digestOf(
    path: string,
    readFile: ReadFileFn,
  ): Promise<{ digest: string } | { error: string }> {
    const { computeTreeContentDigest, loadBehaviorTree } = await import("./bt/mod.ts");
    const { tree, diagnostics } = loadBehaviorTree(path, readFile);
    if (!tree) return { error: treeLoadError(path, diagnostics).message };
    return { digest: await computeTreeContentDigest(tree) };
  }

  /**
   * What a reload reads the tree at `path` through: its files read ahead through readFileAsync
   * (readTreeFiles), then served from memory; `readFile` itself without readFileAsync.
   */
  async #reloadReads(path: string): Promise<ReadFileFn> {
    const readAsync = this.#o.readFileAsync;
    if (readAsync === undefined) return this.#o.readFile;
    const { readTreeFiles } = await import("./bt/mod.ts");
    return await readTreeFiles(path, readAsync);
  }

  /** Where status() finds the open run id (the run registry lives outside the kernel). */
  setOpenRunId(openRunId: () => string | null): void {
    this.#openRunId = openRunId;
  }

  /** automation_version of the loaded tree (run records), null without one. */
  automationVersion(): AutomationVersion | null {
    return this.#runner?.version ?? null;
  }

  /**
   * GET /v0/automation/tree: the top-level file of the tree that runs, as it was read to load it
   * (never re-read: a file edited since, or a reload refused in AUTO, is not what runs). NOT_FOUND
   * without a tree configured, or before one is loaded.
   */
  treeXml(): Promise<string> {
    const path = this.#o.behaviorTree;
    if (path === null) {
      return Promise.reject(notFound("No behavior tree configured (automation.behavior_tree)"));
    }
    if (this.#treeText === null) {
      return Promise.reject(notFound(`Behavior tree ${path} is not loaded yet`));
    }
    return Promise.resolve(this.#treeText);
  }

  /**
   * Ticks and tick errors since start (GET /metrics counters): the trees a reload replaced
   * included, 0 before one is loaded.
   */
  tickCounts(): { ticks: number; errors: number } {
    const d = this.#baseStatus().engine_diagnostics;
    return {
      ticks: this.#retired.ticks + d.total_ticks,
      errors: this.#retired.errors + d.error_count,
    };
  }

  /**
   * GET /v0/automation/status without `status`: anolis's members plus the project's (the mode,
   * why the tree does not run, the devices that block it; docs/http-api.md).
   */
  status(): EngineStatus {
    const base = this.#baseStatus();
    const mode = this.#o.modes.current();
    const blocked = this.#blockedDevices();
    const latched = this.#lossLatch?.entries() ?? [];
    const wide = this.#lossLatch?.providerEntries() ?? [];
    const outages: DeviceOutage[] = [];
    // A device whose provider a reload removed is gone, not out: forgotten.
    const gone = (handle: string): boolean => {
      const dev = parseDeviceHandle(handle);
      return dev !== null &&
        this.#o.outages?.condition(dev.providerId, dev.deviceId).unconfigured === true;
    };
    for (const [handle, c] of this.#calls) {
      if (gone(handle)) {
        this.#calls.delete(handle);
        continue;
      }
      if (c.failures < DEVICE_OUTAGE_FAILURES) continue;
      outages.push({
        device_handle: handle,
        consecutive_failures: c.failures,
        last_error: c.lastError,
        since_epoch_ms: c.sinceMs,
      });
    }
    const refused: RefusedCalls[] = [];
    for (const [key, r] of this.#refusals) {
      // Kept when the refusal says the provider is not there: the tree still calls it.
      if (r.refusedBy !== "unknown_provider" && gone(r.handle)) {
        this.#refusals.delete(key);
        continue;
      }
      if (r.refusals < DEVICE_OUTAGE_FAILURES) continue;
      refused.push({
        device_handle: r.handle,
        function: r.fn,
        consecutive_refusals: r.refusals,
        refused_by: r.refusedBy,
        last_refusal: r.lastRefusal,
        since_epoch_ms: r.sinceMs,
      });
    }
    // What the tree's recent calls found (outages first): why a stalled tree keeps failing.
    const callProblems = outages.length > 0
      ? `device outage: ${
        namedList(
          outages.map((o) =>
            `${namedHandle(o.device_handle)} (${o.consecutive_failures} calls failed)`
          ),
          MAX_NAMED_IN_WARNING,
        )
      }`
      : refused.length > 0
      ? `calls refused: ${
        namedList(
          refused.map((r) =>
            `${namedHandle(r.device_handle)} ${
              providerText(r.function)
            } by ${r.refused_by} (${r.consecutive_refusals} in a row)`
          ),
          MAX_NAMED_IN_WARNING,
        )
      }`
      : null;
    const lastError = base.last_error ?? callProblems;
    const notRunning = this.#notRunning(base, mode, latched.length + wide.length > 0);
    // Out of AUTO with no device blocking it: what else the AUTO gate would refuse it for (the
    // tree's call policy, its undeclared parameter reads), so the remedy the line gives is one
    // that works.
    const autoRefusal = notRunning !== null && mode !== "AUTO" && blocked.length === 0
      ? this.#autoRefusal()?.message ?? null
      : null;
    return {
      ...base,
      last_error: lastError,
      mode,
      not_running: notRunning,
      why_not_running: notRunning === null
        ? null
        : whyNotRunning(notRunning, blocked, latched, wide, base.last_error, callProblems, {
          autoRefusal,
        }),
      blocked_devices: blocked,
      device_loss_latched: latched.map((e) => `${e.providerId}/${e.deviceId}`),
      device_loss_latched_providers: wide.map((w) => ({
        provider_id: w.providerId,
        losses: w.losses,
        since_epoch_ms: w.atMs,
        last_device_handle: `${w.providerId}/${w.lastDeviceId}`,
        last_reason: w.lastReason,
        exempt_devices: w.exempt,
        exempt_device_ids: [...w.exemptDeviceIds],
      })),
      device_outages: outages,
      refused_calls: refused,
    };
  }

  #notRunning(base: AutomationStatus, mode: RuntimeMode, latched: boolean): NotRunning | null {
    if (base.execution_reason === "no_definition") return { cause: "no_definition", mode };
    if (base.execution_reason === "stopped") return { cause: "stopped", mode };
    if (mode !== "AUTO") {
      if (base.execution_status === "failed") return { cause: "automation_fault", mode };
      if (mode === "FAULT" && latched && this.#lossLatch?.forcedFault) {
        return { cause: "device_loss_latch", mode };
      }
      return { cause: "mode", mode };
    }
    if (base.execution_status === "blocked") return { cause: "stalled", mode };
    return null;
  }

  /**
   * Records that the tree commands `handle` (it depends on it from then on): once the call is
   * admitted to its provider's queue, not when it settles -- a device lost while the tree's call
   * to it waits there behind another call, or is in flight (a device that stops answering holds
   * the call up to the provider's timeout_ms), is one the tree was about to command. A call a gate
   * or caller check refused (or a full queue) commanded nothing.
   */
  #noteCommand(handle: string): void {
    if (this.#o.modes.current() === "AUTO") this.#commanded.add(handle);
  }

  /**
   * A reload removed `providerId`: forgets the failures and refusals of the tree's calls to its
   * devices, and releases those the device-loss latch holds.
   */
  #forgetProvider(providerId: string): void {
    this.#lossLatch?.forgetProvider(providerId);
    for (const handle of [...this.#calls.keys()]) {
      if (parseDeviceHandle(handle)?.providerId === providerId) this.#calls.delete(handle);
    }
    for (const [key, r] of [...this.#refusals]) {
      if (parseDeviceHandle(r.handle)?.providerId === providerId) this.#refusals.delete(key);
    }
  }

  /** Counts an automated call to `handle` in flight (+1 once admitted, -1 once settled). */
  #noteInFlight(handle: string, delta: 1 | -1): void {
    const n = (this.#inFlight.get(handle) ?? 0) + delta;
    if (n > 0) this.#inFlight.set(handle, n);
    else this.#inFlight.delete(handle);
  }

  /**
   * Records the outcome of one automated call (outage tracking). A gate's refusal, or the refusal
   * of a policy check about the caller (requires_lease, validation, min_interval; nothing was
   * sent) says nothing about the device: it counts toward `refused_calls` only, and neither
   * extends nor ends a failure streak; any call that got past them ends the refusal streak. A
   * full provider queue is a failure (the provider is congested). `generation`: the tree swap the
   * call was made under; `refusedBy`: the check that refused it before the router saw it.
   */
  /**
   * Node `node` (of the tree swap `generation`) names `handle` now, for a call or a refusal of its
   * own: a refusal it made before under a key naming no device ends when it names another (the
   * condition that made it -- an entry without a value, a malformed handle -- is gone), as a
   * device's refusals end at a call to it that is not refused; unless another node's last
   * refusal is under that key too.
   */
  #noteNodeKey(node: string | undefined, handle: string, generation: number): void {
    if (node === undefined || generation !== this.#treeGeneration) return;
    const before = this.#nodeKeys.get(node);
    if (parseDeviceHandle(handle) === null) this.#nodeKeys.set(node, handle);
    else this.#nodeKeys.delete(node);
    if (before === undefined || before === handle) return;
    for (const key of this.#nodeKeys.values()) if (key === before) return;
    for (const [key, r] of [...this.#refusals]) if (r.handle === before) this.#refusals.delete(key);
  }

  #noteCall(
    handle: string,
    fn: string,
    err: unknown,
    generation: number,
    refusedBy?: string,
  ): void {
    if (generation !== this.#treeGeneration) return; // a call of a tree a reload replaced
    // No key to list it under (`device_handle` is never ""): CallDevice refuses an empty handle
    // under its port as written before calling.
    if (handle === "") return;
    const key = refusalKey(handle, fn);
    if (err === null) {
      this.#calls.delete(handle);
      this.#refusals.delete(key);
      return;
    }
    // A call a halt (leaving AUTO) cancelled before it was sent says nothing about the device.
    if (err instanceof DOMException && err.name === "AbortError") return;
    const message = errorMessage(err);
    // A gate's refusal, or one of a policy check about the caller (requires_lease, validation,
    // min_interval): nothing was sent either way.
    const gate = refusedBy ?? refusedBeforeSending(err);
    // The mode gate refuses the tree's calls in AUTO only while AUTO is being left (its
    // before_transition hooks run): held back by the transition, as a halt cancels them.
    if (gate === "mode" && this.#o.modes.current() === "AUTO") return;
    if (gate !== null) {
      const prev = this.#refusals.get(key);
      setNewest(this.#refusals, key, {
        handle,
        fn,
        refusals: (prev?.refusals ?? 0) + 1,
        refusedBy: refuserName(gate, err),
        lastRefusal: message,
        sinceMs: prev?.sinceMs ?? this.#o.clock.nowMs(),
      }, MAX_CALL_RECORDS);
      return;
    }
    this.#refusals.delete(key);
    const prev = this.#calls.get(handle);
    setNewest(this.#calls, handle, {
      failures: (prev?.failures ?? 0) + 1,
      lastError: message,
      sinceMs: prev?.sinceMs ?? this.#o.clock.nowMs(),
    }, MAX_CALL_RECORDS);
  }

  #baseStatus(): AutomationStatus {
    const runId = this.#openRunId();
    if (this.#runner) return this.#runner.status(runId);
    return {
      execution_status: "idle",
      execution_reason: this.#o.behaviorTree === null ? "no_definition" : "stopped",
      automation_version: null,
      last_evaluation_at_epoch_ms: 0,
      engine_diagnostics: {
        total_ticks: 0,
        ticks_since_progress: 0,
        error_count: 0,
        stall_suspected: false,
        current_running_node: null,
        last_tick_status: null,
      },
      run_id: runId,
      last_error: null,
    };
  }

  #fault(error: string): void {
    // A tick that throws forces FAULT, un-vetoably (as later anolis; docs/automation.md).
    void this.#o.modes.forceFault(`automation fault: ${error}`, { kind: "automation" }).catch(
      (err) => {
        this.#log.error(`forcing FAULT after an automation fault failed: ${String(err)}`);
      },
    );
  }
}

/**
 * `refused_by` of a gate's refusal: the interlock by its id, the device-loss latch by its name,
 * any other gate or check by the router's name for it (estop, mode, allowed_modes;
 * requires_lease, validation, min_interval).
 */
function refuserName(gate: string, err: unknown): string {
  if (gate === "device_loss") return "device_loss_latch";
  const id = err instanceof RuntimeError ? err.details?.["interlock_id"] : undefined;
  if (gate === "interlock" && typeof id === "string") return `interlock ${id}`;
  return gate;
}

/**
 * The devices that block AUTO as its refusal names them, `provider/device (reason)`: each handle
 * (the tree's, any length) cut as namedHandle, up to MAX_NAMED_IN_WARNING named, the rest counted.
 */
function blockedNamed(blocked: readonly BlockedDevice[]): string {
  return namedList(
    blocked.map((b) => `${namedHandle(b.device_handle)} (${b.reason})`),
    MAX_NAMED_IN_WARNING,
  );
}

function blockedNow(handle: string, reason: string): BlockedDevice {
  return { device_handle: handle, condition: "down", reason, since_epoch_ms: null };
}

/** `not_running` as one line an operator reads, with the remedy. */
function whyNotRunning(
  n: NotRunning,
  blocked: readonly BlockedDevice[],
  latched: readonly LossEntry[],
  wide: readonly ProviderLossEntry[],
  lastError: string | null,
  callProblems: string | null,
  { autoRefusal }: { autoRefusal: string | null },
): string {
  // The tree's handles and the latched devices' ids (a configured provider id, any length) cut as
  // namedDeviceHandle names them; a large machine's lists named up to MAX_NAMED_IN_WARNING.
  const devices = blocked.map((b) =>
    `${namedHandle(b.device_handle)} is ${
      b.condition === "down" ? "down" : "failing"
    } (${b.reason})`
  );
  const blockedText = devices.length > 0
    ? `; AUTO is refused while ${namedList(devices, MAX_NAMED_IN_WARNING)}`
    : autoRefusal !== null
    ? `; ${autoRefusal}`
    : "";
  switch (n.cause) {
    case "no_definition":
      return "no behavior tree is configured (automation.behavior_tree)";
    case "stopped":
      return "the automation engine is stopped";
    case "automation_fault":
      return `the last tick threw (${lastError ?? "automation fault"}): mode ${n.mode}; ` +
        `re-arm (FAULT -> MANUAL -> AUTO) after fixing the cause${blockedText}`;
    case "device_loss_latch":
      return `device-loss latch: ${
        namedList(
          [
            ...latched.map((e) =>
              `${namedDeviceHandle(e.providerId, e.deviceId)} was lost (${e.reason})`
            ),
            ...wide.map((w) =>
              `${w.losses} more device(s) of ${
                namedProviderId(w.providerId)
              } were lost, held as one entry (the ` +
              `latest ${namedDeviceHandle(w.providerId, w.lastDeviceId)}: ${w.lastReason})`
            ),
          ],
          MAX_NAMED_IN_WARNING,
        )
      }; mode FAULT: re-arm deliberately (FAULT -> MANUAL -> AUTO)${blockedText}`;
    case "mode":
      // FAULT -> AUTO and IDLE -> AUTO are no transitions: the remedy goes through MANUAL (an
      // e-stop's latch, if any, is named by the refusal of MANUAL).
      return `mode is ${n.mode}: the tree ticks only in AUTO${
        n.mode === "FAULT"
          ? "; re-arm (FAULT -> MANUAL -> AUTO)"
          : n.mode === "IDLE"
          ? "; switch to MANUAL, then AUTO (IDLE -> AUTO is no transition)"
          : ""
      }${blockedText}`;
    case "stalled":
      // The calls failing now say why; a throw before the last re-arm (lastError) may not.
      return `the tree keeps failing tick after tick (${callProblems ?? lastError ?? "no error"})`;
  }
}

/** A loaded tree's parameter reads checked against declarations (bt/parameter_reads.ts). */
type ParameterReads = (declared: DeclaredParameters) => Diagnostic[];

/**
 * `reads` checked by `check` (bt/mod.ts, loaded on demand), in a closure of its own: it holds the
 * reads, never the parsed tree they came from.
 */
function readsAgainst(
  reads: readonly ParameterRead[],
  check: typeof parameterReadProblems,
): ParameterReads {
  return (declared) => check(reads, declared);
}

/** Throws as a tree that does not load when `reads` finds a parameter `declared` refuses. */
function checkParameterReads(
  path: string,
  reads: ParameterReads,
  declared: DeclaredParameters,
): void {
  const problems = reads(declared);
  if (problems.length > 0) throw treeLoadError(path, problems);
}

/** Declared parameters by name, for the tree's parameter reads. */
function declaredOf(
  parameters: readonly { readonly name: string; readonly type: ParameterConfig["type"] }[],
): DeclaredParameters {
  return new Map(parameters.map((p) => [p.name, p.type]));
}

/** The load failure raised at start-up: every error diagnostic, one per line. */
function treeLoadError(path: string, diagnostics: readonly Diagnostic[]): RuntimeError {
  const errors = diagnostics.filter((d) => d.severity === "error");
  const lines = errors.map((d) => `  ${formatDiagnostic(d)}`).join("\n");
  return invalidArgument(
    `Failed to load behavior tree ${path}: ${errors.length} error(s)\n${lines}`,
    new RuntimeError("INVALID_ARGUMENT", "behavior tree diagnostics", {
      details: { diagnostics },
    }),
  );
}

/** BT quality names (docs/automation.md, CheckQuality): the runtime's UNAVAILABLE is UNKNOWN. */
function btQuality(q: Quality): BtQuality {
  return q === "UNAVAILABLE" ? "UNKNOWN" : q;
}

/**
 * Refusals before sending that are a tree's own errors, not the machine's state: the call names
 * where its CallDevice node is written (`FILE:LINE:COL`).
 */
const TREE_ERRORS: ReadonlySet<string> = new Set([
  "validation",
  "unknown_function",
  "unknown_provider",
]);

/** The BtServices adapter over the kernel: cache reads, router writes, parameters, clock. */
function kernelServices(
  o: AutomationEngineOptions,
  generation: () => number,
  noteCommand: (handle: string) => void,
  noteInFlight: (handle: string, delta: 1 | -1) => void,
  noteCall: (
    handle: string,
    fn: string,
    err: unknown,
    generation: number,
    refusedBy?: string,
  ) => void,
  noteNodeKey: (node: string | undefined, handle: string, generation: number) => void,
): BtServices {
  return {
    clock: o.clock,
    readSignal(handle: string, signalId: string) {
      const dev = parseDeviceHandle(handle);
      if (!dev) return null;
      const s = o.cache.signal(dev.providerId, dev.deviceId, signalId);
      if (!s) return null;
      // STALE past the signal's bound (measured from receipt), as every reader sees it.
      const q = o.cache.qualityNow?.(dev.providerId, dev.deviceId, signalId, s) ?? s.quality;
      return { value: s.value, quality: btQuality(q) };
    },
    async callDevice(
      handle: string,
      functionName: string,
      args: Record<string, TypedValue>,
      signal: AbortSignal,
      node?: string,
      at?: string,
    ): Promise<void> {
      const madeUnder = generation();
      noteNodeKey(node, handle, madeUnder);
      const where = at === undefined ? "" : ` (CallDevice at ${at})`;
      const dev = parseDeviceHandle(handle);
      if (!dev) {
        // A tree's error (a handle it computed), refused before the router: listed as such.
        const err = invalidArgument(
          `device_handle must be 'provider/device', got ${quoteProviderText(handle)}${where}`,
        );
        noteCall(handle, functionName, err, madeUnder, "validation");
        throw err;
      }
      // Counted in flight from its admission until it settles -- or until a halt aborts it before
      // it was sent: the router sends no call of a halted tree (it checks the abort after the
      // write ahead, right before sending), so it can no longer act on the device.
      let counted = false;
      let sent = false;
      // Whether a halt may have cancelled it: once admitted to its provider's queue, or halted
      // already when made. A refusal before its admission is made within router.call,
      // synchronously: before a halt that comes after the call in the same step.
      let cancellable = signal.aborted;
      const uncount = () => {
        if (!counted) return;
        counted = false;
        noteInFlight(handle, -1);
      };
      const onHalt = () => {
        if (!sent) uncount();
      };
      signal.addEventListener("abort", onHalt);
      try {
        await o.router.call({
          providerId: dev.providerId,
          deviceId: dev.deviceId,
          functionName,
          args,
          origin: "automated",
          source: node === undefined ? { kind: "automation" } : { kind: "automation", node },
          signal,
          onQueued: () => {
            cancellable = true;
            if (!signal.aborted) {
              counted = true;
              noteInFlight(handle, 1);
            }
            noteCommand(handle);
          },
          onSent: () => {
            sent = true;
            noteCommand(handle);
          },
        });
      } catch (err) {
        uncount();
        const by = refusedBeforeSending(err);
        // A halt cancels a call only once admitted and until it is sent: one the provider got and
        // failed is the device's failure, one refused before its admission (a gate, a caller
        // check, a full queue) was refused before the halt, whatever halted the tree since -- but
        // the mode gate's refusal: the transition that halts the tree held it back.
        const cancelled = signal.aborted && !reachedProvider(err) &&
          (cancellable || by === "mode");
        // The mode gate's refusal in AUTO: a transition leaving AUTO holds the tree's calls back
        // while its before_transition hooks run. No outcome of the call (nothing was sent; counted
        // nowhere, as #noteCall would not count it): its node waits and asks again, so the tree
        // (a RunOnce's state) never takes a step the transition only held back for a failed one.
        if (!cancelled && by === "mode" && o.modes.current() === "AUTO") {
          throw new CallHeldBack(err);
        }
        // The tree's own error (a function or provider it names that does not exist, arguments
        // that fail validation; checked at AUTO entry only when written literally): the refusal
        // names where the node is written.
        if (
          !cancelled && where !== "" && by !== null && TREE_ERRORS.has(by) &&
          err instanceof RuntimeError
        ) {
          const refusal = new RuntimeError(err.code, `${err.message}${where}`);
          noteCall(handle, functionName, refusal, madeUnder, by);
          throw refusal;
        }
        noteCall(
          handle,
          functionName,
          cancelled ? new DOMException("halted", "AbortError") : err,
          madeUnder,
        );
        throw err;
      } finally {
        signal.removeEventListener("abort", onHalt);
      }
      uncount();
      noteCall(handle, functionName, null, madeUnder);
    },
    refuseCall(handle: string, functionName: string, message: string, node?: string): void {
      const madeUnder = generation();
      noteNodeKey(node, handle, madeUnder);
      noteCall(handle, functionName, invalidArgument(message), madeUnder, "validation");
    },
    getParameter(name: string) {
      const p = o.parameters?.get(name);
      return p ? { type: p.type, value: p.value } : null;
    },
  };
}
