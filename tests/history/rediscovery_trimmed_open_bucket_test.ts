/**
 * A step_ms longer than the ring's reach: the bucket of the ring's oldest poll is still open when
 * the ring has dropped that bucket's first polls. A rediscovery (the provider restarted by a
 * reload) writes that bucket early, those polls with it: the disk tier holds them, so a question
 * over the bucket answers them (docs/history.md: `incomplete` is null when the answer holds every
 * point the two tiers have of the range), none twice.
 */
import assert from "node:assert/strict";
import { probeValues, reloadRestartingP0, startRig, T0 } from "./_history_helpers.ts";

Deno.test("GET /v0/history over an open bucket a rediscovery wrote early answers the polls the ring dropped from the disk tier, none twice", async () => {
  // Buckets of an hour, a ring of 10 s: the polls of the first seconds leave the ring long before
  // their bucket is written.
  const rig = await startRig({ history: { stepMs: 3_600_000, memorySeconds: 10 } });
  try {
    for (let i = 1; i <= 20; i++) await rig.poll(T0 + i * 1000, probeValues(i, i));
    // A reload restarts p0: a rediscovery, which writes the open bucket's row early.
    await reloadRestartingP0(rig);
    await rig.poll(T0 + 21_000, probeValues(21, 21));
    await rig.poll(T0 + 22_000, probeValues(22, 22));
    const a = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 30_000}`,
    );
    assert.equal(a.incomplete, null);
    const points: { min: number | null; max: number | null; count: number }[] = a.signals[0]
      .points;
    const values = points.flatMap((p) => [p.min, p.max]).filter((v) => v !== null);
    assert.equal(Math.min(...values), 1, `the dropped polls answered: ${JSON.stringify(a)}`);
    assert.equal(Math.max(...values), 22);
    // Every poll of the range once: 20 of the first process (and the priming poll before them),
    // the restart's, 2 of the new process's.
    const stepped = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 30_000}&step_ms=3600000`,
    );
    assert.equal(
      points.reduce((n, p) => n + p.count, 0),
      stepped.signals[0].points.reduce((n: number, p: { count: number }) => n + p.count, 0),
      "the same samples with and without a step",
    );
  } finally {
    await rig.rt.stop();
  }
});
