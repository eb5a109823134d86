/**
 * A stepped history answer over the seam of the two tiers: the disk tier's buckets and the ring's
 * samples that fall in the same bucket of the asked step are one point, not two at the same time.
 */
import assert from "node:assert/strict";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";

Deno.test("GET /v0/history with a step wider than the disk's folds the disk's and the ring's samples of one bucket into one point", async () => {
  const rig = await startRig({
    history: { stepMs: 1000, diskMaxBytes: 1024 * 1024, memorySeconds: 10 },
  });
  try {
    // Seconds 1..30: temp i at i s, i + 0.5 at i.5 s. The ring keeps the last 10 s (from 21 s).
    for (let i = 1; i <= 30; i++) {
      await rig.poll(T0 + i * 1000, probeValues(i, i));
      await rig.poll(T0 + i * 1000 + 500, probeValues(i + 0.5, i));
    }
    const a = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 30_999}&step_ms=10000`,
    );
    assert.equal(a.source, "memory+disk");
    assert.ok(a.memory_from_ms % 10_000 !== 0, `the seam inside a bucket: ${a.memory_from_ms}`);
    assert.deepEqual(a.signals[0].points, [
      { t_ms: T0, min: 1, max: 9.5, last: 9.5, count: 18, quality: "OK" },
      { t_ms: T0 + 10_000, min: 10, max: 19.5, last: 19.5, count: 20, quality: "OK" },
      { t_ms: T0 + 20_000, min: 20, max: 29.5, last: 29.5, count: 20, quality: "OK" },
      { t_ms: T0 + 30_000, min: 30, max: 30.5, last: 30.5, count: 2, quality: "OK" },
    ]);
  } finally {
    await rig.rt.stop();
  }
});
