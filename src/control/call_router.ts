import {
  isOtherDeviceAnswer,
  neverWritten,
  typedValueFromWire,
  typedValueToWire,
} from "../adpp/mod.ts";
import {
  type Clock,
  type DeviceCapabilities,
  errorMessage,
  type FunctionSpec,
  Histogram,
  invalidArgument,
  type Logger,
  namedDeviceHandle,
  namedProviderId,
  neverThrowing,
  notFound,
  quoteDeviceHandle,
  quoteDeviceId,
  quoteProviderText,
  quoteProviderTextWithin,
  RuntimeError,
  type StatusCode,
  type TypedValue,
  unavailable,
} from "../common/mod.ts";
import type { ProviderRegistry } from "../providers/mod.ts";
import type { StateCache } from "../state/mod.ts";
import type { AuditIntent, AuditOrigin, AuditSink } from "./audit_sink.ts";
import { CallIntervals, leaseRefusal } from "./call_policy.ts";
import { STOPPED_AT_TURN, stopRefusal } from "./stop_refusal.ts";
import { validateArgs } from "./validate_args.ts";

/**
 * Who asked for a call. `manual`: an HTTP client. `automated`: the behavior tree. `hook`: a
 * mode-transition hook of a transition that is not into FAULT (gated like automated calls).
 * `safety`: a stop action -- the e-stop ladder and the hooks of a transition into FAULT; these
 * skip the mode, latch and device-loss gates (they are how the machine is made safe) but are
 * still validated and still need the provider up. Who exactly asked (client and token, tree node,
 * hook, ladder rung, alarm) travels apart, as `CallRequest.source`, for the audit trail: gates
 * decide on the kind, never on the identity.
 */
export type CallOrigin = "manual" | "automated" | "hook" | "safety";

export interface CallRequest {
  readonly providerId: string;
  readonly deviceId: string;
  /** 0 or absent = select by name. */
  readonly functionId?: number;
  readonly functionName?: string;
  readonly args: Readonly<Record<string, TypedValue>>;
  readonly origin: CallOrigin;
  /**
   * Who asked, for the audit trail (HTTP client and token, tree node, hook transition, e-stop
   * rung, alarm). Absent: the kind implied by `origin`, without identity.
   */
  readonly source?: AuditOrigin;
  /** Cancels waiting (the provider may still execute the call). */
  readonly signal?: AbortSignal | undefined;
  /**
   * Called once the request was handed to the provider's session (synchronously, before its
   * answer); never for a call refused or cancelled before sending. Its frame may still wait there
   * for a pipe the provider does not read: taken back at its deadline or the session's end, the
   * call then fails refused by `unavailable`, never written (it stays in flight until then, as
   * it may still be written). Must not throw.
   */
  readonly onSent?: (() => void) | undefined;
  /**
   * Called once the call has passed the gates and the caller checks and is admitted to its
   * provider's queue (synchronously, within `call`, before it waits there); never for a call
   * refused before that, a full queue included. It may still be refused under the provider lock
   * or cancelled while queued. Must not throw (one that does refuses the call, which then takes
   * no place in the queue nor keeps the lock).
   */
  readonly onQueued?: (() => void) | undefined;
  /**
   * Whether the caller is still admitted to make this call (an HTTP client: its token and role
   * under the API tokens in force, which a reload may have removed or lowered while the call
   * waited): asked at the call's turn with the other gates, before the write ahead and after it.
   * Null: admitted; else the refusal, audited with its `refusedBy` (`auth`, `role`, `origin`).
   * Synchronous; must not throw. Absent: nothing to ask (trees, hooks, the e-stop's ladder).
   */
  readonly stillAdmitted?: (() => CallerRefusal | null) | undefined;
}

/** Why a caller is no longer admitted to its call (CallRequest.stillAdmitted). */
export interface CallerRefusal {
  /** The check that refused, for the audit trail's `refused_by`. */
  readonly refusedBy: string;
  /** What the call is refused with. */
  readonly error: RuntimeError;
}

/** The audit origin of a call that names none: the kind its gate origin implies. */
export function defaultAuditOrigin(origin: CallOrigin): AuditOrigin {
  switch (origin) {
    case "manual":
      return { kind: "http" };
    case "automated":
      return { kind: "automation" };
    case "hook":
      return { kind: "hook" };
    case "safety":
      return { kind: "estop" };
  }
}

export interface CallResult {
  readonly providerId: string;
  readonly deviceId: string;
  readonly functionId: number;
  readonly functionName: string;
  readonly results: Record<string, TypedValue>;
  readonly postCallPollTriggered: boolean;
}

export interface GateContext {
  readonly fn: FunctionSpec;
  readonly device: DeviceCapabilities;
  readonly origin: CallOrigin;
}

/**
 * A gate may refuse a call (mode, e-stop latch). Gates run after the function is resolved and
 * again right before the request is written to the provider, so a call racing a gate change
 * (e-stop) cannot slip through. Safety-origin calls skip gates.
 */
export type CallGate = (ctx: GateContext) => RuntimeError | null;

