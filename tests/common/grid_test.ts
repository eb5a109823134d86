/**
 * The grid both cadences use (poll loops, behavior-tree ticks): nextGridInstant's arithmetic, and
 * gridInterval's timers, read from the timer ledger with an injected clock (the timers run for
 * real, with short periods).
 */
import assert from "node:assert/strict";
import { gridInterval, nextGridInstant } from "../../src/common/mod.ts";
import { fakeClock, openTimerLedger, type TimerLedger, until } from "../helpers/timers.ts";

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

type FakeClock = ReturnType<typeof fakeClock>;

/**
 * One gridInterval from `originMs` on a fake clock: each call counts itself and runs
 * `call(clock, n)`; `drive` runs the test; stopped and the ledger closed whatever happens.
 */
async function withGrid(
  originMs: number,
  call: (clock: FakeClock, n: number) => void,
  drive: (clock: FakeClock, ledger: TimerLedger, calls: () => number) => Promise<void>,
): Promise<number> {
  const clock = fakeClock(originMs);
  const ledger = openTimerLedger();
  let calls = 0;
  const grid = gridInterval(() => call(clock, ++calls), PERIOD, clock);
  try {
    await drive(clock, ledger, () => calls);
  } finally {
    grid.stop();
    ledger.close();
  }
  return calls;
}

Deno.test("gridInterval: a late call does not shift the next one (setInterval would)", async () => {
  const calls = await withGrid(5000, (clock) => clock.add(2), async (clock, ledger, n) => {
    assert.deepStrictEqual(ledger.pending(), [PERIOD]);
    clock.set(5000 + PERIOD + 3); // fires 3 ms late, the call takes 2 ms
    await until(() => n() === 1 && ledger.pending().length === 1);
    assert.deepStrictEqual(ledger.pending(), [PERIOD - 5]); // aims at 5040
  });
  assert.strictEqual(calls, 1);
});

Deno.test("gridInterval: a timer that fires just early does not call twice", async () => {
  const calls = await withGrid(5000, (clock) => clock.add(0.25), async (clock, ledger, n) => {
    clock.set(5000 + PERIOD - 0.5); // half a millisecond early
    await until(() => n() === 1 && ledger.pending().length === 1);
    assert.deepStrictEqual(ledger.pending(), [PERIOD + 0.25]); // 5040, not 5020 again
  });
  assert.strictEqual(calls, 1);
});

Deno.test("gridInterval: a call that overran skips the missed instants, no catch-up", async () => {
  const calls = await withGrid(5000, (clock, n) => {
    if (n === 1) clock.add(2.5 * PERIOD);
  }, async (clock, ledger, n) => {
    clock.set(5000 + PERIOD);
    await until(() => n() === 1 && ledger.pending().length === 1);
    // Ended at 5070: the next call is at 5080, not at once for 5040 and 5060.
    assert.deepStrictEqual(ledger.pending(), [PERIOD / 2]);
  });
  assert.strictEqual(calls, 1);
});

Deno.test("gridInterval: stop() inside a call leaves no timer and no further call", async () => {
  const clock = fakeClock(7000);
  const ledger = openTimerLedger();
  let calls = 0;
  try {
    const grid = gridInterval(
      () => {
        calls++;
        grid.stop();
      },
      PERIOD,
      clock,
    );
    clock.set(7000 + PERIOD);
    await until(() => calls === 1);
    await new Promise((r) => setTimeout(r, 3 * PERIOD));
    assert.strictEqual(calls, 1);
    assert.deepStrictEqual(ledger.pending(), []);
  } finally {
    ledger.close();
  }
});
