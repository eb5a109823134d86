/** Run and run-event records in the exact JSON shape of the runs API (docs/http-api.md, "Runs"). */

/** `open` until closed; closing is final. */
export type RunState = "open" | "closed";

/** Reasons a client may give when closing a run. */
export const CLIENT_CLOSE_REASONS = ["operator_stop", "completed", "failed", "superseded"] as const;

/** Why a run ended; `abandoned` is set only by the runtime (run left open by a restart). */
export type CloseReason = (typeof CLIENT_CLOSE_REASONS)[number] | "abandoned";

/** All close reasons, including the runtime-only `abandoned`. */
export const CLOSE_REASONS: readonly CloseReason[] = [...CLIENT_CLOSE_REASONS, "abandoned"];

export type RunEventCategory =
  /**
   * Sequence 1 (type ""); payload `mode` and `estop_latched` when the run opened, and
   * `safety_events_between_runs` (count, estop_triggers, first/last time) when safety events came
   * that no run recorded since the previous run opened.
   */
  | "run_opened"
  | "run_closed"
  | "mode_change"
  | "parameter_change"
  | "automation_fault"
  | "annotation"
  | "alarm"
  | "interlock"
  /** An actuating call decided during the run (its audit trail entry). */
  | "call"
  /**
   * The e-stop latched (type `trigger`), was released (type `clear`), or the reason of a latch
   * arrived after it (type `reason`: an HTTP body read after the latch). Payload `latched`,
   * `reason`, `cause` (`reason` and `cause` for type `reason`). Type `verification`: its safe
   * state read back (payload `outcome`, `elapsed_ms`, `checks_total`, `checks_verified`,
   * `failed_signals`, as the SSE `estop_verification` event).
   */
  | "estop"
  /**
   * A mode-transition hook call failed or timed out (type: the transition, as `AUTO->FAULT`;
   * payload `transition`, `phase`, `hook`, `device_handle`, `function`, `error`, as the SSE
   * `hook_failure` event).
   */
  | "hook_failure"
  /**
   * An incident began (GET /v0/incidents/{incident_id} has its record): type its lead trigger;
   * payload `incident_id`, `trigger`, `cause`, `also` (the triggers that joined it as it began,
   * each `trigger`, `cause`, `at_epoch_ms`), `triggers_not_listed` (those of them beyond the
   * record's bound, not in `also`), `link`.
   */
  | "incident"
  /**
   * A trigger joined an incident this run already has an `incident` event of (an e-stop within a
   * second of an alarm's incident): type the trigger; payload `incident_id`, `trigger`, `cause`,
   * `leads` (it leads the incident from then on), `link`. At its own time.
   */
  | "incident_trigger"
  /**
   * A configuration reload replaced the behavior tree while the run was open (type `replaced`,
   * payload `previous_version` and `new_version`, each an AutomationVersion or null): the run's
   * `automation_version` stays the one it opened with.
   */
  | "automation_change"
  /**
   * A configuration reload changed `polling.interval_ms` while the run was open (type "",
   * payload `previous_interval_ms` and `new_interval_ms`): the run's `polling_interval_ms` stays
   * the one it opened with.
   */
  | "polling_change"
  /**
   * A configuration reload applied a section while the run was open (type: the section, as
   * `alarms`, `providers`, `safety`; payload `section`, `added`, `removed`, `changed`: the ids and
   * keys it changed, never their values; `omitted`: how many names were left out).
   */
  | "config_change";

/** Identity of the automation definition (`automation_version`), captured when a run opens. */
export interface AutomationVersion {
  engine_kind: string;
  id: string;
  digest: string;
  digest_scope: string;
}

export interface TagScope {
  provider_ids: string[];
  device_ids: string[];
  signal_ids: string[];
}

/** A run record. */
export interface Run {
  schema_version: 1;
  /** `<runtime.name or default>-<ULID>`. */
  run_id: string;
  state: RunState;
  close_reason: CloseReason | null;
  started_at_epoch_ms: number;
  ended_at_epoch_ms: number | null;
  automation_version: AutomationVersion | null;
  runtime_version: string;
  polling_interval_ms: number;
  params: Record<string, unknown>;
  tag_scope: TagScope;
  experiment_label: string | null;
}

/** One entry of a run's event log. */
export interface RunEvent {
  schema_version: 1;
  run_id: string;
  /** Per-run, monotonic from 1. */
  sequence: number;
  category: RunEventCategory;
  /**
   * Close reason, parameter name, fault locus, marker type, alarm transition (raise, clear, ack,
   * shelve, unshelve), interlock engage/release, else "".
   */
  type: string;
  /**
   * When it happened: may be earlier than that of an event recorded before it (a device loss
   * dated from its first failed read); events are answered in `sequence` (recording) order.
   */
  occurred_at_epoch_ms: number;
  recorded_at_epoch_ms: number;
  payload: Record<string, unknown>;
}
