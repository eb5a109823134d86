/**
 * The grid both cadences use (poll loops, behavior-tree ticks): nextGridInstant's arithmetic, and
 * gridInterval's timers on a ManualClock: a host timer that fires late or early is fired by hand
 * at that time (fireNext), and the delays gridInterval asks for are read from the clock.
 */
import assert from "node:assert/strict";
import { gridInterval, nextGridInstant, sharedInstantTimers } from "../../src/common/mod.ts";
import { ManualClock } from "../helpers/clock.ts";

const PERIOD = 20;

Deno.test("nextGridInstant: the first instant strictly after the time; before the origin, origin + interval", () => {
  assert.strictEqual(nextGridInstant(1000, 20, 1000), 1020);
  assert.strictEqual(nextGridInstant(1000, 20, 1019.5), 1020);
  assert.strictEqual(nextGridInstant(1000, 20, 1020), 1040);
  assert.strictEqual(nextGridInstant(1000, 20, 1033), 1040);
  assert.strictEqual(nextGridInstant(1000, 20, 400), 1020);
});

Deno.test("nextGridInstant: an instant that rounded is not its own successor, and none is skipped", () => {
  // origin + 20 crosses 2048 and rounds: (instant - origin) / 20 = 0.99999999999999.
  const o1 = 2031.7251737147647;
  const i1 = o1 + 20;
  assert.strictEqual(Math.floor((i1 - o1) / 20), 0);
  assert.strictEqual(nextGridInstant(o1, 20, i1), o1 + 40);
  // Far from the origin the division rounds up to a whole number just before instant 1320.
  const o2 = 301.7264008623879;
  const before = 26701.726400862386;
  assert.ok(before < o2 + 1320 * 20 && Math.floor((before - o2) / 20) === 1320);
  assert.strictEqual(nextGridInstant(o2, 20, before), o2 + 1320 * 20);
});

/**
 * One gridInterval from `originMs` on a ManualClock: each call counts itself and runs
 * `call(clock, n)`; `drive` runs the test; stopped whatever happens. A call "takes" time by
 * moving `clock.mono` (no timer fires during a synchronous call).
 */
function withGrid(
  originMs: number,
  call: (clock: ManualClock, n: number) => void,
  drive: (clock: ManualClock, calls: () => number) => void,
): number {
  const clock = new ManualClock(originMs);
  let calls = 0;
  const grid = gridInterval(() => call(clock, ++calls), PERIOD, clock);
  try {
    drive(clock, () => calls);
  } finally {
    grid.stop();
  }
  return calls;
}

Deno.test("gridInterval: a late call does not shift the next one (setInterval would)", () => {
  const calls = withGrid(5000, (clock) => (clock.mono += 2), (clock, n) => {
    assert.deepStrictEqual(clock.pendingDelays(), [PERIOD]);
    clock.fireNext(5000 + PERIOD + 3); // fires 3 ms late, the call takes 2 ms
    assert.strictEqual(n(), 1);
    assert.deepStrictEqual(clock.pendingDelays(), [PERIOD - 5]); // aims at 5040
  });
  assert.strictEqual(calls, 1);
});

Deno.test("gridInterval: a timer that fires just early does not call twice", () => {
  const calls = withGrid(5000, (clock) => (clock.mono += 0.25), (clock, n) => {
    clock.fireNext(5000 + PERIOD - 0.5); // half a millisecond early
    assert.strictEqual(n(), 1);
    assert.deepStrictEqual(clock.pendingDelays(), [PERIOD + 0.25]); // 5040, not 5020 again
  });
  assert.strictEqual(calls, 1);
});

Deno.test("gridInterval: a call that overran skips the missed instants, no catch-up", () => {
  const calls = withGrid(5000, (clock, n) => {
    if (n === 1) clock.mono += 2.5 * PERIOD;
  }, (clock, n) => {
    clock.fireNext(5000 + PERIOD);
    assert.strictEqual(n(), 1);
    // Ended at 5070: the next call is at 5080, not at once for 5040 and 5060.
    assert.deepStrictEqual(clock.pendingDelays(), [PERIOD / 2]);
  });
  assert.strictEqual(calls, 1);
});

