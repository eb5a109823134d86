/**
 * Runtime modes (IDLE, MANUAL, AUTO, FAULT): the transition table of http-api.md §8, the
 * mode-transition hooks of automation.md §6 and the mode gate on every call.
 *
 * Gate decision (issue 5 over http-api.md §7): IDLE **and FAULT** refuse actuating calls, manual
 * and automated alike — FAULT means "something went wrong", so nothing actuates until an
 * operator re-arms by switching to MANUAL. Consequence: after_transition hooks entering FAULT
 * (and before-hooks leaving FAULT) that actuate are refused, exactly like hooks around IDLE; put
 * actuating FAULT-entry actions in before_transition hooks (they run in the old mode) or in
 * safety.safe_state. Read-only calls (category READ) always pass. In AUTO, manual calls follow
 * automation.manual_gating_policy; automated calls (behavior tree, hooks) pass.
 */
import {
  type Clock,
  deviceHandle,
  failedPrecondition,
  type Logger,
  type RuntimeError,
  toRuntimeError,
} from "../common/mod.ts";
import type { HookConfig, RuntimeMode } from "../config/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type { ProviderRegistry } from "../providers/mod.ts";
import type { CallRouter, GateContext } from "./call_router.ts";
import { declaredFunctionLabel, registeredDevices, runDeclaredCall } from "./declared_calls.ts";

/** What the HTTP layer needs (prompts/services.md). */
export interface ModeService {
  current(): RuntimeMode;
  /**
   * Runs the transition (hooks, events); resolves with the mode after it. Same mode = no-op.
   * Throws FAILED_PRECONDITION for a refused transition or a vetoing hook.
   */
  request(mode: RuntimeMode): Promise<RuntimeMode>;
}

/** A committed mode change, as listeners (the behavior-tree runner) receive it. */
export interface ModeChange {
  readonly previous: RuntimeMode;
  readonly current: RuntimeMode;
}

/** Called synchronously when a new mode is committed (before after_transition hooks run). */
export type ModeChangeListener = (change: ModeChange) => void;

/** Allowed targets per mode (http-api.md §8); same-mode requests are a no-op, not listed. */
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

export interface ModeManagerOptions {
  readonly router: CallRouter;
  readonly registry: ProviderRegistry;
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
  /**
   * The refuse-hookless AUTO gate (automation.md §6, later anolis): entering AUTO needs a hook
   * covering AUTO -> FAULT while any actuating function is registered. Default true.
   */
  readonly requireFaultHookForAuto?: boolean;
}

/**
 * The runtime mode state machine. Starts in IDLE, always. Registers its gate on the router at
 * construction so no call can bypass it. Values of other subsystems (parameters) are untouched
 * by mode changes.
 */
export class ModeManager implements ModeService {
  readonly #o: ModeManagerOptions;
  readonly #log: Logger;
  #mode: RuntimeMode = "IDLE";
  /** The non-FAULT transition whose hooks are running; another one is refused meanwhile. */
  #busy: { from: RuntimeMode; to: RuntimeMode } | null = null;
  readonly #listeners = new Set<ModeChangeListener>();

  constructor(options: ModeManagerOptions) {
    this.#o = options;
    this.#log = options.log.child("mode");
    options.router.addGate(this.gate);
  }

  current(): RuntimeMode {
    return this.#mode;
  }

  /** See ModeService.request. FAULT is always reachable and cannot be vetoed by hooks. */
  request(mode: RuntimeMode): Promise<RuntimeMode> {
    return this.#transition(mode, "requested");
  }

  /**
   * Enters FAULT without any possible veto (e-stop, lost AUTO preconditions). Resolves true when
   * the mode is FAULT afterwards.
   */
  async forceFault(reason: string): Promise<boolean> {
    try {
      await this.#transition("FAULT", reason);
    } catch (err) {
      // Not expected (FAULT ignores vetoes); never let it escape into the e-stop path.
      this.#log.error(`forcing FAULT failed: ${toRuntimeError(err).message}`);
    }
    return this.#mode === "FAULT";
  }

  /** Subscribes to committed mode changes; returns the unsubscribe function. */
  onModeChange(listener: ModeChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The call gate (registered on the router): see the module comment for the rules. */
  readonly gate = (ctx: GateContext): RuntimeError | null => {
    if (!ctx.fn.actuating || ctx.origin === "safety") return null;
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
      case "AUTO":
        if (ctx.origin === "manual" && this.#o.manualGatingPolicy === "BLOCK") {
          return failedPrecondition(
            `Manual call blocked in AUTO mode: ${what} is actuating (manual_gating_policy BLOCK)`,
          );
        }
        return null;
      case "MANUAL":
        return null;
    }
  };

