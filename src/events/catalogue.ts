import type { Quality, TypedValue } from "../common/mod.ts";
import type { RuntimeMode } from "../config/mod.ts";

/**
 * Every event the runtime publishes. `kind` is the SSE event name; the other fields are the SSE
 * `data:` payload exactly as http-api.md §12 gives it.
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
  // ---- project additions (issue 19): what a stop achieved, not only what it attempted ----
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
    timestamp_ms: number;
  };

export type EventKind = RuntimeEvent["kind"];

/** An event as delivered: with its process-global id (monotonic from 1). */
export interface PublishedEvent {
  readonly id: number;
  readonly event: RuntimeEvent;
}
