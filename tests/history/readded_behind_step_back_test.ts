/**
 * A device dropped in a run (a reload removed it, or its provider's restart left it out of the
 * inventory) for longer than memory_seconds -- the sweep lets its ring go -- and picked up again in
 * the SAME run, behind its own rows on disk (the wall clock stepped back while it was away) or
 * stepped back past them after: its rows from before the drop are on disk only, as an earlier
 * run's are (restart_behind_step_back_test.ts). A question over the whole range counts every poll
 * of the device once (docs/history.md), with a manual clock.
 */
import assert from "node:assert/strict";
import { HISTORY_SWEEP_EVERY_MS, type HistoryPoint } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";
import { fold } from "./_rig.ts";

const HISTORY = { stepMs: 2000, memorySeconds: 30 };
/** Seconds the device is away: the sweep has let its ring go by then. */
const AWAY = HISTORY.memorySeconds + HISTORY_SWEEP_EVERY_MS / 1000 + 5;

/** Samples counted per second of the range (full rate or folded), as [second, count]. */
function perSecond(points: readonly HistoryPoint[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const p of points) {
    const s = Math.floor((p.t_ms - T0) / 1000);
    out.set(s, (out.get(s) ?? 0) + p.count);
  }
  return out;
}

const cases = [
  // Polled 0..19, away; the wall clock stepped back to 10 while it was; picked up again: 8 polls.
  { awayBack: AWAY + 10, before: 8, back: 0, after: 0 },
  // As that, then stepped back again 3 s within the ring's reach: 3 polls more. The rows of its old
  // ring from the new ring's oldest pre-step bucket on are the disk's, not the ring's: each row
  // names the ring that wrote it (rowRing), as DiskTier.read's ofEarlierRun tells an earlier run's
  // (23 samples for 29 polls before).
  { awayBack: AWAY + 10, before: 6, back: 3, after: 3 },
  // Picked up again at 65 s (no step while away), 5 polls, then stepped back past its old rows.
  { awayBack: 0, before: 5, back: 61, after: 5 },
  // Picked up again at 65 s, 5 polls, stepped back 4 s (within the ring's reach), 3 polls.
  { awayBack: 0, before: 5, back: 4, after: 3 },
];

for (const { awayBack, before, back, after } of cases) {
  for (const stepMs of [0, 10_000]) {
    Deno.test({
      name: `History.query of a device swept and picked up again in the same run (stepped back ` +
        `${awayBack} s while away, ${before} polls, stepped back ${back} s, ${after} polls; ` +
        `step_ms ${stepMs}): every poll counted once`,
      fn: async () => {
        const polled: number[] = []; // the second of each poll of p/a
        const h = handFedHistory(HISTORY);
        h.clock.wall = T0;
        h.clock.mono = 1_000_000;
        await h.history.start();
        try {
          const tick = (withA: boolean, v: number) => {
            h.poll("p", "k", v);
            if (withA) {
              polled.push(Math.floor((h.clock.wall - T0) / 1000));
              h.poll("p", "a", v);
            }
            h.clock.wall += 1000;
            h.clock.mono += 1000;
          };
          for (let s = 0; s < 20; s++) tick(true, s);
          h.known.delete("p/a"); // dropped: a reload removed it
          for (let s = 0; s < AWAY; s++) tick(false, 100 + s);
          assert.equal(h.history.knows("p", "a"), false, "the sweep let it go");
          h.clock.wall -= awayBack * 1000;
          for (let k = 0; k < before; k++) tick(true, 1000 + k);
          h.clock.wall -= back * 1000;
          for (let k = 0; k < after; k++) tick(true, 2000 + k);
          await h.history.flushDisk();
          const answer = await h.history.query({
            providerId: "p",
            deviceId: "a",
            signalIds: ["x"],
            sinceMs: T0,
            untilMs: T0 + 99_999,
            stepMs,
          });
          const points = answer.signals[0]!.points;
          const shown = points.map((p) => `${(p.t_ms - T0) / 1000}:${p.count}`).join(" ");
          assert.equal(answer.incomplete, null, shown);
          const total = points.reduce((n, p) => n + p.count, 0);
          assert.equal(
            total,
            polled.length,
            `${total} samples for ${polled.length} polls: ${shown}`,
          );
          const wide = Math.max(stepMs, HISTORY.stepMs) / 1000;
          assert.deepEqual(
            fold(perSecond(points), wide),
            fold(polled.map((s) => [s, 1]), wide),
            `each bucket's polls once: ${shown}`,
          );
          const times = points.map((p) => p.t_ms);
          assert.deepEqual(times, [...times].sort((a, b) => a - b), "in time order");
        } finally {
          await h.history.stop();
        }
      },
    });
  }
}
