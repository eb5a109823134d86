import type { Quality, TypedValue } from "../common/mod.ts";
import type { AlarmAction, AlarmLevel, RuntimeMode } from "../config/mod.ts";

/** An alarm as the operator sees it (docs/alarms.md). */
export type AlarmState = "normal" | "active" | "active_acked" | "shelved";
/** The transitions of an alarm: each one is an `alarm` event, a telemetry row and a run event. */
export type AlarmTransition = "raise" | "clear" | "ack" | "shelve" | "unshelve";
/** What raised an alarm: a limit, its `alarm_when` value, or a bad input. */
export type AlarmCause = "hihi" | "hi" | "lo" | "lolo" | "alarm_when" | "bad_quality";

/**
 * Every event the runtime publishes. `kind` is the SSE event name; the other fields are the SSE
 * `data:` payload (the kinds anolis has keep its members; GET /v0/openapi.json describes each).
 */
export type RuntimeEvent =
  | {
    kind: "state_update";
    provider_id: string;
    device_id: string;
    signal_id: string;
    value: TypedValue;
    quality: Quality;
    timestamp_ms: number;
  }
  | {
    kind: "quality_change";
    provider_id: string;
    device_id: string;
    signal_id: string;
    old_quality: Quality;
    new_quality: Quality;
    timestamp_ms: number;
  }
  | {
    kind: "device_availability";
    provider_id: string;
    device_id: string;
    available: boolean;
    /**
     * Set only when a configuration reload took the device's provider out (removed, or changed
     * and restarted): the device left on purpose, it was not lost.
     */
    reason?: "removed";
    timestamp_ms: number;
  }
  | {
    kind: "provider_health_change";
    provider_id: string;
    state: "AVAILABLE" | "UNAVAILABLE";
    timestamp_ms: number;
  }
  | {
    kind: "mode_change";
    previous_mode: RuntimeMode;
    new_mode: RuntimeMode;
    timestamp_ms: number;
  }
  | {
    kind: "parameter_change";
    parameter_name: string;
    old_value: string;
    new_value: string;
    timestamp_ms: number;
  }
  | { kind: "bt_error"; node: string; error: string; timestamp_ms: number }
  | { kind: "automation_fault"; locus: string; error: string; timestamp_ms: number }
  // ---- project additions: what a stop achieved, not only what it attempted ----
  | {
    /** A mode-transition hook call failed or timed out (every one is reported). */
    kind: "hook_failure";
    transition: string;
    phase: "before" | "after";
    hook: string;
    device_handle: string;
    function: string;
    error: string;
    timestamp_ms: number;
  }
  | {
    /** The e-stop latch engaged or was released. */
    kind: "estop_change";
    latched: boolean;
    reason: string | null;
    /** What latched it: `api` (POST /v0/estop) or `alarm:<id>`; null on release. */
    cause: string | null;
    timestamp_ms: number;
  }
  | {
    /** An e-stop's safe state was read back (or could not be). */
    kind: "estop_verification";
    outcome: "verified" | "mismatch" | "unreachable" | "unverifiable";
    elapsed_ms: number;
    checks_total: number;
    checks_verified: number;
    /** `provider/device/signal` of every check that did not verify. */
    failed_signals: string[];
    timestamp_ms: number;
  }
  | {
    /**
     * Automation may (no longer) command a device: latched after the device or its provider
     * was lost, released when an operator enters AUTO again.
     */
    kind: "device_loss_latch";
    provider_id: string;
    device_id: string;
    latched: boolean;
    reason: string;
    /**
     * Present (true) on a latch held by the provider's provider-wide entry (past
     * MAX_LATCHED_DEVICES_PER_PROVIDER) -- a device lost, or one it refuses that its provider lists
     * anew (it may be one held, back) -- and on that entry's own release: every device it held is
     * released (`device_id` names the latest).
     */
    provider_wide?: true;
    timestamp_ms: number;
  }
  // ---- project additions: alarms and interlocks ----
  | {
    /** An alarm changed state (docs/alarms.md): raise, clear, ack, shelve or unshelve. */
    kind: "alarm";
    alarm_id: string;
    transition: AlarmTransition;
    /** The state after the transition. */
    state: AlarmState;
    /** The level of the condition (also while shelved); null when it does not hold. */
    level: AlarmLevel | null;
    /** What raised it (the limit crossed, alarm_when, bad_quality); null when it does not hold. */
    cause: AlarmCause | null;
    /** The value of that limit (or of alarm_when); null for bad_quality or none. */
    limit: number | boolean | string | null;
    /** `provider/device/signal`. */
    signal: string;
    /** The signal's value when the transition happened (null: none yet). */
    value: TypedValue | null;
    /** Its quality then (null: the signal is not in the cache). */
    quality: Quality | null;
    action: AlarmAction;
    message: string;
    shelved_until_epoch_ms: number | null;
    timestamp_ms: number;
  }
  | {
    /** An interlock engaged (blocking) or released. */
    kind: "interlock";
    interlock_id: string;
    blocking: boolean;
    /** What it saw: the values that made its condition hold, or the bad input; null on release. */
    reason: string | null;
    message: string;
    /** The handles it blocks. */
    block: string[];
    timestamp_ms: number;
  }
  // ---- project addition: configuration reload on SIGHUP ----
  | {
    /**
     * The configuration file was re-read (SIGHUP): `applied` (valid; what could change changed,
     * see the lists) or `failed` (invalid or unreadable: the old configuration keeps running).
     */
    kind: "config_reload";
    result: "applied" | "failed";
    /** The reload's one-line summary, as logged. */
    summary: string;
    providers_added: string[];
    providers_removed: string[];
    providers_restarted: string[];
    /**
     * Providers whose entry did not change (or changed only in place: also in providers_updated)
     * but whose restart circuit was open: retried with their failure streak reset, and up
     * (project addition; one that did not come up is in `providers_failed`).
     */
    providers_retried: string[];
    /**
     * `id: fields` of providers whose entry changed only in supervision or start settings
     * (restart_policy, hello_timeout_ms, ready_timeout_ms): applied in place, the process runs on.
     */
    providers_updated: string[];
    providers_unchanged: string[];
    /** `id: why` of added, changed or retried providers that did not come up. */
    providers_failed: string[];
    /** What was refused and kept as it was (e.g. a provider change or a new tree in AUTO). */
    refused: string[];
    /** Changed keys that take effect only after a restart, e.g. `http.port`. */
    needs_restart: string[];
    /** Errors found in the file (`failed`), as `--check-config` prints them; else empty. */
    errors: string[];
    timestamp_ms: number;
  };

export type EventKind = RuntimeEvent["kind"];

/** An event as delivered: with its process-global id (monotonic from 1). */
export interface PublishedEvent {
  readonly id: number;
  readonly event: RuntimeEvent;
}
