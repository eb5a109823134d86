/**
 * A device whose signals hint slowly is polled every k-th cycle; once its reads fail -- an error,
 * or an answer with none of its polled signals or none of them OK -- it is polled every cycle, so
 * DeviceOutages judges it on consecutive failing reads (docs/safety.md), not on one read followed
 * by a poll period of silence.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { ADPP_DEADLINE_TIMER, ManualClock } from "../helpers/clock.ts";
import { DeviceOutages } from "../../src/state/mod.ts";
import { dbl, Q, startProgrammable, T } from "../helpers/programmable_provider.ts";

const INTERVAL_MS = 100;
const DOWN_AFTER_MS = 500;

Deno.test("StateCache polls a slow device every cycle after an answer with no OK signal: one bad read does not make it down", async () => {
  // x hints 1 Hz: at 100 ms the device is read every 10th cycle.
  const clock = new ManualClock(10_000).background(ADPP_DEADLINE_TIMER);
  const inventory = {
    devices: { d0: { signals: [{ id: "x", type: T.DOUBLE, hint: 1 }], values: [dbl("x", 1)] } },
  };
  const fx = await startProgrammable(inventory, {
    inProcess: true,
    intervalMs: INTERVAL_MS,
    manual: clock,
  });
  const outages = new DeviceOutages({
    registry: fx.registry,
    cache: fx.cache,
    clock,
    downAfterMs: DOWN_AFTER_MS,
  });
  /** Fires every timer of the next instant (the loop's, the outage's) and waits for the cycle. */
  const next = async () => {
    const due = clock.pendingDueTimes()[0]!;
    while (clock.pendingDueTimes()[0] === due) clock.fireNext();
    await waitFor(
      "the cycle's end",
      () =>
        fx.cache.pollsInFlight().length === 0 &&
        clock.pendingDueTimes().includes(due + INTERVAL_MS),
      10_000,
      0,
    );
  };
  const reads = async () => (await fx.stats("d0")).reads;
  try {
    await fx.cache.start(); // the priming read
    assert.equal(fx.cache.pollPeriodMs("p0", "d0"), 1000);
    assert.equal(outages.condition("p0", "d0").kind, "up");
    await fx.program("d0", { read: { values: [dbl("x", 1, { quality: Q.FAULT })] } });
    while ((await reads()) < 2) await next();
    assert.equal(outages.condition("p0", "d0").kind, "failing");
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await next();
    assert.equal(await reads(), 3, "read again at the next cycle, not a poll period later");
    assert.equal(outages.condition("p0", "d0").kind, "up");
    for (let i = 0; i < DOWN_AFTER_MS / INTERVAL_MS + 1; i++) await next();
    assert.equal(outages.condition("p0", "d0").kind, "up", "never down");
    assert.equal(await reads(), 3, "answering well again: back to its poll period");
  } finally {
    outages.stop();
    await fx.close();
  }
});
