/**
 * `replayPending` (runtime_sparkplug_store_replay_pending) and `outageStartMs` count the data of a
 * device that left (DDEATH) with its replay not out: its position, saved for its next DBIRTH
 * (#replayAfterBirth), still waits, so the node's data is not all out (docs/sparkplug.md: "1 from
 * the outage until its replay is out"). Once it is born again and its replay written, both clear;
 * a device not born again by the next births has its rest dropped, and both clear too.
 * HeldSession (tests/helpers/held_session.ts): a real broker cannot fail one write of a connection
 * that stays up.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { twoDevicesWritten } from "./_device_replay_rig.ts";

Deno.test("SparkplugEdgeNode: replayPending and outageStartMs hold a device's saved position until its replay after its DBIRTH is out", async () => {
  const { rig, s } = await twoDevicesWritten();
  assert.equal(rig.node.replayPending, false);
  assert.equal(rig.node.outageStartMs, null);
  const t1 = rig.poll("a", 1);
  await flushMicrotasks();
  rig.poll("a", 2);
  await flushMicrotasks();
  assert.equal(s.inFlight, 2, "a1, a2 in flight");
  s.failOne(); // a1: the outage of a starts at poll 1; its replay waits for a2 to settle
  await flushMicrotasks();
  assert.equal(rig.node.replayPending, true);
  assert.equal(rig.node.outageStartMs, t1);
  rig.removeDevice("a"); // DDEATH of a: its position (poll 1) saved for its next DBIRTH
  await flushMicrotasks();
  while (s.complete() > 0) await flushMicrotasks();
  assert.equal(rig.node.replayPending, true, "a's poll 1 waits for its DBIRTH");
  assert.equal(rig.node.outageStartMs, t1, "a's outage start, saved with its position");
  rig.addDevice("a"); // DBIRTH, then the rest of a's replay
  await flushMicrotasks();
  while (s.complete() > 0) await flushMicrotasks();
  assert.equal(rig.node.replayPending, false);
  assert.equal(rig.node.outageStartMs, null);
  assert.equal(rig.node.counts.storeDropped, 0);
  await rig.stop();
});

Deno.test("SparkplugEdgeNode: replayPending clears when the next births come without a device whose position waited (its rest dropped)", async () => {
  const { rig, s } = await twoDevicesWritten();
  const t1 = rig.poll("a", 1);
  await flushMicrotasks();
  rig.poll("a", 2);
  await flushMicrotasks();
  s.failOne(); // a1: the outage of a starts at poll 1
  await flushMicrotasks();
  rig.removeDevice("a"); // its position saved for its next DBIRTH
  await flushMicrotasks();
  while (s.complete() > 0) await flushMicrotasks();
  assert.equal(rig.node.replayPending, true);
  assert.equal(rig.node.outageStartMs, t1);
  s.down();
  await flushMicrotasks();
  assert.equal(rig.node.replayPending, true, "offline: a's position still waits");
  await rig.reconnect(); // births without a: the rest of its replay is dropped
  while (rig.session().complete() > 0) await flushMicrotasks();
  assert.equal(rig.node.counts.storeDropped, 1);
  assert.equal(rig.node.replayPending, false);
  assert.equal(rig.node.outageStartMs, null);
  await rig.stop();
});
