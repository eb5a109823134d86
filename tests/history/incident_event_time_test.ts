/**
 * An alarm's and a device loss's incident trigger is at the time its event says (`timestamp_ms`:
 * the alarm's transition, the failed poll), not when the recorder is told (docs/history.md
 * "Once"), as an e-stop's and a FAULT entry's are: an event handled a few ms late (a busy turn)
 * dated the incident, its window and its run's `incident` event by the recorder's clock read
 * instead. In process: the recorder over a hand-fed History on a manual clock, the events
 * published as the alarm engine and the cache publish them, each handled LATE_MS after its time.
 */
import assert from "node:assert/strict";
import type { IncidentBegun } from "../../src/history/mod.ts";
import { hotRaised, incidentRig } from "./_incident_rig.ts";

/** How long after its own time each event is handled. */
const LATE_MS = 40;

Deno.test("IncidentRecorder: an alarm raise and a device loss handled late are triggers at their events' times", async () => {
  const rig = incidentRig();
  const { clock, incidents, bus, poll, session } = rig;
  const begun: IncidentBegun[] = [];
  incidents.onIncident((i) => begun.push(i));
  await session(async () => {
    poll("p0", "d0", 1);
    const raisedAt = clock.wall;
    clock.advance(LATE_MS);
    bus.publish(hotRaised("p0/d0/x", raisedAt));
    const lostAt = clock.wall + 100;
    clock.advance(100 + LATE_MS);
    bus.publish({
      kind: "device_availability",
      provider_id: "p0",
      device_id: "d1",
      available: false,
      timestamp_ms: lostAt,
    });
    await Promise.resolve();
    clock.advance(3_000);
    await incidents.settled();
    const [h] = incidents.list();
    assert.equal(incidents.list().length, 1, "one incident");
    assert.deepEqual(
      {
        at: h!.at_epoch_ms,
        triggerAt: h!.trigger_at_epoch_ms,
        from: h!.from_epoch_ms,
        also: h!.also.map((c) => [c.trigger, c.at_epoch_ms]),
        told: begun.map((b) => [b.trigger, b.at_epoch_ms]),
      },
      {
        at: raisedAt,
        triggerAt: raisedAt,
        from: raisedAt - 1_000, // incident_before_s 1
        also: [["device_loss", lostAt]],
        told: [["alarm", raisedAt]],
      },
      "each trigger at its event's time, not LATE_MS after it",
    );

    // A device loss beginning an incident of its own.
    clock.advance(2_000);
    const ownAt = clock.wall;
    clock.advance(LATE_MS);
    bus.publish({
      kind: "device_availability",
      provider_id: "p0",
      device_id: "d2",
      available: false,
      timestamp_ms: ownAt,
    });
    clock.advance(3_000);
    await incidents.settled();
    const [loss] = incidents.list();
    assert.equal(incidents.list().length, 2);
    assert.equal(loss!.trigger, "device_loss");
    assert.equal(loss!.at_epoch_ms, ownAt, "the loss at its event's time");
    assert.equal(loss!.trigger_at_epoch_ms, ownAt);
  });
});
