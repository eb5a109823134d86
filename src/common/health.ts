/**
 * Provider and device health views, in the exact JSON shape of GET /v0/providers/health
 * (docs/http-api.md). The kernel produces them; HTTP serves them; telemetry writes them as
 * runtime_provider_health / runtime_device_health rows.
 */

export type LifecycleState = "RUNNING" | "RECOVERING" | "RESTARTING" | "CIRCUIT_OPEN" | "DOWN";

export type DeviceLivenessHealth = "OK" | "WARNING" | "STALE" | "FAULT" | "UNAVAILABLE" | "UNKNOWN";

export interface ReportedProviderHealth {
  state: "STATE_UNSPECIFIED" | "STATE_OK" | "STATE_DEGRADED" | "STATE_FAULT";
  message: string;
  metrics: Record<string, string>;
}

export interface ReportedDeviceHealth {
  state: "STATE_UNSPECIFIED" | "STATE_OK" | "STATE_STALE" | "STATE_UNREACHABLE" | "STATE_FAULT";
  message: string;
  metrics: Record<string, string>;
  last_seen_epoch_ms: number | null;
}

export interface ProviderSupervisionView {
  enabled: boolean;
  attempt_count: number;
  max_attempts: number;
  crash_detected: boolean;
  circuit_open: boolean;
  next_restart_in_ms: number | null;
}

export interface ProviderDeviceHealthView {
  device_id: string;
  health: DeviceLivenessHealth;
  last_poll_ms: number;
  staleness_ms: number;
  registered: boolean;
  stale_signal_count: number;
  fault_signal_count: number;
  /**
   * The device type's version as its provider declared it in DescribeDevice; "" when it declared
   * none and for devices only the provider reports. At most 128 UTF-8 bytes (later anolis
   * OpenAPI). Telemetry writes it as a field when non-empty.
   */
  type_version: string;
  /**
   * The provider's descriptor tags, verbatim, bounded: at most 32, keys over 128 UTF-8 bytes
   * dropped, values cut to 128 bytes; {} when none (later anolis OpenAPI). Not written to
   * telemetry.
   */
  descriptor_tags: Record<string, string>;
  /**
   * The resources the device holds exclusively: the keys of its `anolis.claim` tag, then the key
   * its older `hw.bus_path` + `hw.i2c_address` tags stand for (docs/http-api.md "Resource
   * claims"); whole, not cut like descriptor_tags. [] when none. Not in anolis.
   */
  claims: string[];
  /**
   * How often the runtime polls the device (ms): polling.interval_ms, or a multiple of it when
   * every signal hints a slower poll (`poll_hint_hz`) or stale bounds allow it. Absent for devices
   * only the provider reports. Not in anolis. Always set for registered devices by the state
   * layer's providerHealthViews.
   */
  poll_period_ms?: number;
  reported: ReportedDeviceHealth | null;
}

/** Samples of a provider not stored as good values since start (counted by the state cache). */
export interface ProviderDataFaultsView {
  /** Value member disagreeing with its `Value.type` or the signal's declared type (FAULT). */
  type_mismatch: number;
  /** NaN or +/-Infinity doubles (stored with quality FAULT). */
  non_finite: number;
  /** Samples of signal ids the device did not declare (dropped). */
  undeclared_signal: number;
}

export interface ProviderHealthView {
  provider_id: string;
  state: "AVAILABLE" | "UNAVAILABLE";
  lifecycle_state: LifecycleState;
  last_seen_ago_ms: number | null;
  uptime_seconds: number;
  device_count: number;
  degraded: boolean;
  failed_device_count: number;
  reported: ReportedProviderHealth | null;
  supervision: ProviderSupervisionView;
  devices: ProviderDeviceHealthView[];
  /**
   * What the provider's last discovery refused (a device skipped, and why), at most 20 entries.
   * Not in anolis.
   */
  discovery_warnings: string[];
  /**
   * The devices the provider no longer lists whose resource claims it still holds (docs/http-api.md
   * "Resource claims"; at most MAX_UNLISTED_CLAIM_DEVICES, the most recently listed first), each
   * with the keys it holds; while a reload restarts it (no host registered), those of every device
   * of the old process it is still stopping (their claims count until it has exited: at most
   * MAX_DEVICES_PER_PROVIDER + MAX_UNLISTED_CLAIM_DEVICES); [] when none. Not in anolis.
   */
  held_claims: HeldClaimsView[];
  /**
   * What the provider said of its host at start-up (WaitReady diagnostics `host_check` /
   * `host_unmet`, executable profile v1 sec. 6); null when it said nothing. Not in anolis.
   */
  host_check: HostCheckView | null;
  /**
   * Why the provider did not come up when a configuration reload started it (it is then listed
   * DOWN until the next reload), or that a running reload is (re)starting it and has not
   * registered it yet; null otherwise. Not in anolis.
   */
  start_error: string | null;
  /** Samples refused or stored as FAULT since start. Not in anolis. */
  data_faults: ProviderDataFaultsView;
  /**
   * Samples whose provider timestamp was far off the runtime's clock (state cache's
   * TIMESTAMP_SKEW_LIMIT_MS), since start. Not in anolis.
   */
  timestamp_skew: TimestampSkewView;
}

/** A device its provider no longer lists, and the resource claim keys it still holds. */
export interface HeldClaimsView {
  device_id: string;
  claims: string[];
}

/** Provider timestamps flagged as far off the runtime's clock (ages never use them). */
export interface TimestampSkewView {
  samples_total: number;
  /** Provider time minus the runtime's wall time of the last flagged sample (ms; + = ahead). */
  last_skew_ms: number | null;
  last_at_epoch_ms: number | null;
}

/**
 * A provider's host check as it reported it at start-up: `ok`, or `unmet` with the requirements
 * not met (each as the provider words it; the runtime interprets none).
 */
export interface HostCheckView {
  status: "ok" | "unmet";
  /** The provider's `host_unmet` summary, verbatim (cut to 1000 characters); "" when none. */
  summary: string;
  /** The unmet requirements (at most 16): provider-owned id, what was found, what to change. */
  unmet: HostRequirementView[];
}

/** One unmet host requirement; `detail` and `remedy` are "" when the provider gave none. */
export interface HostRequirementView {
  id: string;
  detail: string;
  remedy: string;
}
