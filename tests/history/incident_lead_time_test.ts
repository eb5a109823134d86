/**
 * A stronger trigger joining a pending incident (within MERGE_WINDOW_MS) leads it with its own
 * time: `trigger_at_epoch_ms` is when the lead happened, `at_epoch_ms` when the incident began
 * (the anchor of its window). A record written before the field was kept reads back with
 * `trigger_at_epoch_ms` = `at_epoch_ms`. The real runtime over the programmable provider (a child
 * process), an alarm raised by the alarm engine, the e-stop over loopback HTTP, a wall and a
 * monotonic clock the test sets; the answers checked against the OpenAPI document (apiFetch).
 */
import assert from "node:assert/strict";
import type { AlarmConfig } from "../../src/config/mod.ts";
import { MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { probeFile, probeValues, startRig, T0 } from "./_history_helpers.ts";

const history = { incidentBeforeS: 10, incidentAfterS: 3, diskMaxBytes: 0 };

/** probe's temp above 50 raises it (no action: the e-stop is the operator's). */
const HOT: AlarmConfig = {
  id: "hot",
  signal: "p0/probe/temp",
  providerId: "p0",
  deviceId: "probe",
  signalId: "temp",
  limits: { hi: 50 },
  level: "MAJOR",
  hysteresis: 0,
  delayMs: 0,
  onBadQuality: "ignore",
  action: "none",
  message: "too hot",
  path: "alarms[0]",
};

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
    for (let i = 5; i < 20; i++) await rig.poll(T0 + i * 1000, probeValues(i, i));
    // The alarm raises at alarmAt; the e-stop comes LATER_MS after it on both clocks.
    const mono = performance.now();
    clock.mono = mono;
    await rig.poll(alarmAt, probeValues(60, 20));
    assert.equal(rig.rt.incidents!.status().pending, 1, "the alarm's incident waits");
    clock.mono = mono + LATER_MS;
    clock.wallMs = estopAt;
    const estop = await apiFetch(`${rig.base}/v0/estop`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(estop.status, 200);
    await estop.body?.cancel();
    assert.equal(rig.rt.incidents!.status().pending, 1, "the e-stop joined it");
    // The rest of the window passes on the monotonic clock too.
    clock.mono = mono + history.incidentAfterS * 1000;
    await rig.poll(estopAt + 500, probeValues(99, 21, "after"));

    const h = await waitFor("the incident record", async () => {
      const l = await rig.json("/v0/incidents");
      return l.incidents[0] ?? null;
    });
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
