/**
 * A record the count bound removes while a GET of it is reading its file: the 404 names the
 * bound, as every later GET of it does and docs/history.md says ("removed by
 * history.incident_max_count ..."), not "its file is gone" (a removal by hand).
 */
import assert from "node:assert/strict";
import { MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { HeldReads } from "./_file_faults.ts";
import { incidentRig } from "./_incident_rig.ts";

/** What a 404 says (the error get() throws). */
async function notFound(p: Promise<unknown>): Promise<string> {
  const err = await p.then(() => null, (e: unknown) => e);
  assert.ok(err instanceof Error, "NOT_FOUND");
  assert.equal((err as { code?: string }).code, "NOT_FOUND", String(err));
  return err.message;
}

Deno.test("IncidentRecorder: a record the count bound removes while it is read answers 404 naming the bound", async () => {
  const files = new HeldReads();
  const { clock, incidents, poll, loss, session } = incidentRig({
    config: { incidentMaxCount: 1 },
    files,
  });
  const ids: string[] = [];
  incidents.onIncident((i) => ids.push(i.incident_id));
  await session(async () => {
    poll("p0", "d0", 1);
    loss("d0");
    clock.advance(1_000 + MERGE_WINDOW_MS + 100);
    await incidents.settled();
    const first = ids[0]!;
    assert.equal(incidents.list()[0]!.incident_id, first);
    // A GET of it begins reading its file...
    const path = `/data/history/incidents/${first}.jsonl`;
    const held = files.hold({ call: "readLines", path: (p) => p === path, once: false });
    const reading = notFound(incidents.get(first));
    await held.reading;
    // ... while the next record is written and the bound (1) removes it.
    poll("p0", "d1", 1);
    loss("d1");
    clock.advance(1_000 + MERGE_WINDOW_MS + 100);
    await incidents.settled();
    assert.deepEqual(incidents.list().map((h) => h.incident_id), [ids[1]]);
    held.release();
    const said = await reading;
    const later = await notFound(incidents.get(first));
    assert.match(later, /removed by history\.incident_max_count, 1/);
    // Before: "Incident not found: <id> (its file is gone)", as for a file removed by hand.
    assert.equal(said, later);
  });
});
