/**
 * PollLoop's cadence: cycles start on a grid shared by every loop of the cache, so timer lateness
 * does not accumulate and the loops of all providers stay in step (the process wakes once per
 * interval for all of them). The clock is injected; the timers run for real (short intervals) and
 * their delays are read from the timer ledger.
 */
import assert from "node:assert/strict";
import { PollLoop } from "../../src/state/mod.ts";
import { fakeClock, openTimerLedger, type TimerLedger, until } from "../helpers/timers.ts";

const INTERVAL = 20;

type FakeClock = ReturnType<typeof fakeClock>;

/**
 * One PollLoop on a fake clock set to `originMs` (also the grid origin), its timers in a ledger:
 * each cycle counts itself and calls `cycle(clock, n)` (n from 1); `drive` runs the test. The loop
 * is stopped and the ledger closed whatever happens; resolves with the number of cycles run.
 */
async function withOneLoop(
  originMs: number,
  cycle: (clock: FakeClock, n: number) => void,
  drive: (clock: FakeClock, ledger: TimerLedger, cycles: () => number) => Promise<void>,
): Promise<number> {
  const clock = fakeClock(originMs);
  const ledger = openTimerLedger();
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
    await drive(clock, ledger, () => cycles);
  } finally {
    await loop?.stop();
    ledger.close();
  }
  return cycles;
}

Deno.test("PollLoop starts each cycle on the grid: a late timer does not shift the next cycle", async () => {
  // Each cycle takes 7 ms.
  const cycles = await withOneLoop(
    1000,
    (clock) => clock.set(clock.monoMs() + 7),
    async (clock, ledger, n) => {
      assert.deepStrictEqual(ledger.pending(), [INTERVAL], "first cycle at the first grid instant");
      clock.set(1000 + INTERVAL + 3); // the first timer fires 3 ms late
      await until(() => n() === 1 && ledger.pending().length === 1);
      // Started at 1023 (3 late), ended at 1030: the next grid instant is 1040, 10 ms away. A loop
      // timed from its own start would wait 20 - 7 = 13 ms and drift 3 ms per cycle.
      assert.deepStrictEqual(ledger.pending(), [10]);
    },
  );
  assert.strictEqual(cycles, 1);
});

Deno.test("PollLoop starts the next cycle at once after a cycle that overran its interval", async () => {
  await withOneLoop(500, (clock, n) => {
    if (n === 1) clock.set(clock.monoMs() + INTERVAL + 5); // the first cycle overruns
  }, async (clock, ledger, n) => {
    clock.set(500 + INTERVAL);
    await until(() => n() === 1 && ledger.pending().length === 1);
    assert.deepStrictEqual(ledger.pending(), [0]);
  });
});

Deno.test("PollLoops with one grid origin wait for the same instant whenever they were made", async () => {
  const clock = fakeClock(10_000);
  const ledger = openTimerLedger();
  const loops: PollLoop[] = [];
  try {
    // Made 0, 7 and 13 ms after the origin (a provider's loop made later): all aim at 10_020.
    for (const at of [10_000, 10_007, 10_013]) {
      clock.set(at);
      loops.push(new PollLoop(INTERVAL, () => Promise.resolve(), clock, 10_000));
    }
    assert.deepStrictEqual(ledger.pending(), [20, 13, 7]);
  } finally {
    for (const l of loops) await l.stop();
    ledger.close();
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
    (clock) => clock.set(clock.monoMs() + 0.25),
    async (clock, ledger, n) => {
      assert.deepStrictEqual(ledger.pending(), [INTERVAL]);
      clock.set(2000 + INTERVAL - 0.5); // the timer fires half a millisecond early
      await until(() => n() === 1 && ledger.pending().length === 1);
      // Ended at 2019.75: the next cycle is at 2040, not at 2020.
      assert.deepStrictEqual(ledger.pending(), [20.25]);
    },
  );
  assert.strictEqual(cycles, 1);
});

Deno.test("PollLoop: a timer more than an interval late waits for the next grid instant, no catch-up", async () => {
  const cycles = await withOneLoop(3000, () => {}, async (clock, ledger, n) => {
    clock.set(3000 + INTERVAL + 25); // due at 3020, fires at 3045 (the event loop was blocked)
    await until(() => n() === 1 && ledger.pending().length === 1);
    // The instant it missed (3040) is not polled after the fact: the next cycle is at 3060.
    assert.deepStrictEqual(ledger.pending(), [15]);
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
    (clock) => clock.set(clock.monoMs() + 0.25),
    async (clock, ledger, n) => {
      const [first] = ledger.pending();
      assert.ok(Math.abs(first - INTERVAL) < 1e-6, `first timer ${first} ms`);
      clock.set(ORIGIN + first); // the timer fires on time
      await until(() => n() === 1 && ledger.pending().length === 1);
      // Ended 0.25 ms after its instant: the next cycle is the following instant, not at once.
      const [next] = ledger.pending();
      assert.ok(Math.abs(next - (INTERVAL - 0.25)) < 1e-6, `next timer ${next} ms`);
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
  const clock = fakeClock(FROM);
  const ledger = openTimerLedger();
  const loop = new PollLoop(INTERVAL, () => Promise.resolve(), clock, ORIGIN);
  try {
    const [first] = ledger.pending();
    assert.ok(first < 1, `first timer ${first} ms`);
  } finally {
    await loop.stop();
    ledger.close();
  }
});