Deno.test("gridInterval keeps the rate over many periods of on-time timers", () => {
  const calls = withGrid(5000, (clock) => (clock.mono += 1), (clock, n) => {
    clock.advance(100 * PERIOD);
    assert.strictEqual(n(), 100);
    assert.deepStrictEqual(clock.pendingDelays(), [PERIOD - 1]);
  });
  assert.strictEqual(calls, 100);
});

Deno.test("gridInterval: stop() inside a call leaves no timer and no further call", () => {
  const clock = new ManualClock(7000);
  let calls = 0;
  const grid = gridInterval(
    () => {
      calls++;
      grid.stop();
    },
    PERIOD,
    clock,
  );
  clock.advance(PERIOD);
  assert.strictEqual(calls, 1);
  assert.strictEqual(clock.pendingTimers, 0);
  clock.advance(3 * PERIOD);
  assert.strictEqual(calls, 1);
});

Deno.test("gridInterval from a first due instant goes on on its grid; one already past is called at once", () => {
  const clock = new ManualClock(7000);
  const at: number[] = [];
  const first = gridInterval(() => at.push(clock.mono), PERIOD, clock);
  clock.advance(PERIOD + 5); // a call at 7020
  first.stop();
  assert.strictEqual(first.dueMs, 7000 + 2 * PERIOD); // the instant the next call was due
  clock.advance(PERIOD); // at 7045: 7040 passed without a call
  const next = gridInterval(() => at.push(clock.mono), PERIOD, clock, first.dueMs);
  try {
    clock.advance(2 * PERIOD);
    assert.deepStrictEqual(at, [7020, 7045, 7060, 7080]);
  } finally {
    next.stop();
  }
});

Deno.test("sharedInstantTimers: timers due on the same millisecond share one host timer", () => {
  const host = new ManualClock();
  const clock = sharedInstantTimers(host);
  const calls: string[] = [];
  // Ten poll loops aiming at the same grid instant from slightly different moments.
  for (let i = 0; i < 10; i++) clock.setTimer(() => calls.push(`loop${i}`), 100);
  assert.equal(host.pendingTimers, 1, "one host timer for the instant");
  const other = clock.setTimer(() => calls.push("later"), 150);
  assert.equal(host.pendingTimers, 2);
  host.advance(99);
  assert.deepEqual(calls, []);
  host.advance(1);
  assert.deepEqual(calls, [...Array(10).keys()].map((i) => `loop${i}`), "in the order set");
  clock.clearTimer(other);
  assert.equal(host.pendingTimers, 0, "the last timer of an instant cleared: its host timer too");
  host.advance(100);
  assert.equal(calls.length, 10);
});

Deno.test("sharedInstantTimers: clearing one timer of an instant leaves the others; late clears are no-ops", () => {
  const host = new ManualClock();
  const clock = sharedInstantTimers(host);
  const calls: number[] = [];
  const ids = [0, 1, 2].map((i) => clock.setTimer(() => calls.push(i), 50));
  clock.clearTimer(ids[1]);
  assert.equal(host.pendingTimers, 1);
  host.advance(50);
  assert.deepEqual(calls, [0, 2]);
  clock.clearTimer(ids[0]); // fired already
  clock.clearTimer(undefined);
  // A timer set from a callback for "now" gets a new host timer, not the one firing.
  clock.setTimer(() => {
    calls.push(9);
    clock.setTimer(() => calls.push(10), 0);
  }, 10);
  host.advance(10);
  host.advance(0);
  assert.deepEqual(calls, [0, 2, 9, 10]);
  assert.equal(host.pendingTimers, 0);
});

Deno.test("sharedInstantTimers: a callback that throws does not keep the others of its instant from running", async () => {
  const host = new ManualClock();
  const clock = sharedInstantTimers(host);
  const calls: string[] = [];
  const uncaught = new Promise<unknown>((resolve) => {
    const onError = (e: ErrorEvent) => {
      e.preventDefault();
      globalThis.removeEventListener("error", onError);
      resolve(e.error);
    };
    globalThis.addEventListener("error", onError);
  });
  clock.setTimer(() => {
    throw new Error("boom");
  }, 20);
  clock.setTimer(() => calls.push("after"), 20);
  host.advance(20);
  assert.deepEqual(calls, ["after"]);
  assert.equal((await uncaught as Error).message, "boom");
});
