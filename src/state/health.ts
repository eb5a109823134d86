import {
  type DeviceLivenessHealth,
  type HeldClaimsView,
  type ProviderDeviceHealthView,
  type ProviderHealthView,
  type ReportedDeviceHealth,
  type ReportedProviderHealth,
  truncateUtf8,
  utf8Length,
} from "../common/mod.ts";
import type { RestartPolicyConfig } from "../config/mod.ts";
import { timestampToMs, WireDeviceState, WireProviderState } from "../adpp/mod.ts";
import { deviceClaims, type ProviderHost, type ProviderRegistry } from "../providers/mod.ts";
import type { DeviceState, ReportedHealthEntry, StateCache } from "./state_cache.ts";
import { deviceStaleness, type StalenessBounds } from "./staleness.ts";

/**
 * Bounds on what a provider declares about a device, as GET /v0/providers/health shows it (later
 * anolis OpenAPI, ProviderDeviceHealth): `type_version` and each descriptor tag value are cut to
 * MAX_DESCRIPTOR_TEXT_BYTES UTF-8 bytes on a character boundary, a tag whose key is longer is
 * dropped, and at most MAX_DESCRIPTOR_TAGS tags are shown (the first in key order).
 */
export const MAX_DESCRIPTOR_TEXT_BYTES = 128;
/** See MAX_DESCRIPTOR_TEXT_BYTES. */
export const MAX_DESCRIPTOR_TAGS = 32;

/** A device's descriptor tags within the bounds above, in key order. */
export function boundedDescriptorTags(
  tags: Readonly<Record<string, string>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  let n = 0;
  for (const key of Object.keys(tags).sort()) {
    if (n === MAX_DESCRIPTOR_TAGS) break;
    if (utf8Length(key) > MAX_DESCRIPTOR_TEXT_BYTES) continue;
    out[key] = truncateUtf8(tags[key]!, MAX_DESCRIPTOR_TEXT_BYTES);
    n++;
  }
  return out;
}

export interface DeviceLiveness {
  readonly health: DeviceLivenessHealth;
  readonly stalenessMs: number;
  readonly staleSignalCount: number;
  readonly faultSignalCount: number;
}

/**
 * Device liveness from data age and signal qualities; precedence UNAVAILABLE > FAULT > STALE >
 * WARNING > OK (docs/http-api.md gives the rules). Ages are monotonic: `nowMono` against when the
 * runtime received each sample and answered each poll, never a provider's timestamp or the wall
 * clock (either may step).
 */
export function deviceLiveness(
  state: DeviceState | undefined,
  providerAvailable: boolean,
  bounds: StalenessBounds,
  signalStaleAfterMs: (signalId: string) => number,
  nowMono: number,
): DeviceLiveness {
  if (!state || state.pollable.length === 0) {
    return { health: "UNKNOWN", stalenessMs: 0, staleSignalCount: 0, faultSignalCount: 0 };
  }
  let fault = 0;
  let stale = 0;
  for (const [id, s] of state.signals) {
    // The signal's own bound when it has one (declared: state_cache.ts staleAfterMs), else the
    // device's.
    const limit = signalStaleAfterMs(id);
    if (s.quality === "FAULT") fault++;
    else if (
      s.quality !== "OK" ||
      nowMono - s.receivedMono > (limit > 0 ? limit : bounds.staleAfterMs)
    ) stale++;
  }
  const stalenessMs = state.lastPollMs > 0
    ? Math.max(0, Math.round(nowMono - state.lastPollMono))
    : 0;
  let health: DeviceLivenessHealth;
  if (!providerAvailable) health = "UNAVAILABLE";
  else if (state.lastPollMs === 0) health = "UNKNOWN";
  else if (fault > 0) health = "FAULT";
  else if (stale > 0 || stalenessMs >= bounds.staleAfterMs) health = "STALE";
  else if (stalenessMs >= bounds.warnAfterMs) health = "WARNING";
  else health = "OK";
  return { health, stalenessMs, staleSignalCount: stale, faultSignalCount: fault };
}

const PROVIDER_STATE: Record<number, ReportedProviderHealth["state"]> = {
  [WireProviderState.OK]: "STATE_OK",
  [WireProviderState.DEGRADED]: "STATE_DEGRADED",
  [WireProviderState.FAULT]: "STATE_FAULT",
};
const DEVICE_STATE: Record<number, ReportedDeviceHealth["state"]> = {
  [WireDeviceState.OK]: "STATE_OK",
  [WireDeviceState.STALE]: "STATE_STALE",
  [WireDeviceState.UNREACHABLE]: "STATE_UNREACHABLE",
  [WireDeviceState.FAULT]: "STATE_FAULT",
};

