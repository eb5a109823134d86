import type { Clock, TimerId } from "../common/mod.ts";

/**
 * The longest delay one host timer holds: 2^31 - 1 ms (about 24.8 days). A longer one would run
 * after 1 ms (Deno, like browsers, wraps it, with a TimeoutOverflowWarning on stderr each time):
 * {@link hostTimers} waits a longer delay out as a chain of timers no longer than this.
 */
export const MAX_HOST_TIMER_MS = 2_147_483_647;

/** A delay longer than one host timer holds: the host timer pending for it now. */
class ChainedTimer {
  id: ReturnType<typeof setTimeout> | undefined;
}

/**
 * setTimer and clearTimer on the host's timers (the Clock contract: `fn` once, `ms` from now on
 * the monotonic clock). A delay longer than `maxMs` (MAX_HOST_TIMER_MS; smaller in tests) is a
 * chain of timers of at most `maxMs` each; one that never ends (Infinity) never fires.
 */
export function hostTimers(
  maxMs: number = MAX_HOST_TIMER_MS,
): Pick<Clock, "setTimer" | "clearTimer"> {
  return {
    setTimer: (fn: () => void, ms: number): TimerId => {
      if (!(ms > maxMs)) return setTimeout(fn, ms);
      const due = performance.now() + ms;
      const chained = new ChainedTimer();
      const arm = () => {
        const left = due - performance.now();
        chained.id = left > maxMs ? setTimeout(arm, maxMs) : setTimeout(fn, left);
      };
      arm();
      return chained;
    },
    clearTimer: (id: TimerId) =>
      clearTimeout(
        id instanceof ChainedTimer ? id.id : id as ReturnType<typeof setTimeout> | undefined,
      ),
  };
}

/** The real clock: Date.now() for wall time, performance.now() and the host's timers otherwise. */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monoMs: () => performance.now(),
  ...hostTimers(),
};