  /**
   * The refuse-hookless AUTO gate: a message when entering AUTO must be refused, else null.
   * `safety.safe_state` does not satisfy it (automation.md §6).
   */
  autoGateProblem(): string | null {
    if (this.#o.requireFaultHookForAuto === false) return null;
    const actuating = registeredDevices(this.#o.registry)
      .reduce((n, d) => n + d.functions.filter((f) => f.actuating).length, 0);
    if (actuating === 0) return null;
    const { beforeTransition, afterTransition } = this.#o.hooks;
    const covered = [...beforeTransition, ...afterTransition].some((h) =>
      (h.from === "AUTO" || h.from === "*") && (h.to === "FAULT" || h.to === "*")
    );
    if (covered) return null;
    return `refusing AUTO: ${actuating} actuating function(s) are registered but no ` +
      "mode_transition_hook covers AUTO -> FAULT (add one with from AUTO or * and to FAULT or *)";
  }

  /** Re-checks the AUTO gate (after a provider rediscovery); forces FAULT when it now fails. */
  async recheckAutoGate(): Promise<void> {
    if (this.#mode !== "AUTO") return;
    const problem = this.autoGateProblem();
    if (problem) await this.forceFault(problem);
  }

  async #transition(target: RuntimeMode, reason: string): Promise<RuntimeMode> {
    const from = this.#mode;
    if (target === from) return from;
    // FAULT is the way out of anything: no busy check, no veto, no concurrent-change refusal.
    const toFault = target === "FAULT";
    if (!isTransitionAllowed(from, target)) {
      throw failedPrecondition(`Invalid mode transition: ${from} -> ${target}`);
    }
    if (target === "AUTO" && !this.#o.automationEnabled) {
      throw failedPrecondition(
        `Invalid mode transition: ${from} -> AUTO requires automation.enabled (automation is disabled)`,
      );
    }
    if (!toFault && this.#busy) {
      throw failedPrecondition(
        `Mode transition ${this.#busy.from} -> ${this.#busy.to} is in progress; retry ${from} -> ${target}`,
      );
    }
    if (target === "AUTO") {
      const problem = this.autoGateProblem();
      if (problem) throw failedPrecondition(problem);
    }
    const token = { from, to: target };
    if (!toFault) this.#busy = token;
    try {
      this.#log.info(`transition ${from} -> ${target} (${reason})`);
      const veto = await this.#runHooks("before", from, target);
      if (veto) {
        if (!toFault) {
          throw failedPrecondition(`Mode transition ${from} -> ${target} vetoed: ${veto}`);
        }
        this.#log.warn(`FAULT cannot be vetoed; continuing after: ${veto}`);
      }
      if (this.#mode !== from) {
        if (toFault && this.#mode === "FAULT") return "FAULT";
        if (!toFault) {
          throw failedPrecondition(
            `Mode changed concurrently during ${from} -> ${target} hooks (now ${this.#mode})`,
          );
        }
      }
      const previous = this.#mode;
      this.#commit(previous, target);
      await this.#runHooks("after", previous, target);
      return this.#mode;
    } finally {
      if (this.#busy === token) this.#busy = null;
    }
  }

  /**
   * Sets the mode, publishes `mode_change` and tells listeners. Done before after_transition
   * hooks (automation.md §8 publishes after them): the event stream then always follows the
   * real mode history, even when an e-stop forces FAULT while after-hooks run, and a behavior
   * tree leaving AUTO is halted before any after-hook call.
   */
  #commit(previous: RuntimeMode, next: RuntimeMode): void {
    this.#mode = next;
    this.#o.bus.publish({
      kind: "mode_change",
      previous_mode: previous,
      new_mode: next,
      timestamp_ms: this.#o.clock.nowMs(),
    });
    for (const listener of [...this.#listeners]) {
      try {
        listener({ previous, current: next });
      } catch (err) {
        this.#log.error(`mode change listener failed: ${toRuntimeError(err).message}`);
      }
    }
  }

  /**
   * Runs the matching hooks of one phase in config order, each hook's calls in order. Calls are
   * "automated" and gated by the mode current at call time. Before-phase: a failure in a hook
   * with fail_on_error stops every remaining hook call and is returned as the veto reason.
   * After-phase: failures are logged (error with fail_on_error, else warning) and the rest run.
   */
  async #runHooks(
    phase: "before" | "after",
    from: RuntimeMode,
    to: RuntimeMode,
  ): Promise<string | null> {
    const hooks = phase === "before"
      ? this.#o.hooks.beforeTransition
      : this.#o.hooks.afterTransition;
    for (const hook of hooks) {
      if (!hookMatches(hook, from, to)) continue;
      for (const call of hook.calls) {
        try {
          await runDeclaredCall(this.#o.router, call, "automated");
        } catch (err) {
          const e = toRuntimeError(err);
          const text = `${phase}_transition hook ${hook.path} call ${call.deviceHandle} ${
            declaredFunctionLabel(call)
          } failed: ${e.code}: ${e.message}`;
          if (phase === "before" && hook.failOnError) {
            this.#log.error(text);
            return text;
          }
          if (hook.failOnError) this.#log.error(text);
          else this.#log.warn(text);
        }
      }
    }
    return null;
  }
}
