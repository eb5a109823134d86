/**
 * Fixed-cadence scheduling on a grid (origin + k x interval): what the poll loops and the
 * behavior-tree ticker share. A timer aims at a grid instant, so its lateness does not add up
 * from one period to the next; a period missed because the work ran long is skipped, not caught
 * up.
 */
import type { Clock, TimerId } from "./host.ts";

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
  /**
   * The grid instant (monotonic ms) of the next call: one already past when its timer has not
   * fired yet. Read at stop(), it is where a later gridInterval on the same grid goes on.
   */
  readonly dueMs: number;
}

/**
 * Calls `fn` (synchronous) on every grid instant from `firstDueMs` (default `clock.monoMs() +
 * periodMs`; one already past: at once) on, the grid being firstDueMs + k x periodMs. Each timer
 * aims at a grid instant (its due time); the next is the grid instant after the later of that
 * due time and the moment `fn` returned. Timers may fire up to a millisecond early (a fractional
 * delay is truncated): timed from the call alone, such a call would aim at the instant it was
 * meant for and run again at once. Unlike `setInterval`, whose period stretches by each call's
 * lateness, the calls keep the configured rate. An exception from `fn` propagates as from any
 * timer callback; the next call stays scheduled.
 */
export function gridInterval(
  fn: () => void,
  periodMs: number,
  clock: Clock,
  firstDueMs?: number,
): GridInterval {
  const startMs = clock.monoMs();
  let dueMs = firstDueMs ?? startMs + periodMs;
  const originMs = dueMs - periodMs;
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
  timer = clock.setTimer(run, Math.max(0, dueMs - startMs));
  return {
    stop() {
      stopped = true;
      clock.clearTimer(timer);
    },
    get dueMs() {
      return dueMs;
    },
  };
}

/** The timers of one instant (sharedInstantTimers): one host timer calls them in order. */
interface InstantTimers {
  readonly dueKey: number;
  hostTimer: TimerId;
  /** Callbacks in the order they were set; a cleared one becomes null. */
  readonly fns: (((() => void)) | null)[];
  live: number;
}

/** What sharedInstantTimers' setTimer returns: the instant and the callback's place in it. */
interface SharedTimerId {
  readonly at: InstantTimers;
  readonly index: number;
}

/**
 * A clock whose timers due on the same millisecond share one host timer: the poll loops of every
 * provider aim at the same grid instants, and one host timer per instant instead of one per loop
 * is what keeps their timers from being most of what V8 promotes (bench/README.md, "The timers V8
 * promoted"). Times and everything else come from `clock`. A callback that throws is reported as
 * an uncaught error, as a timer's is, after the others of its instant have run.
 */
export function sharedInstantTimers(clock: Clock): Clock {
  const byDue = new Map<number, InstantTimers>();
  const fire = (at: InstantTimers) => {
    byDue.delete(at.dueKey);
    let failure: { err: unknown } | null = null;
    for (let i = 0; i < at.fns.length; i++) {
      const fn = at.fns[i];
      if (fn === null || fn === undefined) continue;
      at.fns[i] = null;
      try {
        fn();
      } catch (err) {
        failure ??= { err };
      }
    }
    if (failure !== null) {
      const { err } = failure;
      queueMicrotask(() => {
        throw err;
      });
    }
  };
  return {
    nowMs: () => clock.nowMs(),
    monoMs: () => clock.monoMs(),
    setTimer(fn: () => void, ms: number): TimerId {
      const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
      const dueKey = Math.round(clock.monoMs() + delay);
      let at = byDue.get(dueKey);
      if (at === undefined) {
        const created: InstantTimers = { dueKey, hostTimer: undefined, fns: [], live: 0 };
        created.hostTimer = clock.setTimer(() => fire(created), delay);
        byDue.set(dueKey, at = created);
      }
      at.fns.push(fn);
      at.live++;
      return { at, index: at.fns.length - 1 } satisfies SharedTimerId;
    },
    clearTimer(id: TimerId): void {
      const t = id as SharedTimerId | undefined | null;
      if (t === undefined || t === null || t.at.fns[t.index] == null) return;
      t.at.fns[t.index] = null;
      if (--t.at.live === 0) {
        clock.clearTimer(t.at.hostTimer);
        if (byDue.get(t.at.dueKey) === t.at) byDue.delete(t.at.dueKey);
      }
    },
  };
}
