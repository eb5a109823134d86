/**
 * The e-stop must work whatever else is failing: a clock that throws when the trigger's read-back
 * is reported (the time of its `estop_verification` event, after the ladder and the hooks ran)
 * does not take the trigger's answer away. Asked once more, the verification is published; when
 * the clock keeps failing it is not (no invented time) and that is logged. In-process: the real
 * Estop over a router that answers every call at once, a modes port that records FAULT, and an
 * injected clock whose nowMs throws once after the ladder's call, or always.
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

/**
 * An e-stop whose clock's nowMs throws `times` times once the ladder's call was made (`always`:
 * from the start, every time); what it did, recorded.
 */
function rig(o: { times: number; always?: boolean }) {
  const made: string[] = [];
  let armed = o.always === true;
  const m = faultRecordingModes();
  const c = failingClock({ read: "nowMs", times: o.times, when: () => armed });
  const { log, errors } = errorLog();
  const bus = new EventBus();
  const verifications: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_verification") verifications.push(event);
  });
  const estop = containedEstop({
    router: recordingRouter(made, () => (armed = true)),
    clock: c.clock,
    log,
    bus,
    modes: m.modes,
  });
  return { estop, made, errors, verifications, failures: c.failures, hooksRun: m.hooksRun };
}

Deno.test("Estop.trigger answers and publishes its verification when the clock's nowMs throws once as the verification is reported", async () => {
  const r = rig({ times: 1 });
  const result = await r.estop.trigger("clock broken");
  assert.equal(r.failures(), 1, "the clock threw");
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(r.made, ["plant set_heater"], "the ladder's call was made");
  assert.equal(r.hooksRun(), 1, "the hooks into FAULT ran");
  assert.equal(result.verification.outcome, "unverifiable");
  assert.equal(r.verifications.length, 1, "the time, read again, published the verification");
  assert.equal(r.errors.filter((l) => l.includes("clock nowMs failed")).length, 1);
});

Deno.test("Estop.trigger answers and logs the verification it cannot publish when the clock's nowMs always throws", async () => {
  const r = rig({ times: Infinity, always: true });
  const result = await r.estop.trigger("clock broken");
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(r.made, ["plant set_heater"], "the ladder's call was made");
  assert.equal(r.hooksRun(), 1, "the hooks into FAULT ran");
  assert.equal(result.verification.outcome, "unverifiable");
  assert.equal(r.verifications.length, 0, "no invented time: not published");
  assert.equal(
    r.errors.filter((l) => l.includes("e-stop verification not published")).length,
    1,
  );
  assert.equal(r.estop.status().verification?.outcome, "unverifiable", "status shows it");
});
