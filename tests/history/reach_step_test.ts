/**
 * The ring's reach (GET /metrics runtime_history_memory_reach_seconds, what an operator sizes
 * history.memory_max_bytes by) and a wall clock stepped ahead: the polls from before the step
 * keep their times, but they are no older than the monotonic clock says.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";

Deno.test("History's memory reach is not stretched by a step of the wall clock ahead (the first NTP synchronisation)", async () => {
  const { clock, history, poll } = handFedHistory({ memorySeconds: 120, diskMaxBytes: 0 });
  await history.start();
  try {
    for (let i = 0; i < 10; i++) {
      poll("p", "d", i);
      clock.advance(1_000);
    }
    clock.stepWall(365 * 86_400_000); // a board without a real-time clock, a year behind
    for (let i = 0; i < 5; i++) {
      poll("p", "d", i);
      clock.advance(1_000);
    }
    // 14 s of polls, 15 s ago at most on the monotonic clock; not a year.
    const reach = history.status().memoryReachSeconds;
    assert.ok(reach >= 14 && reach <= 120, `reach ${reach} s`);
  } finally {
    await history.stop();
  }
});

Deno.test("History's memory reach after a wall clock stepped back is the polled devices', not 0 for a down provider's device whose polls lie ahead of the clock", async () => {
  const { clock, history, poll } = handFedHistory({ memorySeconds: 120, diskMaxBytes: 0 });
  await history.start();
  try {
    for (let i = 0; i < 20; i++) {
      poll("up", "d", i);
      poll("down", "d", i);
      clock.advance(1_000);
    }
    clock.stepWall(-60_000); // an NTP correction; provider "down" is down from now on
    for (let i = 0; i < 11; i++) {
      poll("up", "d", i);
      clock.advance(1_000);
    }
    // "up"'s ring answers its polls since the step (10 s back, the newest 1 s ago).
    const reach = history.status().memoryReachSeconds;
    assert.ok(reach >= 10 && reach <= 120, `reach ${reach} s`);
  } finally {
    await history.stop();
  }
});
