/**
 * StateCache.pollMetrics: every device poll lands in its provider's duration histogram (answered
 * or not) and every failed poll in its error counter, over the programmable provider (in-process)
 * with a read delay the test sets.
 */
import assert from "node:assert/strict";
import { StatusCode } from "../../src/adpp/mod.ts";
import { LATENCY_BUCKETS_SECONDS } from "../../src/common/mod.ts";
import { dbl, startProgrammable, T } from "../helpers/programmable_provider.ts";

Deno.test("StateCache.pollMetrics times every poll and counts the failed ones per provider", async () => {
  const fx = await startProgrammable({
    devices: {
      d0: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)], readDelayMs: 30 },
    },
  }, { inProcess: true });
  try {
    const m = fx.cache.pollMetrics("p0")!;
    assert.equal(m.duration.count, 0);
    await fx.cache.pollDevice("p0", "d0");
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(m.duration.count, 2);
    assert.equal(m.errors, 0);
    // Both took at least the 30 ms read delay: none is in a bucket at or below 25 ms.
    const at25 = LATENCY_BUCKETS_SECONDS.indexOf(0.025);
    for (let i = 0; i <= at25; i++) assert.equal(m.duration.bucket(i), 0, `bucket ${i}`);
    assert.ok(m.duration.sum >= 0.03 * 2, `sum ${m.duration.sum}`);
    await fx.program("d0", { read: { error: { code: StatusCode.INTERNAL } } });
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(m.duration.count, 3, "a failed poll is timed too");
    assert.equal(m.errors, 1);
    assert.equal(fx.cache.pollMetrics("nope"), undefined);
  } finally {
    await fx.close();
  }
});
