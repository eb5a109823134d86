/**
 * An e-stop and the FAULT entry it commits are one incident at one time: the e-stop commits FAULT
 * and publishes its `estop_change` in one synchronous step (src/safety/estop.ts), the FAULT entry
 * begins the incident and the e-stop leads it. Its `trigger_at_epoch_ms` is that FAULT entry's
 * time, not a clock read a millisecond later: that made every e-stop a lead that joined an
 * incident begun before it, which the console then said ("0.001 s after the incident began ...:
 * FAULT entry"). The real runtime over the programmable provider (a child process), the e-stop over
 * loopback HTTP, a wall clock the test moves on by 1 ms at each read while the stop runs.
 */
import assert from "node:assert/strict";
import { TestClock } from "../helpers/programmable_provider.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";

const history = { incidentBeforeS: 10, incidentAfterS: 1, diskMaxBytes: 0 };

/** A wall clock that, while `ticking`, is 1 ms later at each read (a real one between two reads). */
class TickingClock extends TestClock {
  ticking = false;
  override nowMs(): number {
    return this.ticking ? this.wallMs++ : this.wallMs;
  }
}

Deno.test("IncidentRecorder: an e-stop's incident is at its time, its own FAULT entry's (trigger_at_epoch_ms = at_epoch_ms)", async () => {
  const clock = new TickingClock();
  clock.wallMs = T0;
  const rig = await startRig({ history, clock });
  try {
    for (let i = 5; i < 20; i++) await rig.poll(T0 + i * 1000, probeValues(i, i));
    clock.ticking = true;
    await rig.estop();
    clock.ticking = false;
    const h = await rig.incident();
    assert.equal(h.trigger, "estop", "the e-stop leads");
    const fault = h.also.find((c: { trigger: string }) => c.trigger === "fault");
    assert.ok(fault !== undefined, `its FAULT entry joined it: ${JSON.stringify(h)}`);
    assert.equal(
      h.trigger_at_epoch_ms,
      h.at_epoch_ms,
      `the e-stop began its incident (its FAULT entry is its own): ${JSON.stringify(h)}`,
    );
    assert.equal(fault.at_epoch_ms, h.at_epoch_ms);
  } finally {
    await rig.rt.stop();
  }
});
