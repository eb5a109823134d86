/**
 * When a cached sample is stale, and how often a device is polled: health.staleness, the poll
 * cadence, and what the provider declared (stale_after_ms and poll_hint_hz per signal). Used by the
 * state cache (every signal's bound, every device's poll period) and the health view (each
 * device's liveness). docs/http-api.md, "Provider policies", gives the rules.
 */
import { derivedStaleAfterMs, derivedWarnAfterMs } from "../common/mod.ts";

/** Liveness thresholds for one provider's devices (`health.staleness`; docs/http-api.md). */
export interface StalenessBounds {
  readonly warnAfterMs: number;
  readonly staleAfterMs: number;
}

/**
 * cycle = max(interval x device_count, the device's poll period);
 * warn = configured > 0 ? configured : max(3 x cycle, 2000) (common/liveness_bounds.ts);
 * stale = configured > 0 ? configured : max(8 x cycle, 5000); warn <= stale.
 * Without `pollPeriodMs` the period is the interval (every device polled every cycle).
 */
export function stalenessBounds(
  configured: StalenessBounds,
  pollingIntervalMs: number,
  deviceCount: number,
  pollPeriodMs = 0,
): StalenessBounds {
  const cycle = pollCycleMs(pollingIntervalMs, deviceCount, pollPeriodMs);
  const stale = configured.staleAfterMs > 0 ? configured.staleAfterMs : derivedStaleAfterMs(cycle);
  const warn = configured.warnAfterMs > 0 ? configured.warnAfterMs : derivedWarnAfterMs(cycle);
  return { warnAfterMs: Math.min(warn, stale), staleAfterMs: stale };
}

/** The poll cycle stalenessBounds derives bounds from: max(interval x device_count, period). */
export function pollCycleMs(
  pollingIntervalMs: number,
  deviceCount: number,
  pollPeriodMs = 0,
): number {
  const interval = pollingIntervalMs > 0 ? pollingIntervalMs : 500;
  return Math.max(interval * Math.max(1, deviceCount), pollPeriodMs);
}

/** What the poll period and staleness rules read of one declared signal. */
export interface SignalHints {
  readonly pollHintHz: number;
  readonly staleAfterMs: number;
}

/**
 * Longest poll period a device's hints slow it to (one hour): a provider may hint any positive
 * rate, down to 5e-324 Hz (a period of Infinity: polled once, never again, and its derived stale
 * bound never reached). Past this the device is polled this often; its derived bounds follow.
 */
export const MAX_DEVICE_POLL_PERIOD_MS = 3_600_000;

/**
 * How often the poll loop polls a device: a whole number k >= 1 of polling intervals (every k-th
 * cycle of the shared grid), the largest whose period is no longer than
 * - 1000 / the fastest poll_hint_hz of its polled signals (never slower than the provider asked),
 * - half the smallest stale_after_ms any of them declares (a sample is never stale between polls),
 * - half the configured health.staleness bounds (> 0) (the device never WARNs between polls),
 * - MAX_DEVICE_POLL_PERIOD_MS.
 * A device whose signals hint as fast as the interval or faster is polled every cycle, as before:
 * the runtime never polls faster than polling.interval_ms. Per device, not per signal: one
 * ReadSignals asks for all its polled signals (the wire's unit), and a device polled every k-th
 * cycle stays on the grid every loop shares.
 */
export function devicePollPeriodMs(
  pollingIntervalMs: number,
  signals: readonly SignalHints[],
  configured: StalenessBounds,
): number {
  const interval = pollingIntervalMs > 0 ? pollingIntervalMs : 500;
  let fastest = 0;
  let cap = Infinity;
  for (const s of signals) {
    if (!(s.pollHintHz > 0)) continue; // not polled (0, negative, NaN)
    if (s.pollHintHz > fastest) fastest = s.pollHintHz;
    if (s.staleAfterMs > 0) cap = Math.min(cap, s.staleAfterMs / 2);
  }
  if (fastest === 0) return interval;
  cap = Math.min(cap, 1000 / fastest, MAX_DEVICE_POLL_PERIOD_MS);
  if (configured.warnAfterMs > 0) cap = Math.min(cap, configured.warnAfterMs / 2);
  if (configured.staleAfterMs > 0) cap = Math.min(cap, configured.staleAfterMs / 2);
  return Math.max(1, Math.floor(cap / interval)) * interval;
}

