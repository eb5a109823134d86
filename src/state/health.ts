import {
  type DeviceLivenessHealth,
  type HeldClaimsView,
  type ProviderDeviceHealthView,
  type ProviderHealthView,
  providerTextWithin,
  type ReportedDeviceHealth,
  type ReportedProviderHealth,
  truncateUtf8,
  utf8Length,
} from "../common/mod.ts";
import type { RestartPolicyConfig } from "../config/mod.ts";
import {
  MAX_HEALTH_METRICS,
  PROVIDER_STATUS_MESSAGE_CHARS,
  timestampToMs,
  type WireDeviceHealth,
  WireDeviceState,
  WireProviderState,
} from "../adpp/mod.ts";
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

/**
 * Bounds on what GET /v0/providers/health shows of a provider's GetHealth answer: the runtime
 * trusts no provider to bound it (one not built on the SDK may send anything a frame holds,
 * MAX_FRAME_BYTES). Every entry of a device the provider lists is shown (its first entry; the
 * inventory is bounded by MAX_DEVICES_PER_PROVIDER); of the devices only the provider reports, the
 * first MAX_UNREGISTERED_REPORTED_DEVICES (in the answer's order). The entries the bound leaves
 * out are counted once, in the provider's reported metric `devices_omitted` (added to a count the
 * provider put there itself, as the SDK does when it cuts its own answer).
 */
export const MAX_UNREGISTERED_REPORTED_DEVICES = 64;
/**
 * Most metrics shown per reported entry (the provider's, each device's): the first in the
 * answer's order; the rest are not shown.
 */
export const MAX_REPORTED_METRICS = MAX_HEALTH_METRICS;
/**
 * Longest reported text shown (UTF-16 code units): a message, a metric key or value, the id of a
 * device only the provider reports. Longer is cut and marked with an ellipsis (providerTextWithin),
 * the bound of a provider's status message and of the SDK's own cut of its answer.
 */
export const MAX_REPORTED_TEXT_CHARS = PROVIDER_STATUS_MESSAGE_CHARS;

/** Reported text within MAX_REPORTED_TEXT_CHARS, marked when cut. */
function reportedText(text: string): string {
  return providerTextWithin(text, MAX_REPORTED_TEXT_CHARS);
}

/**
 * Reported metrics within the bounds above: the first MAX_REPORTED_METRICS, each key and value cut
 * (reportedText); of two keys alike once cut, the first is kept.
 */
export function boundedReportedMetrics(
  metrics: Readonly<Record<string, string>> | undefined,
): Record<string, string> {
  const kept: [string, string][] = [];
  if (metrics === undefined) return {};
  const seen = new Set<string>();
  for (const key in metrics) {
    if (kept.length === MAX_REPORTED_METRICS) break;
    if (!Object.hasOwn(metrics, key)) continue;
    const k = reportedText(key);
    if (seen.has(k)) continue;
    seen.add(k);
    kept.push([k, reportedText(String(metrics[key]))]);
  }
  // fromEntries defines each key as its own property (a key "__proto__" too), as a spread did.
  return Object.fromEntries(kept);
}

/**
 * The device entries of a GetHealth answer the health view shows (see
 * MAX_UNREGISTERED_REPORTED_DEVICES): `listed`, the first entry of each device in `listedIds`;
 * `unlisted`, the first entry of each other device with an id (as cut for display), up to the
 * bound; `omitted`, how many entries of other devices the bound left out (an entry without an id,
 * or repeating a device's, is not counted: it names no device that is not shown).
 */
export function boundedReportedDevices(
  devices: readonly WireDeviceHealth[],
  listedIds: ReadonlySet<string>,
): {
  listed: Map<string, WireDeviceHealth>;
  unlisted: Map<string, WireDeviceHealth>;
  omitted: number;
} {
  const listed = new Map<string, WireDeviceHealth>();
  const unlisted = new Map<string, WireDeviceHealth>();
  let omitted = 0;
  for (const d of devices) {
    const id = d.device_id ?? "";
    if (listedIds.has(id)) {
      if (!listed.has(id)) listed.set(id, d);
      continue;
    }
    if (id === "") continue; // no device to list it under
    const shownId = reportedText(id);
    if (unlisted.has(shownId)) continue;
    if (unlisted.size === MAX_UNREGISTERED_REPORTED_DEVICES) omitted++;
    else unlisted.set(shownId, d);
  }
  return { listed, unlisted, omitted };
}

/**
 * The provider's reported metrics with `omitted` device entries counted in `devices_omitted`
 * (added to the provider's own count when it is digits, as the SDK writes it).
 */
function withDevicesOmitted(
  metrics: Record<string, string>,
  omitted: number,
): Record<string, string> {
  if (omitted === 0) return metrics;
  const own = metrics.devices_omitted;
  const before = own !== undefined && /^[0-9]{1,15}$/.test(own) ? Number(own) : 0;
  return { ...metrics, devices_omitted: String(before + omitted) };
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
  const shown = boundedReportedDevices(
    reported?.response.devices ?? [],
    new Set(host.devices.map((caps) => caps.device.deviceId)),
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
    const rd = shown.listed.get(id);
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
  for (const [id, rd] of shown.unlisted) {
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
  const reportedProvider: ReportedProviderHealth | null = rp || shown.omitted > 0
    ? {
      state: PROVIDER_STATE[rp?.state ?? 0] ?? "STATE_UNSPECIFIED",
      message: reportedText(rp?.message ?? ""),
      metrics: withDevicesOmitted(boundedReportedMetrics(rp?.metrics), shown.omitted),
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

function reportedDevice(d: WireDeviceHealth): ReportedDeviceHealth {
  return {
    state: DEVICE_STATE[d.state ?? 0] ?? "STATE_UNSPECIFIED",
    message: reportedText(d.message ?? ""),
    metrics: boundedReportedMetrics(d.metrics),
    last_seen_epoch_ms: timestampToMs(d.last_seen),
  };
}