/** How far a call got, for the audit entry of one that did not succeed. */
interface CallProgress {
  fn: FunctionSpec | null;
  args: Readonly<Record<string, TypedValue>>;
  /**
   * The name of the gate or check running now, so of the one that refused when the call fails
   * unsent; null when nothing refused (yet). The one record of a refusal: the audit entry's
   * `refused_by` and refusedBeforeSending are both read from it (CallRouter.call).
   */
  refusedBy: string | null;
  /** True once the request was written to the provider. */
  sent: boolean;
  results: Record<string, TypedValue> | null;
  /** The decision written ahead to the audit trail, settled by the call's audit entry. */
  intent: AuditIntent | null;
}

/**
 * Call figures of one provider and outcome code since start (GET /metrics). Only providers of
 * the configuration are counted (a call naming another is answered 404 and counted by the HTTP
 * layer), and codes come from the status vocabulary: the series are bounded.
 */
export interface CallMetricsSeries {
  readonly providerId: string;
  /** "OK" or the RuntimeError code the call failed with (INTERNAL for anything else). */
  readonly code: "OK" | StatusCode;
  /**
   * Duration from validation to the answer (post-call poll included, but for a stop action's,
   * which it does not wait for), in seconds.
   */
  readonly duration: Histogram;
}

/** Errors of calls that failed after their request was written to the provider (reachedProvider). */
const failedAfterSending = new WeakSet<object>();

/**
 * Whether `err`, thrown by CallRouter.call, is the failure of a call whose request had been
 * written to the provider (no answer in time, an error status, the provider gone meanwhile): it
 * may have acted. The audit trail's `failed`, as against `refused` (nothing was sent).
 */
export function reachedProvider(err: unknown): boolean {
  return typeof err === "object" && err !== null && failedAfterSending.has(err);
}

/**
 * Errors a call was refused with before it was sent, by what refused it (refusedBeforeSending):
 * set in one place only, CallRouter.call, from the call's CallProgress.refusedBy -- the audit
 * entry's `refused_by` -- so the two cannot disagree.
 */
const refusedBy = new WeakMap<object, string>();

/**
 * Refusers before sending that say nothing about the caller: the provider's queue (full, or the
 * call cancelled there) and the provider (down, or the device gone). Audited as refusals, but not
 * refusedBeforeSending's: a congested or absent provider is the device's business. Not
 * STOPPED_AT_TURN: a stop is no failure of the device either, so it stays a refusal (as the estop
 * gate's); a tree call it voids was halted by it, and automation status drops a halted call.
 */
const NOT_CALLER_REFUSALS: ReadonlySet<string> = new Set(["queue", "unavailable"]);

/**
 * What refused the call `err`, thrown by CallRouter.call, is the refusal of -- a gate (`addGate`:
 * estop, mode, allowed_modes, interlock, device_loss) or a check about the caller, not the device
 * (`requires_lease`, `validation` of the arguments, `min_interval`, `unknown_function`: the device
 * declares no function by that selector, `unknown_provider`: no provider has that id) -- or null
 * for any other failure. Nothing was sent: it says nothing about the device (automation status
 * keeps it out of device outages). A full provider queue is not one (the provider is congested).
 */
export function refusedBeforeSending(err: unknown): string | null {
  return typeof err === "object" && err !== null ? refusedBy.get(err) ?? null : null;
}

/**
 * Marks the refusal `err` of a call that failed unsent, by what `progress` says refused it: a
 * RuntimeError (a check that crashes instead is no refusal), refused by a check about the caller.
 */
function markRefusal(progress: CallProgress, err: unknown): void {
  const by = progress.refusedBy;
  if (progress.sent || by === null || NOT_CALLER_REFUSALS.has(by)) return;
  if (err instanceof RuntimeError) refusedBy.set(err, by);
}

/** Throws the lease refusal of `fn`, if any (refused by `requires_lease`). */
function checkLease(device: DeviceCapabilities, fn: FunctionSpec, progress: CallProgress): void {
  progress.refusedBy = "requires_lease";
  const lease = leaseRefusal(device, fn);
  if (lease) throw lease;
}

/**
 * A call's progress before it starts: `resolve` called outside `call` records nothing (its
 * errors are marked by no one).
 */
function freshProgress(args: Readonly<Record<string, TypedValue>>): CallProgress {
  return { fn: null, args, refusedBy: null, sent: false, results: null, intent: null };
}

/** Longest function name (a provider's text) the router's debug line quotes; longer is cut. */
export const QUOTED_FUNCTION_NAME_CHARS = 64;

/** Bound on calls waiting for one provider (calls to a provider are serialised). */
export const MAX_QUEUED_CALLS_PER_PROVIDER = 64;

/** Validates calls against the device's declared capabilities and routes them to providers. */
export class CallRouter {
  readonly #registry: ProviderRegistry;
  readonly #cache: StateCache;
  readonly #log: Logger;
  readonly #gates: Array<{ gate: CallGate; name: string }> = [];
  /** Counts of stops (addStopCount): their sum moves with every stop. */
  readonly #stopCounts: Array<() => number> = [];
  readonly #locks = new Map<string, ProviderLock>();
  readonly #clock: Clock;
  /** `${provider}\u0000${code}` -> series. */
  readonly #metrics = new Map<string, CallMetricsSeries>();
  /** When each function was last sent (call_policy.ts), judged by what its provider declares now. */
  readonly #intervals: CallIntervals;
  #audit: AuditSink | null;

