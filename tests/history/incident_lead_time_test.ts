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
import { T, TestClock } from "../helpers/programmable_provider.ts";
import {
  alarmThenJoiningEstop,
  HOT,
  PROBE,
  probeFile,
  probeValues,
  startRig,
  T0,
} from "./_history_helpers.ts";

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

Deno.test("IncidentRecorder: a device an e-stop names when it joins an alarm's incident keeps its polls' own times before the e-stop", async () => {
  const dataDir = tempDir("incident-joined-device-");
  // The probe (the alarm's device) and `other`, which only the machine-wide e-stop names.
  const inventoryFile = await probeFile(dataDir, {
    devices: {
      ...PROBE.devices,
      other: { signals: [{ id: "x", type: T.DOUBLE }], values: [] },
    },
  });
  const clock = new TestClock();
  clock.wallMs = T0;
  const rig = await startRig({ history, dataDir, clock, inventoryFile, alarms: [HOT] });
  /** Polls `other` at `atMs`, x = `x`. */
  const pollOther = async (atMs: number, x: number) => {
    const values = [{ id: "x", type: T.DOUBLE, double: x, quality: 1 }];
    await rig.rt.registry.host("p0")!.request("call", {
      device_id: "other",
      function_id: 1,
      args: { answer: { type: T.STRING, string_value: JSON.stringify({ read: { values } }) } },
    });
    clock.wallMs = atMs;
    await rig.rt.cache.pollDevice("p0", "other");
  };
  const alarmAt = T0 + 20_000;
  const mono = performance.now();
  clock.mono = mono;
  try {
    for (let i = 15; i < 20; i++) {
      await rig.poll(T0 + i * 1000, probeValues(i, i));
      await pollOther(T0 + i * 1000 + 100, i);
    }
    await rig.poll(alarmAt, probeValues(60, 20)); // HOT raises: its incident names the probe
    // `other` polled twice between the alarm and the e-stop, 900 ms after it on both clocks.
    await pollOther(alarmAt + 300, 300);
    await pollOther(alarmAt + 600, 600);
    clock.mono = mono + 900;
    clock.wallMs = alarmAt + 900;
    await rig.estop();
    clock.mono = mono + 900 + history.incidentAfterS * 1000;
    await pollOther(alarmAt + 1000, 1000);
    const h = await rig.incident();
    assert.equal(h.trigger, "estop", "the e-stop joined the alarm's incident and leads it");
    assert.equal(h.at_epoch_ms, alarmAt);
    const { signals } = await rig.json(`/v0/incidents/${h.incident_id}`);
    const x = signals.find((s: { device_id: string }) => s.device_id === "other");
    assert.deepEqual(
      x.samples.map(([t, v]: [number, number]) => [t - alarmAt, v]),
      [
        [-4900, 15],
        [-3900, 16],
        [-2900, 17],
        [-1900, 18],
        [-900, 19],
        [300, 300],
        [600, 600],
        [1000, 1000],
      ],
      "each poll at its own time, not moved back by the e-stop's 900 ms",
    );
  } finally {
    await rig.rt.stop();
  }
});
