/**
 * The software e-stop: a latch (released | latched) plus the safe-state ladder (safe_state.ts).
 *
 * Trigger order (http-api.md §6): the latch engages synchronously — from then on the router's
 * latch gate refuses every actuating non-safety call, including calls already queued on a
 * provider lock (the gate is re-checked under the lock) — then the ladder runs its calls in
 * order with origin "safety" (bypasses mode and latch gates, still validated, still needs the
 * provider up), then, with automation enabled, the mode is forced to FAULT.
 *
 * Because calls to one provider are serialised FIFO, a ladder call to a provider is written
 * after every call that was already on its way there, so a racing call cannot overwrite the
 * safe state. A provider the ladder does not touch gets no such barrier: a call written to it
 * just before the latch may still complete after trigger() resolves.
 *
 * The latch is a software stop. It does not replace a hardware power cut.
 */
import {
  type Clock,
  deviceHandle,
  failedPrecondition,
  type Logger,
  RuntimeError,
  toRuntimeError,
} from "../common/mod.ts";
import {
  type CallRouter,
  type GateContext,
  registeredDevices,
  runDeclaredCall,
} from "../control/mod.ts";
import type { ProviderRegistry } from "../providers/mod.ts";
import {
  type PlannedCall,
  planSafeState,
  type SafeStateConfig,
  type SafeStatePlan,
  type SoftwareSafeState,
} from "./safe_state.ts";

/** One call the ladder made. */
export interface EstopAction {
  device_handle: string;
  function: string;
  success: boolean;
  error?: string;
}

/** POST /v0/estop body without `status`. */
export interface EstopResult {
  latched: true;
  software_safe_state: SoftwareSafeState;
  actions: EstopAction[];
  /** Only when software_safe_state is "none". */
  warning?: string;
  /** Only when automation is enabled: whether the mode is FAULT afterwards. */
  fault_engaged?: boolean;
}

/** GET /v0/runtime/status `.estop`. */
export interface EstopStatus {
  latched: boolean;
  /** The rung a trigger would run now. */
  software_safe_state: SoftwareSafeState;
  latched_at_epoch_ms: number | null;
  uncovered_actuating_functions: number;
}

/** What the HTTP layer needs (prompts/services.md). */
export interface EstopService {
  trigger(reason?: string): Promise<EstopResult>;
  clear(): { latched: false };
  status(): EstopStatus;
}

/** Pause between attempts of a ladder call refused because its provider's queue is full. */
export const BUSY_RETRY_INTERVAL_MS = 10;
/** How long past the provider's timeout_ms a ladder call keeps retrying a full queue. */
export const BUSY_RETRY_MARGIN_MS = 1000;

/** Latch states and events. */
export type LatchState = "released" | "latched";
export type LatchEvent = "trigger" | "clear";

/** The latch state machine: trigger latches (also when latched), clear releases (idempotent). */
export function latchTransition(_state: LatchState, event: LatchEvent): LatchState {
  return event === "trigger" ? "latched" : "released";
}

/** Warning returned with the "none" rung. */
export const NO_SAFE_STATE_WARNING =
  "No software safe state applies: safety.safe_state has no hooks, its setpoints do not cover " +
  "every actuating function and zero_is_safe is false. The latch blocks further actuating " +
  "calls but no output was changed; use the hardware emergency stop to remove power.";

/** The mode manager's part in an e-stop (present only with automation enabled). */
export interface FaultSink {
  forceFault(reason: string): Promise<boolean>;
}

export interface EstopOptions {
  readonly router: CallRouter;
  readonly registry: ProviderRegistry;
  readonly clock: Clock;
  readonly log: Logger;
  /** safety.safe_state after the adoption rule (effectiveSafeState). */
  readonly safeState: SafeStateConfig;
  /** Set when automation is enabled: the e-stop then forces FAULT (and reports fault_engaged). */
  readonly modes?: FaultSink;
}

/** The e-stop latch and ladder. Registers the latch gate on the router at construction. */
export class Estop implements EstopService {
  readonly #o: EstopOptions;
  readonly #log: Logger;
  #state: LatchState = "released";
  #latchedAtMs: number | null = null;
  /** Ladders run one after another (a re-trigger re-runs the ladder after the running one). */
  #ladderTail: Promise<unknown> = Promise.resolve();

  constructor(options: EstopOptions) {
    this.#o = options;
    this.#log = options.log.child("estop");
    options.router.addGate(this.gate);
  }

  /** True while latched. */
  get latched(): boolean {
    return this.#state === "latched";
  }

