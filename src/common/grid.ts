/**
 * Fixed-cadence scheduling on a grid (origin + k x interval): what the poll loops and the
 * behavior-tree ticker share. A timer aims at a grid instant, so its lateness does not add up
 * from one period to the next; a period missed because the work ran long is skipped, not caught
 * up.
 */
import type { Clock } from "./host.ts";

/**
 * The first grid instant after `fromMs` (from before the origin: origin + interval). The division
 * can land a hair off a whole number (origin + k x interval rounds when it lies in a higher
 * power-of-two range than the origin): the index is corrected against the instants as computed,
 * so a grid instant is never its own successor (work run twice at once) and none is skipped.
 */
export function nextGridInstant(originMs: number, intervalMs: number, fromMs: number): number {
  let k = Math.floor(Math.max(0, fromMs - originMs) / intervalMs) + 1;
  while (originMs + k * intervalMs <= fromMs) k++;
  while (k > 1 && originMs + (k - 1) * intervalMs > fromMs) k--;
  return originMs + k * intervalMs;
}

/** A running gridInterval. */
export interface GridInterval {
  /** No further call of `fn` after this returns. */
  stop(): void;
}

/**
 * Calls `fn` (synchronous) on every grid instant from `clock.monoMs() + periodMs` on. Each timer
 * aims at a grid instant (its due time); the next is the grid instant after the later of that
 * due time and the moment `fn` returned. Timers may fire up to a millisecond early (a fractional
 * delay is truncated): timed from the call alone, such a call would aim at the instant it was
 * meant for and run again at once. Unlike `setInterval`, whose period stretches by each call's
 * lateness, the calls keep the configured rate. An exception from `fn` propagates as from any
 * timer callback; the next call stays scheduled.
 */
export function gridInterval(fn: () => void, periodMs: number, clock: Clock): GridInterval {
  const originMs = clock.monoMs();
  let dueMs = originMs + periodMs;
  let stopped = false;
  let timer: unknown;
  const run = () => {
    if (stopped) return;
    try {
      fn();
    } finally {
      if (!stopped) {
        const now = clock.monoMs();
        dueMs = nextGridInstant(originMs, periodMs, Math.max(dueMs, now));
        timer = clock.setTimer(run, Math.max(0, dueMs - now));
      }
    }
  };
  timer = clock.setTimer(run, periodMs);
  return {
    stop() {
      stopped = true;
      clock.clearTimer(timer);
    },
  };
}
