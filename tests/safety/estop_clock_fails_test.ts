/**
 * The e-stop must work whatever else is failing: a clock that throws once it is asked for the time
 * right after the latch engages (the latch time; the start of a reason still arriving) does not
 * leave the latch without its stop -- FAULT is entered, the ladder runs, the change is announced
 * and the trigger answers. In-process: the real Estop over a router that answers every call at
 * once, a modes port that records FAULT, and an injected clock that throws once.
 */
import assert from "node:assert/strict";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import {
  containedEstop,
  errorLog,
  failingClock,
  faultRecordingModes,
  recordingRouter,
} from "./_clock_rig.ts";

/** An e-stop whose clock's `which` throws the first time it is asked; what it did, recorded. */
function rigWithClock(which: "nowMs" | "monoMs") {
  const made: string[] = [];
  const m = faultRecordingModes();
  const c = failingClock({ read: which, times: 1 });
  const { log, errors } = errorLog();
  const bus = new EventBus();
  const changes: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_change") changes.push(event);
  });
  const estop = containedEstop({
    router: recordingRouter(made),
    clock: c.clock,
    log,
    bus,
    modes: m.modes,
  });
  return {
    estop,
    made,
    errors,
    changes,
    failedOnce: () => c.failures() > 0,
    hooksRun: m.hooksRun,
    mode: m.mode,
  };
}

Deno.test("Estop.trigger enters FAULT, runs the ladder and announces the latch when the clock's nowMs throws once after the latch", async () => {
  const r = rigWithClock("nowMs");
  const result = await r.estop.trigger("clock broken");
  assert.ok(r.failedOnce(), "the clock threw");
  assert.equal(r.mode(), "FAULT");
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(r.made, ["plant set_heater"], "the ladder's call was made");
  assert.deepEqual(result.actions.map((a) => a.success), [true]);
  assert.equal(r.hooksRun(), 1, "the hooks into FAULT ran");
  assert.equal(r.changes.length, 1, "the latch was announced");
  const status = r.estop.status();
  assert.equal(status.latched, true);
  assert.equal(typeof status.latched_at_epoch_ms, "number", "the time, read again, is shown");
  assert.equal(r.errors.filter((l) => l.includes("clock nowMs failed")).length, 1);
});

Deno.test("Estop.trigger with a reason still arriving runs its stop when the clock's monoMs throws once after the latch", async () => {
  const r = rigWithClock("monoMs");
  const result = await r.estop.trigger(Promise.resolve("arriving later"));
  assert.ok(r.failedOnce(), "the clock threw");
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(r.made, ["plant set_heater"], "the ladder's call was made");
  assert.equal(r.hooksRun(), 1, "the hooks into FAULT ran");
  assert.equal(r.changes.length, 1, "the latch was announced");
  assert.equal(r.errors.filter((l) => l.includes("clock monoMs failed")).length, 1);
});
