import assert from "node:assert/strict";
import { sleepOn } from "../../src/common/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { ManualClock, SkippingClock } from "./clock.ts";

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

/** A delay no test below waits for in real time: a timer of it fires only when skipped to. */
const FAR_MS = 600_000;

Deno.test("SkippingClock.skip moves both clocks forward on top of real time, never back, and refuses a step that is not forward", () => {
  const clock = new SkippingClock();
  const mono0 = clock.monoMs();
  const wall0 = clock.nowMs();
  assert.ok(Math.abs(mono0 - performance.now()) < 1_000, "mono starts at the host's");
  assert.ok(Math.abs(wall0 - Date.now()) < 1_000, "wall starts at the host's");
  clock.skip(FAR_MS);
  const mono1 = clock.monoMs();
  assert.ok(mono1 >= mono0 + FAR_MS, `mono moved ${mono1 - mono0} ms`);
  assert.ok(clock.nowMs() >= wall0 + FAR_MS, "wall moved with it");
  clock.skip(0);
  assert.ok(clock.monoMs() >= mono1, "a skip of 0 moves nothing back");
  for (const bad of [-1, NaN]) {
    assert.throws(() => clock.skip(bad), /SkippingClock\.skip: .* ms is no forward step/);
  }
  assert.ok(clock.monoMs() >= mono1, "a refused step moved nothing");
});

Deno.test("SkippingClock.skip fires at once, in due order, the timers it makes due, each seeing its time; not those it does not, nor cleared ones", () => {
  const clock = new SkippingClock();
  const seen: Array<[string, number]> = [];
  const setAt = clock.monoMs();
  clock.setTimer(() => seen.push(["b", clock.monoMs()]), FAR_MS + 2_000);
  clock.setTimer(() => seen.push(["a", clock.monoMs()]), FAR_MS + 1_000);
  const dropped = clock.setTimer(() => seen.push(["x", clock.monoMs()]), FAR_MS + 1_500);
  const later = clock.setTimer(() => seen.push(["c", clock.monoMs()]), 3 * FAR_MS);
  clock.clearTimer(dropped);
  clock.skip(FAR_MS);
  assert.equal(seen.length, 0, "none due yet");
  clock.skip(2_000);
  assert.deepEqual(seen.map(([name]) => name), ["a", "b"], "due, in due order, in the skip's call");
  for (const [name, at] of seen) assert.ok(at >= setAt + FAR_MS + 2_000, `${name} saw ${at}`);
  clock.skip(2_000);
  assert.equal(seen.length, 2, "a fired timer fires once; a cleared one never");
  clock.clearTimer(later);
  clock.clearTimer(later); // clearing twice, or a fired timer, is no error
  clock.skip(3 * FAR_MS);
  assert.equal(seen.length, 2);
});

Deno.test("SkippingClock timers run in real time without a skip, and one a skip does not make due fires after what is left", async () => {
  const clock = new SkippingClock();
  // Real time alone: a short timer fires by itself.
  const fired = Promise.withResolvers<number>();
  const setAt = clock.monoMs();
  clock.setTimer(() => fired.resolve(clock.monoMs()), 20);
  // (1 ms of slack: a host timer may fire a fraction of a millisecond early, seen in CI.)
  const firedAt = await fired.promise;
  assert.ok(firedAt >= setAt + 19, `fired ${firedAt - setAt} ms after it was set, not 20`);
  // Skipped to 50 ms short of its due time: it fires some 50 ms later, not after its whole delay
  // (re-armed for what is left); FAR_MS of real time would time the test out.
  const rest = Promise.withResolvers<"fired">();
  const id = clock.setTimer(() => rest.resolve("fired"), FAR_MS);
  clock.skip(FAR_MS - 50);
  let bound: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((r) => (bound = setTimeout(() => r("late"), 5_000)));
  const outcome = await Promise.race([rest.promise, late]);
  clearTimeout(bound);
  clock.clearTimer(id);
  assert.equal(outcome, "fired", "fired after what the skip left, not its whole delay");
});
