import type { Clock, TimerId } from "../common/mod.ts";

/** The real clock: Date.now() for wall time, performance.now() and the host's timers otherwise. */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monoMs: () => performance.now(),
  setTimer: (fn: () => void, ms: number): TimerId => setTimeout(fn, ms),
  clearTimer: (id: TimerId) => clearTimeout(id as ReturnType<typeof setTimeout> | undefined),
};
