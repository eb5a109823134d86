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
  | { kind: "automation_fault"; locus: string; error: string; timestamp_ms: number };

export type EventKind = RuntimeEvent["kind"];

/** An event as delivered: with its process-global id (monotonic from 1). */
export interface PublishedEvent {
  readonly id: number;
  readonly event: RuntimeEvent;
}
