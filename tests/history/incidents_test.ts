/**
 * Incident capture against the real runtime and the programmable provider (exact values, a wall
 * clock the test sets): an e-stop produces one incident (the FAULT entry joined to it) holding
 * every sample of the window before and after it, listed, exported as CSV and JSON Lines, linked
 * from the open run, kept across a restart; device losses are captured per device and the records
 * are bounded in count, the 404 of one not kept saying why, before a restart and after it.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import {
  programmableProvider,
  programReadFailure,
  TestClock,
} from "../helpers/programmable_provider.ts";
import { tempDir } from "../helpers/kernel.ts";
import { probeFile, probeValues, startRig, T0 } from "./_history_helpers.ts";
import { InterceptedAppends } from "../helpers/journal_files.ts";

/** The real files, but a write of an incident record waits until `release()` (a slow disk). */
class HeldIncidentFiles extends InterceptedAppends {
  #release!: () => void;
  readonly held = new Promise<void>((r) => this.#release = r);
  waiting = 0;
  constructor() {
    super("/incidents/", async (text, append) => {
      this.waiting++;
      await this.held;
      await append(text);
    });
  }
  release(): void {
    this.#release();
  }
}

const post = (url: string, body: unknown = {}) =>
  apiFetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

Deno.test("An e-stop produces one incident holding the samples before and after it, exported and linked from the open run", async () => {
  const dataDir = tempDir("incident-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  // The after window runs on real timers: 3 s, not 1, leaves the "after" poll (a provider call
  // and a poll) room on a loaded machine (the fresh-clone CI saw it land after a 1 s window).
  const history = { incidentBeforeS: 10, incidentAfterS: 3, diskMaxBytes: 0 };
  let rig = await startRig({ history, dataDir, clock, inventoryFile });
  let id = "";
  try {
    const run = await (await post(`${rig.base}/v0/runs`, { experiment_label: "inc" })).json();
    const runId = run.run.run_id;
    for (let i = 5; i <= 20; i++) await rig.poll(T0 + i * 1000, probeValues(i, i));
    const estop = await post(`${rig.base}/v0/estop`, { reason: "test stop" });
    assert.equal(estop.status, 200);
    await estop.body?.cancel();
    await rig.poll(T0 + 20_500, probeValues(99, 99, "after"));

    const list = await waitFor("the incident record", async () => {
      const l = await rig.json("/v0/incidents");
      return l.incidents.length > 0 ? l.incidents : null;
    });
    assert.equal(list.length, 1, "one incident: the e-stop and its FAULT entry together");
    const h = list[0];
    id = h.incident_id;
    assert.match(id, /^inc-\d+-\d+$/);
    assert.equal(h.trigger, "estop");
    assert.equal(h.cause, "e-stop: test stop (api)", "the HTTP reason reaches the incident");
    assert.equal(h.at_epoch_ms, T0 + 20_000);
    assert.deepEqual(h.also, [
      { trigger: "fault", cause: "mode IDLE -> FAULT", at_epoch_ms: T0 + 20_000 },
    ]);
    assert.equal(h.scope, "machine");
    assert.deepEqual(h.devices, ["p0/probe"]);
    assert.equal(h.from_epoch_ms, T0 + 10_000);
    assert.equal(h.until_epoch_ms, T0 + 23_000);
    assert.equal(h.signals, 3);
    assert.equal(h.samples, 3 * 12);

    const record = await rig.json(`/v0/incidents/${id}`);
    assert.deepEqual(record.incident, h);
    const temp = record.signals.find((s: { signal_id: string }) => s.signal_id === "temp");
    assert.equal(temp.value_type, "double");
    assert.deepEqual(temp.samples, [
      ...Array.from({ length: 11 }, (_, k) => [T0 + (10 + k) * 1000, 10 + k, "OK"]),
      [T0 + 20_500, 99, "OK"],
    ]);
    const label = record.signals.find((s: { signal_id: string }) => s.signal_id === "label");
    assert.deepEqual(label.samples.at(-1), [T0 + 20_500, "after", "OK"]);

    const csv = await rig.get(`/v0/incidents/${id}?format=csv`);
    assert.equal(csv.headers.get("content-type"), "text/csv; charset=utf-8");
    const csvLines = (await csv.text()).split("\r\n");
    assert.equal(
      csvLines[0],
      "provider_id,device_id,signal_id,t_ms,value,quality,unit,from_epoch_ms",
    );
    // The probe declares no unit: the column is empty; the ring kept every sample: from_epoch_ms
    // is empty too.
    assert.ok(csvLines.includes(`p0,probe,temp,${T0 + 10_000},10,OK,,`));
    assert.ok(csvLines.includes(`p0,probe,label,${T0 + 20_500},after,OK,,`));
    assert.equal(csvLines.length, 1 + 36 + 1);
    const jsonl = await rig.get(`/v0/incidents/${id}`, { accept: "application/jsonl" });
    assert.equal(jsonl.headers.get("content-type"), "application/jsonl; charset=utf-8");
    const lines = (await jsonl.text()).trimEnd().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines[0], h);
    assert.deepEqual(lines.slice(1), record.signals);
    assert.equal((await rig.get("/v0/incidents/inc-1-1")).status, 404);

    const events = await rig.json(`/v0/runs/${runId}/events`);
    const linked = events.events.filter((e: { category: string }) => e.category === "incident");
    assert.equal(linked.length, 1);
    assert.equal(linked[0].type, "estop");
    assert.equal(linked[0].payload.incident_id, id);
    assert.equal(linked[0].payload.link, `/v0/incidents/${id}`);
    const metrics = await (await rig.get("/metrics")).text();
    assert.match(metrics, /^runtime_incidents 1$/m);
  } finally {
    await rig.rt.stop();
  }
  // Kept across a restart.
  rig = await startRig({ history, dataDir, clock, inventoryFile });
  try {
    const list = await rig.json("/v0/incidents");
    assert.deepEqual(list.incidents.map((i: { incident_id: string }) => i.incident_id), [id]);
    assert.equal((await rig.json(`/v0/incidents/${id}`)).signals.length, 3);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("Each device loss is an incident of that device; the records are bounded in count, and a restart says why one is not kept as before", async () => {
  const history = { incidentBeforeS: 2, incidentAfterS: 0, incidentMaxCount: 2, diskMaxBytes: 0 };
  const rig = await startRig({ history });
  const ids: string[] = [];
  rig.rt.incidents!.onIncident((i) => ids.push(i.incident_id));
  /** What GET /v0/incidents/{id} answers for each of `notKept`: its status and message. */
  const notFound = async (r: typeof rig, notKept: readonly string[]) => {
    const said: string[] = [];
    for (const id of notKept) {
      const res = await r.get(`/v0/incidents/${id}`);
      const body = await res.json();
      said.push(`${res.status} ${body.status.message}`);
    }
    return said;
  };
  let notKept: string[] = [];
  let said: string[] = [];
  try {
    // A device is lost when it is down (DeviceOutages): reads failing for 500 ms here. The
    // monotonic clock is the test's: it says when the bound has passed.
    rig.rt.outages.setDownAfterMs(500);
    rig.clock.mono = 1_000_000;
    for (let n = 1; n <= 3; n++) {
      const at = T0 + n * 10_000;
      await rig.poll(at, probeValues(n, n));
      await programReadFailure(rig.rt.registry.host("p0")!);
      rig.clock.wallMs = at + 500;
      await rig.rt.cache.pollDevice("p0", "probe"); // fails: failing, not yet down
      rig.clock.mono += 500;
      rig.clock.wallMs = at + 1000; // down now, dated from its first failed read
      await waitFor(`incident ${n}`, () => rig.rt.incidents!.list()[0]?.at_epoch_ms === at + 500);
      await rig.rt.incidents!.settled(); // its write and the removal of the oldest
    }
    const list = (await rig.json("/v0/incidents")).incidents;
    assert.equal(list.length, 2, "incident_max_count: the oldest was removed");
    assert.deepEqual(list.map((i: { at_epoch_ms: number }) => i.at_epoch_ms), [
      T0 + 30_500,
      T0 + 20_500,
    ]);
    for (const i of list) {
      assert.equal(i.trigger, "device_loss");
      assert.equal(i.cause, "device p0/probe lost: its reads fail");
      assert.equal(i.scope, "devices");
      assert.deepEqual(i.devices, ["p0/probe"]);
    }
    const newest = await rig.json(`/v0/incidents/${list[0].incident_id}`);
    const temp = newest.signals.find((s: { signal_id: string }) => s.signal_id === "temp");
    assert.deepEqual(temp.samples, [[T0 + 30_000, 3, "OK"], [T0 + 30_500, 3, "UNAVAILABLE"]]);
    const names = [...Deno.readDirSync(`${rig.dataDir}/history/incidents`)].map((e) => e.name);
    assert.equal(names.filter((n) => n.startsWith("inc-")).length, 2);

    // A record whose file is gone (removed by hand, or by the count bound while it was asked
    // for) is not kept: 404 as a missing record, never an empty export.
    const gone = list[1].incident_id;
    Deno.removeSync(`${rig.dataDir}/history/incidents/${gone}.jsonl`);
    for (const accept of ["application/jsonl", "text/csv", "application/json"]) {
      const r = await rig.get(`/v0/incidents/${gone}`, { accept });
      const text = await r.text();
      assert.equal(r.status, 404, `${accept}: ${r.status} ${JSON.stringify(text)}`);
    }
    // ... and no longer listed once a read found its file gone (not only after a restart).
    const after = (await rig.json("/v0/incidents")).incidents;
    assert.deepEqual(
      after.map((i: { incident_id: string }) => i.incident_id),
      [list[0].incident_id],
      "the record whose file is gone is still listed",
    );
    assert.match(await (await rig.get("/metrics")).text(), /^runtime_incidents 1$/m);

    // Why each record is not kept: removed by the count bound, its file gone.
    assert.equal(ids.length, 3);
    notKept = [ids[0]!, gone, "inc-1-999"];
    said = await notFound(rig, notKept);
    assert.deepEqual(said, [
      `404 Incident not found: ${ids[0]} (removed by history.incident_max_count, 2: the oldest ` +
      "records make way for new ones)",
      `404 Incident not found: ${gone} (its file is gone)`,
      "404 Incident not found: inc-1-999",
    ]);
  } finally {
    await rig.rt.stop();
  }
  // A restart on the same data folder says the same.
  const again = await startRig({ history, dataDir: rig.dataDir });
  try {
    assert.equal((await again.json("/v0/incidents")).incidents.length, 1);
    assert.deepEqual(await notFound(again, notKept), said);
  } finally {
    await again.rt.stop();
  }
});

Deno.test("The e-stop never waits for its incident: a record held by a slow disk is written after the answer", async () => {
  const files = new HeldIncidentFiles();
  const rig = await startRig({
    history: { incidentBeforeS: 5, incidentAfterS: 0, diskMaxBytes: 0 },
    host: { files },
  });
  try {
    await rig.poll(T0 + 1000, probeValues(1, 1));
    const estop = await post(`${rig.base}/v0/estop`);
    assert.equal(estop.status, 200);
    assert.equal((await estop.json()).latched, true);
    await waitFor("the record's write begun (and held)", () => files.waiting === 1);
    assert.deepEqual((await rig.json("/v0/incidents")).incidents, [], "not written yet");
    files.release();
    const list = await waitFor("the record", async () => {
      const l = (await rig.json("/v0/incidents")).incidents;
      return l.length > 0 ? l : null;
    });
    assert.equal(list[0].trigger, "estop");
    assert.equal(list[0].samples, 3);
  } finally {
    files.release();
    await rig.rt.stop();
  }
});

Deno.test("An e-stop's HTTP reason still arriving when its window ends reaches its incident: the record waits for it (bounded), the latch never does", async () => {
  const rig = await startRig({
    history: { incidentBeforeS: 5, incidentAfterS: 0, diskMaxBytes: 0 },
  });
  try {
    await rig.poll(T0 + 1000, probeValues(1, 1));
    const incidents = rig.rt.incidents!;
    const begun: string[] = [];
    incidents.onIncident((h) => begun.push(h.trigger));
    // The body's first bytes now, the rest once the window has ended: the latch engages at once,
    // the window (incident_after_s 0) ends before the reason is known.
    let rest: () => void = () => {};
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"reason":"guard '));
        rest = () => {
          c.enqueue(new TextEncoder().encode('door opened"}'));
          c.close();
        };
      },
    });
    const answer = fetch(`${rig.base}/v0/estop`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      // @ts-ignore: a streamed request body (fetch's duplex option)
      duplex: "half",
    });
    await waitFor("the latch", () => rig.rt.estop.latched);
    // The window ends (incident_after_s 0: its record is captured, no longer pending) while the
    // reason is still arriving.
    await waitFor("the window ended", () => begun.length === 1 && incidents.status().pending === 0);
    rest();
    const res = await answer;
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await rig.rt.incidents!.settled();
    const list = await waitFor("the record", async () => {
      const l = (await rig.json("/v0/incidents")).incidents;
      return l.length > 0 ? l : null;
    });
    assert.equal(list[0].trigger, "estop");
    assert.equal(
      list[0].cause,
      "e-stop: guard door opened (api)",
      "the reason is not in the incident",
    );
    const record = await rig.json(`/v0/incidents/${list[0].incident_id}`);
    assert.equal(record.incident.cause, "e-stop: guard door opened (api)");
  } finally {
    await rig.rt.stop();
  }
});