  constructor(
    options: {
      registry: ProviderRegistry;
      cache: StateCache;
      log: Logger;
      clock: Clock;
      /** Where decisions on actuating calls are recorded (also settable with setAuditSink). */
      audit?: AuditSink;
    },
  ) {
    this.#registry = options.registry;
    // A provider a reload removes (or changes: it comes back as a new host) leaves no call series
    // behind, as its poll series do not; its lock goes too (a call still holding it keeps it).
    options.registry.onHostRemoved((host) => {
      for (const [key, s] of this.#metrics) if (s.providerId === host.id) this.#metrics.delete(key);
      this.#locks.delete(host.id);
    });
    this.#cache = options.cache;
    // Its one line comes before a call is sent (the e-stop's ladder, the hooks into FAULT): a
    // logger that throws must not hold the call back (docs/safety.md).
    this.#log = neverThrowing(options.log.child("call"));
    this.#clock = options.clock;
    this.#audit = options.audit ?? null;
    const registry = options.registry;
    this.#intervals = new CallIntervals({
      currentDevice: (providerId, deviceId) => registry.capabilities(providerId, deviceId),
    });
  }

  /**
   * Records every decision on an actuating call (accepted, refused, failed) in `sink`. Read-only
   * functions (actuating false) are not recorded: they change nothing.
   */
  setAuditSink(sink: AuditSink | null): void {
    this.#audit = sink;
  }

  /** Every call series recorded so far (GET /metrics). */
  callMetrics(): CallMetricsSeries[] {
    return [...this.#metrics.values()];
  }

  /**
   * Adds a gate; `name` says in the audit trail which check refused (`mode`, `estop`, ...).
   * Gates run in the order added and the first refusal is the answer, so a gate whose refusal
   * must be acted on before any other's (the e-stop latch: re-arming is refused while it holds)
   * is added `first`.
   */
  addGate(gate: CallGate, name = "gate", position: "first" | "last" = "last"): void {
    if (position === "first") this.#gates.unshift({ gate, name });
    else this.#gates.push({ gate, name });
  }

  /**
   * Adds a count of stops (the e-stop's triggers, the mode's FAULT and IDLE entries) that only
   * grows. An actuating call that is not a stop action notes their sum when it is asked of the
   * router and is refused at its turn (`refused_by` STOPPED_AT_TURN) when it moved meanwhile: a
   * command sent before a stop is never carried out after it, though the latch was released and
   * the machine re-armed while it waited in its provider's queue or on the audit write-ahead (a
   * FAULT or IDLE entry drains no queue; docs/safety.md, section 4). Every origin: HTTP, the tree,
   * Sparkplug, hooks.
   */
  addStopCount(count: () => number): void {
    this.#stopCounts.push(count);
  }

  /**
   * The sum of the stop counts: a value that changes with every stop (the HTTP layer notes it as
   * a request arrives, for one whose body arrives after a stop).
   */
  stopEpoch(): number {
    let sum = 0;
    for (const count of this.#stopCounts) sum += count();
    return sum;
  }

  /** Puts `next` in the place of `old` (same order among the gates); appends it when absent. */
  replaceGate(old: CallGate, next: CallGate, name = "gate"): void {
    const i = this.#gates.findIndex((g) => g.gate === old);
    if (i >= 0) this.#gates[i] = { gate: next, name: this.#gates[i]!.name };
    else this.#gates.push({ gate: next, name });
  }

  /**
   * Resolves provider, device and function; throws NOT_FOUND, UNAVAILABLE or INVALID_ARGUMENT
   * in this order: provider, availability, device, selector (docs/http-api.md, "Modes and calls").
   */
  resolve(
    req: Pick<CallRequest, "providerId" | "deviceId" | "functionId" | "functionName">,
  ): { device: DeviceCapabilities; fn: FunctionSpec } {
    return this.#resolve(req, freshProgress({}));
  }

  /**
   * The function the selector names in its provider's last inventory, also while that provider is
   * down (a crash keeps its devices) or a reload is restarting it (the inventory its stopped
   * process listed, until its successor lists one: ProviderRegistry.lastListed); null when no
   * provider, device or function answers to it. A call to it meanwhile is refused UNAVAILABLE and
   * audited (`unavailable`): the declared calls (the e-stop's ladder, hooks) type their arguments
   * with it to get there. For that audit only: it never lets a call pass.
   */
  lastDeclared(
    req: Pick<CallRequest, "providerId" | "deviceId" | "functionId" | "functionName">,
  ): FunctionSpec | null {
    const device = this.#registry.lastListed(req.providerId, req.deviceId);
    if (!device) return null;
    try {
      return this.#select(req, device, freshProgress({}));
    } catch {
      return null; // no function by that selector there
    }
  }

  /**
   * resolve, naming in `progress` what refuses: `unknown_provider` (no provider has that id and
   * none is configured under it: a caller's mistake, a handle a tree computed, or a provider a
   * reload removed), then `unavailable` for a provider down (the function its last inventory
   * declares by that selector set in `progress`, so the refusal is audited) or configured with no
   * host registered (ProviderRegistry.whyNotRunning: a reload restarting or starting it, or one it
   * did not get running; audited as well when the process a reload restarting it stopped had
   * listed the function: lastDeclared), nothing for a device it does not have (the device's
   * business), then #select's.
   */
  #resolve(
    req: Pick<CallRequest, "providerId" | "deviceId" | "functionId" | "functionName">,
    progress: CallProgress,
  ): { device: DeviceCapabilities; fn: FunctionSpec } {
    progress.refusedBy = "unknown_provider";
    const host = this.#registry.host(req.providerId);
    if (!host) {
      // Configured with no host registered (a reload restarting or starting it, or one it could
      // not get running): down, as a crashed provider is -- not an id no configuration has.
      const why = this.#registry.whyNotRunning(req.providerId);
      if (why === null) throw notFound(`Provider not found: ${namedProviderId(req.providerId)}`);
      progress.refusedBy = "unavailable";
      // Still a decision on that function (audited, as for a crashed provider) when the process
      // the reload stopped declared it; that inventory never resolves a call that is sent.
      progress.fn = this.lastDeclared(req);
      throw unavailable(`Provider unavailable: ${namedProviderId(req.providerId)} (${why})`);
    }
    progress.refusedBy = null;
    if (!host.available) {
      // Refused unsent, and still a decision on that function (audited: an e-stop's ladder call
      // to a crashed provider is on the trail) when its last inventory declares it: the answer
      // stays 503 whatever the selector names.
      progress.refusedBy = "unavailable";
      progress.fn = this.lastDeclared(req);
      throw unavailable(`Provider unavailable: ${namedProviderId(req.providerId)}`);
    }
    const device = this.#registry.capabilities(req.providerId, req.deviceId);
    if (!device) {
      throw notFound(`Device not found: ${namedDeviceHandle(req.providerId, req.deviceId)}`);
    }
    return { device, fn: this.#select(req, device, progress) };
  }

  /**
   * The function `req` selects on `device` (see resolve for the errors and their order), naming
   * in `progress` what refuses: `unknown_function` (the device declares no function by that
   * selector: a caller's mistake, a tree's, a configuration's, not the device's failure) or
   * `validation` (no selector, or an id and a name that disagree).
   */
  #select(
    req: Pick<CallRequest, "providerId" | "deviceId" | "functionId" | "functionName">,
    device: DeviceCapabilities,
    progress: CallProgress,
  ): FunctionSpec {
    const id = req.functionId ?? 0;
    const name = req.functionName ?? "";
    let fn: FunctionSpec | undefined;
    if (id !== 0) {
      progress.refusedBy = "unknown_function";
      fn = device.functions.find((f) => f.functionId === id);
      if (!fn) {
        throw notFound(
          `Function not found: ${
            namedDeviceHandle(req.providerId, req.deviceId)
          } function_id ${id}`,
        );
      }
      progress.refusedBy = "validation";
      // Both names cut and quoted: the caller's (a client, a tree file, a Sparkplug command) and
      // the provider's.
      if (name && fn.name !== name) {
        throw invalidArgument(
          `function_id ${id} is ${quoteProviderText(fn.name)}, not ${quoteProviderText(name)} (${
            namedDeviceHandle(req.providerId, req.deviceId)
          })`,
        );
      }
    } else {
      progress.refusedBy = "validation";
      if (!name) throw invalidArgument("missing function selector: function_id must not be 0");
      progress.refusedBy = "unknown_function";
      // Functions are indexed by name; duplicates collapse to the last declared (as anolis).
      fn = device.functions.findLast((f) => f.name === name);
      // The name is the caller's (a client, a tree file, a Sparkplug command): cut and quoted.
      if (!fn) {
        throw notFound(
          `Function not found: ${namedDeviceHandle(req.providerId, req.deviceId)} ${
            quoteProviderText(name)
          }`,
        );
      }
    }
    return fn;
  }

  /**
   * The device and function of a call as its provider declares them now, under the provider
   * lock: null when the declaration it was validated against still holds (or the provider is
   * down or replaced by a reload: sending refuses that). A provider that restarted (or rediscovered) while the call
   * waited may declare it otherwise: the device gone, the function gone or renumbered (its
   * function_id now selecting another function), other argument bounds. The call's selector is
   * resolved again and must name the same function; its arguments are validated again.
   */
  #redeclared(
    req: CallRequest,
    host: ReturnType<ProviderRegistry["host"]>,
    device: DeviceCapabilities,
    fn: FunctionSpec,
    progress: CallProgress,
  ): { device: DeviceCapabilities; fn: FunctionSpec } | null {
    // A host a reload replaced is stopped: sending to it refuses the call.
    const current = this.#registry.host(req.providerId);
    if (current !== host || !current?.available) return null;
    const now = this.#registry.capabilities(req.providerId, req.deviceId);
    if (now === device) return null;
    const restarted = "its provider restarted while the call was queued; nothing was sent";
    if (!now) {
      // As a device its provider does not have at resolve: the device's business, not the caller's.
      progress.refusedBy = "unavailable";
      throw notFound(
        `Device not found: ${namedDeviceHandle(req.providerId, req.deviceId)} (${restarted})`,
      );
    }
    let selected: FunctionSpec;
    try {
      selected = this.#select(req, now, progress);
    } catch (err) {
      if (!(err instanceof RuntimeError)) throw err;
      throw new RuntimeError(err.code, `${err.message} (${restarted})`);
    }
    progress.refusedBy = "validation";
    if (selected.name !== fn.name) {
      throw new RuntimeError(
        "FAILED_PRECONDITION",
        `function_id ${req.functionId} of ${
          namedDeviceHandle(req.providerId, req.deviceId)
        } is now ${quoteProviderText(selected.name)}, not ${
          quoteProviderText(fn.name)
        } (${restarted})`,
      );
    }
    // Actuating or not decides the write ahead (made, or not, before this) and its settling
    // record: a call validated as the one is not sent as the other.
    if (selected.actuating !== fn.actuating) {
      const kind = (actuating: boolean) => actuating ? "actuating" : "read-only";
      throw new RuntimeError(
        "FAILED_PRECONDITION",
        `${quoteProviderText(fn.name)} of ${
          namedDeviceHandle(req.providerId, req.deviceId)
        } is now ${kind(selected.actuating)}, ` +
          `not ${kind(fn.actuating)} (${restarted})`,
      );
    }
    return { device: now, fn: selected };
  }

  /**
   * Validates, gates and sends one call; polls the device right after a success, and resolves
   * after that poll, but for a stop action (origin safety), which resolves with its answer.
   */
  async call(req: CallRequest): Promise<CallResult> {
    const startedMs = this.#clock.monoMs();
    const progress = freshProgress(req.args);
    try {
      const result = await this.#call(req, progress);
      this.#record(req.providerId, "OK", startedMs);
      return result;
    } catch (err) {
      this.#record(req.providerId, err instanceof RuntimeError ? err.code : "INTERNAL", startedMs);
      this.#auditFailure(req, progress, err, startedMs);
      if (progress.sent && typeof err === "object" && err !== null) failedAfterSending.add(err);
      markRefusal(progress, err);
      throw err;
    }
  }

  /** The audit entry of an actuating call that was refused or failed. */
  #auditFailure(req: CallRequest, p: CallProgress, err: unknown, startedMs: number): void {
    if (!this.#audit || !p.fn?.actuating || p.results) return;
    const e = err instanceof RuntimeError ? err : null;
    const refused = !p.sent;
    this.#audit.record({
      action: "call",
      origin: req.source ?? defaultAuditOrigin(req.origin),
      outcome: refused ? "refused" : "failed",
      device_handle: `${req.providerId}/${req.deviceId}`,
      function: p.fn.name,
      args: p.args,
      reason: `${e?.code ?? "INTERNAL"}: ${errorMessage(err)}`,
      refused_by: refused ? p.refusedBy : null,
      result: null,
      latency_ms: this.#clock.monoMs() - startedMs,
      ...(p.intent ? { intent: p.intent } : {}),
    });
  }

  #record(providerId: string, code: "OK" | StatusCode, startedMs: number): void {
    if (!this.#registry.host(providerId)) return; // unbounded ids stay out of the metrics
    const key = `${providerId}\u0000${code}`;
    let series = this.#metrics.get(key);
    if (!series) {
      series = { providerId, code, duration: new Histogram() };
      this.#metrics.set(key, series);
    }
    series.duration.observe((this.#clock.monoMs() - startedMs) / 1000);
  }

  async #call(req: CallRequest, progress: CallProgress): Promise<CallResult> {
    const startedMs = this.#clock.monoMs();
    // Built once: the decision written ahead and its outcome's record are the same call (the
    // audit trail reuses the write ahead's collapse key for it).
    const auditOrigin = req.source ?? defaultAuditOrigin(req.origin);
    const auditHandle = `${req.providerId}/${req.deviceId}`;
    const stop = req.origin === "safety";
    // The stops so far, as the call is asked (addStopCount): a stop after this voids it. A count
    // that cannot be read refuses the call (an unknown input counts as unsafe).
    progress.refusedBy = STOPPED_AT_TURN;
    const stopEpoch = stop ? 0 : this.stopEpoch();
    progress.refusedBy = null;
    let { device, fn } = this.#resolve(req, progress);
    progress.fn = fn;
    this.#checkGates({ fn, device, origin: req.origin }, progress);
    // The provider's declared policy (call_policy.ts): stop actions pass it, like the gates.
    if (!stop) checkLease(device, fn, progress);
    progress.refusedBy = "validation";
    let args = validateArgs(fn, req.args);
    progress.args = args;
    if (!stop) this.#checkInterval(device, fn, progress);
    progress.refusedBy = "queue";
    const host = this.#registry.host(req.providerId)!;
    const lock = this.#lockFor(req.providerId);
    // A stop action goes before every call queued that is not one, after the call on the wire.
    const release = await lock.acquire(req.signal, { onAdmitted: req.onQueued, stop });
    progress.refusedBy = null;
    let response;
    try {
      // At its turn: its caller asked again whether still admitted (a reload may have removed or
      // lowered its token); resolved and validated again against what the provider declares now,
      // when it restarted (or rediscovered) since -- the call goes out as validated, or not at
      // all -- and gated again: nothing may have latched since validation. (A provider that went
      // down meanwhile: host.request refuses with UNAVAILABLE.)
      const checkAtTurn = () => {
        // The caller first: one no longer admitted learns nothing of the device's state.
        const refusal = req.stillAdmitted?.() ?? null;
        if (refusal !== null) {
          progress.refusedBy = refusal.refusedBy;
          throw refusal.error;
        }
        const redeclared = this.#redeclared(req, host, device, fn, progress);
        if (redeclared !== null) {
          ({ device, fn } = redeclared);
          progress.fn = fn;
          progress.refusedBy = "validation";
          args = validateArgs(fn, req.args);
          progress.args = args;
          if (!stop) checkLease(device, fn, progress);
        }
        this.#checkGates({ fn, device, origin: req.origin }, progress);
        // After the gates (a latch that holds is refused as such, with its remedy): a stop since
        // the call was asked, the latch released and the machine re-armed meanwhile.
        if (!stop && fn.actuating) {
          progress.refusedBy = STOPPED_AT_TURN;
          if (this.stopEpoch() !== stopEpoch) {
            throw stopRefusal(`${auditHandle} ${fn.name}`, "queue");
          }
        }
      };
      checkAtTurn();
      // The decision is in the audit journal (handed to the OS) before the provider can get the
      // call; the wait is bounded and a failing journal never stops the call (audit_trail.ts).
      // Stop actions (origin safety: the e-stop ladder, the hooks into FAULT) queue theirs
      // without waiting: a slow or full disk must never delay a stop. A call refused at its turn
      // (above: the e-stop latched while it was queued) is never written ahead as a decision to
      // send, nor makes the calls behind it -- a stop action among them -- wait for the journal.
      // The wait holds the provider's lock: a stop action queued behind it once a stop voided
      // this call (refused by checkAtTurn below, never sent) ends the wait at once.
      if (fn.actuating && this.#audit?.writeAhead) {
        const voided = stop ? null : Promise.withResolvers<void>();
        const unwatch = voided === null
          ? () => {}
          : lock.watchStops(() => this.#voids(stopEpoch) && voided.resolve());
        try {
          progress.intent = await this.#audit.writeAhead({
            origin: auditOrigin,
            device_handle: auditHandle,
            function: fn.name,
            args,
          }, { wait: !stop, ...(voided === null ? {} : { until: voided.promise }) });
        } finally {
          unwatch();
        }
        // And again after that wait: the provider may have restarted, a gate may have closed.
        checkAtTurn();
      }
      // A tree halted since its call got the lock (AUTO left while the write-ahead waited): not
      // sent, though the mode gate lets automated calls pass outside AUTO (the hooks'). A manual
      // call's abort (its client gone) stops it only while it is queued (docs/automation.md).
      if (req.origin === "automated" && req.signal?.aborted) {
        progress.refusedBy = "queue";
        throw unavailable("call cancelled before it was sent: its tree was halted");
      }
      // Also re-checked here, where calls to one provider are serialised: of two calls racing
      // each other, the second is refused.
      if (!stop) this.#checkInterval(device, fn, progress);
      progress.refusedBy = "unavailable";
      const wireArgs = Object.fromEntries(
        Object.entries(args).map(([k, v]) => [k, typedValueToWire(v)]),
      );
      this.#log.debug(
        `${req.origin} call ${quoteDeviceHandle(req.providerId, req.deviceId)} ${
          quoteProviderTextWithin(fn.name, QUOTED_FUNCTION_NAME_CHARS)
        }(${fn.functionId})`,
      );
      const available = host.available;
      const pending = host.request("call", {
        device_id: req.deviceId,
        function_id: fn.functionId,
        function_name: fn.name,
        args: wireArgs,
      });
      // Written unless the provider was down (host.request refuses that before it writes) or
      // its session says the frame never went out (below): once sent, a failure is `failed`
      // and names no refusing check.
      progress.sent = available;
      const noted = available ? this.#intervals.note(device, fn, this.#clock.monoMs()) : undefined;
      if (available) req.onSent?.();
      try {
        response = await pending;
      } catch (err) {
        // Its frame never written (the session refused it, a failed write did not deliver it:
        // a provider gone deaf, its session not yet ended; or it still waited for a pipe the
        // provider does not read at its deadline or the session's end, and was taken back):
        // nothing reached the provider, so its min_interval_ms counts from the last call sent,
        // as before it. A request too large to frame is the arguments' fault; one taken back at
        // its deadline is refused as a provider down is (503), not a timeout that may have acted.
        if (neverWritten(err)) {
          if (noted !== undefined) this.#intervals.unnote(device, fn, noted);
          progress.sent = false;
          if (err instanceof RuntimeError && err.code === "INVALID_ARGUMENT") {
            progress.refusedBy = "validation";
          }
          if (err instanceof RuntimeError && err.code === "DEADLINE_EXCEEDED") {
            throw unavailable(err.message);
          }
        }
        throw err;
      }
    } finally {
      release();
    }
    // An answer for another device (a provider that mixed its devices up) says nothing of this
    // one: whether it acted is unknown, and the results are not its own.
    const answered = response.device_id ?? "";
    if (isOtherDeviceAnswer(req.deviceId, answered)) {
      // Every name here is a provider's text (the provider id a configured one), any length: cut,
      // the function's name and the device ids quoted, as the router names them elsewhere.
      const device = namedDeviceHandle(req.providerId, req.deviceId);
      throw new RuntimeError(
        "INTERNAL",
        `provider answered the call of ${device} ${quoteProviderText(fn.name)} for device ${
          quoteDeviceId(answered)
        }, not ${quoteDeviceId(req.deviceId)}: whether ${device} acted is unknown`,
      );
    }
    const results: Record<string, TypedValue> = {};
    for (const [k, v] of Object.entries(response.results ?? {})) {
      const tv = typedValueFromWire(v);
      if (tv) results[k] = tv;
    }
    progress.results = results;
    if (fn.actuating && this.#audit) {
      this.#audit.record({
        action: "call",
        origin: auditOrigin,
        outcome: "accepted",
        device_handle: auditHandle,
        function: fn.name,
        args,
        reason: null,
        refused_by: null,
        result: results,
        latency_ms: this.#clock.monoMs() - startedMs,
        ...(progress.intent ? { intent: progress.intent } : {}),
      });
    }
    // The device is polled at once so the cache shows the call's effect. A stop action does not
    // wait for that poll (it never throws): it ends with its call's answer, so the next stop
    // action goes out at once and a reload's wait for it is bounded by stopActionWorstCaseMs
    // (the poll may wait behind another poll of the provider, then take its own timeout_ms).
    const polled = this.#cache.pollDevice(req.providerId, req.deviceId);
    if (!stop) await polled;
    return {
      providerId: req.providerId,
      deviceId: req.deviceId,
      functionId: fn.functionId,
      functionName: fn.name,
      results,
      postCallPollTriggered: true,
    };
  }

  /**
   * A barrier behind every call already admitted to `providerId`, its late calls taken now (the
   * calls sent so far, not those sent while the barrier queues): the returned wait resolves once
   * each of them has finished (or been refused under the lock by a gate that changed since), or
   * with false when that takes longer than its `timeoutMs`. Calls are serialised per provider, in
   * order but for stop actions (granted before every other waiter), so taking the lock once is
   * enough; the barrier is admitted even when the queue is full, and waits also for the stop
   * actions granted before its turn (the e-stop ladder's calls queued meanwhile). A call sent
   * before the mark that timed out unanswered has not finished: its provider may still carry it
   * out, until it answers it or its process exits (ProviderHost.lateCallsWait: a session closed by
   * a stop ends at once, its process reads on); a call sent after the mark (the e-stop ladder's)
   * that timed out is not waited for. The e-stop takes the mark at its latch, so a reload that
   * closes the provider's session before the wait begins (removing or restarting it) leaves them
   * late until its process ends.
   */
  drainFrom(providerId: string): (timeoutMs: number) => Promise<boolean> {
    // Also the processes of the id a reload took out before the mark and is still ending (removed
    // or restarted): each may still carry out a call it held when its session was closed.
    const waits = [
      this.#registry.host(providerId),
      ...this.#registry.retiringHosts().filter((h) => h.id === providerId),
    ].flatMap((h) => {
      const wait = h?.lateCallsWait() ?? null;
      return wait === null ? [] : [wait];
    });
    const lateCalls = waits.length === 0
      ? null
      : waits.length === 1
      ? waits[0]!
      : async (signal: AbortSignal) =>
        (await Promise.all(waits.map((wait) => wait(signal)))).every((done) => done);
    return (timeoutMs) => this.#drain(providerId, lateCalls, timeoutMs);
  }

  async #drain(
    providerId: string,
    lateCalls: ((signal: AbortSignal) => Promise<boolean>) | null,
    timeoutMs: number,
  ): Promise<boolean> {
    const lock = this.#locks.get(providerId);
    if (!lock && !lateCalls) return true;
    // The bound runs on the router's clock, as every other time of the call path does.
    const bound = new AbortController();
    const timer = this.#clock.setTimer(() => bound.abort(), timeoutMs);
    try {
      if (lock) {
        const release = await lock.acquire(bound.signal, { unbounded: true });
        release();
      }
      return lateCalls === null || await lateCalls(bound.signal);
    } catch {
      return false; // the bound ran out: the barrier left the queue
    } finally {
      this.#clock.clearTimer(timer);
    }
  }

  /**
   * Whether a stop since `stopEpoch` (the count when the call was asked) voids the call: it is
   * refused at its turn. A count that cannot be read voids it too (its turn refuses it so).
   */
  #voids(stopEpoch: number): boolean {
    try {
      return this.stopEpoch() !== stopEpoch;
    } catch {
      return true;
    }
  }

  /** Refuses a call sooner than its function's min_interval_ms after the last one sent. */
  #checkInterval(device: DeviceCapabilities, fn: FunctionSpec, progress: CallProgress): void {
    progress.refusedBy = "min_interval";
    const refusal = this.#intervals.refusal(device, fn, this.#clock.monoMs());
    if (refusal) throw refusal;
  }

  #checkGates(ctx: GateContext, progress: CallProgress): void {
    if (ctx.origin === "safety") return;
    for (const { gate, name } of this.#gates) {
      // Named before it runs: a gate that throws instead of answering is named as the refuser.
      progress.refusedBy = name;
      const refusal = gate(ctx);
      if (refusal) throw refusal;
    }
  }

  #lockFor(providerId: string): ProviderLock {
    let lock = this.#locks.get(providerId);
    if (!lock) this.#locks.set(providerId, lock = new ProviderLock(providerId));
    return lock;
  }
}

