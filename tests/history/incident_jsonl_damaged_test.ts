/**
 * The JSON Lines export of a damaged incident record (a signal line that does not parse) says so on
 * its own (`X-Incident-Incomplete: damaged`), when it is the first thing asked of the record: not
 * only after a JSON or CSV read found the damage. The real runtime over the programmable provider
 * (a child process), a real file damaged between two starts, the answers over loopback HTTP.
 */
import assert from "node:assert/strict";
import { tempDir } from "../helpers/kernel.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { probeFile, recordEstopIncident, startRig, T0 } from "./_history_helpers.ts";

// The after window runs on real timers: 3 s, not 1, leaves the "after" poll (a provider call
// and a poll) room on a loaded machine (the fresh-clone CI saw it land after a 1 s window).
const history = { incidentBeforeS: 10, incidentAfterS: 3, diskMaxBytes: 0 };

/** A runtime's e-stop incident (every probe signal), its id. */
async function recordIncident(dataDir: string, inventoryFile: string, clock: TestClock) {
  const h = await recordEstopIncident({ history, dataDir, clock, inventoryFile });
  assert.equal(h.signals, 3);
  return h.incident_id as string;
}

Deno.test("IncidentRecorder marks the JSON Lines export of a damaged record damaged when it is asked first", async () => {
  const dataDir = tempDir("incident-jsonl-damaged-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  const id = await recordIncident(dataDir, inventoryFile, clock);
  const path = `${dataDir}/history/incidents/${id}.jsonl`;
  const lines = (await Deno.readTextFile(path)).split("\n");
  lines[2] = "#".repeat(lines[2]!.length); // its second signal line, overwritten in place
  const stored = lines.join("\n");
  await Deno.writeTextFile(path, stored);

  const rig = await startRig({ history, dataDir, clock, inventoryFile });
  try {
    const jsonl = await rig.get(`/v0/incidents/${id}?format=jsonl`);
    assert.equal(jsonl.status, 200);
    assert.equal(jsonl.headers.get("x-incident-incomplete"), "damaged");
    assert.equal(await jsonl.text(), stored, "the record as stored");
    // Listed so from then on, as after a JSON read.
    const listed = (await rig.json("/v0/incidents")).incidents[0];
    assert.equal(listed.incomplete, "damaged");
    assert.equal(listed.signals, 2);
    // And asked again, the same answer (not order-dependent).
    const again = await rig.get(`/v0/incidents/${id}?format=jsonl`);
    assert.equal(again.headers.get("x-incident-incomplete"), "damaged");
    await again.body?.cancel();
  } finally {
    await rig.rt.stop();
  }
});
