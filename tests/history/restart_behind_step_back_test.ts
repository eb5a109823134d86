/**
 * A run begun behind the files' last row (a board without a real-time clock restarted before NTP)
 * whose wall clock then steps back AGAIN, less than the ring reaches (memory_seconds): three
 * periods of the repeated times -- the earlier run's rows (disk only), this run's polls before the
 * second step (ring and disk) and those after it (ring). A question over the whole range counts
 * every poll of both runs once (docs/history.md), with a manual clock.
 */
import assert from "node:assert/strict";
import type { HistoryPoint } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";
import { fold } from "./_rig.ts";

const HISTORY = { stepMs: 2000, memorySeconds: 30 };

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
  // Restarted 10 s behind (at 30 s of 0..39), 10 polls, stepped back 5 s, 3 polls.
  { behind: 10, before: 10, back: 5, after: 3 },
  // Restarted 10 s behind, 6 polls (30..35), stepped back 4 s (to 32), 6 polls.
  { behind: 10, before: 6, back: 4, after: 6 },
  // Restarted 3 s behind, 4 polls (37..40), stepped back 2 s (to 39), 1 poll.
  { behind: 3, before: 4, back: 2, after: 1 },
];

for (const { behind, before, back, after } of cases) {
  for (const stepMs of [0, 10_000]) {
    Deno.test(
      `History.query after a restart ${behind} s behind the files and a step back of ${back} s ` +
        `within the ring's reach (${before} polls before it, ${after} after; step_ms ${stepMs}): ` +
        `every poll of both runs counted once`,
      async () => {
        const polled: number[] = []; // the second of each poll, both runs
        let h = handFedHistory(HISTORY);
        h.clock.wall = T0;
        await h.history.start();
        for (let s = 0; s < 40; s++) {
          polled.push(s);
          h.poll("p", "a", s);
          h.clock.wall += 1000;
          h.clock.mono += 1000;
        }
        await h.history.stop();
        const wall = h.clock.wall - behind * 1000;
        h = handFedHistory(HISTORY, h.files);
        h.clock.wall = wall;
        h.clock.mono = 5_000_000;
        await h.history.start();
        try {
          const tick = (v: number) => {
            polled.push(Math.floor((h.clock.wall - T0) / 1000));
            h.poll("p", "a", v);
            h.clock.wall += 1000;
            h.clock.mono += 1000;
          };
          for (let k = 0; k < before; k++) tick(1000 + k);
          h.clock.wall -= back * 1000; // stepped back again, within the ring's reach
          for (let k = 0; k < after; k++) tick(2000 + k);
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
    );
  }
}
