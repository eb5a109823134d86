/**
 * A restart behind the files' last row (a board without a real-time clock): the earlier run's
 * last buckets are of the repeated times, and the new run's first bucket is open (its row not yet
 * written). A question over the whole range counts every poll of both runs once -- also when the
 * clock has passed the earlier run's last bucket before the next poll (the disk tier then cannot
 * tell from the clock alone that the open bucket's row will begin a new file).
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";

const HISTORY = { stepMs: 2000, memorySeconds: 30 };

/**
 * A first run polling x = s at T0 + s seconds for s in 0..19 (disk buckets of 2 s), stopped; a
 * second run started `backMs` behind the first's stop, one poll of x = 1000, the clock then moved
 * on `afterMs`. Resolves the counts and `incomplete` of a question over both runs at `stepMs`.
 */
async function restartedBehind(backMs: number, afterMs: number, stepMs: number) {
  let h = handFedHistory(HISTORY);
  h.clock.wall = T0;
  await h.history.start();
  for (let s = 0; s < 20; s++) {
    h.poll("p", "a", s);
    h.clock.wall += 1000;
    h.clock.mono += 1000;
  }
  await h.history.stop();
  const wall = h.clock.wall - backMs;
  h = handFedHistory(HISTORY, h.files);
  h.clock.wall = wall;
  h.clock.mono = 5_000_000;
  await h.history.start();
  try {
    h.poll("p", "a", 1000);
    h.clock.wall += afterMs;
    h.clock.mono += afterMs;
    await h.history.flushDisk();
    const a = await h.history.query({
      providerId: "p",
      deviceId: "a",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + 99_999,
      stepMs,
    });
    const points = a.signals[0]!.points;
    const counted = points.reduce((n, p) => n + p.count, 0);
    const shown = points.map((p) => `${(p.t_ms - T0) / 1000}:${p.count}`).join(" ");
    return { counted, incomplete: a.incomplete, shown };
  } finally {
    await h.history.stop();
  }
}

for (const backMs of [1000, 3000, 5000]) {
  for (const afterMs of [1000, 6000]) {
    for (const stepMs of [0, 10_000]) {
      Deno.test(
        `history: a restart ${backMs / 1000} s behind, asked ${afterMs / 1000} s after its ` +
          `first poll at step_ms ${stepMs}: every poll of both runs counted once`,
        async () => {
          const { counted, incomplete, shown } = await restartedBehind(backMs, afterMs, stepMs);
          assert.equal(counted, 21, shown);
          assert.equal(incomplete, null, shown);
        },
      );
    }
  }
}
