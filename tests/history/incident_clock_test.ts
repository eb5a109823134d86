/**
 * Incident capture and the clocks, in process with a manual clock: whether a trigger joins a
 * pending incident (MERGE_WINDOW_MS) is decided on the monotonic clock, so a step of the wall
 * clock (NTP, an operator, a Raspberry Pi correcting itself at its first sync) between two
 * triggers neither splits one incident in two nor joins two incidents seconds apart.
 */
import assert from "node:assert/strict";
import { incidentCsv, MAX_PENDING_INCIDENTS, MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import type { MemoryFiles } from "../helpers/memory_files.ts";
import { incidentRig } from "./_incident_rig.ts";
import type { DeviceState, SignalState } from "../../src/state/mod.ts";

/** The incident rig with a window of `incidentAfterS` after a trigger (1 s before it). */
function rig(incidentAfterS = 10, files?: MemoryFiles) {
  return incidentRig({ config: { incidentAfterS }, ...(files ? { files } : {}) });
}

Deno.test("a trigger joins a pending incident by the monotonic clock: a wall clock step between two triggers neither splits nor joins them", async () => {
  const { clock, incidents, loss, estop, start, stop } = rig();
  await start();
  // A device is lost, then 200 ms later the e-stop; NTP stepped the wall clock back an hour
  // between them. One incident: the e-stop leads, the loss joined it.
  loss("d0");
  clock.advance(200);
  clock.stepWall(-3_600_000);
  estop();
  assert.equal(incidents.status().pending, 1, "one incident, not two");
  clock.advance(10_000);
  await incidents.settled();
  const [first] = incidents.list();
  assert.equal(incidents.list().length, 1);
  assert.equal(first!.trigger, "estop");
  assert.deepEqual(first!.also.map((c) => c.trigger), ["device_loss"]);

  // Two losses 5 s apart (far beyond MERGE_WINDOW_MS) with the wall clock stepped back 5 s
  // between them: two incidents, though their wall times are equal.
  loss("d1");
  clock.advance(5_000);
  assert.ok(5_000 > MERGE_WINDOW_MS);
  clock.stepWall(-5_000);
  loss("d2");
  assert.equal(incidents.status().pending, 2, "two incidents, not one");
  await stop();
});

Deno.test("an incident of a process whose wall clock repeats a previous process's millisecond gets an id of its own, not the earlier record's file", async () => {
  // Two boots of a board without a real-time clock: each starts at the same wall time, and each
  // has an e-stop at the same millisecond. The second record must neither be appended to the
  // first's file nor hide it.
  const first = rig();
  const wall = first.clock.wall;
  await first.start();
  first.estop();
  first.clock.advance(10_000);
  await first.incidents.settled();
  await first.stop();
  const [earlier] = first.incidents.list();

  const { clock, incidents, loss, start, stop } = rig(10, first.files);
  clock.wall = wall;
  await start();
  loss("d0");
  clock.advance(10_000);
  await incidents.settled();
  const ids = incidents.list().map((h) => h.incident_id);
  assert.equal(ids.length, 2);
  assert.notEqual(ids[0], ids[1], `two incidents under one id: ${ids.join(", ")}`);
  assert.equal((await incidents.get(earlier!.incident_id)).incident.trigger, "estop");
  const later = ids.find((id) => id !== earlier!.incident_id)!;
  assert.equal((await incidents.get(later)).incident.trigger, "device_loss");
  assert.equal((await incidents.jsonl(earlier!.incident_id)).split("\n").filter(Boolean).length, 1);
  await stop();
});

Deno.test("the records kept across restarts are the latest recorded, whatever the wall clock said when each was made", async () => {
  // Three boots of a board without a real-time clock, the second started a day behind the first:
  // its record is stamped earlier, but it is the newer one, and the bound (two records) must
  // remove the first boot's record when the third boot records one.
  let files: MemoryFiles | undefined;
  const ids: string[] = [];
  let kept: string[] = [];
  for (const [boot, wallOffset] of [[1, 0], [2, -86_400_000], [3, 0]] as const) {
    const booted = incidentRig({
      config: { incidentAfterS: 10, incidentMaxCount: 2 },
      ...(files ? { files } : {}),
    });
    files = booted.files;
    const { clock, incidents, loss, start, stop } = booted;
    clock.wall += wallOffset;
    await start();
    loss(`boot${boot}`);
    clock.advance(10_000);
    await incidents.settled();
    kept = incidents.list().map((h) => h.incident_id);
    ids.push(kept.find((id) => !ids.includes(id))!);
    await stop();
  }
  assert.deepEqual(kept, [ids[2], ids[1]], "the third and the second boot's records, newest first");
});

Deno.test("an e-stop gets its incident while MAX_PENDING_INCIDENTS weaker ones wait for their window", async () => {
  const { clock, incidents, loss, estop, start, stop } = rig(30);
  await start();
  // A flapping device: a loss every 1.1 s, each an incident of its own (beyond the merge window).
  for (let i = 0; i < MAX_PENDING_INCIDENTS; i++) {
    loss(`d${i}`);
    clock.advance(MERGE_WINDOW_MS + 100);
  }
  assert.equal(incidents.status().pending, MAX_PENDING_INCIDENTS);
  estop();
  assert.equal(incidents.status().pending, MAX_PENDING_INCIDENTS, "still bounded");
  clock.advance(30_000);
  await incidents.settled();
  const estops = incidents.list().filter((h) => h.trigger === "estop");
  assert.equal(estops.length, 1, "the e-stop has its record");
  assert.equal(estops[0]!.until_epoch_ms - estops[0]!.at_epoch_ms, 30_000, "its whole window");
  assert.equal(incidents.list().length, MAX_PENDING_INCIDENTS + 1, "none of the others lost");
  await stop();
});

Deno.test("a device a reload took out (device_availability false, reason removed) opens no incident; a loss does", async () => {
  const { clock, bus, incidents, loss, start, stop } = rig();
  await start();
  bus.publish({
    kind: "device_availability",
    provider_id: "p0",
    device_id: "d0",
    available: false,
    reason: "removed",
    timestamp_ms: clock.nowMs(),
  });
  clock.advance(10_000);
  await incidents.settled();
  assert.deepEqual(incidents.list(), [], "a removal is not a loss");
  assert.equal(incidents.status().pending, 0);
  loss("d1");
  clock.advance(10_000);
  await incidents.settled();
  assert.deepEqual(incidents.list().map((h) => h.trigger), ["device_loss"]);
  await stop();
});

Deno.test("an incident record's signal line stays within what reading it back accepts (INCIDENT_MAX_LINE_BYTES): a long string signal is served, not left out", async () => {
  // A string signal of 300,000 characters changing at every poll (a spectrum, a JSON status) with
  // a ring large enough to hold the whole window of it: the record's line for it was written
  // whole (~6 MB) and then cut when read back, so GET /v0/incidents/{id} left the signal out.
  const { clock, feed, incidents, loss, start, stop } = incidentRig({
    history: { memoryMaxBytes: 64 << 20 },
  });
  await start();
  const signals = new Map<string, SignalState>();
  const dev: DeviceState = {
    providerId: "p0",
    deviceId: "spec0",
    pollable: ["spectrum"],
    signals,
    lastPollMs: 0,
    lastPollMono: 0,
    available: true,
  };
  const poll = (i: number) => {
    signals.set("spectrum", {
      value: { type: "string", string: `${i}:`.padEnd(300_000, "x") },
      quality: "OK",
      timestampMs: clock.wall,
      receivedMono: clock.mono,
    });
    feed(dev);
  };
  for (let i = 0; i < 10; i++) {
    poll(i);
    clock.advance(100);
  }
  loss("spec0");
  for (let i = 10; i < 20; i++) {
    poll(i);
    clock.advance(100);
  }
  clock.advance(1_000);
  await incidents.settled();
  const [header] = incidents.list();
  assert.ok(header !== undefined, "the incident is recorded");
  const record = await incidents.get(header.incident_id);
  assert.deepEqual(
    record.signals.map((s) => s.signal_id),
    ["spectrum"],
    `the record's signals as served (its header counts ${header.samples} samples)`,
  );
  const samples = record.signals[0]!.samples;
  assert.equal(samples.length, header.samples, "the header counts what the record holds");
  assert.ok(samples.length > 0);
  const jsonl = (await incidents.jsonl(header.incident_id)).split("\n").filter(Boolean);
  for (const line of jsonl) JSON.parse(line); // every exported line is whole
  await stop();
});

Deno.test("an incident record serves 64-bit integers beyond 2^53 exactly, as every other answer does", async () => {
  // The record holds every digit (JSON Lines export); the JSON and CSV answers parsed it back
  // into doubles: 9007199254740993 came out as 9007199254740992.
  const { clock, feed, incidents, loss, start, stop } = incidentRig();
  await start();
  const big = 2n ** 53n + 1n;
  const signals = new Map<string, SignalState>([["counter", {
    value: { type: "uint64", uint64: big },
    quality: "OK",
    timestampMs: clock.wall,
    receivedMono: clock.mono,
  }]]);
  feed({
    providerId: "p0",
    deviceId: "c0",
    pollable: ["counter"],
    signals,
    lastPollMs: 0,
    lastPollMono: 0,
    available: true,
  });
  loss("c0");
  clock.advance(1_000);
  await incidents.settled();
  const [header] = incidents.list();
  assert.ok((await incidents.jsonl(header!.incident_id)).includes(`,${big},"OK"]`));
  const record = await incidents.get(header!.incident_id);
  assert.deepEqual(record.signals[0]!.samples.map((s) => s[1]), [big]);
  // No unit kept (the recorder has no inventory here): its column is empty, and from_epoch_ms.
  assert.match(incidentCsv(record.signals), new RegExp(`,${big},OK,,\\r\\n`));
  await stop();
});
