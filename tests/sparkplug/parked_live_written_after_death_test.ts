/**
 * A device that left (DDEATH) while a live DDATA of it, after its replay's saved position, was
 * still in flight: that DDATA written after the DDEATH is kept with the position like those
 * written before it (#parkedWritten), also when none was written before it, so other devices'
 * live writes meanwhile (LIVE_OUT_KEPT and more) do not push it out and the replay resumed after
 * the next DBIRTH does not send it a second time. The host (the session's writes) counts each poll
 * by its timestamp. HeldSession (tests/helpers/held_session.ts): a real broker cannot fail one
 * write of a connection that stays up.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { ddataTimes, otherDeviceFillsThenBirth, twoDevicesWritten } from "./_device_replay_rig.ts";

Deno.test("SparkplugEdgeNode: a poll in flight at its device's DDEATH and written after it is not resent by the replay resumed after the DBIRTH", async () => {
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
  rig.removeDevice("a"); // DDEATH of a: its position (poll 1) saved, none of its polls written
  await flushMicrotasks();
  s.completeOne(); // a2, in flight at the DDEATH: written after it
  await flushMicrotasks();
  // b1 stays in flight: every live DDATA written meanwhile is remembered (LIVE_OUT_KEPT at most).
  await otherDeviceFillsThenBirth(rig, s, 2);
  assert.equal(rig.node.replayPending, false);
  const times = ddataTimes(s, "a", from);
  const count = (t: number) => times.filter((x) => x === t).length;
  assert.deepEqual(
    { a1: count(t1), a2: count(t2), polls: times.length },
    { a1: 2, a2: 1, polls: 3 },
    "a1 live (failed) and replayed; a2 (written after the DDEATH) not sent again by the replay",
  );
  assert.equal(rig.node.counts.storeDropped, 0);
  await rig.stop();
});
