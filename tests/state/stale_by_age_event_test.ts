/**
 * A sample that goes STALE by age is a quality change like any other (docs/http-api.md: SSE sends
 * `quality_change` whenever the quality changes): a signal the provider stopped answering, once
 * its OK sample is past its bound, is stored STALE at the device's next poll and the change is
 * published -- so SSE clients and Sparkplug's DDATA (which follow the events) learn of it, as
 * GET /v0/state shows it. Answered again, it is OK again, published too.
 */
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { dbl, type Inventory, startProgrammable, T } from "../helpers/programmable_provider.ts";

const INVENTORY: Inventory = {
  devices: {
    probe: {
      signals: [{ id: "temp", type: T.DOUBLE }, { id: "flow", type: T.DOUBLE }],
      values: [dbl("temp", 25), dbl("flow", 1)],
    },
  },
};

const qualityChanges = (events: RuntimeEvent[]) =>
  events.flatMap((e) =>
    e.kind === "quality_change" ? [[e.signal_id, e.old_quality, e.new_quality]] : []
  );

Deno.test("a signal left out of the answers is stored STALE at the first poll past its bound, and the change is published", async () => {
  // Samples go stale 1000 ms after the runtime received them (monotonic; the test moves it).
  const fx = await startProgrammable(INVENTORY, {
    mono: 1_000,
    staleness: { warnAfterMs: 0, staleAfterMs: 1000 },
    inProcess: true,
  });
  try {
    await fx.cache.pollDevice("p0", "probe");
    assert.equal(fx.cache.signal("p0", "probe", "temp")?.quality, "OK");
    fx.events.length = 0;
    // temp is no longer answered; flow is.
    await fx.program("probe", { read: { values: [dbl("flow", 1)] } });
    fx.clock.mono = 1_000 + 1000;
    await fx.cache.pollDevice("p0", "probe");
    assert.deepEqual(qualityChanges(fx.events), [], "exactly at the bound: still OK");
    fx.clock.mono = 1_000 + 1001;
    await fx.cache.pollDevice("p0", "probe");
    assert.deepEqual(qualityChanges(fx.events), [["temp", "OK", "STALE"]]);
    const temp = fx.cache.signal("p0", "probe", "temp")!;
    assert.equal(temp.quality, "STALE");
    assert.deepEqual(temp.value, { type: "double", double: 25 }, "its last value is kept");
    await fx.cache.pollDevice("p0", "probe");
    assert.equal(qualityChanges(fx.events).length, 1, "said once");
    // Answered again: OK again, said so.
    await fx.program("probe", { read: { values: [dbl("temp", 26), dbl("flow", 1)] } });
    await fx.cache.pollDevice("p0", "probe");
    assert.deepEqual(qualityChanges(fx.events), [["temp", "OK", "STALE"], ["temp", "STALE", "OK"]]);
  } finally {
    await fx.close();
  }
});