/**
 * The age (ms) past which a signal's cached sample is stale. A declared stale_after_ms sets it,
 * raised to a floor: the configured health.staleness.stale_after_ms when set (the operator's
 * bound, as anolis), else two poll periods of the device (a sample is about a period old just
 * before the next poll: a tighter bound would flag every sample between polls). Without a
 * declaration: the device's liveness stale bound (`livenessStaleMs`).
 */
export function signalStaleAfterMs(
  declaredMs: number,
  configured: StalenessBounds,
  pollPeriodMs: number,
  livenessStaleMs: number,
): number {
  if (!(declaredMs > 0)) return livenessStaleMs;
  const floor = configured.staleAfterMs > 0 ? configured.staleAfterMs : 2 * pollPeriodMs;
  return Math.max(declaredMs, floor);
}

/**
 * A device left with no WARNING stage that the configuration check cannot tell: health.staleness
 * sets stale_after_ms and leaves warn_after_ms 0, "derive it", and the warn bound derived from
 * the device's cycle, max(3 x cycle, 2000), reaches the stale bound (stalenessBounds caps it
 * there: its health goes from OK to STALE without WARNING), while the least derived warn bound,
 * max(3 x polling.interval_ms, 2000), does not (where it does, config/_semantic.ts warns of every
 * device). The cycle is longer for a provider with more devices and a device whose poll hints
 * slow its polls: known only at inventory.
 */
export interface NoWarningStage {
  /** The configured health.staleness.stale_after_ms. */
  readonly staleAfterMs: number;
  /** The device's cycle (ms): max(polling.interval_ms x its provider's devices, its period). */
  readonly cycleMs: number;
  /** The warn bound derived from that cycle, before the stale bound caps it. */
  readonly derivedWarnMs: number;
}

/** NoWarningStage for one device, null when it keeps its WARNING stage or the file tells it. */
export function noWarningStage(
  configured: StalenessBounds,
  pollingIntervalMs: number,
  deviceCount: number,
  pollPeriodMs: number,
): NoWarningStage | null {
  const staleAfterMs = configured.staleAfterMs;
  if (configured.warnAfterMs > 0 || !(staleAfterMs > 0)) return null;
  if (staleAfterMs <= derivedWarnAfterMs(pollCycleMs(pollingIntervalMs, 1))) return null;
  const cycleMs = pollCycleMs(pollingIntervalMs, deviceCount, pollPeriodMs);
  const derivedWarnMs = derivedWarnAfterMs(cycleMs);
  return derivedWarnMs < staleAfterMs ? null : { staleAfterMs, cycleMs, derivedWarnMs };
}

/** One device under the rules above: how often it is polled and when its samples are stale. */
export interface DeviceStaleness {
  /** devicePollPeriodMs. */
  readonly pollPeriodMs: number;
  /** The device's liveness bounds (stalenessBounds over its poll period). */
  readonly bounds: StalenessBounds;
  /** Whether it has no WARNING stage the configuration check cannot tell (null: it has one). */
  readonly noWarningStage: NoWarningStage | null;
  /** The stale bound of one of its signals that declares `declaredMs` (0: none). */
  signalStaleAfterMs(declaredMs: number): number;
}

/**
 * A device's poll period, liveness bounds and signals' stale bounds, for `deviceCount` devices
 * of its provider polled every `pollingIntervalMs` under the configured `health.staleness`.
 */
export function deviceStaleness(
  configured: StalenessBounds,
  pollingIntervalMs: number,
  signals: readonly SignalHints[],
  deviceCount: number,
): DeviceStaleness {
  const pollPeriodMs = devicePollPeriodMs(pollingIntervalMs, signals, configured);
  const bounds = stalenessBounds(configured, pollingIntervalMs, deviceCount, pollPeriodMs);
  return {
    pollPeriodMs,
    bounds,
    noWarningStage: noWarningStage(configured, pollingIntervalMs, deviceCount, pollPeriodMs),
    signalStaleAfterMs: (declaredMs) =>
      signalStaleAfterMs(declaredMs, configured, pollPeriodMs, bounds.staleAfterMs),
  };
}
