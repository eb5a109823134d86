/**
 * A wall clock stepped back less than the ring reaches (memory_seconds): the ring keeps both
 * periods' polls of the repeated times, and the disk tier has the earlier period's buckets of
 * them. The open bucket after the step can be one this ring wrote (or still holds open) from
 * before the step: before, it was taken for a bucket only an earlier run wrote, the disk answered
 * it and the ring its polls before the step from the next poll time on -- a poll counted twice
 * (the disk row and the ring: e.g. 25 samples for 21 polls), or, the bucket not written yet, the
 * earlier period's first poll of it in neither part. docs/history.md: each poll once.
 */
import assert from "node:assert/strict";
import type { HistoryPoint } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";

/** Samples counted per second of the range (full rate or folded), as [second, count]. */
function perSecond(points: readonly HistoryPoint[]): [number, number][] {
  const out = new Map<number, number>();
  for (const p of points) {
    const s = Math.floor((p.t_ms - T0) / 1000);
    out.set(s, (out.get(s) ?? 0) + p.count);
  }
  return [...out].sort((a, b) => a[0] - b[0]);
}

const cases = [
  // The open bucket after the step (10 s) is one the ring wrote before it (10..14 s).
  { diskStepMs: 5000, back: 7, after: 1, why: "written before the step" },
  { diskStepMs: 2000, back: 3, after: 1, why: "written before the step" },
  // The open bucket after the step (15 s) is the one open before it (15..19 s), not written yet.
  { diskStepMs: 5000, back: 3, after: 2, why: "still open from before the step" },
];

for (const { diskStepMs, back, after, why } of cases) {
  for (const stepMs of [0, 1000, 10_000]) {
    Deno.test(`History.query after a wall clock stepped back ${back} s (memory_seconds 30, disk step ${diskStepMs} ms), the open bucket ${why} (step_ms ${stepMs}): each poll of the repeated times once`, async () => {
      const { clock, history, poll } = handFedHistory({ stepMs: diskStepMs, memorySeconds: 30 });
      clock.wall = T0;
      await history.start();
      try {
        const polled: number[] = []; // the second of each poll
        const tick = (v: number) => {
          polled.push(Math.floor((clock.wall - T0) / 1000));
          poll("p", "a", v);
          clock.wall += 1000;
          clock.mono += 1000;
        };
        for (let s = 0; s < 20; s++) tick(s);
        clock.wall -= back * 1000; // stepped back
        for (let s = 0; s < after; s++) tick(1000 + s);
        await history.flushDisk();
        const answer = await history.query({
          providerId: "p",
          deviceId: "a",
          signalIds: ["x"],
          sinceMs: T0,
          untilMs: T0 + 99_999,
          stepMs,
        });
        assert.equal(answer.incomplete, null);
        const points = answer.signals[0]!.points;
        const total = points.reduce((n, p) => n + p.count, 0);
        assert.equal(total, polled.length, `${total} samples counted for ${polled.length} polls`);
        // Per bucket of the wider step (the disk's or the answer's), both periods' polls of it.
        const wide = Math.max(stepMs, diskStepMs) / 1000;
        const fold = (pairs: [number, number][]) => {
          const out = new Map<number, number>();
          for (const [s, n] of pairs) {
            const b = s - (s % wide);
            out.set(b, (out.get(b) ?? 0) + n);
          }
          return [...out].sort((x, y) => x[0] - y[0]);
        };
        assert.deepEqual(
          fold(perSecond(points)),
          fold(polled.map((s) => [s, 1])),
          "each bucket's polls once",
        );
        const times = points.map((p) => p.t_ms);
        assert.deepEqual(times, [...times].sort((a, b) => a - b), "in time order");
      } finally {
        await history.stop();
      }
    });
  }
}
