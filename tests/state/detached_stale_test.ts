/**
 * A cache whose providers a failed start-up detached (StateCache.detachProviders) publishes
 * nothing more of them, also no STALE by age: a signal the provider stopped answering, past its
 * bound, would be stored STALE at the next answered poll and published as a quality_change (SSE,
 * telemetry, the history, the alarms, the runs). Detached, polls still run until stop() but their
 * answers are not stored: no quality_change, no state_update; the last sample is kept as it was
 * (a read still judges it STALE by age). The child process of the programmable provider; the
 * monotonic clock moved by the test.
 */
import assert from "node:assert/strict";
import { dbl, type Inventory, startProgrammable, T } from "../helpers/programmable_provider.ts";

/** Every sample's bound: the test moves the clock past it. */
const STALE_AFTER_MS = 1000;

const INVENTORY: Inventory = {
  devices: {
    probe: {
      signals: [{ id: "temp", type: T.DOUBLE }, { id: "flow", type: T.DOUBLE }],
      values: [dbl("temp", 25), dbl("flow", 1)],
    },
  },
};

Deno.test("a detached cache publishes no STALE quality_change of a signal gone past its bound, nor any answer", async () => {
  const fx = await startProgrammable(INVENTORY, {
    mono: 1_000,
    staleness: { warnAfterMs: 0, staleAfterMs: STALE_AFTER_MS },
  });
  try {
    await fx.cache.pollDevice("p0", "probe");
    assert.equal(fx.cache.signal("p0", "probe", "temp")?.quality, "OK");
    // temp is no longer answered, flow changes: attached, both would be published.
    await fx.program("probe", { read: { values: [dbl("flow", 2)] } });
    fx.events.length = 0;
    fx.cache.detachProviders();
    fx.clock.mono = 1_000 + STALE_AFTER_MS + 1;
    await fx.cache.pollDevice("p0", "probe");
    fx.clock.mono += 10 * STALE_AFTER_MS;
    await fx.cache.pollDevice("p0", "probe");
    assert.deepEqual(fx.events.map((e) => e.kind), [], "nothing published once detached");
    const temp = fx.cache.signal("p0", "probe", "temp")!;
    assert.equal(temp.quality, "OK", "kept as it was, not stored STALE");
    assert.equal(
      fx.cache.qualityNow("p0", "probe", "temp", temp),
      "STALE",
      "a read judges it by age",
    );
    assert.deepEqual(fx.cache.signal("p0", "probe", "flow")?.value, { type: "double", double: 1 });
  } finally {
    await fx.close();
  }
});
