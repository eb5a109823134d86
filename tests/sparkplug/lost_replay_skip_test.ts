/**
 * A live DDATA whose write fails while later DDATA of the same device are in flight (the
 * connection staying up): its device's replay starts at its poll, and the later polls whose live
 * DDATA did go out are not sent again as historical, whichever settles first.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { ringRig } from "./_ring_rig.ts";

for (const order of ["the failure first", "the later write first"] as const) {
  Deno.test(`a failed live DDATA is replayed alone: later polls written live are skipped (${order})`, async () => {
    const rig = ringRig();
    await rig.history.start();
    rig.addDevice("a");
    await rig.node.start();
    rig.poll("a", 0);
    const s = rig.session();
    s.up();
    await flushMicrotasks();
    while (s.complete() > 0) await flushMicrotasks();
    const from = s.published.length;
    rig.poll("a", 1);
    await flushMicrotasks();
    rig.poll("a", 2);
    await flushMicrotasks();
    assert.equal(s.inFlight, 2, "both live DDATA in flight");
    if (order === "the failure first") {
      s.failOne(); // poll 1's DDATA
      await flushMicrotasks();
      s.completeOne(); // poll 2's
    } else {
      s.completeNewest(); // poll 2's
      await flushMicrotasks();
      s.failOne(); // poll 1's
    }
    await flushMicrotasks();
    while (s.complete() > 0) await flushMicrotasks();
    assert.deepEqual(
      rig.ddata(s, "a", from),
      [{ v: 1, historical: false }, { v: 2, historical: false }, { v: 1, historical: true }],
      "poll 1 replayed, poll 2 (written live) not again",
    );
    await rig.stop();
  });
}
