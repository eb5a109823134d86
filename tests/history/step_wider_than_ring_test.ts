/**
 * history.step_ms wider than the ring's reach (a long disk bucket, or a reach cut short by
 * memory_max_bytes): the bucket the ring's oldest poll falls in is still open, on no disk, so the
 * ring answers from its oldest poll -- not from the next disk bucket, which has not begun.
 * A real History fed by hand; the disk tier on in-memory files.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";

const T0 = 1_700_000_000_000;

Deno.test("History.query answers the ring's samples when history.step_ms is longer than memory_seconds", async () => {
  const { clock, history, poll } = handFedHistory({ stepMs: 60_000, memorySeconds: 10 });
  clock.wall = T0;
  await history.start();
  try {
    for (let s = 0; s <= 30; s++) {
      poll("p0", "d0", s);
      clock.wall += 1000;
    }
    clock.wall -= 1000; // now: the last poll, 30 s into the first minute
    const answer = await history.query({ providerId: "p0", deviceId: "d0", signalIds: ["x"] });
    assert.equal(answer.source, "memory");
    assert.deepEqual(
      answer.signals[0]!.points.map((p) => p.last),
      [20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30],
      "the ring's last 10 s",
    );
  } finally {
    await history.stop();
  }
});
