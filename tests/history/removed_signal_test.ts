/**
 * A signal a rediscovery removed: its ring is released at once, but its buckets are on the disk
 * tier; a history question naming it gets them, also for the time the ring still holds of its
 * device.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";

Deno.test("History answers a signal removed by a rediscovery from the disk tier, up to its removal", async () => {
  const { clock, history, pollSignals: poll } = handFedHistory({
    stepMs: 1000,
    diskMaxBytes: 1 << 20,
  });
  await history.start();
  try {
    const t0 = clock.wall;
    const both = ["x", "y"];
    for (let i = 0; i < 5; i++) {
      poll(both, i);
      clock.advance(1000);
    }
    // A rediscovery: y is no longer declared.
    const onlyX = ["x"];
    for (let i = 5; i < 8; i++) {
      poll(onlyX, i);
      clock.advance(1000);
    }
    await history.flushDisk();
    const answer = await history.query({
      providerId: "p",
      deviceId: "d",
      signalIds: ["y"],
      sinceMs: t0,
      untilMs: clock.wall,
    });
    const y = answer.signals.find((s) => s.signal_id === "y")!;
    assert.deepEqual(
      y.points.map((p) => p.last),
      [0, 1, 2, 3, 4],
      "the removed signal's samples on disk are not answered",
    );
  } finally {
    await history.stop();
  }
});