/**
 * A mutex with a bounded queue, its waiters granted in two classes: stop actions (origin safety)
 * first, in the order they came, then every other waiter (calls, drain barriers) in the order they
 * came. The holder is never pre-empted.
 */
class ProviderLock {
  readonly #providerId: string;
  #held = false;
  /**
   * Stop actions waiting: never refused for a full queue, and finite all the same. Each run of
   * them makes its calls one at a time, so holds at most one here: the e-stop's ladder (a stop's
   * calls to one provider, a securing run's; each run after the one before it, Estop.#onProvider)
   * and the hook calls into FAULT (the hooks in force, a finite list, run once per FAULT entry and
   * again for a provider that comes back, after the run before it).
   */
  readonly #stops: Array<() => void> = [];
  /** Every other waiter: calls (at most MAX_QUEUED_CALLS_PER_PROVIDER) and drain barriers. */
  readonly #others: Array<() => void> = [];
  /**
   * The calls among #others: the queue bound counts them alone (a stop action or a drain barrier
   * waiting takes no call's place).
   */
  #queuedCalls = 0;
  /** The holder's watch for a stop action queued behind it (watchStops): one holder, one watch. */
  #stopWatch: (() => void) | null = null;

  constructor(providerId: string) {
    this.#providerId = providerId;
  }

