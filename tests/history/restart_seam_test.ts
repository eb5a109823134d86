/**
 * A restart within one disk bucket: the bucket the stopping run wrote (its last seconds) and the
 * new run's ring both answer a question over the restart; neither is left out, none counted twice.
 * A real History fed by hand; the disk tier on in-memory files.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";

const T0 = 1_700_000_000_000;

Deno.test("History.query over a restart within a disk bucket answers the stopped run's last samples and the new run's", async () => {
  const first = handFedHistory({ stepMs: 10_000, memorySeconds: 120 });
  first.clock.wall = T0;
  await first.history.start();
  for (let s = 0; s < 15; s++) {
    first.poll("p0", "d0", s);
    first.clock.wall += 1000;
  }
  await first.history.stop(); // the open bucket (10..14 s) is written at stop

  const second = handFedHistory({ stepMs: 10_000, memorySeconds: 120 }, first.files);
  second.clock.wall = T0 + 17_000;
  await second.history.start();
  try {
    for (let s = 17; s < 20; s++) {
      second.poll("p0", "d0", s);
      second.clock.wall += 1000;
    }
    const answer = await second.history.query({
      providerId: "p0",
      deviceId: "d0",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + 19_999,
      stepMs: 10_000,
    });
    assert.deepEqual(
      answer.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.min, p.max, p.count]),
      [[0, 0, 9, 10], [10, 10, 19, 8]],
      "the bucket still open",
    );
    // The new run's part of the bucket written too (the polls crossed into the next one).
    for (let s = 20; s < 22; s++) {
      second.poll("p0", "d0", s);
      second.clock.wall += 1000;
    }
    const later = await second.history.query({
      providerId: "p0",
      deviceId: "d0",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + 21_999,
      stepMs: 10_000,
    });
    assert.deepEqual(
      later.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.min, p.max, p.count]),
      [[0, 0, 9, 10], [10, 10, 19, 8], [20, 20, 21, 2]],
      "the bucket written by both runs",
    );
  } finally {
    await second.history.stop();
  }
});
