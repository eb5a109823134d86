import assert from "node:assert/strict";
import { sleepOn } from "../../src/common/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { ManualClock } from "./clock.ts";

Deno.test("ManualClock fires timers in due order, each seeing its own due time, only when advanced", () => {
  const clock = new ManualClock(0, 1_000);
  const seen: Array<[string, number, number]> = [];
  clock.setTimer(() => seen.push(["b", clock.monoMs(), clock.nowMs()]), 20);
  clock.setTimer(() => seen.push(["a", clock.monoMs(), clock.nowMs()]), 10);
  const dropped = clock.setTimer(() => seen.push(["x", clock.monoMs(), clock.nowMs()]), 15);
  clock.clearTimer(dropped);
  clock.advance(9);
  assert.deepEqual(seen, []);
  clock.advance(16);
  assert.deepEqual(seen, [["a", 10, 1_010], ["b", 20, 1_020]]);
  assert.equal(clock.monoMs(), 25);
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("ManualClock fires a timer a callback sets within the span, and steps the wall clock alone", () => {
  const clock = new ManualClock(0, 0);
  const fired: number[] = [];
  clock.setTimer(() => {
    fired.push(clock.monoMs());
    clock.setTimer(() => fired.push(clock.monoMs()), 5);
  }, 5);
  clock.advance(10);
  assert.deepEqual(fired, [5, 10]);
  clock.stepWall(-3_600_000);
  assert.equal(clock.nowMs(), 10 - 3_600_000);
  assert.equal(clock.monoMs(), 10);
  // A callback that moves the clock past the end of the span (a call that takes time): the clock
  // stays where the callback left it, never moves back.
  clock.setTimer(() => (clock.mono += 3), 5);
  clock.advance(5);
  assert.equal(clock.monoMs(), 18);
});

Deno.test("ManualClock.fireNext fires the soonest timer late or early at the time given, and tells its delays", () => {
  const clock = new ManualClock(100, 5_000);
  const seen: Array<[string, number, number]> = [];
  clock.setTimer(() => seen.push(["b", clock.monoMs(), clock.nowMs()]), 20.5);
  clock.setTimer(() => seen.push(["a", clock.monoMs(), clock.nowMs()]), 10);
  assert.deepEqual(clock.pendingDelays(), [20.5, 10]);
  assert.equal(clock.fireNext(113), true); // a, 3 ms late
  assert.equal(clock.fireNext(120), true); // b, half a millisecond early
  assert.deepEqual(seen, [["a", 113, 5_013], ["b", 120, 5_020]]);
  assert.equal(clock.fireNext(), false);
  clock.setTimer(() => seen.push(["c", clock.monoMs(), clock.nowMs()]), 5);
  assert.throws(() => clock.fireNext(119), RangeError);
  assert.equal(clock.fireNext(), true); // on time
  assert.deepEqual(seen.at(-1), ["c", 125, 5_025]);
});

Deno.test("sleepOn resolves on the clock's timer and rejects with the abort reason", async () => {
  const clock = new ManualClock();
  let done = false;
  const sleeping = sleepOn(clock, 50).then(() => (done = true));
  await clock.advanceAsync(49);
  assert.equal(done, false);
  await clock.advanceAsync(1);
  await sleeping;
  assert.equal(done, true);
  const ac = new AbortController();
  const aborted = sleepOn(systemClock, 60_000, ac.signal);
  ac.abort(new Error("halted"));
  await assert.rejects(aborted, /halted/);
});