  /**
   * Tells the holder, at once when one waits already and else as one queues, that a stop action
   * waits behind it (a holder waiting for something that a stop makes moot can stop waiting).
   * Returns the watch's end; the holder ends it before it releases the lock.
   */
  watchStops(listener: () => void): () => void {
    this.#stopWatch = listener;
    if (this.#stops.length > 0) listener();
    return () => {
      if (this.#stopWatch === listener) this.#stopWatch = null;
    };
  }

  /**
   * Takes the lock; resolves with its release. `stop`: a stop action's, granted before every
   * waiter that is not one and never refused for a full queue. `unbounded`: never refused for a
   * full queue (a drain barrier), granted in its turn.
   */
  acquire(
    signal?: AbortSignal,
    options: {
      unbounded?: boolean;
      stop?: boolean;
      onAdmitted?: (() => void) | undefined;
    } = {},
  ): Promise<() => void> {
    const release = () => {
      const next = this.#stops.shift() ?? this.#others.shift();
      if (next) next();
      else this.#held = false;
    };
    // A call cancelled before it reached the lock is never sent ("abort" will not fire again).
    if (signal?.aborted) {
      return Promise.reject(new RuntimeError("UNAVAILABLE", "call cancelled before it was sent"));
    }
    if (!this.#held) {
      this.#held = true;
      try {
        options.onAdmitted?.();
      } catch (err) {
        // It must not throw; one that does is refused, the lock passed on, never kept held.
        release();
        return Promise.reject(err);
      }
      return Promise.resolve(release);
    }
    const call = !options.stop && !options.unbounded;
    if (call && this.#queuedCalls >= MAX_QUEUED_CALLS_PER_PROVIDER) {
      return Promise.reject(
        unavailable(`Provider busy: ${this.#providerId} has ${this.#queuedCalls} calls queued`),
      );
    }
    const waiters = options.stop ? this.#stops : this.#others;
    return new Promise((resolve, reject) => {
      const grant = () => {
        if (call) this.#queuedCalls--;
        signal?.removeEventListener("abort", onAbort);
        resolve(release);
      };
      // Runs only while `grant` is queued: granting removes this listener first, and a signal
      // fires "abort" once.
      const onAbort = () => {
        if (call) this.#queuedCalls--;
        waiters.splice(waiters.indexOf(grant), 1);
        reject(new RuntimeError("UNAVAILABLE", "call cancelled while queued"));
      };
      signal?.addEventListener("abort", onAbort);
      waiters.push(grant);
      if (call) this.#queuedCalls++;
      try {
        if (options.stop) this.#stopWatch?.();
        options.onAdmitted?.();
      } catch (err) {
        // Neither may throw; when one does, the waiter is refused and its grant taken back (else
        // granted later to a promise already settled, it would keep the lock held for ever).
        signal?.removeEventListener("abort", onAbort);
        const at = waiters.indexOf(grant);
        if (at >= 0) {
          waiters.splice(at, 1);
          if (call) this.#queuedCalls--;
        }
        reject(err);
      }
    });
  }
}