/** What the health view needs besides the registry and the cache. */
export interface HealthViewOptions {
  readonly pollingIntervalMs: number;
  readonly staleness: StalenessBounds;
  /** Monotonic now (ages). */
  readonly nowMono: number;
  /**
   * The restart policy of a configured provider no host is registered under (its entry in the
   * configuration in effect; undefined when it has none there): its `supervision` says it.
   */
  readonly restartPolicy?: (providerId: string) => RestartPolicyConfig | undefined;
}

/**
 * Builds GET /v0/providers/health entries from supervision, the cache and reported health: one
 * per configured provider, in the configuration file's order (ProviderRegistry.configuredIds):
 * a registered host as it stands, one with no host registered under it (a reload could not
 * register it, or is starting or restarting it) DOWN with why in `start_error`
 * (ProviderRegistry.whyNotRunning). A host the last reload failed to start, listed down, says it
 * in the same words (ProviderRegistry.startFailureText), not its bare start error.
 */
export function providerHealthViews(
  registry: ProviderRegistry,
  cache: StateCache,
  options: HealthViewOptions,
  reportedOverride?: ReadonlyMap<string, ReportedHealthEntry | null>,
): ProviderHealthView[] {
  return registry.configuredIds().flatMap((id) => {
    const host = registry.host(id);
    if (host === undefined) {
      const why = registry.whyNotRunning(id);
      return why === null
        ? []
        : [unhostedView(id, why, cache, options, retiringClaims(registry, id))];
    }
    const reported = reportedOverride?.has(id)
      ? reportedOverride.get(id) ?? undefined
      : cache.reportedHealth(id);
    return [
      providerView(host, cache, options, reported ?? undefined, registry.startFailureText(id)),
    ];
  });
}

/** A configured provider with no host: DOWN, as one a reload failed to start (docs/http-api.md). */
function unhostedView(
  providerId: string,
  startError: string,
  cache: StateCache,
  options: HealthViewOptions,
  heldClaims: HeldClaimsView[],
): ProviderHealthView {
  const policy = options.restartPolicy?.(providerId);
  return {
    provider_id: providerId,
    state: "UNAVAILABLE",
    lifecycle_state: "DOWN",
    last_seen_ago_ms: null,
    uptime_seconds: 0,
    device_count: 0,
    degraded: false,
    failed_device_count: 0,
    reported: null,
    supervision: {
      enabled: policy?.enabled ?? false,
      attempt_count: 0,
      max_attempts: policy?.enabled === true ? policy.maxAttempts : 0,
      crash_detected: false,
      circuit_open: false,
      next_restart_in_ms: null,
    },
    devices: [],
    discovery_warnings: [...cache.discoveryWarnings(providerId)],
    held_claims: heldClaims,
    host_check: null,
    start_error: startError,
    data_faults: cache.dataFaults(providerId),
    timestamp_skew: cache.timestampSkew(providerId),
  };
}

