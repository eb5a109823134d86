/**
 * The wall clock stepped back twice, the ring keeping polls from before the second step but none
 * from before the first: the disk rows of the first period lie among the repeated times the ring
 * answers from its oldest kept poll on (preCut), yet the ring holds none of their polls. Before,
 * only the rows before the bucket after that poll were the disk's, so the first period's row
 * ahead of it was in neither part (found by the seam property test, seeds 31 and 38, shrunk to
 * this). docs/history.md: a question over times repeated by steps back is answered from all
 * periods, each poll once.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";

/** The disk tier's bucket, and the answer's bucket when folded. */
const STEP_MS = 1000;

/**
 * Polls as [wall time since T0, monotonic time, the buckets of every poll so far as [start since
 * T0, value]]: steps back at the second and the fourth.
 */
const POLLS: readonly (readonly [number, number, readonly (readonly [number, number])[]])[] = [
  [4000, 1000, [[4000, 1]]],
  // Stepped back 13.1 s.
  [-9143, 1000, [[-10_000, 2], [4000, 1]]],
  // 11.9 s later: both polls before are older than memory_seconds (10 s), the ring drops them.
  [2714, 12857, [[-10_000, 2], [2000, 3], [4000, 1]]],
  // Stepped back 19.9 s: the ring keeps 2714 from before this step, nothing from before the first;
  // the new period's first row is still to come (its bucket open).
  [-16490, 13619, [[-17_000, 4], [-10_000, 2], [2000, 3], [4000, 1]]],
  // Into the next bucket: that row begins the new period's file.
  [-15000, 15109, [[-17_000, 4], [-15_000, 5], [-10_000, 2], [2000, 3], [4000, 1]]],
];

for (const stepMs of [0, STEP_MS]) {
  Deno.test(`History.query after two steps back of the wall clock, the ring keeping a poll from before the second only (step_ms ${stepMs}): the first period's rows come from the disk, each poll once`, async () => {
    const { clock, history, poll } = handFedHistory({
      stepMs: STEP_MS,
      memorySeconds: 10,
      diskMaxBytes: 256 * 1024,
    });
    clock.wall = T0 + POLLS[0]![0];
    clock.mono = POLLS[0]![1];
    await history.start();
    try {
      for (let i = 0; i < POLLS.length; i++) {
        const [wall, mono, want] = POLLS[i]!;
        clock.wall = T0 + wall;
        clock.mono = mono;
        poll("p", "a", i + 1);
        await history.flushDisk();
        const answer = await history.query({
          providerId: "p",
          deviceId: "a",
          signalIds: ["x"],
          sinceMs: T0 - 30_000,
          untilMs: T0 + 9_999,
          stepMs,
        });
        assert.equal(answer.incomplete, null);
        // Per bucket of the disk's step: [its start since T0, samples, their value].
        const got = answer.signals[0]!.points.map((p) => [
          Math.floor((p.t_ms - T0) / STEP_MS) * STEP_MS,
          p.count,
          p.min,
        ]);
        assert.deepEqual(
          got,
          want.map(([t, v]) => [t, 1, v]),
          `after the poll at ${wall}: each poll once, in time order`,
        );
      }
    } finally {
      await history.stop();
    }
  });
}
