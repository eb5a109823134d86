/**
 * A restart within one disk bucket: the stopped run wrote its row of the bucket at stop, and the
 * new run polls into the same bucket, still open. A question over it answers the samples of both
 * runs (docs/history.md: "a restart within it answers that bucket with the samples of both runs
 * (neither counted twice)") -- also when a rediscovery (the provider restarted by a reload) wrote
 * the new run's part of the bucket early, and also when asked from a time inside the bucket (the
 * console's trend of the last minutes with buckets longer than that), as a disk bucket overlapping
 * since_ms always is.
 */
import assert from "node:assert/strict";
import { tempDir } from "../helpers/kernel.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import {
  type HistoryRig,
  probeFile,
  probeValues,
  reloadRestartingP0,
  startRig,
  T0,
} from "./_history_helpers.ts";

// T0 is a multiple of the step: both runs' polls are in the bucket [T0, T0 + 20 s).
const HISTORY = { stepMs: 20_000, memorySeconds: 120 };

/**
 * A first run polling temp = s at T0 + s seconds for each of `firstSeconds`, stopped (its open
 * bucket written), then a second run started at T0 + 10 s that polls 11 at T0 + 11 s; `body` runs
 * with the second, stopped after it.
 */
async function restartedWithinBucket(
  prefix: string,
  firstSeconds: readonly number[],
  body: (rig: HistoryRig) => Promise<void>,
): Promise<void> {
  const dataDir = tempDir(prefix);
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  const first = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    for (const s of firstSeconds) await first.poll(T0 + s * 1000, probeValues(s, s));
  } finally {
    await first.rt.stop(); // the open bucket (T0 ..) is written at stop
  }
  clock.wallMs = T0 + 10_000;
  const rig = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    await rig.poll(T0 + 11_000, probeValues(11, 11));
    await body(rig);
  } finally {
    await rig.rt.stop();
  }
}

Deno.test("GET /v0/history over a restart and a rediscovery within one open disk bucket answers both runs' samples, none twice", async () => {
  await restartedWithinBucket("history-rediscovery-seam-", [1, 2], async (rig) => {
    // A reload restarts p0: a rediscovery, which writes the open bucket's row early.
    await reloadRestartingP0(rig);
    await rig.poll(T0 + 15_000, probeValues(15, 15));
    const path = `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 19_999}`;
    const fullRate = await rig.json(path);
    const stepped = await rig.json(`${path}&step_ms=20000`);
    // The bucket written by both runs (the polls cross into the next one): the reference.
    await rig.poll(T0 + 21_000, probeValues(21, 21));
    const written = await rig.json(`${path}&step_ms=20000`);
    const point = written.signals[0].points[0];
    assert.equal(point.min, 1, JSON.stringify(written));
    assert.equal(point.max, 15);
    assert.deepEqual(
      [stepped.signals[0].points[0].min, stepped.signals[0].points[0].count],
      [1, point.count],
      `the open bucket answers the stopped run's samples too, none twice: ${
        JSON.stringify(stepped)
      }`,
    );
    // Without a step: the same samples (the disk's buckets where the ring's part does not reach).
    const points: { min: number | null; count: number }[] = fullRate.signals[0].points;
    assert.deepEqual(
      [Math.min(...points.map((p) => p.min ?? Infinity)), points.reduce((n, p) => n + p.count, 0)],
      [1, point.count],
      JSON.stringify(fullRate),
    );
  });
});

Deno.test("GET /v0/history from inside the open bucket a restart shares with the stopped run answers that run's samples too", async () => {
  await restartedWithinBucket("history-since-inside-", [1, 5], async (rig) => {
    const values = async (sinceMs: number) => {
      const a = await rig.json(
        `/v0/history/p0/probe?signal_id=temp&since_ms=${sinceMs}&until_ms=${T0 + 19_999}`,
      );
      const points: { min: number | null; max: number | null }[] = a.signals[0].points;
      return points.flatMap((p) => [p.min, p.max]).filter((v) => v !== null);
    };
    const fromStart = await values(T0);
    assert.ok(fromStart.includes(5), `from the bucket's start: ${fromStart}`);
    // From 4 s in: the stopped run's sample at 5 s is in the range, in the disk tier's row.
    const inside = await values(T0 + 4_000);
    assert.ok(inside.includes(5), `from inside the bucket: ${inside}`);
    assert.ok(inside.includes(11));
  });
});
