/**
 * The live DDATA written while a failed one's replay waits (#liveWritten, read by #wentOutLive)
 * are remembered in one ring shared by every device, as (device, poll): the poll numbers are each
 * device's own (the history ring counts polls per device), so two devices have the same numbers.
 * A poll written live for one device must not make the replay skip the same-numbered poll of
 * another whose write failed, and each device's own written polls are still skipped.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { twoDevicesWritten } from "./_device_replay_rig.ts";

Deno.test("SparkplugEdgeNode: a poll written live for one device does not skip another device's same poll from the replay", async () => {
  const { rig, s } = await twoDevicesWritten();
  const from = s.published.length;
  // Poll 1, then poll 2, of each device: four live DDATA in flight, in this order.
  for (const [device, v] of [["a", 1], ["b", 1], ["a", 2], ["b", 2]] as const) {
    rig.poll(device, v);
    await flushMicrotasks();
  }
  assert.equal(s.inFlight, 4, "a1, b1, a2, b2 in flight");
  s.failOne(); // a1
  await flushMicrotasks();
  s.completeOne(); // b1: written
  await flushMicrotasks();
  s.completeOne(); // a2: written
  await flushMicrotasks();
  s.failOne(); // b2
  await flushMicrotasks();
  while (s.complete() > 0) await flushMicrotasks();
  assert.deepEqual(
    rig.ddata(s, "a", from),
    [{ v: 1, historical: false }, { v: 2, historical: false }, { v: 1, historical: true }],
    "a: poll 1 replayed (b's poll 1 went out, not a's), poll 2 (written live) not again",
  );
  assert.deepEqual(
    rig.ddata(s, "b", from),
    [{ v: 1, historical: false }, { v: 2, historical: false }, { v: 2, historical: true }],
    "b: poll 2 replayed (a's poll 2 went out, not b's)",
  );
  assert.equal(rig.node.counts.replayed, 2);
  assert.equal(rig.node.replayPending, false);
  await rig.stop();
});
