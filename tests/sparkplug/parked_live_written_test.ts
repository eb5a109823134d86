/**
 * A replay resumed after a device's next DBIRTH from the position saved at its DDEATH
 * (#replayAfterBirth) skips the polls whose live DDATA were written, as any replay does
 * (#wentOutLive): the memory of the live DDATA written (#liveWritten) is kept while a saved
 * position waits, not emptied because no replay is waiting or in flight at that moment. The host
 * (the session's writes) counts each poll by its timestamp: every one exactly once.
 *
 * The failed live DDATA starts the device's outage at its poll (the connection staying up); the
 * device leaves before the replay starts, which saves that position; the later poll's live DDATA
 * is written either after the DDEATH (nothing else in flight then) or before it, another device's
 * live DDATA then written with nothing else waiting. HeldSession (tests/helpers/held_session.ts):
 * a real broker cannot fail one write of a connection that stays up.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { ddataTimes, twoDevicesWritten } from "./_device_replay_rig.ts";

for (const order of ["written after the DDEATH", "written before, another device's after"]) {
  Deno.test(`SparkplugEdgeNode: a replay resumed after the DBIRTH does not resend a poll written live (${order})`, async () => {
    const { rig, s } = await twoDevicesWritten();
    const from = s.published.length;
    const t1 = rig.poll("a", 1);
    await flushMicrotasks();
    const t2 = rig.poll("a", 2);
    await flushMicrotasks();
    const before = order !== "written after the DDEATH";
    if (before) {
      rig.poll("b", 1);
      await flushMicrotasks();
    }
    assert.equal(s.inFlight, before ? 3 : 2, "a1, a2 (and b1) in flight");
    s.failOne(); // a1: the outage of a starts at poll 1; its replay waits for the rest to settle
    await flushMicrotasks();
    assert.equal(rig.node.replayPending, true);
    if (before) {
      s.completeOne(); // a2: written while the outage of a waits
      await flushMicrotasks();
    }
    rig.removeDevice("a"); // DDEATH of a: its position (poll 1) saved for its next DBIRTH
    await flushMicrotasks();
    // a's position waits for its DBIRTH: pending (docs/sparkplug.md), though no replay waits or
    // is in flight now.
    assert.equal(rig.node.replayPending, true, "a's position waits for its DBIRTH");
    // Written with nothing else in flight and no replay waiting: a2, or b1.
    s.completeOne();
    await flushMicrotasks();
    while (s.complete() > 0) await flushMicrotasks();
    // a is back: DBIRTH, then the rest of its replay.
    rig.addDevice("a");
    await flushMicrotasks();
    while (s.complete() > 0) await flushMicrotasks();
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
}
