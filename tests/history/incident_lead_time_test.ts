/**
 * A stronger trigger joining a pending incident (within MERGE_WINDOW_MS) leads it with its own
 * time: `trigger_at_epoch_ms` is when the lead happened, `at_epoch_ms` when the incident began
 * (the anchor of its window). A record written before the field was kept reads back with
 * `trigger_at_epoch_ms` = `at_epoch_ms`. The real runtime over the programmable provider (a child
 * process), an alarm raised by the alarm engine, the e-stop over loopback HTTP, a wall and a
 * monotonic clock the test sets; the answers checked against the OpenAPI document (apiFetch).
 */
import assert from "node:assert/strict";
import { MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { tempDir } from "../helpers/kernel.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { alarmThenJoiningEstop, HOT, probeFile, startRig, T0 } from "./_history_helpers.ts";

const history = { incidentBeforeS: 10, incidentAfterS: 3, diskMaxBytes: 0 };

/** The e-stop comes this long after the alarm (within MERGE_WINDOW_MS: it joins). */
const LATER_MS = 500;

Deno.test("IncidentRecorder: an e-stop joining an alarm's incident leads it with its own time (trigger_at_epoch_ms), the window kept around the alarm's", async () => {
  assert.ok(LATER_MS < MERGE_WINDOW_MS);
  const dataDir = tempDir("incident-lead-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  const alarmAt = T0 + 20_000;
  const estopAt = alarmAt + LATER_MS;
  let rig = await startRig({ history, dataDir, clock, inventoryFile, alarms: [HOT] });
  let id = "";
  try {
    // The alarm raises at alarmAt; the e-stop comes LATER_MS after it on both clocks.
    await alarmThenJoiningEstop(rig, {
      alarmAt,
      laterMs: LATER_MS,
      afterS: history.incidentAfterS,
    });

    const h = await rig.incident();
    id = h.incident_id;
    assert.equal(h.trigger, "estop", "the e-stop leads");
    assert.equal(h.trigger_at_epoch_ms, estopAt, "when the e-stop happened");
    assert.equal(h.at_epoch_ms, alarmAt, "the window's anchor: when the incident began");
    assert.equal(h.from_epoch_ms, alarmAt - history.incidentBeforeS * 1000);
    const alarm = h.also.find((c: { trigger: string }) => c.trigger === "alarm");
    assert.equal(alarm?.at_epoch_ms, alarmAt, `the alarm keeps its time: ${JSON.stringify(h)}`);
    const one = await rig.json(`/v0/incidents/${id}`);
    assert.equal(one.incident.trigger_at_epoch_ms, estopAt);
    assert.equal(one.incident.at_epoch_ms, alarmAt);
    const stored = JSON.parse(
      (await (await rig.get(`/v0/incidents/${id}?format=jsonl`)).text())
        .split("\n")[0]!,
    );
    assert.equal(stored.trigger_at_epoch_ms, estopAt, "the file keeps it");
  } finally {
    await rig.rt.stop();
  }

  // A record of a version that kept no trigger_at_epoch_ms (its header's bytes its own).
  const path = `${dataDir}/history/incidents/${id}.jsonl`;
  const text = await Deno.readTextFile(path);
  const cut = text.indexOf("\n");
  const { trigger_at_epoch_ms: _, ...old } = JSON.parse(text.slice(0, cut));
  const body = text.slice(cut);
  const size = (bytes: number) =>
    new TextEncoder().encode(JSON.stringify({ ...old, bytes }) + body).length;
  old.bytes = size(size(0));
  await Deno.writeTextFile(path, JSON.stringify(old) + body);

  rig = await startRig({ history, dataDir, clock, inventoryFile, alarms: [HOT] });
  try {
    const [h] = (await rig.json("/v0/incidents")).incidents;
    assert.equal(h.incident_id, id);
    assert.equal(h.incomplete, null, "read back whole");
    assert.equal(h.at_epoch_ms, alarmAt);
    assert.equal(h.trigger_at_epoch_ms, alarmAt, "an older record: read back as at_epoch_ms");
    assert.equal((await rig.json(`/v0/incidents/${id}`)).incident.trigger_at_epoch_ms, alarmAt);
  } finally {
    await rig.rt.stop();
  }
});
