/**
 * A restart that raises history.step_ms (docs/history.md: "raise `disk_max_bytes` (or `step_ms`)
 * for more"; every history key is restart-only): the stopped run wrote its last rows in buckets of
 * the old step, and the new run's first bucket, of the new step, holds several of them, still
 * open. A question over it answers the stopped run's samples in that bucket too, as a restart
 * within a bucket of the same step does ("a restart within it answers that bucket with the
 * samples of both runs"). Before, only the row at the new bucket's start was read: the stopped
 * run's rows after it (10 s .. 30 s into it) were in neither tier until the new bucket closed
 * (up to step_ms, an hour at most, later), while the same question after it answered them.
 */
import assert from "node:assert/strict";
import { tempDir } from "../helpers/kernel.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { probeFile, probeValues, startRig, T0 } from "./_history_helpers.ts";

/** A multiple of both steps (T0 is one of 10 s, not of 60 s). */
const B = T0 + 40_000;

Deno.test("GET /v0/history after a restart that raised step_ms answers the stopped run's rows of the open bucket", async () => {
  const dataDir = tempDir("history-step-raised-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = B;
  // The first run: buckets of 10 s; temp = s at B + s seconds, rows B, B + 10 s, .. + 30 s.
  const first = await startRig({
    history: { stepMs: 10_000, memorySeconds: 120 },
    dataDir,
    clock,
    inventoryFile,
  });
  try {
    for (const s of [1, 12, 23, 34]) await first.poll(B + s * 1000, probeValues(s, s));
  } finally {
    await first.rt.stop(); // the open bucket (B + 30 s ..) is written at stop
  }
  // The second run: buckets of 60 s, the first one [B, B + 60 s) open.
  clock.wallMs = B + 40_000;
  const rig = await startRig({
    history: { stepMs: 60_000, memorySeconds: 120 },
    dataDir,
    clock,
    inventoryFile,
  });
  try {
    await rig.poll(B + 45_000, probeValues(45, 45));
    const path = `/v0/history/p0/probe?signal_id=temp&since_ms=${B}&until_ms=${B + 59_999}`;
    const open = await rig.json(`${path}&step_ms=60000`);
    const fullRate = await rig.json(path);
    // The bucket written (the polls cross into the next one): the reference.
    await rig.poll(B + 61_000, probeValues(61, 61));
    const written = await rig.json(`${path}&step_ms=60000`);
    const point = written.signals[0].points[0];
    assert.deepEqual([point.min, point.max], [1, 45], JSON.stringify(written));
    const openPoint = open.signals[0].points[0];
    assert.deepEqual(
      [openPoint.min, openPoint.max, openPoint.count],
      [1, 45, point.count],
      `the open bucket answers the stopped run's samples, all of them: ${JSON.stringify(open)}`,
    );
    const points: { max: number | null; count: number }[] = fullRate.signals[0].points;
    assert.deepEqual(
      [Math.max(...points.map((p) => p.max ?? -Infinity)), points.reduce((n, p) => n + p.count, 0)],
      [45, point.count],
      `without a step too: ${JSON.stringify(fullRate)}`,
    );
    assert.ok(
      points.some((p) => p.max === 34),
      `the stopped run's last sample: ${JSON.stringify(fullRate)}`,
    );
  } finally {
    await rig.rt.stop();
  }
});
