/**
 * A device's liveness bounds where health.staleness leaves them 0, "derive it" (docs/http-api.md,
 * the device `health` table): a few of its poll cycles, and at least a floor. Here, below config
 * and state, so that the configuration check (config/_semantic.ts, no WARNING stage) judges a
 * configured bound with the same numbers the state cache (state/staleness.ts stalenessBounds)
 * derives.
 */

/** The derived warn bound is this many poll cycles of the device ... */
export const DERIVED_WARN_CYCLES = 3;
/** ... and at least this long (ms). */
export const DERIVED_WARN_MIN_MS = 2000;
/** The derived stale bound is this many poll cycles of the device ... */
export const DERIVED_STALE_CYCLES = 8;
/** ... and at least this long (ms). */
export const DERIVED_STALE_MIN_MS = 5000;

/** The warn bound derived for a device polled once per `cycleMs` (before the stale bound caps it). */
export function derivedWarnAfterMs(cycleMs: number): number {
  return Math.max(DERIVED_WARN_CYCLES * cycleMs, DERIVED_WARN_MIN_MS);
}

/** The stale bound derived for a device polled once per `cycleMs`. */
export function derivedStaleAfterMs(cycleMs: number): number {
  return Math.max(DERIVED_STALE_CYCLES * cycleMs, DERIVED_STALE_MIN_MS);
}
