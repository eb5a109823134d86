/**
 * When a device counts as down (docs/safety.md "A device that drops out"): its reads failing for
 * a few polling intervals. Here, below config and state, so that the configuration check can say
 * what the delay costs (an incident window the ring no longer holds) with the same numbers the
 * device-outage monitor (state/) uses.
 */

/** Reads failing for at least this many poll intervals make a device down ... */
export const DEVICE_DOWN_AFTER_POLLS = 3;
/** ... and for at least this long (ms), whatever the interval. */
export const DEVICE_DOWN_MIN_MS = 500;

/** How long reads must fail before a device counts as down, for a polling interval. */
export function deviceDownAfterMs(pollingIntervalMs: number): number {
  return Math.max(DEVICE_DOWN_MIN_MS, DEVICE_DOWN_AFTER_POLLS * pollingIntervalMs);
}
