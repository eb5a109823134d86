/**
 * An e-stop and the FAULT entry it commits are one incident at the time of that FAULT entry
 * (docs/history.md "Once"), whatever order the bus delivers their events in and however many turns
 * apart: the recorder pairs them by the events' own times (`timestamp_ms`: the latch's, read
 * first, and the FAULT entry's, read after it in the same step), not by arriving in one microtask.
 * In process: the recorder over a hand-fed History on a manual clock, the events published as the
 * e-stop and the mode manager publish them, a macrotask between them.
 */
import assert from "node:assert/strict";
import { incidentRig } from "./_incident_rig.ts";
import { macrotask } from "../helpers/turns.ts";

/** The e-stop latching at `atMs` (its estop_change as src/safety/estop.ts publishes it). */
function latch(rig: ReturnType<typeof incidentRig>, atMs: number): void {
  rig.bus.publish({
    kind: "estop_change",
    latched: true,
    reason: null,
    cause: "api",
    timestamp_ms: atMs,
  });
}

/** FAULT entered at `atMs` (its mode_change as src/control/mode_manager.ts publishes it). */
function enterFault(rig: ReturnType<typeof incidentRig>, atMs: number): void {
  rig.bus.publish({
    kind: "mode_change",
    previous_mode: "AUTO",
    new_mode: "FAULT",
    timestamp_ms: atMs,
  });
}

Deno.test("IncidentRecorder: an e-stop whose FAULT entry was delivered a turn before it is at that FAULT entry's time", async () => {
  const rig = incidentRig();
  const { clock, incidents, poll, session } = rig;
  await session(async () => {
    poll("p0", "d0", 1);
    const latchedAt = clock.wall;
    const faultAt = latchedAt + 1; // read after the latch, in the same step
    enterFault(rig, faultAt);
    await macrotask();
    clock.advance(5); // the e-stop's event is handled a few ms later
    latch(rig, latchedAt);
    clock.advance(1_000);
    await incidents.settled();
    const [h] = incidents.list();
    assert.equal(incidents.list().length, 1, "one incident");
    assert.equal(h!.trigger, "estop", "the e-stop leads");
    assert.deepEqual(
      [h!.at_epoch_ms, h!.trigger_at_epoch_ms, h!.also.map((c) => [c.trigger, c.at_epoch_ms])],
      [faultAt, faultAt, [["fault", faultAt]]],
      `the e-stop is at its own FAULT entry's time: ${JSON.stringify(h)}`,
    );
  });
});

Deno.test("IncidentRecorder: an e-stop delivered a turn before its FAULT entry is at that FAULT entry's time, its late reason kept", async () => {
  const rig = incidentRig();
  const { clock, incidents, poll, session } = rig;
  await session(async () => {
    poll("p0", "d0", 1);
    const latchedAt = clock.wall;
    const faultAt = latchedAt + 1;
    let give: (r: string | null) => void = () => {};
    latch(rig, latchedAt);
    incidents.estopReason(new Promise((r) => (give = r)));
    await macrotask();
    clock.advance(5);
    enterFault(rig, faultAt);
    give("door opened"); // after its FAULT entry re-dated it
    await macrotask();
    clock.advance(1_000);
    await incidents.settled();
    const [h] = incidents.list();
    assert.equal(incidents.list().length, 1, "one incident");
    assert.equal(h!.trigger, "estop", "the e-stop leads");
    assert.equal(h!.cause, "e-stop: door opened (api)", "its reason reached it");
    assert.deepEqual(
      [h!.at_epoch_ms, h!.trigger_at_epoch_ms, h!.also.map((c) => [c.trigger, c.at_epoch_ms])],
      [faultAt, faultAt, [["fault", faultAt]]],
      `the e-stop is at its own FAULT entry's time: ${JSON.stringify(h)}`,
    );
  });
});

Deno.test("IncidentRecorder: an e-stop latched in FAULT entered before it (no FAULT entry of its own) keeps its own time", async () => {
  const rig = incidentRig();
  const { clock, incidents, poll, session } = rig;
  await session(async () => {
    poll("p0", "d0", 1);
    const faultAt = clock.wall;
    enterFault(rig, faultAt); // an automation fault, say
    await macrotask();
    clock.advance(300);
    const latchedAt = clock.wall;
    latch(rig, latchedAt); // already in FAULT: no FAULT entry follows
    clock.advance(1_000);
    await incidents.settled();
    const [h] = incidents.list();
    assert.equal(h!.trigger, "estop");
    assert.deepEqual(
      [h!.at_epoch_ms, h!.trigger_at_epoch_ms, h!.also.map((c) => [c.trigger, c.at_epoch_ms])],
      [faultAt, latchedAt, [["fault", faultAt]]],
      `the earlier FAULT entry is not the e-stop's: ${JSON.stringify(h)}`,
    );
  });
});
