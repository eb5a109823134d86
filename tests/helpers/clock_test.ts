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
