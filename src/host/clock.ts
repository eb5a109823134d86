import type { Clock } from "../common/mod.ts";

/** The real clock: Date.now() for wall time, performance.now() for durations. */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monoMs: () => performance.now(),
};
