/**
 * An incident written before its after-window has passed (the runtime stopping, or an e-stop
 * making room among MAX_PENDING_INCIDENTS waiting ones) says how far its samples reach: its
 * `until_epoch_ms` is when it was written, not the end of a window it never saw.
 */
import assert from "node:assert/strict";
import { MAX_PENDING_INCIDENTS, MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { incidentRig } from "./_incident_rig.ts";

Deno.test("IncidentRecorder stopped 1 s into a 5 s after-window writes the record with until_epoch_ms where its samples end", async () => {
  const { clock, incidents, poll, estop, start, stop } = incidentRig({
    config: { incidentAfterS: 5 },
  });
  await start();
  poll("p0", "d0", 1);
  const at = clock.nowMs();
  estop();
  for (let i = 2; i <= 5; i++) {
    clock.advance(250);
    poll("p0", "d0", i);
  }
  await stop();
  const [h] = incidents.list();
  assert.equal(h!.at_epoch_ms, at);
  assert.equal(h!.until_epoch_ms, at + 1000, "the window ends where the stop came");
  const { signals } = await incidents.get(h!.incident_id);
  assert.equal(signals[0]!.samples.at(-1)![0], at + 1000);
});

Deno.test("IncidentRecorder: the oldest waiting incident written early for an e-stop ends where it was written", async () => {
  const { clock, incidents, loss, estop, start, stop } = incidentRig({
    config: { incidentAfterS: 30 },
  });
  await start();
  const first = clock.nowMs();
  for (let i = 0; i < MAX_PENDING_INCIDENTS; i++) {
    loss(`d${i}`);
    clock.advance(MERGE_WINDOW_MS + 100);
  }
  estop();
  await incidents.settled();
  const early = incidents.list().find((h) => h.devices[0] === "p0/d0")!;
  assert.equal(early.at_epoch_ms, first);
  assert.equal(early.until_epoch_ms, clock.nowMs(), "written at the e-stop, not 30 s after d0");
  await stop();
});
