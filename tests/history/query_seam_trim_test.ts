/**
 * A history question reaching before the ring reads the disk tier and the ring: the polls go on
 * while the disk is read (a slow SD card, a long range), and the ring drops its oldest polls as
 * they pass memory_seconds, or writes the open bucket it answers. The seam between the two parts
 * must neither lose the samples the ring dropped while the disk was read nor count twice those of
 * a bucket written meanwhile: every poll of the range is in the answer once. A real History on
 * memory files whose read of the disk tier the test holds open while it polls.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { HeldReads, type ReadHold } from "./_file_faults.ts";

/** The next read of the disk tier's rows waits. */
const DISK_READ: ReadHold = {
  call: "readLinesAt",
  path: (path) => path.includes("/history/"),
  once: true,
};

for (const stepMs of [0, 1000]) {
  Deno.test(`a history question (step_ms ${stepMs}) has every poll of its range once when the ring drops polls while the disk tier is read`, async () => {
    const files = new HeldReads();
    const { clock, history, poll } = handFedHistory({ stepMs: 1000, memorySeconds: 10 }, files);
    await history.start();
    try {
      const t0 = clock.wall;
      // 30 s of polls every 250 ms: the ring holds the last 10 s, the disk tier the rest.
      const polls: number[] = [];
      const tick = () => {
        polls.push(clock.wall);
        poll("p", "d", polls.length);
        clock.wall += 250;
        clock.mono += 250;
      };
      for (let i = 0; i < 120; i++) tick();
      await history.flushDisk();
      const { reading, release } = files.hold(DISK_READ);
      // The range ends at the last poll before the question.
      const until = polls.at(-1)!;
      const answer = history.query({
        providerId: "p",
        deviceId: "d",
        signalIds: ["x"],
        sinceMs: t0,
        untilMs: until,
        stepMs,
      });
      await reading;
      // The disk read takes 3 s of polls: the ring drops 3 s of its oldest polls meanwhile.
      for (let i = 0; i < 12; i++) tick();
      release();
      const a = await answer;
      const points = a.signals[0]!.points;
      const inRange = polls.filter((t) => t <= until).length;
      const counted = points.reduce((n, p) => n + p.count, 0);
      assert.equal(
        counted,
        inRange,
        `every poll of the range once (memory_from_ms ${a.memory_from_ms! - t0} after the ` +
          `first poll; points at ${points.map((p) => p.t_ms - t0).join(",")})`,
      );
      // And each value once: the values are the polls' numbers, 1..inRange.
      const lasts = points.map((p) => p.last);
      assert.equal(lasts.at(-1), inRange);
    } finally {
      await history.stop();
    }
  });
}

Deno.test("a history question whose ring's first bucket is open has no sample twice when the ring writes that bucket while the disk tier is read", async () => {
  const files = new HeldReads();
  // A step longer than the ring's reach: the ring's oldest poll is in the bucket not yet written,
  // whose rows of earlier runs the disk part reads.
  const { clock, history, poll } = handFedHistory({ stepMs: 60_000, memorySeconds: 10 }, files);
  clock.wall = Math.ceil(clock.wall / 60_000) * 60_000;
  await history.start();
  try {
    const t0 = clock.wall;
    const polls: number[] = [];
    const tick = () => {
      polls.push(clock.wall);
      poll("p", "d", polls.length);
      clock.wall += 1000;
      clock.mono += 1000;
    };
    // Two minutes of polls each second: the first bucket written, the second open.
    for (let i = 0; i < 120; i++) tick();
    await history.flushDisk();
    const { reading, release } = files.hold(DISK_READ);
    const until = polls.at(-1)!;
    const answer = history.query({
      providerId: "p",
      deviceId: "d",
      signalIds: ["x"],
      sinceMs: t0,
      untilMs: until,
    });
    await reading;
    // The next poll crosses into the next bucket: the open one is written while the disk is read.
    tick();
    await history.flushDisk();
    release();
    const a = await answer;
    const points = a.signals[0]!.points;
    const counted = points.reduce((n, p) => n + p.count, 0);
    assert.equal(
      counted,
      polls.filter((t) => t <= until).length,
      `no poll twice (points [t - t0, count]: ${
        JSON.stringify(points.map((p) => [p.t_ms - t0, p.count]))
      })`,
    );
  } finally {
    await history.stop();
  }
});
