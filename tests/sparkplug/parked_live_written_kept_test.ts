/**
 * A device that left (DDEATH) with its replay not out keeps, with its saved position
 * (#replayAfterBirth), the polls of it written live after that position: other devices' live
 * DDATA written meanwhile (LIVE_OUT_KEPT of them and more, with a write in flight so that every
 * one is remembered) must not push them out, or its replay resumed after its next DBIRTH sends
 * such a poll a second time. The host (the session's writes) counts each poll by its timestamp.
 * HeldSession (tests/helpers/held_session.ts): a real broker cannot fail one write of a
 * connection that stays up.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { ddataTimes, otherDeviceFillsThenBirth, twoDevicesWritten } from "./_device_replay_rig.ts";

Deno.test("SparkplugEdgeNode: a replay resumed after the DBIRTH does not resend a poll written live, however many other devices' writes follow", async () => {
  const { rig, s } = await twoDevicesWritten();
  const from = s.published.length;
  const t1 = rig.poll("a", 1);
  await flushMicrotasks();
  const t2 = rig.poll("a", 2);
  await flushMicrotasks();
  rig.poll("b", 1);
  await flushMicrotasks();
  assert.equal(s.inFlight, 3, "a1, a2, b1 in flight");
  s.failOne(); // a1: the outage of a starts at poll 1
  await flushMicrotasks();
  s.completeOne(); // a2: written live while a's outage waits
  await flushMicrotasks();
  rig.removeDevice("a"); // DDEATH of a: its position (poll 1) saved for its next DBIRTH
  await flushMicrotasks();
  // b1 stays in flight: every live DDATA written meanwhile is remembered (LIVE_OUT_KEPT at most).
  await otherDeviceFillsThenBirth(rig, s, 2);
  assert.equal(rig.node.replayPending, false);
  const times = ddataTimes(s, "a", from);
  const count = (t: number) => times.filter((x) => x === t).length;
  assert.deepEqual(
    { a1: count(t1), a2: count(t2), polls: times.length },
    { a1: 2, a2: 1, polls: 3 },
    "a1 live (failed) and replayed; a2 (written live) not sent again by the resumed replay",
  );
  assert.equal(rig.node.counts.storeDropped, 0);
  await rig.stop();
});
