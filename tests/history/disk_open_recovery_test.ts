/**
 * A disk tier that failed to open at start (a read-only or full disk) and recovers at its retry
 * (DISK_RETRY_MS later) learns the files' last row as an open does (docs/history.md, "The disk
 * tier"): a restart within a bucket answers that bucket with the samples of both runs, and a
 * wall clock behind the last row begins a new file, whose rows a question then finds. A real
 * History fed by hand on in-memory files whose history folder refuses to open while told to.
 */
import assert from "node:assert/strict";
import { DISK_RETRY_MS, type HistoryAnswer } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { RefusingFiles } from "./_rig.ts";

const T0 = 1_700_000_000_000;

/** A first run polling `p0/d0` signal x = its second, from `fromS` to `untilS` (excluded). */
async function firstRun(files: RefusingFiles, fromS: number, untilS: number): Promise<void> {
  const first = handFedHistory({ stepMs: 10_000, memorySeconds: 120 }, files);
  first.clock.wall = T0 + fromS * 1000;
  await first.history.start();
  for (let s = fromS; s < untilS; s++) {
    first.poll("p0", "d0", s);
    first.clock.wall += 1000;
  }
  await first.history.stop(); // its open bucket is written at stop
}

const points = (answer: HistoryAnswer) =>
  answer.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.min, p.max, p.count]);

Deno.test("DiskTier recovered from a failed open answers a restart's bucket with the samples of both runs", async () => {
  const files = new RefusingFiles();
  await firstRun(files, 0, 15); // bucket 10..19 s: 10..14 written at stop

  files.refuse = true;
  const second = handFedHistory({ stepMs: 10_000, memorySeconds: 120 }, files);
  second.clock.wall = T0 + 17_000;
  await second.history.start();
  try {
    assert.equal(second.history.status().disk.state, "stopped");
    files.refuse = false;
    // The retry is due by the time the restart's bucket closes (on the monotonic clock).
    second.clock.mono += DISK_RETRY_MS;
    for (let s = 17; s < 22; s++) {
      second.poll("p0", "d0", s);
      second.clock.wall += 1000;
    }
    await second.history.flushDisk();
    assert.equal(second.history.status().disk.state, "ok");
    const answer = await second.history.query({
      providerId: "p0",
      deviceId: "d0",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + 21_999,
      stepMs: 10_000,
    });
    // As after an open that worked (restart_seam_test.ts): 10..14 of the first run, 17..19 of
    // this one, none counted twice.
    assert.deepEqual(points(answer), [[0, 0, 9, 10], [10, 10, 19, 8], [20, 20, 21, 2]]);
  } finally {
    await second.history.stop();
  }
});

Deno.test("DiskTier recovered from a failed open begins a new file for a wall clock behind the last row: its rows are answered", async () => {
  const files = new RefusingFiles();
  await firstRun(files, 3600, 3630); // an hour ahead of the next run's clock

  files.refuse = true;
  const second = handFedHistory({ stepMs: 10_000, memorySeconds: 120 }, files);
  second.clock.wall = T0; // stepped back behind the last row (a board without a real-time clock)
  await second.history.start();
  files.refuse = false;
  second.clock.mono += DISK_RETRY_MS;
  for (let s = 0; s < 25; s++) {
    second.poll("p0", "d0", s);
    second.clock.wall += 1000;
  }
  await second.history.stop(); // 0..9 and 10..19 written after the retry, 20..24 at stop
  const names = (await files.listNames("/data/history")).filter((n) => n.endsWith(".jsonl"));

  // A third run reads them from the disk alone (its ring holds none of them).
  const third = handFedHistory({ stepMs: 10_000, memorySeconds: 120 }, files);
  third.clock.wall = T0 + 7200_000;
  await third.history.start();
  try {
    const answer = await third.history.query({
      providerId: "p0",
      deviceId: "d0",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + 29_999,
      stepMs: 10_000,
    });
    assert.deepEqual(points(answer), [[0, 0, 9, 10], [10, 10, 19, 10], [20, 20, 24, 5]]);
    assert.equal(names.length, 2, `rows ascend within each file: ${names.join(", ")}`);
  } finally {
    await third.history.stop();
  }
});
