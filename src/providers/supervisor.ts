import type { LifecycleState, ProviderSupervisionView } from "../common/mod.ts";
import type { RestartPolicyConfig } from "../config/mod.ts";

/**
 * Provider supervision as an explicit state machine (README, "How it behaves": Supervision;
 * `lifecycle_state` as docs/http-api.md describes it).
 *
 * Phases: STARTING (initial bring-up), UP (session healthy), BACKOFF (waiting to restart),
 * ATTEMPTING (a restart attempt is running), CIRCUIT_OPEN (given up, until a reload retries it),
 * STOPPED (runtime shutdown).
 */
export type SupervisorPhase =
  | "STARTING"
  | "UP"
  | "BACKOFF"
  | "ATTEMPTING"
  | "CIRCUIT_OPEN"
  | "STOPPED";

export interface SupervisorState {
  readonly phase: SupervisorPhase;
  /** Consecutive failures in the current streak. */
  readonly attemptCount: number;
  /** A crash was observed and not yet recovered from. */
  readonly crashDetected: boolean;
  /** Monotonic ms at which the next restart is due (BACKOFF only). */
  readonly restartDueAt: number | null;
  /** Monotonic ms of the first healthy moment of the current process (UP only). */
  readonly upSince: number | null;
}

export type SupervisorEvent =
  /** The process is up, handshaken and discovered (initial start or a restart attempt). */
  | { readonly type: "up"; readonly at: number }
  /** The running provider crashed, became unresponsive or broke the protocol. */
  | { readonly type: "failed"; readonly at: number }
  /** Backoff elapsed and a restart attempt begins. */
  | { readonly type: "attempt"; readonly at: number }
  /** A restart attempt failed. */
  | { readonly type: "attempt_failed"; readonly at: number }
  /** The running provider answered a liveness check (ends the streak after success_reset_ms). */
  | { readonly type: "tick"; readonly at: number }
  /**
   * The restart policy was replaced in place (a configuration reload): a pending restart the new
   * policy no longer allows (disabled, or max_attempts below this attempt) is cancelled.
   */
  | { readonly type: "policy" }
  /**
   * A configuration reload retries a provider whose circuit is open: a restart attempt begins
   * with the failure streak reset (attempt 0; a failure of it is the streak's first).
   */
  | { readonly type: "retry" }
  | { readonly type: "stop" };

export const INITIAL_SUPERVISOR_STATE: SupervisorState = {
  phase: "STARTING",
  attemptCount: 0,
  crashDetected: false,
  restartDueAt: null,
  upSince: null,
};

/** Delay before restart attempt n (1-based): backoff_ms[n-1], clamped to the last entry. */
export function backoffFor(policy: RestartPolicyConfig, attempt: number): number {
  const list = policy.backoffMs;
  if (list.length === 0) return 0;
  return (list[Math.min(attempt, list.length) - 1])!;
}

/** The transition function. Events that do not apply in a phase leave the state unchanged. */
export function supervise(
  state: SupervisorState,
  event: SupervisorEvent,
  policy: RestartPolicyConfig,
): SupervisorState {
  if (event.type === "stop") return { ...state, phase: "STOPPED", restartDueAt: null };
  switch (state.phase) {
    case "STARTING":
      if (event.type === "up") return { ...state, phase: "UP", upSince: event.at };
      if (event.type === "failed") return fail(state, event.at, policy);
      return state;
    case "UP":
      if (event.type === "failed") return fail(state, event.at, policy);
      if (
        event.type === "tick" && state.attemptCount > 0 && state.upSince !== null &&
        event.at - state.upSince >= policy.successResetMs
      ) {
        return { ...state, attemptCount: 0 };
      }
      return state;
    case "BACKOFF":
      if (event.type === "policy" && (!policy.enabled || state.attemptCount > policy.maxAttempts)) {
        return { ...state, phase: "CIRCUIT_OPEN", restartDueAt: null };
      }
      if (
        event.type === "attempt" && state.restartDueAt !== null && event.at >= state.restartDueAt
      ) {
        return { ...state, phase: "ATTEMPTING", restartDueAt: null };
      }
      return state;
    case "ATTEMPTING":
      if (event.type === "up") {
        return { ...state, phase: "UP", upSince: event.at, crashDetected: false };
      }
      if (event.type === "attempt_failed" || event.type === "failed") {
        return fail(state, event.at, policy);
      }
      return state;
    case "CIRCUIT_OPEN":
      // No half-open probe: only a runtime restart or a reload (the operator) tries it again.
      if (event.type === "retry") {
        return { ...state, phase: "ATTEMPTING", attemptCount: 0, restartDueAt: null };
      }
      return state;
    case "STOPPED":
      return state;
  }
}

function fail(state: SupervisorState, at: number, policy: RestartPolicyConfig): SupervisorState {
  if (!policy.enabled) {
    return {
      ...state,
      phase: "CIRCUIT_OPEN",
      crashDetected: true,
      upSince: null,
      restartDueAt: null,
    };
  }
  const attemptCount = state.attemptCount + 1;
  if (attemptCount > policy.maxAttempts) {
    return {
      phase: "CIRCUIT_OPEN",
      attemptCount,
      crashDetected: true,
      upSince: null,
      restartDueAt: null,
    };
  }
  return {
    phase: "BACKOFF",
    attemptCount,
    crashDetected: true,
    upSince: null,
    restartDueAt: at + backoffFor(policy, attemptCount),
  };
}

/** Whether the provider is serving (session healthy). */
export function isAvailable(state: SupervisorState): boolean {
  return state.phase === "UP";
}

/** lifecycle_state as GET /v0/providers/health reports it. */
export function lifecycleOf(state: SupervisorState): LifecycleState {
  if (state.phase === "UP") return state.attemptCount > 0 ? "RECOVERING" : "RUNNING";
  if (state.phase === "CIRCUIT_OPEN") return "CIRCUIT_OPEN";
  // A restart is due or running exactly when a failure streak is open (restartDueAt implies it).
  if (state.crashDetected || state.attemptCount > 0) return "RESTARTING";
  return "DOWN";
}

/** The `supervision` object of the health view. */
export function supervisionView(
  state: SupervisorState,
  policy: RestartPolicyConfig,
  nowMono: number,
): ProviderSupervisionView {
  return {
    enabled: policy.enabled,
    attempt_count: state.attemptCount,
    max_attempts: policy.enabled ? policy.maxAttempts : 0,
    crash_detected: state.crashDetected,
    circuit_open: state.phase === "CIRCUIT_OPEN",
    // restartDueAt is set in BACKOFF and only there.
    next_restart_in_ms: state.restartDueAt !== null
      ? Math.max(0, Math.round(state.restartDueAt - nowMono))
      : state.phase === "ATTEMPTING"
      ? 0
      : null,
  };
}
