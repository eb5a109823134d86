/**
 * A record stop() left behind (not written within INCIDENT_STOP_WAIT_MS: a hung mount) may be
 * written at last, long after the stop, when a later runtime keeps its records in the same folder.
 * Its write then changes nothing else there: the stopped recorder prunes no record (by its own
 * list, stale now) and rewrites no INCIDENT_GONE_FILE (over the later runtime's). An
 * IncidentRecorder over a hand-fed History on a manual clock; one record's write held.
 */
import assert from "node:assert/strict";
import { INCIDENT_GONE_FILE, INCIDENT_STOP_WAIT_MS } from "../../src/history/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { HeldRecords, incidentRig, INCIDENTS_DIR } from "./_incident_rig.ts";

Deno.test("an incident record left behind by stop() and written later prunes nothing and writes no gone file", async () => {
  const files = new HeldRecords();
  const rig = incidentRig({ files, config: { incidentMaxCount: 1 } });
  const { clock, incidents, poll, loss } = rig;
  await rig.start();
  poll("p0", "d0", 1);
  loss("d0");
  clock.advance(5_000);
  await incidents.settled();
  const first = incidents.list().map((h) => h.incident_id);
  assert.equal(first.length, 1);
  const records = async () =>
    (await files.listNames(INCIDENTS_DIR)).filter((n) => n.startsWith("inc-")).sort();
  const before = await records();
  assert.deepEqual(before, [`${first[0]}.jsonl`]);

  // The next record's write hangs; the stop waits INCIDENT_STOP_WAIT_MS and leaves it behind.
  let release = () => {};
  files.held = new Promise((r) => (release = r));
  poll("p0", "d1", 1);
  loss("d1");
  const stopping = rig.stop();
  for (let i = 0; i < 100 && files.waiting < 1; i++) await flushMicrotasks();
  assert.equal(files.waiting, 1, "the record's write waits on the disk");
  clock.advance(INCIDENT_STOP_WAIT_MS);
  await stopping;

  // The mount answers at last: the record left behind is written.
  files.held = null;
  release();
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  await incidents.settled();
  const after = await records();
  assert.ok(after.includes(before[0]!), `the stopped recorder removed ${before[0]}: ${after}`);
  assert.equal(
    (await files.listNames(INCIDENTS_DIR)).includes(INCIDENT_GONE_FILE),
    false,
    `the stopped recorder wrote ${INCIDENT_GONE_FILE}`,
  );
});

Deno.test("an incident record left behind by stop() whose write fails at last leaves nothing of itself, and removes no other record", async () => {
  // Removing its own partial file is its one change to the folder: a torn record (its header,
  // some signals) would be listed by a later start as an incomplete record of what was never
  // written whole; its id (wall time and counter) is its own, no other runtime's record.
  const files = new HeldRecords();
  const rig = incidentRig({ files });
  const { clock, incidents, poll, loss } = rig;
  await rig.start();
  poll("p0", "d0", 1);
  loss("d0");
  clock.advance(5_000);
  await incidents.settled();
  const records = async () =>
    (await files.listNames(INCIDENTS_DIR)).filter((n) => n.startsWith("inc-")).sort();
  const before = await records();
  assert.equal(before.length, 1);

  let release = () => {};
  files.held = new Promise((r) => (release = r));
  poll("p0", "d1", 1);
  loss("d1");
  const stopping = rig.stop();
  for (let i = 0; i < 100 && files.waiting < 1; i++) await flushMicrotasks();
  assert.equal(files.waiting, 1, "the record's write waits on the disk");
  clock.advance(INCIDENT_STOP_WAIT_MS);
  await stopping;

  // The mount answers at last, full: the record's write lands part of its text and fails.
  files.held = null;
  files.full = true;
  files.partialBytes = 40;
  release();
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  await incidents.settled();
  assert.equal(files.appendFailures, 1, "the record's write was tried and failed");
  assert.deepEqual(await records(), before, "the failed record's part stayed, or another went");
  assert.equal(
    (await files.listNames(INCIDENTS_DIR)).includes(INCIDENT_GONE_FILE),
    false,
    `the stopped recorder wrote ${INCIDENT_GONE_FILE}`,
  );
});
