/**
 * A reset permits whatever else is failing: a clock that throws when Estop.clear reads the time
 * of its `estop_change` (after the latch is released) does not make clear() fail as if the latch
 * held. Asked once more, the release is announced; when the clock keeps failing it is not (no
 * invented time) and that is logged. In-process: the real Estop over a router that answers every
 * call at once, a modes port that records FAULT, and an injected clock whose nowMs throws once or
 * always from the clear on.
 */
import assert from "node:assert/strict";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { containedEstop, errorLog, failingClock } from "./_clock_rig.ts";

/** A latched e-stop whose clock's nowMs throws `times` times once `breakClock()` is called. */
async function latched(times: number) {
  let broken = false;
  const c = failingClock({ read: "nowMs", times, when: () => broken });
  const { log, errors } = errorLog();
  const bus = new EventBus();
  const releases: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_change" && !event.latched) releases.push(event);
  });
  const estop = containedEstop({
    clock: c.clock,
    log,
    bus,
  });
  await estop.trigger("latched for the test");
  assert.equal(estop.status().latched, true);
  return {
    estop,
    errors,
    releases,
    breakClock: () => (broken = true),
    failures: c.failures,
  };
}

Deno.test("Estop.clear releases the latch and announces it when the clock's nowMs throws once", async () => {
  const r = await latched(1);
  r.breakClock();
  assert.deepEqual(r.estop.clear(), { latched: false });
  assert.equal(r.failures(), 1, "the clock threw");
  assert.equal(r.estop.status().latched, false, "the release is in force");
  assert.equal(r.releases.length, 1, "the time, read again, announced the release");
  assert.equal(r.errors.filter((l) => l.includes("clock nowMs failed")).length, 1);
});

Deno.test("Estop.clear releases the latch and logs the release it cannot announce when the clock's nowMs always throws", async () => {
  const r = await latched(Infinity);
  r.breakClock();
  assert.deepEqual(r.estop.clear(), { latched: false });
  assert.equal(r.estop.status().latched, false, "the release is in force");
  assert.equal(r.releases.length, 0, "no invented time: not announced");
  assert.equal(
    r.errors.filter((l) => l.includes("the release is in force but not announced")).length,
    1,
  );
});
