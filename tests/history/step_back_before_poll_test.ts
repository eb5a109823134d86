/**
 * A question asked right after a step back of the wall clock behind the files' newest row, before
 * the next poll: neither the ring nor the files have seen the step yet (the next rows handed to the
 * disk are the open buckets from before it), so the answer is the one before the step. Before, the
 * disk tier judged the step pending from the clock alone and read every row as of a period before
 * a step back, while the ring still answered the same polls as its own: a ring with a step back of
 * its own behind it (priorBucketMs) had them counted twice, once from each tier (found by the seam
 * property test asking before the poll that follows a clock operation, seed 2, shrunk to this).
 * docs/history.md: a question over times repeated by steps back is answered from all periods,
 * each sample counted once.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";

/** The disk tier's bucket (the least history.step_ms allows). */
const STEP_MS = 1000;
/** The ring's reach (the least history.memory_seconds allows). */
const MEMORY_SECONDS = 10;
/** The first poll's time (since T0); the first step back lands STEP_BACK_MS behind it. */
const FIRST_MS = 20_000;
const STEP_BACK_MS = 15_000;
/** Polls after the first step back, a second apart: the ring drops the poll from before it. */
const POLLS_AFTER = 12;

for (const secondBackMs of [3000, 14_000]) {
  for (const stepMs of [0, STEP_MS, 5000]) {
    Deno.test(`History.query right after a second step back of ${secondBackMs} ms of the wall clock, before the next poll (step_ms ${stepMs}): each poll once, and after that poll too`, async () => {
      const { clock, history, poll } = handFedHistory({
        stepMs: STEP_MS,
        memorySeconds: MEMORY_SECONDS,
        diskMaxBytes: 256 * 1024,
      });
      /** Every poll's time since T0. */
      const polled: number[] = [];
      const tick = (v: number) => {
        polled.push(clock.wall - T0);
        poll("p", "a", v);
      };
      /** Per bucket of the answer's step (at least the disk's): [start since T0, samples]. */
      const wide = Math.max(stepMs, STEP_MS);
      const fold = (pairs: readonly (readonly [number, number])[]) => {
        const out = new Map<number, number>();
        for (const [t, n] of pairs) {
          const b = Math.floor(t / wide) * wide;
          out.set(b, (out.get(b) ?? 0) + n);
        }
        return [...out].sort((x, y) => x[0] - y[0]);
      };
      const check = async (when: string) => {
        const answer = await history.query({
          providerId: "p",
          deviceId: "a",
          signalIds: ["x"],
          sinceMs: T0 - 30_000,
          untilMs: T0 + 29_999,
          stepMs,
        });
        assert.equal(answer.incomplete, null, `${when}: incomplete`);
        const points = answer.signals[0]!.points;
        assert.deepEqual(
          fold(points.map((p) => [p.t_ms - T0, p.count])),
          fold(polled.map((t) => [t, 1])),
          `${when}: each poll once, per bucket [start since T0, samples] ` +
            `(memory_from_ms ${(answer.memory_from_ms ?? NaN) - T0})`,
        );
      };
      clock.wall = T0 + FIRST_MS;
      clock.mono = 1000;
      await history.start();
      try {
        tick(1);
        // The first step back: the device's rows before it reach FIRST_MS (priorBucketMs).
        clock.wall -= STEP_BACK_MS;
        clock.mono += 1000;
        tick(2);
        for (let i = 0; i < POLLS_AFTER; i++) {
          clock.wall += 1000;
          clock.mono += 1000;
          tick(3 + i);
        }
        await history.flushDisk();
        await check("before the second step back");
        // Behind the files' newest row; no poll yet (its bucket still open, unwritten).
        clock.stepWall(-secondBackMs);
        await check("right after the second step back, before the next poll");
        tick(100);
        await history.flushDisk();
        await check("after the poll that follows it");
        clock.wall += 1000;
        clock.mono += 1000;
        tick(101);
        await history.flushDisk();
        await check("after the poll in the next bucket");
      } finally {
        await history.stop();
      }
    });
  }
}
