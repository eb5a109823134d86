/**
 * An incident whose record could not be written (a full disk) was told to its run when it began:
 * the run's `incident` event links to it, and the link answered a bare "Incident not found", as
 * for an id that never was. The recorder keeps the ids of the records it could not write (at most
 * INCIDENT_GONE_IDS_MAX, the oldest forgotten first) and the 404 says the record was not
 * written. In process: the recorder over a hand-fed History on a manual clock, in-memory files
 * that fail as a full disk does. A restart (another recorder over the same files) says so too: the
 * ids are kept on disk once the disk has room again.
 */
import assert from "node:assert/strict";
import {
  INCIDENT_GONE_IDS_MAX,
  INCIDENT_STOP_WAIT_MS,
  MERGE_WINDOW_MS,
} from "../../src/history/mod.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { waitFor } from "../helpers/kernel.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { incidentRig } from "./_incident_rig.ts";

/** What a 404 of `id` says (the error get() and jsonl() throw). */
async function notFound(p: Promise<unknown>): Promise<string> {
  const err = await p.then(() => null, (e: unknown) => e);
  assert.ok(err instanceof Error, "NOT_FOUND");
  assert.equal((err as { code?: string }).code, "NOT_FOUND", String(err));
  return err.message;
}

Deno.test("IncidentRecorder: the link to an incident whose record could not be written answers 404 saying so, for the last INCIDENT_GONE_IDS_MAX of them", async () => {
  const files = new FaultyMemoryFiles();
  const { clock, incidents, loss, session } = incidentRig({ config: { incidentAfterS: 1 }, files });
  const ids: string[] = [];
  incidents.onIncident((i) => ids.push(i.incident_id));
  /** One incident of its own (beyond the merge window), its record written or failed. */
  const incident = async (device: string) => {
    loss(device);
    clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await incidents.settled();
    return ids.at(-1)!;
  };
  await session(async () => {
    files.full = true;
    const lost = await incident("d0");
    assert.equal(incidents.status().dropped, 1);
    const said = /could not be written/;
    assert.match(await notFound(incidents.get(lost)), said);
    assert.match(await notFound(incidents.jsonl(lost)), said);
    assert.doesNotMatch(await notFound(incidents.get("inc-1-999")), said, "one never noted");

    files.full = false;
    const kept = await incident("d1");
    assert.equal((await incidents.get(kept)).incident.incident_id, kept);
    assert.match(await notFound(incidents.get(lost)), said, "still said once the disk has room");

    // Bounded: the oldest is forgotten (a bare 404) once INCIDENT_GONE_IDS_MAX more failed.
    files.full = true;
    const more: string[] = [];
    for (let i = 0; i < INCIDENT_GONE_IDS_MAX; i++) more.push(await incident(`e${i}`));
    assert.equal(incidents.status().dropped, 1 + INCIDENT_GONE_IDS_MAX);
    assert.equal(await notFound(incidents.get(lost)), `Incident not found: ${lost}`);
    assert.match(await notFound(incidents.get(more[0]!)), said);
    assert.match(await notFound(incidents.get(more.at(-1)!)), said);
  });
});

Deno.test("IncidentRecorder: after a restart, the link to an incident whose record could not be written still says so, once a record was written after the disk had room", async () => {
  const files = new FaultyMemoryFiles();
  const before = incidentRig({ config: { incidentAfterS: 1 }, files });
  const ids: string[] = [];
  before.incidents.onIncident((i) => ids.push(i.incident_id));
  let lost = "";
  let said = "";
  await before.session(async () => {
    files.full = true;
    before.loss("d0");
    before.clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await before.incidents.settled();
    lost = ids.at(-1)!;
    said = await notFound(before.incidents.get(lost));
    assert.match(said, /could not be written/);
    // The disk has room again: the next record is written, and with it why the first is not.
    files.full = false;
    before.loss("d1");
    before.clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await before.incidents.settled();
    assert.equal(before.incidents.list().length, 1);
  });
  const after = incidentRig({ config: { incidentAfterS: 1 }, files });
  await after.session(async () => {
    assert.equal(await notFound(after.incidents.get(lost)), said);
    assert.equal(await notFound(after.incidents.jsonl(lost)), said);
    assert.equal(after.incidents.list().length, 1);
  });
});

