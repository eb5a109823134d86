/**
 * A trigger that joins an incident keeps its own time (`also[].at_epoch_ms`, as its run's
 * `incident_trigger` event), which may lie outside the record's window: a device loss dated back
 * to its first failed read, found down 180 s later and half a second after an e-stop, joins the
 * e-stop's incident (10 s before to 5 s after it). Before, the record listed the loss at a time
 * 170 s before its own from_epoch_ms without a word; now the trigger says it lies outside
 * (`outside_window: "before"`), in the header listed, written and read back, and one within the
 * window says nothing.
 */
import assert from "node:assert/strict";
import { hotRaised, incidentRig } from "./_incident_rig.ts";

Deno.test("IncidentRecorder: a joined trigger dated before the window keeps its time and says it lies outside", async () => {
  const rig = incidentRig({
    config: { incidentBeforeS: 10, incidentAfterS: 5, memorySeconds: 600 },
  });
  await rig.session(async () => {
    for (let i = 0; i < 400; i++) {
      rig.poll("p0", "d0", i);
      rig.clock.advance(500);
    }
    const t = rig.clock.nowMs();
    rig.estop();
    rig.clock.advance(300);
    // An alarm within the window joins it too.
    rig.bus.publish(hotRaised("p0/d0/x", rig.clock.nowMs()));
    rig.clock.advance(200);
    // The loss of d0, dated at its first failed read, 180 s before the e-stop.
    rig.bus.publish({
      kind: "device_availability",
      provider_id: "p0",
      device_id: "d0",
      available: false,
      timestamp_ms: t - 180_000,
    });
    for (let i = 0; i < 20; i++) {
      rig.poll("p0", "d0", i);
      rig.clock.advance(500);
    }
    await rig.incidents.settled();
    const [h] = rig.incidents.list();
    assert.ok(h !== undefined, "the e-stop's record");
    assert.equal(h.trigger, "estop");
    assert.equal(h.from_epoch_ms, t - 10_000);
    assert.equal(h.trigger_outside_window, undefined, "the e-stop is within");
    const byTrigger = new Map(h.also.map((c) => [c.trigger, c]));
    const loss = byTrigger.get("device_loss")!;
    assert.equal(loss.at_epoch_ms, t - 180_000, "its own time, not clipped");
    assert.ok(loss.at_epoch_ms < h.from_epoch_ms);
    assert.equal(loss.outside_window, "before");
    assert.equal(byTrigger.get("alarm")!.outside_window, undefined, "within: nothing said");
    // As written: read back from its file.
    const { incident } = await rig.incidents.get(h.incident_id);
    assert.deepEqual(incident.also, h.also);
  });
});

Deno.test("Operator console: a joined trigger outside the window says when, in the incident's cause", async () => {
  const { causeText } = await import("../../console/incidents.js");
  const { formatTime } = await import("../../console/dom.js");
  const text = causeText({
    cause: "e-stop (api)",
    also: [
      { trigger: "alarm", cause: "alarm hot", at_epoch_ms: 2_000 },
      {
        trigger: "device_loss",
        cause: "device p0/d0 lost",
        at_epoch_ms: 1_000,
        outside_window: "before",
      },
    ],
  });
  assert.equal(
    text,
    `e-stop (api) (also Alarm raised: alarm hot; Device lost: device p0/d0 lost (at ${
      formatTime(1_000)
    }, before the window))`,
  );
});