  /** The call gate: while latched, actuating (non-READ) calls are refused; safety calls skip gates. */
  readonly gate = (ctx: GateContext): RuntimeError | null => {
    if (this.#state !== "latched" || !ctx.fn.actuating || ctx.origin === "safety") return null;
    return failedPrecondition(
      `E-stop latched: actuating call ${
        deviceHandle(ctx.device.device.providerId, ctx.device.device.deviceId)
      } ${ctx.fn.name} refused (POST /v0/estop/clear releases the latch)`,
    );
  };

  /** What a trigger would do now, for the current device inventory. */
  plan(): SafeStatePlan {
    return planSafeState(this.#o.safeState, registeredDevices(this.#o.registry));
  }

  async trigger(reason?: string): Promise<EstopResult> {
    // Synchronous, before any await: the gate refuses racing calls from here on.
    this.#state = latchTransition(this.#state, "trigger");
    this.#latchedAtMs = this.#o.clock.nowMs();
    this.#log.warn(`E-STOP latched${reason ? `: ${reason}` : ""}`);
    const ladder = this.#ladderTail.then(() => this.#runLadder());
    this.#ladderTail = ladder.catch(() => {});
    const { rung, actions } = await ladder;
    const result: EstopResult = { latched: true, software_safe_state: rung, actions };
    if (rung === "none") {
      result.warning = NO_SAFE_STATE_WARNING;
      this.#log.warn(NO_SAFE_STATE_WARNING);
    }
    if (this.#o.modes) {
      result.fault_engaged = await this.#o.modes.forceFault(`e-stop${reason ? `: ${reason}` : ""}`);
    }
    return result;
  }

  clear(): { latched: false } {
    if (this.#state === "latched") this.#log.warn("E-stop latch cleared");
    this.#state = latchTransition(this.#state, "clear");
    this.#latchedAtMs = null;
    return { latched: false };
  }

  status(): EstopStatus {
    const plan = this.plan();
    return {
      latched: this.#state === "latched",
      software_safe_state: plan.rung,
      latched_at_epoch_ms: this.#latchedAtMs,
      uncovered_actuating_functions: plan.uncovered.length,
    };
  }

  async #runLadder(): Promise<{ rung: SoftwareSafeState; actions: EstopAction[] }> {
    const plan = this.plan();
    this.#log.warn(
      `safe-state rung '${plan.rung}': ${plan.calls.length} call(s), ${plan.uncovered.length} actuating function(s) untouched`,
    );
    if (plan.uncovered.length > 0 && plan.rung !== "none") {
      this.#log.warn(
        `not touched by the '${plan.rung}' rung: ${
          plan.uncovered.map((u) => `${u.device_handle} ${u.function}`).join(", ")
        }`,
      );
    }
    const actions: EstopAction[] = [];
    // Sequential in plan order: declared hooks/setpoints may depend on their order. Each call is
    // bounded by its provider's timeout_ms; a provider that is down fails at once.
    for (const planned of plan.calls) {
      const action: EstopAction = { ...planned.label, success: true };
      try {
        await this.#runWhileBusy(planned);
      } catch (err) {
        const e = toRuntimeError(err);
        action.success = false;
        action.error = `${e.code}: ${e.message}`;
        this.#log.error(
          `safe-state call ${planned.label.device_handle} ${planned.label.function} failed: ${action.error}`,
        );
      }
      actions.push(action);
    }
    return { rung: plan.rung, actions };
  }

  /**
   * Runs one ladder call, retrying while its provider is up but its call queue is full (a flood
   * of calls queued before the latch): those queued calls are refused one after another as soon
   * as the call on the wire returns, so the queue drains within about the provider's timeout_ms.
   * A provider that is down fails at once.
   */
  async #runWhileBusy(planned: PlannedCall): Promise<void> {
    const providerId = planned.kind === "zero"
      ? planned.providerId
      : planned.call.deviceHandle.split("/")[0];
    const host = this.#o.registry.host(providerId);
    const deadline = this.#o.clock.monoMs() + (host?.config.timeoutMs ?? 0) + BUSY_RETRY_MARGIN_MS;
    for (;;) {
      try {
        await this.#run(planned);
        return;
      } catch (err) {
        // Runtime-side UNAVAILABLE (no provider status code) while the provider is up = queue full.
        const busy = err instanceof RuntimeError && err.code === "UNAVAILABLE" &&
          err.details?.provider_code === undefined && host?.available === true &&
          this.#o.clock.monoMs() < deadline;
        if (!busy) throw err;
        await new Promise((resolve) => setTimeout(resolve, BUSY_RETRY_INTERVAL_MS));
      }
    }
  }

  #run(planned: PlannedCall): Promise<unknown> {
    if (planned.kind === "declared") return runDeclaredCall(this.#o.router, planned.call, "safety");
    return this.#o.router.call({
      providerId: planned.providerId,
      deviceId: planned.deviceId,
      functionId: planned.functionId,
      args: planned.args,
      origin: "safety",
    });
  }
}