/** 2 s of samples before a trigger, none after it, no disk tier. */
const LOSS_WINDOW = { incidentBeforeS: 2, incidentAfterS: 0, diskMaxBytes: 0 };

/**
 * A rig (LOSS_WINDOW; a device down after 500 ms failing) whose probe answered a poll at T0 + 1 s
 * and failed its read at T0 + 1.5 s (one failed read: failing since then). The caller stops it.
 */
async function startFailingProbe(): Promise<Awaited<ReturnType<typeof startRig>>> {
  const rig = await startRig({ history: LOSS_WINDOW });
  try {
    rig.rt.outages.setDownAfterMs(500);
    rig.clock.mono = 1_000_000;
    await rig.poll(T0 + 1000, probeValues(1, 1));
    await programReadFailure(rig.rt.registry.host("p0")!);
    rig.clock.wallMs = T0 + 1500;
    await rig.rt.cache.pollDevice("p0", "probe");
    return rig;
  } catch (err) {
    await rig.rt.stop();
    throw err;
  }
}

Deno.test("A device is lost when it is down, as for the device-loss latch: one failed poll of a device that answers again is no incident", async () => {
  const rig = await startFailingProbe();
  try {
    assert.equal(rig.rt.outages.condition("p0", "probe").kind, "failing");
    rig.clock.mono! += 100;
    await rig.poll(T0 + 1600, probeValues(2, 2)); // answers again: up
    assert.equal(rig.rt.outages.condition("p0", "probe").kind, "up");
    rig.clock.mono! += 1000;
    await rig.rt.incidents!.settled();
    assert.equal(
      rig.rt.incidents!.status().pending + rig.rt.incidents!.list().length,
      0,
      "a single failed poll of a device that is never down made a device_loss incident",
    );
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("A reload that restarts or removes a provider is no device loss: its devices going down open no incident", async () => {
  const rig = await startRig({ history: LOSS_WINDOW });
  try {
    await rig.poll(T0 + 1000, probeValues(1, 1));
    const config = rig.rt.config;
    const p0 = config.providers[0]!;
    // Restarted: its command line changed.
    const restarted = { ...p0, args: [...p0.args, "--restarted"] };
    const report = await rig.rt.reload({ ...config, providers: [restarted] });
    assert.deepEqual(report.providers.restarted, ["p0"]);
    await waitFor("the probe back", () => rig.rt.outages.condition("p0", "probe").kind !== "down");
    // Removed.
    const dir = tempDir("incident-reload-");
    const other = programmableProvider("p1", await probeFile(dir));
    await rig.rt.reload({ ...config, providers: [other] });
    await rig.rt.incidents!.settled();
    assert.deepEqual(
      rig.rt.incidents!.list().map((i) => `${i.trigger}: ${i.cause}`),
      [],
      "a reload's restart or removal of a provider was recorded as a device loss",
    );
    assert.equal(rig.rt.incidents!.status().pending, 0);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("A device lost across a wall clock step is dated as its failed read is in the ring: the record holds the failure", async () => {
  const rig = await startFailingProbe(); // failing since its read at T0 + 1.5 s
  try {
    // NTP steps the wall clock an hour forward before the device counts as down.
    rig.clock.wallMs = T0 + 3_600_000;
    rig.clock.mono! += 500;
    const [h] = await waitFor("the incident", () => {
      const l = rig.rt.incidents!.list();
      return l.length > 0 ? l : null;
    });
    assert.equal(h!.at_epoch_ms, T0 + 1500, "not dated as its failed read");
    const record = await rig.json(`/v0/incidents/${h!.incident_id}`);
    const temp = record.signals.find((s: { signal_id: string }) => s.signal_id === "temp");
    assert.deepEqual(temp.samples, [[T0 + 1000, 1, "OK"], [T0 + 1500, 1, "UNAVAILABLE"]]);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("A reload that lengthens polling.interval_ms while a device is down leaves it down: it is lost once, not again when the new bound passes", async () => {
  const rig = await startFailingProbe(); // failing since its read at T0 + 1.5 s
  try {
    const told: string[] = [];
    rig.rt.outages.onChange((c) => told.push(`${c.previous}->${c.condition.kind}`));
    rig.clock.mono! += 500;
    rig.clock.wallMs = T0 + 2000;
    await waitFor("the probe down", () => rig.rt.outages.condition("p0", "probe").kind === "down");
    await waitFor("its incident", () => rig.rt.incidents!.list().length === 1);
    await rig.rt.incidents!.settled();
    // Outside AUTO a longer interval applies: the bound is now 3 x 1 s. The probe never answered:
    // still lost, not "failing" again until the longer bound runs from its first failed read.
    const report = await rig.rt.reload({ ...rig.rt.config, polling: { intervalMs: 1000 } });
    assert.ok(report.applied.includes("polling"), JSON.stringify(report));
    assert.equal(rig.rt.outages.downAfterMs, 3000);
    assert.equal(rig.rt.outages.condition("p0", "probe").kind, "down");
    // Its reads go on failing past the longer bound.
    rig.clock.mono! += 3000;
    rig.clock.wallMs = T0 + 5000;
    await rig.rt.cache.pollDevice("p0", "probe");
    await rig.rt.incidents!.settled();
    assert.equal(
      rig.rt.incidents!.status().pending + rig.rt.incidents!.list().length,
      1,
      "one loss, recorded twice",
    );
    assert.deepEqual(told, ["failing->down"]);
  } finally {
    await rig.rt.stop();
  }
});
