/**
 * An incident record torn by a power cut after its header was written (its file shorter than the
 * header's `bytes`), or one whose signal line does not parse, is listed and served as not whole
 * (`incomplete`), with what is readable of it, never as complete. The real runtime over the
 * programmable provider (a child process), real files truncated and damaged between two starts,
 * the answers over loopback HTTP.
 */
import assert from "node:assert/strict";
import { tempDir } from "../helpers/kernel.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { probeFile, recordEstopIncident, startRig, T0 } from "./_history_helpers.ts";

// The after window runs on real timers: 3 s, not 1, leaves the "after" poll (a provider call
// and a poll) room on a loaded machine (the fresh-clone CI saw it land after a 1 s window).
const history = { incidentBeforeS: 10, incidentAfterS: 3, diskMaxBytes: 0 };

/** A runtime's e-stop incident (every probe signal, 12 samples each), its id and file path. */
async function recordIncident(dataDir: string, inventoryFile: string, clock: TestClock) {
  const h = await recordEstopIncident({ history, dataDir, clock, inventoryFile });
  assert.equal(h.signals, 3);
  assert.equal(h.samples, 36);
  return { id: h.incident_id as string, bytes: h.bytes as number };
}

Deno.test("IncidentRecorder lists and serves a record torn after its header as torn, with what is readable", async () => {
  const dataDir = tempDir("incident-torn-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  const { id, bytes } = await recordIncident(dataDir, inventoryFile, clock);
  const path = `${dataDir}/history/incidents/${id}.jsonl`;
  const text = await Deno.readTextFile(path);
  assert.equal(new TextEncoder().encode(text).length, bytes);
  // A power cut half-way through its third line: the header and one signal line whole.
  const lines = text.split("\n");
  const whole = `${lines[0]}\n${lines[1]}\n`;
  const cut = whole + lines[2]!.slice(0, Math.floor(lines[2]!.length / 2));
  await Deno.writeTextFile(path, cut);
  const size = new TextEncoder().encode(cut).length;
  const firstSamples = JSON.parse(lines[1]!).samples.length;

  const rig = await startRig({ history, dataDir, clock, inventoryFile });
  try {
    const list = await rig.json("/v0/incidents");
    assert.equal(list.incidents.length, 1);
    const h = list.incidents[0];
    assert.equal(h.incident_id, id);
    assert.equal(h.signals, 1, "the one signal line readable");
    assert.equal(h.samples, firstSamples);
    assert.equal(h.bytes, size, "the bytes the file holds, as the bounds count them");
    assert.equal(h.incomplete, "torn");

    const record = await rig.json(`/v0/incidents/${id}`);
    assert.deepEqual(record.incident, h);
    assert.equal(record.signals.length, 1);
    assert.deepEqual(record.signals[0], JSON.parse(lines[1]!));

    const csv = await rig.get(`/v0/incidents/${id}?format=csv`);
    assert.equal(csv.headers.get("x-incident-incomplete"), "torn");
    assert.equal((await csv.text()).split("\r\n").length, 1 + firstSamples + 1);
    const jsonl = await rig.get(`/v0/incidents/${id}?format=jsonl`);
    assert.equal(jsonl.headers.get("x-incident-incomplete"), "torn");
    assert.equal(await jsonl.text(), `${cut}\n`, "the record as stored");
    const metrics = await (await rig.get("/metrics")).text();
    assert.match(metrics, new RegExp(`^runtime_incidents_bytes ${size}$`, "m"));
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("IncidentRecorder serves a record whose signal line does not parse as damaged, and lists it so from then on", async () => {
  const dataDir = tempDir("incident-damaged-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  const { id } = await recordIncident(dataDir, inventoryFile, clock);
  const path = `${dataDir}/history/incidents/${id}.jsonl`;
  const lines = (await Deno.readTextFile(path)).split("\n");
  // Its second signal line overwritten in place (as long as it was): the size is the header's.
  lines[2] = "#".repeat(lines[2]!.length);
  await Deno.writeTextFile(path, lines.join("\n"));

  const rig = await startRig({ history, dataDir, clock, inventoryFile });
  try {
    assert.equal((await rig.json("/v0/incidents")).incidents[0].signals, 3, "not read yet");
    const record = await rig.json(`/v0/incidents/${id}`);
    assert.equal(record.signals.length, 2);
    assert.equal(record.incident.signals, 2);
    assert.equal(record.incident.samples, 24);
    assert.equal(record.incident.incomplete, "damaged");
    const list = await rig.json("/v0/incidents");
    assert.deepEqual(list.incidents[0], record.incident);
  } finally {
    await rig.rt.stop();
  }
});
