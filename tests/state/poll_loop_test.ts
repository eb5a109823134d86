/**
 * PollLoop's cadence: cycles start on a grid shared by every loop of the cache, so timer lateness
 * does not accumulate and the loops of all providers stay in step (the process wakes once per
 * interval for all of them). The loop runs on a ManualClock: a host timer that fires late or early
 * is fired by hand at that time (fireNext), and the delays the loop asks for are read from it.
 */
import assert from "node:assert/strict";
import { PollLoop } from "../../src/state/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";

const INTERVAL = 20;

/**
 * One PollLoop on a ManualClock at `originMs` (also the grid origin): each cycle counts itself
 * and calls `cycle(clock, n)` (n from 1; a cycle "takes" time by moving `clock.mono`); `drive`
 * runs the test. The loop is stopped whatever happens; resolves with the number of cycles run.
 */
async function withOneLoop(
  originMs: number,
  cycle: (clock: ManualClock, n: number) => void,
  drive: (clock: ManualClock, cycles: () => number) => Promise<void>,
): Promise<number> {
  const clock = new ManualClock(originMs);
  let cycles = 0;
  let loop: PollLoop | undefined;
  try {
    loop = new PollLoop(
      INTERVAL,
      () => {
        cycle(clock, ++cycles);
        return Promise.resolve();
      },
      clock,
      originMs,
    );
    await drive(clock, () => cycles);
  } finally {
    await loop?.stop();
  }
  return cycles;
}

/** Fires the loop's timer at `atMs` and lets the cycle it starts end and set the next timer. */
async function fireAt(clock: ManualClock, atMs: number): Promise<void> {
  clock.fireNext(atMs);
  await flushMicrotasks();
}

Deno.test("PollLoop starts each cycle on the grid: a late timer does not shift the next cycle", async () => {
  // Each cycle takes 7 ms.
  const cycles = await withOneLoop(
    1000,
    (clock) => (clock.mono += 7),
    async (clock, n) => {
      assert.deepStrictEqual(clock.pendingDelays(), [INTERVAL], "first cycle at the first instant");
      await fireAt(clock, 1000 + INTERVAL + 3); // the first timer fires 3 ms late
      assert.strictEqual(n(), 1);
      // Started at 1023 (3 late), ended at 1030: the next grid instant is 1040 (its timer set as
      // the cycle started). A loop timed from its own end would wait 20 ms (1050) and drift by the
      // cycle's length; from its start, 3 ms per cycle.
      assert.deepStrictEqual(clock.pendingDueTimes(), [1040]);
    },
  );
  assert.strictEqual(cycles, 1);
});

Deno.test("PollLoop starts the next cycle at once after a cycle that overran its interval", async () => {
  await withOneLoop(500, (clock, n) => {
    if (n === 1) clock.mono += INTERVAL + 5; // the first cycle overruns
  }, async (clock, n) => {
    await fireAt(clock, 500 + INTERVAL);
    assert.strictEqual(n(), 1);
    // Its timer, set as it started, is due already (540, the clock at 545): it fires at once.
    assert.deepStrictEqual(clock.pendingDueTimes(), [540]);
    assert.ok(clock.monoMs() >= 540);
  });
});

Deno.test("PollLoop: the next instant coming with the cycle still in flight calls overdue once, and the next cycle starts as that one ends", async () => {
  const clock = new ManualClock(700);
  let cycles = 0;
  let overdue = 0;
  let end = (): void => {};
  const loop = new PollLoop(
    INTERVAL,
    () => {
      cycles++;
      return new Promise<void>((resolve) => (end = resolve));
    },
    clock,
    700,
    () => overdue++,
  );
  try {
    await fireAt(clock, 720);
    assert.strictEqual(cycles, 1);
    assert.deepStrictEqual(clock.pendingDueTimes(), [740], "the next cycle's timer, set at once");
    await fireAt(clock, 740); // the cycle is still in flight
    assert.strictEqual(overdue, 1);
    assert.strictEqual(cycles, 1, "no second cycle beside the first");
    assert.deepStrictEqual(clock.pendingDueTimes(), [], "nothing armed until the cycle ends");
    clock.advance(3);
    end();
    await flushMicrotasks();
    assert.deepStrictEqual(clock.pendingDueTimes(), [743], "at once as the cycle ended");
    await fireAt(clock, 743);
    assert.strictEqual(cycles, 2);
    assert.deepStrictEqual(clock.pendingDueTimes(), [760], "back on the grid");
    end();
    await flushMicrotasks();
  } finally {
    await loop.stop();
  }
  assert.strictEqual(overdue, 1);
});

