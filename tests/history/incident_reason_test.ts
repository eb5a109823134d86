/**
 * An e-stop's reason that arrives after the latch (Estop.onReasonArriving -> estopReason) in its
 * incident record, in process with a manual clock: the record waits for every e-stop's reason of
 * the incident, bounded by INCIDENT_REASON_WAIT_MS.
 */
import assert from "node:assert/strict";
import { INCIDENT_REASON_WAIT_MS } from "../../src/history/mod.ts";
import { incidentRig } from "./_incident_rig.ts";
import { macrotask } from "../helpers/turns.ts";

function rig() {
  const base = incidentRig();
  /** An HTTP e-stop: latched now, its reason given by the returned function later. */
  const estop = () => {
    let give: (r: string | null) => void = () => {};
    const reason = new Promise<string | null>((r) => (give = r));
    base.estop();
    base.incidents.estopReason(reason);
    return give;
  };
  return { ...base, estop };
}

Deno.test("two e-stops of one incident, their reasons arriving late in reverse order: the record waits for both", async () => {
  const { clock, incidents, poll, estop, session } = rig();
  await session(async () => {
    poll("p0", "d0", 1);
    const first = estop();
    clock.advance(100);
    const second = estop(); // joins the first's incident
    assert.equal(incidents.status().pending, 1);
    clock.advance(1_000); // the window is over: the record waits for the reasons
    second("second reason");
    await macrotask();
    clock.advance(100);
    first("first reason");
    await macrotask();
    clock.advance(INCIDENT_REASON_WAIT_MS);
    await incidents.settled();
    const [h] = incidents.list();
    assert.equal(h!.cause, "e-stop: first reason (api)", "the first e-stop's reason is missing");
    assert.deepEqual(h!.also.map((c) => c.cause), ["e-stop: second reason (api)"]);
  });
});

Deno.test("a reason that never arrives holds the record INCIDENT_REASON_WAIT_MS at most", async () => {
  const { clock, incidents, poll, estop, session } = rig();
  await session(async () => {
    poll("p0", "d0", 1);
    estop(); // its reason never comes
    clock.advance(1_000);
    await macrotask();
    assert.equal(incidents.list().length, 0, "written before its reason could arrive");
    clock.advance(INCIDENT_REASON_WAIT_MS);
    await incidents.settled();
    assert.equal(incidents.list()[0]!.cause, "e-stop (api)");
  });
});

Deno.test("an e-stop's record waiting for its reason is listed before a later incident written first: the listing is newest first by id", async () => {
  const { clock, incidents, poll, estop, loss, session } = rig();
  await session(async () => {
    poll("p0", "d0", 1);
    const give = estop(); // its reason comes late
    clock.advance(1_200); // past MERGE_WINDOW_MS: the loss below is an incident of its own
    loss("d0");
    clock.advance(1_000); // both windows over; the e-stop's record waits for its reason
    for (let i = 0; i < 10; i++) await macrotask(); // the loss's record is written meanwhile
    give("late");
    await macrotask();
    clock.advance(INCIDENT_REASON_WAIT_MS);
    await incidents.settled();
    const listed = incidents.list().map((h) => h.trigger);
    assert.deepEqual(listed, ["device_loss", "estop"], "the listing is not newest first");
  });
});

Deno.test("a reason arriving after its incident's record was written changes neither the record nor the listing of it", async () => {
  const { clock, incidents, poll, estop, session } = rig();
  await session(async () => {
    poll("p0", "d0", 1);
    const first = estop();
    first("first reason");
    clock.advance(100);
    const second = estop(); // joins the first's incident; its reason comes too late
    clock.advance(1_000);
    await macrotask();
    clock.advance(INCIDENT_REASON_WAIT_MS);
    await incidents.settled();
    const [written] = incidents.list();
    assert.deepEqual(written!.also.map((c) => c.cause), ["e-stop (api)"]);
    second("too late");
    await macrotask();
    // Before: the listing said "e-stop: too late (api)" (the header shared the pending
    // incident's `also`), while the record on disk said "e-stop (api)" until the next start.
    const stored = (await incidents.get(written!.incident_id)).incident;
    assert.deepEqual(incidents.list()[0]!.also.map((c) => c.cause), ["e-stop (api)"]);
    assert.deepEqual(stored.also.map((c) => c.cause), ["e-stop (api)"]);
  });
});
