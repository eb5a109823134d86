/**
 * The poll after a call never runs beside the poll loop's poll of the same provider. The scripted
 * provider handles requests concurrently, answers ReadSignals after 150 ms, and reports the most
 * ReadSignals it ever had in flight.
 */
import assert from "node:assert/strict";
import { startDataFixture } from "./_data_helpers.ts";

Deno.test("Post-call polls and loop polls of one provider never overlap", async () => {
  // A 10 ms interval keeps the loop's poll in flight nearly all the time.
  const { fx } = await startDataFixture("overlap", { pollingIntervalMs: 10 });
  try {
    const rt = fx.runtime;
    for (let i = 0; i < 5; i++) {
      const r = await rt.router.call({
        providerId: "p0",
        deviceId: "slow0",
        functionName: "ping",
        args: {},
        origin: "manual",
      });
      assert.equal(r.postCallPollTriggered, true);
    }
    await rt.cache.pollDevice("p0", "slow0");
    assert.deepEqual(rt.cache.signal("p0", "slow0", "max_inflight")?.value, {
      type: "int64",
      int64: 1,
    });
  } finally {
    await fx.close();
  }
});

Deno.test("pollDevice polls again once the previous poll ended, and joins a poll still queued", async () => {
  // No loop poll during the test: only the priming poll of start() runs on its own.
  const { fx } = await startDataFixture("overlap", { pollingIntervalMs: 60_000 });
  try {
    const cache = fx.runtime.cache;
    const reads = () => cache.signal("p0", "slow0", "reads")?.value;
    assert.deepEqual(reads(), { type: "int64", int64: 1 });
    for (const n of [2, 3, 4]) {
      await cache.pollDevice("p0", "slow0");
      assert.deepEqual(reads(), { type: "int64", int64: n });
    }
    // Three at once: the first polls, the second waits for it, the third joins the second.
    await Promise.all([1, 2, 3].map(() => cache.pollDevice("p0", "slow0")));
    assert.deepEqual(reads(), { type: "int64", int64: 6 });
    assert.deepEqual(cache.signal("p0", "slow0", "max_inflight")?.value, {
      type: "int64",
      int64: 1,
    });
  } finally {
    await fx.close();
  }
});