Deno.test("PollLoops with one grid origin wait for the same instant whenever they were made", async () => {
  const clock = new ManualClock(10_000);
  const loops: PollLoop[] = [];
  try {
    // Made 0, 7 and 13 ms after the origin (a provider's loop made later): all aim at 10_020.
    for (const at of [10_000, 10_007, 10_013]) {
      clock.advance(at - clock.mono);
      loops.push(new PollLoop(INTERVAL, () => Promise.resolve(), clock, 10_000));
    }
    assert.deepStrictEqual(clock.pendingDelays(), [20, 13, 7]);
    assert.deepStrictEqual(clock.pendingDueTimes(), [10_020, 10_020, 10_020]);
  } finally {
    for (const l of loops) await l.stop();
  }
});

Deno.test("PollLoop: a timer that fires just before its grid instant does not poll twice", async () => {
  // Timers truncate a fractional delay and may fire up to a millisecond early. The cycle then
  // starts just before its grid instant; the next one is still a whole interval later. Timed
  // from the cycle's start alone it would aim at the instant it was meant for and run again at
  // once (the bench saw 11.4 instead of 10 polls/s, every tenth poll twice within 4 ms).
  // A quick cycle (0.25 ms), still before the grid instant.
  const cycles = await withOneLoop(
    2000,
    (clock) => (clock.mono += 0.25),
    async (clock, n) => {
      assert.deepStrictEqual(clock.pendingDelays(), [INTERVAL]);
      await fireAt(clock, 2000 + INTERVAL - 0.5); // the timer fires half a millisecond early
      assert.strictEqual(n(), 1);
      // Started at 2019.5: the next cycle is at 2040, not at 2020.
      assert.deepStrictEqual(clock.pendingDueTimes(), [2040]);
    },
  );
  assert.strictEqual(cycles, 1);
});

Deno.test("PollLoop: a timer more than an interval late waits for the next grid instant, no catch-up", async () => {
  const cycles = await withOneLoop(3000, () => {}, async (clock, n) => {
    await fireAt(clock, 3000 + INTERVAL + 25); // due at 3020, fires at 3045 (the loop was blocked)
    assert.strictEqual(n(), 1);
    // The instant it missed (3040) is not polled after the fact: the next cycle is at 3060.
    assert.deepStrictEqual(clock.pendingDelays(), [15]);
  });
  assert.strictEqual(cycles, 1);
});

Deno.test("PollLoop: a grid instant that rounds across a power of two is not its own successor", async () => {
  // origin + 20 crosses 2048 and rounds down: (instant - origin) / 20 = 0.99999999999999 and the
  // next cycle was put on the instant that had just run, i.e. at once (seen as a second poll 5 ms
  // after a grid poll in 5 of 24 start-ups watched for 6 s, with the process clock's origin).
  const ORIGIN = 2031.7251737147647;
  const cycles = await withOneLoop(
    ORIGIN,
    (clock) => (clock.mono += 0.25),
    async (clock, n) => {
      const [first] = clock.pendingDelays();
      assert.ok(Math.abs(first! - INTERVAL) < 1e-6, `first timer ${first} ms`);
      await fireAt(clock, ORIGIN + first!); // the timer fires on time
      assert.strictEqual(n(), 1);
      // Started on its instant: the next cycle is the following instant, not at once.
      const [next] = clock.pendingDueTimes();
      assert.ok(Math.abs(next! - (ORIGIN + 2 * INTERVAL)) < 1e-6, `next timer at ${next}`);
    },
  );
  assert.strictEqual(cycles, 1);
});

Deno.test("PollLoop: a loop made a hair before a grid instant waits for that instant, not the one after", async () => {
  // Far from the origin, (from - origin) / 20 rounds up to a whole number (1320) for a time just
  // before instant 1320: without the correction the first cycle would skip that instant.
  const ORIGIN = 301.7264008623879;
  const INSTANT = ORIGIN + 1320 * INTERVAL;
  const FROM = 26701.726400862386; // the double just below INSTANT
  assert.ok(FROM < INSTANT && Math.floor((FROM - ORIGIN) / INTERVAL) === 1320);
  const clock = new ManualClock(FROM);
  const loop = new PollLoop(INTERVAL, () => Promise.resolve(), clock, ORIGIN);
  try {
    const [first] = clock.pendingDelays();
    assert.ok(first! < 1, `first timer ${first} ms`);
  } finally {
    await loop.stop();
  }
});
