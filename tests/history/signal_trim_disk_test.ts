/**
 * One signal's ring trimmed by history.memory_max_bytes while its device's polls are still kept
 * (a long string changing at every poll: ring.ts #makeRoom drops its older changes, not the
 * polls): the disk tier answers that signal up to its own ring start, so GET /v0/history has the
 * disk's buckets for the stretch the ring no longer holds. Before, the ring's part began at the
 * device's oldest poll for every signal, and the trimmed signal's stretch from there to its first
 * kept change was answered by neither tier. The real runtime over the programmable provider;
 * a ring made without room and given some later, on a History fed by hand.
 */
import assert from "node:assert/strict";
import { FIRST_CAPACITY, POLL_ENTRY_BYTES, SIGNAL_ENTRY_BYTES } from "../../src/history/ring.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";

/** A label of this many characters is 40,032 bytes in the ring: one fits 64 KiB, two do not. */
const LABEL_CHARS = 20_000;

const label = (c: string) => c.repeat(LABEL_CHARS);

interface Point {
  t_ms: number;
  last: unknown;
  count: number;
}

/** A point as [time, first character of a long label (or the value), count]. */
const brief = (p: Point) => [
  p.t_ms,
  typeof p.last === "string" && p.last.length === LABEL_CHARS ? p.last[0] : p.last,
  p.count,
];

Deno.test("GET /v0/history answers a signal the byte bound trimmed from the disk tier up to its own ring start", async () => {
  const rig = await startRig({ history: { memoryMaxBytes: 65_536, stepMs: 1000 } });
  try {
    const letters = ["a", "b", "c", "d", "e"];
    for (let i = 0; i < letters.length; i++) {
      await rig.poll(T0 + 500 + i * 1000, probeValues(20 + i, i, label(letters[i]!)));
    }
    const status = rig.rt.history!.status();
    assert.ok(status.memoryBytes <= 65_536, `${status.memoryBytes} bytes`);

    // The newest label is in the open bucket (T0 + 4000): the ring answers from it, the disk
    // tier every closed bucket before.
    const open = await rig.json(
      `/v0/history/p0/probe?signal_id=label&signal_id=temp&since_ms=${T0}&until_ms=${T0 + 5000}`,
    );
    assert.equal(open.status.code, "OK", JSON.stringify(open.status));
    assert.equal(open.incomplete, null);
    assert.equal(open.source, "memory+disk");
    assert.deepEqual(open.signals[0].points.map(brief), [
      [T0, "a", 1],
      [T0 + 1000, "b", 1],
      [T0 + 2000, "c", 1],
      [T0 + 3000, "d", 1],
      [T0 + 4500, "e", 1],
    ], "the trimmed label: the disk's buckets, then the ring");
    // The device's other signals still answer from the ring at full rate.
    assert.deepEqual(
      open.signals[1].points.map(brief),
      [0, 1, 2, 3, 4].map((i) => [T0 + 500 + i * 1000, 20 + i, 1]),
    );

    // Two more polls with the same label: its one kept change is in a closed bucket now, so the
    // ring answers from the next bucket on and the disk tier up to it (none counted twice).
    await rig.poll(T0 + 5500, probeValues(25, 5, label("e")));
    await rig.poll(T0 + 6500, probeValues(26, 6, label("e")));
    const closed = await rig.json(
      `/v0/history/p0/probe?since_ms=${T0}&until_ms=${T0 + 7000}`,
    );
    assert.equal(closed.status.code, "OK", JSON.stringify(closed.status));
    assert.equal(closed.incomplete, null);
    const byId = new Map(
      (closed.signals as { signal_id: string; points: Point[] }[]).map((s) => [s.signal_id, s]),
    );
    assert.deepEqual(byId.get("label")!.points.map(brief), [
      [T0, "a", 1],
      [T0 + 1000, "b", 1],
      [T0 + 2000, "c", 1],
      [T0 + 3000, "d", 1],
      [T0 + 4000, "e", 1],
      [T0 + 5500, "e", 1],
      [T0 + 6500, "e", 1],
    ], "without signal_id too");
    assert.deepEqual(
      byId.get("temp")!.points.map(brief),
      [0, 1, 2, 3, 4, 5, 6].map((i) => [T0 + 500 + i * 1000, 20 + i, 1]),
    );

    // With step_ms, the seam is one bucket per step: the disk's and the ring's meet in none.
    const stepped = await rig.json(
      `/v0/history/p0/probe?signal_id=label&since_ms=${T0}&until_ms=${T0 + 7000}&step_ms=2000`,
    );
    assert.deepEqual(stepped.signals[0].points.map(brief), [
      [T0, "b", 2],
      [T0 + 2000, "d", 2],
      [T0 + 4000, "e", 2],
      [T0 + 6000, "e", 1],
    ]);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("History.query answers a signal made without room, given room later, from the disk tier up to its first kept change", async () => {
  // Room for the device's polls (128 bytes) and one signal's first changes (208): `x` has none.
  const { clock, history, pollSignals } = handFedHistory({
    memoryMaxBytes: FIRST_CAPACITY * (POLL_ENTRY_BYTES + SIGNAL_ENTRY_BYTES),
    stepMs: 1000,
  });
  clock.wall = T0;
  await history.start();
  try {
    for (let i = 0; i < 4; i++) {
      clock.wall = T0 + 500 + i * 1000;
      pollSignals(["a", "x"], i);
    }
    assert.equal(history.status().memoryRoomlessRings, 1);
    // A rediscovery drops `a`: its bytes go back to the budget, and `x` gets room at its next poll.
    clock.wall = T0 + 4500;
    pollSignals(["x"], 4);
    clock.wall = T0 + 5500;
    pollSignals(["x"], 5);
    assert.equal(history.status().memoryRoomlessRings, 0);
    const answer = await history.query({
      providerId: "p",
      deviceId: "d",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + 6000,
    });
    assert.equal(answer.incomplete, null);
    assert.deepEqual(
      answer.signals[0]!.points.map((p) => [p.t_ms, p.last]),
      [
        [T0, 0],
        [T0 + 1000, 1],
        [T0 + 2000, 2],
        [T0 + 3000, 3],
        [T0 + 4000, 4], // its first kept change is in a closed bucket: the disk's, as a seam
        [T0 + 5500, 5],
      ],
      "the disk tier's buckets while the ring kept nothing of it, the ring after",
    );
  } finally {
    await history.stop();
  }
});
