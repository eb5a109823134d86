/**
 * The e-stop must work whatever else is failing: a monotonic clock that throws once the ladder's
 * calls and the hooks into FAULT ran (the start of the read-back, its deadline, its elapsed time)
 * does not take the trigger's answer away. Asked once more, the read-back runs as usual; when the
 * clock keeps failing there is no deadline to bound it: the expectations are read back once (no
 * retry), and what was read is the answer's verification, its elapsed time what the clock could
 * measure (never invented), each failure logged. In-process: the real Estop over a router that
 * answers every call at once, a reader that reads the expectation back as met, and an injected
 * clock whose monoMs throws once after the ladder's call, or always from then on.
 */
import assert from "node:assert/strict";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import {
  containedEstop,
  errorLog,
  failingClock,
  faultRecordingModes,
  heaterOffReader,
  heaterOffVerifiedLadder,
  providersUp,
  recordingRouter,
} from "./_clock_rig.ts";

/**
 * An e-stop whose clock's monoMs throws `times` times once the ladder's call was made, with one
 * expectation its reader reads back as met (`reads`: how many read-backs); what it did, recorded.
 */
function rig(o: { times: number }) {
  const made: string[] = [];
  let armed = false;
  const router = recordingRouter(made, () => (armed = true));
  const inventory = providersUp("plant");
  const { modes, hooksRun } = faultRecordingModes();
  const { clock, failures } = failingClock({ read: "monoMs", times: o.times, when: () => armed });
  const { log, errors } = errorLog();
  const bus = new EventBus();
  const verifications: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_verification") verifications.push(event);
  });
  const { reads, readBacks } = heaterOffReader();
  const estop = containedEstop({
    router,
    inventory,
    reads,
    clock,
    log,
    bus,
    modes,
    safeState: heaterOffVerifiedLadder(),
  });
  return {
    estop,
    made,
    errors,
    verifications,
    failures,
    hooksRun,
    readBacks,
  };
}

Deno.test("Estop.trigger answers with its read-back when the clock's monoMs throws once after the ladder", async () => {
  const r = rig({ times: 1 });
  const result = await r.estop.trigger("clock broken");
  assert.equal(r.failures(), 1, "the clock threw");
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(r.made, ["plant set_heater"], "the ladder's call was made");
  assert.equal(r.hooksRun(), 1, "the hooks into FAULT ran");
  assert.equal(result.verification.outcome, "verified");
  assert.equal(r.readBacks(), 1);
  assert.equal(r.verifications.length, 1, "published");
  assert.equal(r.errors.filter((l) => l.includes("clock monoMs failed")).length, 1);
});

Deno.test("Estop.trigger answers with one read-back, unbounded by no deadline, when the clock's monoMs always throws after the ladder", async () => {
  const r = rig({ times: Infinity });
  const result = await r.estop.trigger("clock broken");
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(r.made, ["plant set_heater"], "the ladder's call was made");
  assert.equal(r.hooksRun(), 1, "the hooks into FAULT ran");
  assert.equal(r.readBacks(), 1, "read back once: no deadline to bound a retry");
  assert.equal(result.verification.outcome, "verified");
  assert.equal(result.verification.checks[0]?.outcome, "verified");
  assert.equal(result.verification.elapsed_ms, 0, "nothing measured: no invented duration");
  assert.equal(r.estop.status().verification?.outcome, "verified", "status shows it");
  assert.equal(r.verifications.length, 1, "published (its time is the wall clock's)");
  assert.ok(
    r.errors.some((l) => l.includes("clock monoMs failed") && l.startsWith("ERROR")),
    r.errors.join("\n"),
  );
});