function providerView(
  host: ProviderHost,
  cache: StateCache,
  options: HealthViewOptions,
  reported: ReportedHealthEntry | undefined,
  startError: string | null,
): ProviderHealthView {
  const available = host.available;
  const reportedDevices = new Map(
    (reported?.response.devices ?? []).map((d) => [d.device_id ?? "", d]),
  );
  const devices: ProviderDeviceHealthView[] = host.devices.map((caps) => {
    const id = caps.device.deviceId;
    // The rules of the state cache (staleness.ts) over this view's options: the device's poll
    // period, its liveness bounds and each signal's bound (declared stale_after_ms).
    const rules = deviceStaleness(
      options.staleness,
      options.pollingIntervalMs,
      caps.signals,
      host.devices.length,
    );
    const bounds = rules.bounds;
    const staleBySignal = new Map(
      caps.signals.map((s) => [s.signalId, rules.signalStaleAfterMs(s.staleAfterMs)]),
    );
    const l = deviceLiveness(
      cache.device(host.id, id),
      available,
      bounds,
      (sid) => staleBySignal.get(sid) ?? 0,
      options.nowMono,
    );
    const rd = reportedDevices.get(id);
    reportedDevices.delete(id);
    return {
      device_id: id,
      health: l.health,
      last_poll_ms: cache.device(host.id, id)?.lastPollMs ?? 0,
      staleness_ms: l.stalenessMs,
      registered: true,
      stale_signal_count: l.staleSignalCount,
      fault_signal_count: l.faultSignalCount,
      type_version: truncateUtf8(caps.device.typeVersion, MAX_DESCRIPTOR_TEXT_BYTES),
      descriptor_tags: boundedDescriptorTags(caps.device.tags),
      claims: deviceClaims(caps.device.tags).keys,
      poll_period_ms: rules.pollPeriodMs,
      reported: rd ? reportedDevice(rd) : null,
    };
  });
  // Devices only the provider reports (e.g. failed initialisation) are listed, unregistered.
  for (const [id, rd] of reportedDevices) {
    if (!id) continue;
    devices.push({
      device_id: id,
      health: available ? "UNKNOWN" : "UNAVAILABLE",
      last_poll_ms: 0,
      staleness_ms: 0,
      registered: false,
      stale_signal_count: 0,
      fault_signal_count: 0,
      type_version: "", // no descriptor exists for a device the registry does not carry
      descriptor_tags: {},
      claims: [],
      reported: reportedDevice(rd),
    });
  }
  const rp = reported?.response.provider;
  const reportedProvider: ReportedProviderHealth | null = rp
    ? {
      state: PROVIDER_STATE[rp.state ?? 0] ?? "STATE_UNSPECIFIED",
      message: rp.message ?? "",
      metrics: { ...(rp.metrics ?? {}) },
    }
    : null;
  const failed =
    devices.filter((d) =>
      d.reported?.state === "STATE_UNREACHABLE" || d.reported?.state === "STATE_FAULT"
    ).length;
  return {
    provider_id: host.id,
    state: available ? "AVAILABLE" : "UNAVAILABLE",
    lifecycle_state: host.lifecycle,
    last_seen_ago_ms: available ? host.lastSeenAgoMs() : null,
    uptime_seconds: host.uptimeSeconds(),
    device_count: host.devices.length,
    degraded: failed > 0 || reportedProvider?.state === "STATE_DEGRADED" ||
      reportedProvider?.state === "STATE_FAULT" || host.hostCheck()?.status === "unmet",
    failed_device_count: failed,
    reported: reportedProvider,
    supervision: host.supervision(),
    devices,
    discovery_warnings: [...cache.discoveryWarnings(host.id)],
    held_claims: heldClaims(host),
    host_check: host.hostCheck(),
    start_error: startError,
    data_faults: cache.dataFaults(host.id),
    timestamp_skew: cache.timestampSkew(host.id),
  };
}

/**
 * The devices `host` no longer lists whose claims it holds (ProviderHost.claimDevices past its
 * inventory, bounded there by MAX_UNLISTED_CLAIM_DEVICES), each with the keys it holds.
 */
function heldClaims(host: ProviderHost): HeldClaimsView[] {
  const listed = new Set(host.devices.map((d) => d.device.deviceId));
  return host.claimDevices
    .filter((d) => !listed.has(d.device.deviceId))
    .map(claimsView);
}

/** A device's claims as health shows them: its id and the keys it holds. */
function claimsView(d: ProviderHost["claimDevices"][number]): HeldClaimsView {
  return { device_id: d.device.deviceId, claims: deviceClaims(d.device.tags).keys };
}

/**
 * The claims of the process of `providerId` a reload took out and is still stopping
 * (ProviderRegistry.retiringHosts: a restart of its changed entry): they count until it has exited
 * (docs/http-api.md "Resource claims"), each device of it that claims a key, with its keys.
 */
function retiringClaims(registry: ProviderRegistry, providerId: string): HeldClaimsView[] {
  return registry.retiringHosts().filter((h) => h.id === providerId)
    .flatMap((h) => h.claimDevices)
    .map(claimsView)
    .filter((c) => c.claims.length > 0);
}

function reportedDevice(
  d: import("../adpp/mod.ts").WireDeviceHealth,
): ReportedDeviceHealth {
  return {
    state: DEVICE_STATE[d.state ?? 0] ?? "STATE_UNSPECIFIED",
    message: d.message ?? "",
    metrics: { ...(d.metrics ?? {}) },
    last_seen_epoch_ms: timestampToMs(d.last_seen),
  };
}