Deno.test("IncidentRecorder: the link to an incident whose window is still open, or whose record is being written, answers 404 saying it is not written yet (and when its window closes)", async () => {
  const { clock, incidents, estop, session } = incidentRig({ config: { incidentAfterS: 5 } });
  const ids: string[] = [];
  incidents.onIncident((i) => ids.push(i.incident_id));
  await session(async () => {
    const at = clock.nowMs();
    estop();
    let arrive = (_: string | null) => {};
    incidents.estopReason(new Promise((r) => (arrive = r))); // its HTTP reason still arriving
    await Promise.resolve(); // told a microtask after its trigger
    const id = ids.at(-1)!;
    assert.ok(id !== undefined, "the run's incident event names it");
    const closes = new Date(at + 5000).toISOString();
    const said = await notFound(incidents.get(id));
    assert.ok(said.startsWith(`Incident not found: ${id} (not written yet`), said);
    assert.ok(said.includes(`its window closes at ${closes}`), said);
    assert.equal(await notFound(incidents.jsonl(id)), said);
    assert.equal(await notFound(incidents.get("inc-1-999")), "Incident not found: inc-1-999");
    clock.advance(5000 + MERGE_WINDOW_MS);
    // The window closed; the record waits for the reason.
    const writing = await notFound(incidents.get(id));
    assert.ok(writing.startsWith(`Incident not found: ${id} (not written yet`), writing);
    assert.match(writing, /its record is being written/);
    arrive("operator pressed stop");
    await incidents.settled();
    assert.equal((await incidents.get(id)).incident.incident_id, id, "served once written");
  });
});

/** MemoryFiles whose opening of an incident record hangs while `hold` (a hung disk). */
class HeldRecordOpen extends MemoryFiles {
  hold = false;
  readonly held: (() => void)[] = [];
  override async openAppend(path: string) {
    if (this.hold && path.includes("/inc-")) {
      await new Promise<void>((resolve) => this.held.push(resolve));
    }
    return super.openAppend(path);
  }
}

Deno.test("IncidentRecorder: the link to an incident whose write a stop left behind no longer says its record is being written", async () => {
  const files = new HeldRecordOpen();
  const r = incidentRig({ config: { incidentAfterS: 1 }, files });
  const ids: string[] = [];
  r.incidents.onIncident((i) => ids.push(i.incident_id));
  await r.start();
  let stopped = false;
  try {
    files.hold = true;
    r.loss("d0");
    r.clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await waitFor("the hung write", () => files.held.length === 1, 5000, 1);
    const id = ids.at(-1)!;
    assert.match(await notFound(r.incidents.get(id)), /its record is being written/);
    const stopping = r.stop();
    await r.clock.advanceAsync(INCIDENT_STOP_WAIT_MS);
    await stopping;
    stopped = true;
    const said = await notFound(r.incidents.get(id));
    assert.doesNotMatch(said, /being written/, "left behind: nobody writes it now");
  } finally {
    for (const release of files.held) release();
    if (!stopped) await r.stop();
  }
});

Deno.test("IncidentRecorder: after a wall clock step back while an incident's window is open, its 404 says when the window closes on the clock now (its timer is monotonic), not an hour ahead", async () => {
  const { clock, incidents, estop, session } = incidentRig({ config: { incidentAfterS: 5 } });
  const ids: string[] = [];
  incidents.onIncident((i) => ids.push(i.incident_id));
  await session(async () => {
    estop();
    await Promise.resolve(); // told a microtask after its trigger
    const id = ids.at(-1)!;
    assert.ok(id !== undefined, "the run's incident event names it");
    clock.advance(1000);
    clock.stepWall(-3_600_000); // an NTP correction: the wall clock goes back an hour
    const closes = new Date(clock.nowMs() + 4000).toISOString();
    const said = await notFound(incidents.get(id));
    assert.ok(said.includes(`its window closes at ${closes}`), said);
    clock.advance(4000 + MERGE_WINDOW_MS);
    await incidents.settled();
    assert.equal((await incidents.get(id)).incident.incident_id, id, "written when it said");
  });
});
