/**
 * A record the bounds removed (history.incident_max_count, history.incident_max_bytes) was linked
 * from its run's `incident` event, and the link answered a bare "Incident not found", as for an
 * id that never was (one never written says so since c478ce37). The 404 now names the bound that
 * removed it, for the last INCIDENT_GONE_IDS_MAX records not kept (removed or never written, the
 * oldest forgotten first). Those reasons were kept in memory only: after a restart the 404 was
 * bare again; they are kept on disk now (INCIDENT_GONE_FILE beside the records, bounded as they
 * are). In process: the
 * recorder over a hand-fed History on a manual clock (a restart: another over the same files).
 */
import assert from "node:assert/strict";
import type { HistoryConfig } from "../../src/config/mod.ts";
import { INCIDENT_GONE_IDS_MAX, MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import type { MemoryFiles } from "../helpers/memory_files.ts";
import { incidentRig, INCIDENTS_DIR } from "./_incident_rig.ts";

/** What a 404 of `id` says (the error get() and jsonl() throw). */
async function notFound(p: Promise<unknown>): Promise<string> {
  const err = await p.then(() => null, (e: unknown) => e);
  assert.ok(err instanceof Error, "NOT_FOUND");
  assert.equal((err as { code?: string }).code, "NOT_FOUND", String(err));
  return err.message;
}

/** The lines of the one file beside the records in their folder (INCIDENT_GONE_FILE). */
async function besideRecords(files: MemoryFiles): Promise<string[]> {
  const names = (await files.listNames(INCIDENTS_DIR)).filter((n) => !n.startsWith("inc-"));
  assert.equal(names.length, 1, `beside the records: ${names.join(", ")}`);
  return files.text(`${INCIDENTS_DIR}/${names[0]}`).trimEnd().split("\n");
}

function rig(config: Partial<HistoryConfig>, files?: MemoryFiles) {
  const base = incidentRig({
    config: { incidentAfterS: 1, ...config },
    ...(files ? { files } : {}),
  });
  const { clock, incidents, poll, loss } = base;
  const ids: string[] = [];
  incidents.onIncident((i) => ids.push(i.incident_id));
  /** One incident of its own (beyond the merge window), its record written: its id. */
  const incident = async (device = "d0") => {
    poll("p0", device, 1);
    loss(device);
    clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await incidents.settled();
    return ids.at(-1)!;
  };
  return { ...base, incident };
}

Deno.test("IncidentRecorder: the link to a record removed by incident_max_count answers 404 naming the bound, for the last INCIDENT_GONE_IDS_MAX of them", async () => {
  const { incidents, incident, session } = rig({ incidentMaxCount: 2 });
  await session(async () => {
    const first = await incident();
    await incident();
    await incident();
    assert.equal(incidents.list().length, 2);
    const said = `Incident not found: ${first} (removed by history.incident_max_count, 2: ` +
      `the oldest records make way for new ones)`;
    assert.equal(await notFound(incidents.get(first)), said);
    assert.equal(await notFound(incidents.jsonl(first)), said);
    assert.equal(await notFound(incidents.get("inc-1-999")), "Incident not found: inc-1-999");

    // Bounded: once INCIDENT_GONE_IDS_MAX more were removed, the first is forgotten.
    const removed: string[] = [];
    for (let i = 0; i < INCIDENT_GONE_IDS_MAX; i++) removed.push(await incident());
    assert.equal(await notFound(incidents.get(first)), `Incident not found: ${first}`);
    assert.match(await notFound(incidents.get(removed[0]!)), /removed by history\.incident_max/);
  });
});

Deno.test("IncidentRecorder: the link to a record removed by incident_max_bytes answers 404 naming it", async () => {
  const probe = rig({});
  let one = 0;
  await probe.session(async () => {
    await probe.incident();
    one = probe.incidents.list()[0]!.bytes;
  });
  const max = 2 * one + Math.floor(one / 2);
  const { incidents, incident, session } = rig({ incidentMaxBytes: max });
  await session(async () => {
    const first = await incident();
    await incident();
    await incident();
    assert.equal(incidents.list().length, 2);
    assert.equal(
      await notFound(incidents.get(first)),
      `Incident not found: ${first} (removed by history.incident_max_bytes, ${max}: the oldest ` +
        `records make way for new ones)`,
    );
  });
});

Deno.test("IncidentRecorder: after a restart on the same files, the link to a removed record answers the same 404 reason, for the last INCIDENT_GONE_IDS_MAX of them", async () => {
  const before = rig({ incidentMaxCount: 2 });
  const ids: string[] = [];
  const said = new Map<string, string>();
  await before.session(async () => {
    // INCIDENT_GONE_IDS_MAX + 1 removed: the first is forgotten already.
    for (let i = 0; i < INCIDENT_GONE_IDS_MAX + 3; i++) ids.push(await before.incident());
    for (const id of ["inc-1-999", ...ids.slice(0, -2)]) {
      said.set(id, await notFound(before.incidents.get(id)));
    }
  });
  const [forgotten, oldest] = ids;
  const newest = ids.at(-3)!;
  const bound =
    "removed by history.incident_max_count, 2: the oldest records make way for new ones";
  assert.equal(said.get(oldest!), `Incident not found: ${oldest} (${bound})`);
  assert.equal(said.get(forgotten!), `Incident not found: ${forgotten}`);

  // A restart: another recorder over the same files.
  const after = rig({ incidentMaxCount: 2 }, before.files);
  await after.session(async () => {
    assert.equal(after.incidents.list().length, 2);
    // Every one as before the restart: the last INCIDENT_GONE_IDS_MAX removed naming the bound,
    // the one forgotten before it and one never noted bare.
    for (const [id, message] of said) {
      assert.equal(await notFound(after.incidents.get(id)), message);
      assert.equal(await notFound(after.incidents.jsonl(id)), message);
    }
    // New removals go on from what was read: still bounded, the oldest forgotten first.
    await after.incident();
    await after.incident();
    assert.equal(await notFound(after.incidents.get(oldest!)), `Incident not found: ${oldest}`);
    assert.equal(
      await notFound(after.incidents.get(newest)),
      `Incident not found: ${newest} (${bound})`,
    );
  });
  const lines = await besideRecords(after.files);
  assert.equal(lines.length, INCIDENT_GONE_IDS_MAX, "the file is bounded as the ids in memory are");
});
