/**
 * When a cached sample is stale: health.staleness, else derived from the poll cadence. Used by the
 * state cache (every signal's bound) and the health view (each device's liveness).
 */

/** Liveness thresholds for one provider's devices (`health.staleness`; docs/http-api.md). */
export interface StalenessBounds {
  readonly warnAfterMs: number;
  readonly staleAfterMs: number;
}

/**
 * warn = configured > 0 ? configured : max(3 x interval x device_count, 2000);
 * stale = configured > 0 ? configured : max(8 x interval x device_count, 5000); warn <= stale.
 */
export function stalenessBounds(
  configured: StalenessBounds,
  pollingIntervalMs: number,
  deviceCount: number,
): StalenessBounds {
  const cycle = (pollingIntervalMs > 0 ? pollingIntervalMs : 500) * Math.max(1, deviceCount);
  const stale = configured.staleAfterMs > 0 ? configured.staleAfterMs : Math.max(8 * cycle, 5000);
  const warn = configured.warnAfterMs > 0 ? configured.warnAfterMs : Math.max(3 * cycle, 2000);
  return { warnAfterMs: Math.min(warn, stale), staleAfterMs: stale };
}
