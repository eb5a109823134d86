/**
 * A provider that answers one device slowly (every read takes longer than the poll interval, but
 * well within timeout_ms) and its other device at once, requests answered concurrently: a cycle
 * due while the slow read is out ends without it (hung_sibling_poll_test.ts), and the slow device
 * is sent its next read as soon as its late answer is in, its due time past -- polled at the pace
 * it answers, not every other interval; the fast one keeps its interval. The programmable provider
 * as a real child process.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { dbl, startProgrammable, T } from "../helpers/programmable_provider.ts";

const INTERVAL_MS = 100;
/** How long every read of the slow device takes: past the interval, far within TIMEOUT_MS. */
const SLOW_MS = INTERVAL_MS * 1.2;
/** The provider's timeout_ms (and every program and stats call's bound). */
const TIMEOUT_MS = 3000;
/**
 * health.staleness.stale_after_ms: many intervals, so that a loaded machine's stall of a few
 * hundred ms (one look STALE at 500 ms, seen on CI) reads no sample STALE; far above SLOW_MS.
 */
const STALE_MS = 2000;
/** How long the two devices' polls are counted. */
const WATCH_MS = 3000;
/** How often the slow device's quality is read while watched. */
const LOOK_EVERY_MS = 50;

Deno.test("StateCache polls a slow device again as soon as its late answer is in: at the pace it answers, not every other interval, while its sibling keeps the interval", async () => {
  const fx = await startProgrammable({
    devices: {
      // Requested first: its slow answer holds the pass's until its cycle ends without it.
      a: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] },
      b: { signals: [{ id: "y", type: T.DOUBLE }], values: [dbl("y", 2)] },
    },
  }, {
    poll: true,
    intervalMs: INTERVAL_MS,
    timeoutMs: TIMEOUT_MS,
    staleness: { warnAfterMs: STALE_MS / 2, staleAfterMs: STALE_MS },
  });
  try {
    await waitFor("b answered", () => fx.cache.signal("p0", "b", "y")?.quality === "OK");
    await fx.program("a", { read: { values: [dbl("x", 1)], delayMs: SLOW_MS } });
    const aFirst = (await fx.stats("a")).reads;
    // The pass after the program is out: every read of a is slow from now on.
    await waitFor("a read again", async () => (await fx.stats("a")).reads > aFirst + 1);
    const started = fx.clock.monoMs();
    const aReads = (await fx.stats("a")).reads;
    const bReads = (await fx.stats("b")).reads;
    const looks: { atMs: number; quality: string }[] = [];
    while (fx.clock.monoMs() - started < WATCH_MS) {
      const s = fx.cache.signal("p0", "a", "x")!;
      looks.push({
        atMs: Math.round(fx.clock.monoMs() - started),
        quality: fx.cache.qualityNow("p0", "a", "x", s),
      });
      await new Promise((r) => setTimeout(r, LOOK_EVERY_MS));
    }
    const a = (await fx.stats("a")).reads - aReads;
    const b = (await fx.stats("b")).reads - bReads;
    // Measured against b's polls in the same watch (a loaded machine slows both): a answers in
    // 1.2 intervals, so about 0.8 of b's polls when sent again at once; every other interval
    // (half of b's) before the fix. Three fifths tells the two apart with room on both sides: a
    // loaded machine stretches a's answer past 1.2 intervals (17 of b's 26 polls, 0.65, seen
    // with the suite's files run beside it), never to b's every other interval.
    assert.ok(
      a >= (b * 3) / 5,
      `a (answers in ${SLOW_MS} ms) polled ${a} times, b ${b}, in ${WATCH_MS} ms (interval ${INTERVAL_MS} ms)`,
    );
    // At most one read of a out at a time: never more of a than its pace allows (+1 in flight).
    assert.ok(a <= b + 1, `a polled ${a} times, b ${b}: more than one read of a out at a time?`);
    // Answered well within stale_after_ms every time: a never reads STALE.
    const bad = looks.filter((l) => l.quality !== "OK");
    assert.deepEqual(bad, [], `a read not OK at ${bad.length} of ${looks.length} looks`);
    assert.equal(fx.cache.device("p0", "a")?.available, true);
    assert.deepEqual(fx.lines.filter((l) => l.includes("unresponsive")), []);
  } finally {
    await fx.close();
  }
});
