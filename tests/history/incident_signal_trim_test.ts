/**
 * An incident record says where a signal's samples begin when the ring lost the earlier part of
 * its window for that signal alone (docs/history.md, "Incidents"): history.memory_max_bytes
 * trimmed its changes while the device's polls are still kept (a long string changing at every
 * poll), or a value too large for the ring was not kept. Before, such a signal's line simply began
 * later (or held no sample), the record's `from_epoch_ms` saying the window was whole. The
 * programmable provider runs as a child process, served on loopback; a ring made without room on
 * a History fed by hand.
 */
import assert from "node:assert/strict";
import { FIRST_CAPACITY, POLL_ENTRY_BYTES, SIGNAL_ENTRY_BYTES } from "../../src/history/ring.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";
import { incidentRig } from "./_incident_rig.ts";

/** A label of this many characters is 40,032 bytes in the ring: one fits 64 KiB, two do not. */
const LABEL_CHARS = 20_000;

interface Line {
  signal_id: string;
  from_epoch_ms?: number;
  samples: [number, unknown, string][];
}

/** The e-stop's record (its window ends at once), its lines by signal. */
/** Three polls declaring `a` and `x`, the trigger, then a rediscovery leaving `x` out. */
function triggerThenDeclareWithoutX(
  { clock, pollSignals, estop }: ReturnType<typeof incidentRig>,
): void {
  for (let i = 0; i < 3; i++) {
    clock.advance(250);
    pollSignals(["a", "x"], i);
  }
  estop();
  clock.advance(250);
  pollSignals(["a"], 3); // rediscovered without x
}

async function estopRecord(rig: Awaited<ReturnType<typeof startRig>>) {
  await rig.rt.estop.trigger("trim test");
  const header = await waitFor(
    "the e-stop's incident record",
    async () => (await rig.json("/v0/incidents")).incidents[0],
  );
  const record = await rig.json(`/v0/incidents/${header.incident_id}`);
  assert.equal(record.status.code, "OK", JSON.stringify(record.status));
  return {
    header: record.incident,
    byId: new Map((record.signals as Line[]).map((s) => [s.signal_id, s])),
  };
}

Deno.test("An incident record says where the samples begin of a signal the byte bound trimmed alone", async () => {
  const history = {
    memoryMaxBytes: 65_536,
    incidentBeforeS: 10,
    incidentAfterS: 0,
    diskMaxBytes: 0,
  };
  const rig = await startRig({ dataDir: tempDir("incident-trim-"), history });
  try {
    const letters = ["a", "b", "c", "d", "e"];
    for (let i = 0; i < letters.length; i++) {
      await rig.poll(T0 + 500 + i * 1000, probeValues(20 + i, i, letters[i]!.repeat(LABEL_CHARS)));
    }
    const { header, byId } = await estopRecord(rig);
    assert.ok(header.from_epoch_ms <= T0 + 500, `from ${header.from_epoch_ms}`);
    // The device's other signals hold the whole window.
    assert.deepEqual(
      byId.get("temp")!.samples.map((s) => s[0]),
      [0, 1, 2, 3, 4].map((i) => T0 + 500 + i * 1000),
    );
    assert.equal(byId.get("temp")!.from_epoch_ms, undefined);
    // The label's ring keeps its last change only: its line says the window before it is gone.
    const label = byId.get("label")!;
    assert.deepEqual(label.samples.map((s) => s[0]), [T0 + 4500]);
    assert.equal(label.from_epoch_ms, T0 + 4500, "where the label's samples begin");
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("An incident record says where the samples begin of a signal whose value was too large for the ring", async () => {
  const history = {
    memoryMaxBytes: 65_536,
    incidentBeforeS: 10,
    incidentAfterS: 0,
    diskMaxBytes: 0,
  };
  const rig = await startRig({ dataDir: tempDir("incident-too-large-"), history });
  try {
    await rig.poll(T0 + 500, probeValues(20, 0, "a"));
    await rig.poll(T0 + 1500, probeValues(21, 1, "b"));
    // 80,032 bytes: more than the whole budget, not kept (nor "a" and "b" before it).
    await rig.poll(T0 + 2500, probeValues(22, 2, "x".repeat(2 * LABEL_CHARS)));
    await rig.poll(T0 + 3500, probeValues(23, 3, "c"));
    await rig.poll(T0 + 4500, probeValues(24, 4, "c"));
    const { byId } = await estopRecord(rig);
    const label = byId.get("label")!;
    assert.deepEqual(label.samples.map((s) => [s[0], s[1]]), [[T0 + 3500, "c"], [T0 + 4500, "c"]]);
    assert.equal(label.from_epoch_ms, T0 + 3500, "where the label's samples begin");
    assert.equal(byId.get("count")!.from_epoch_ms, undefined);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("An incident record says a signal whose ring was made without room has no sample of its window", async () => {
  // Room for the device's polls (128 bytes) and one signal's first changes (208): `x` has none.
  const { clock, incidents, pollSignals, estop, session } = incidentRig({
    history: { memoryMaxBytes: FIRST_CAPACITY * (POLL_ENTRY_BYTES + SIGNAL_ENTRY_BYTES) },
    config: { incidentAfterS: 5 },
  });
  await session(() => {
    for (let i = 0; i < 3; i++) {
      clock.advance(250);
      pollSignals(["a", "x"], i);
    }
    estop();
    return Promise.resolve();
  });
  const [h] = incidents.list();
  const { signals } = await incidents.get(h!.incident_id);
  const byId = new Map(signals.map((s) => [s.signal_id, s]));
  assert.equal(byId.get("a")!.samples.length, 3);
  assert.equal(byId.get("a")!.from_epoch_ms, undefined);
  assert.equal(byId.get("x")!.samples.length, 0);
  assert.equal(byId.get("x")!.from_epoch_ms, h!.until_epoch_ms, "none of its window is kept");
});

Deno.test("An incident's CSV export says where a signal's samples begin (its from_epoch_ms column)", async () => {
  const history = {
    memoryMaxBytes: 65_536,
    incidentBeforeS: 10,
    incidentAfterS: 0,
    diskMaxBytes: 0,
  };
  const rig = await startRig({ dataDir: tempDir("incident-trim-csv-"), history });
  try {
    await rig.poll(T0 + 500, probeValues(20, 0, "a"));
    // Too large for the ring: not kept, nor "a" before it.
    await rig.poll(T0 + 1500, probeValues(21, 1, "x".repeat(2 * LABEL_CHARS)));
    await rig.poll(T0 + 2500, probeValues(22, 2, "c"));
    const { header, byId } = await estopRecord(rig);
    assert.equal(byId.get("label")!.from_epoch_ms, T0 + 2500);
    const res = await rig.get(`/v0/incidents/${header.incident_id}?format=csv`);
    assert.equal(res.status, 200);
    const lines = (await res.text()).split("\r\n");
    assert.equal(lines[0], "provider_id,device_id,signal_id,t_ms,value,quality,unit,from_epoch_ms");
    // The label's line begins later and says so on each of its rows; the others cover the window.
    assert.deepEqual(lines.filter((l) => l.startsWith("p0,probe,label,")), [
      `p0,probe,label,${T0 + 2500},c,OK,,${T0 + 2500}`,
    ]);
    assert.deepEqual(lines.filter((l) => l.startsWith("p0,probe,temp,")), [
      `p0,probe,temp,${T0 + 500},20,OK,,`,
      `p0,probe,temp,${T0 + 1500},21,OK,,`,
      `p0,probe,temp,${T0 + 2500},22,OK,,`,
    ]);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("An incident record whose device stopped declaring a signal within its window says so in one WARN", async () => {
  // A provider crash-restarting within the window whose new description leaves `x` out: the ring
  // releases x's samples (those before the trigger too), and the record has no line of it.
  // Before, nothing said so, unlike a signal whose ring lost the start of the window.
  const { log, lines } = capturingLogger({ level: "info" });
  const rig = incidentRig({ log });
  const { clock, incidents, session } = rig;
  await session(async () => {
    triggerThenDeclareWithoutX(rig);
    clock.advance(1000); // the window closes
    await incidents.settled();
  });
  const [h] = incidents.list();
  const { signals } = await incidents.get(h!.incident_id);
  assert.deepEqual(signals.map((s) => s.signal_id), ["a"]);
  const warns = lines.filter((l) => l.includes("WARN") && l.includes(h!.incident_id));
  assert.equal(warns.length, 1, `one WARN naming the incident: ${lines.join("\n")}`);
  assert.match(warns[0]!, /no line for 1 signal\(s\) .*"p\/d\/x"/);
});

Deno.test("An incident record says nothing of a signal its device stopped declaring before its window", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const { clock, incidents, pollSignals, estop, session } = incidentRig({ log });
  await session(async () => {
    pollSignals(["a", "x"], 0);
    clock.advance(250);
    pollSignals(["a"], 1); // x left out 2.75 s before the trigger: not in its 1 s window
    for (let i = 2; i < 12; i++) {
      clock.advance(250);
      pollSignals(["a"], i);
    }
    estop();
    clock.advance(1250);
    await incidents.settled();
  });
  assert.deepEqual(lines.filter((l) => l.includes("WARN")), []);
});

Deno.test("An incident record says where the samples begin of a signal its device stopped declaring and declared again within its window", async () => {
  // Left out by one rediscovery and declared again by the next, both within the window: its
  // samples before (those of the trigger too) went with its old ring. Before, its line had no
  // from_epoch_ms (as if it covered the window) and nothing said it lost them.
  const { log, lines } = capturingLogger({ level: "info" });
  const rig = incidentRig({ log });
  const { clock, incidents, pollSignals, session } = rig;
  let back = 0;
  await session(async () => {
    triggerThenDeclareWithoutX(rig);
    clock.advance(250);
    back = clock.wall;
    pollSignals(["a", "x"], 4); // and with it again
    clock.advance(1000); // the window closes
    await incidents.settled();
  });
  const [h] = incidents.list();
  const { signals } = await incidents.get(h!.incident_id);
  const x = signals.find((s) => s.signal_id === "x");
  assert.ok(x !== undefined, `a line for x: ${JSON.stringify(signals)}`);
  assert.deepEqual(x.samples.map((s) => s[1]), [4]);
  assert.equal(
    x.from_epoch_ms,
    back,
    `x's samples begin at its new declaration: ${JSON.stringify(x)}`,
  );
  const warns = lines.filter((l) => l.includes("WARN") && l.includes(h!.incident_id));
  assert.equal(warns.length, 1, `one WARN naming the incident: ${lines.join("\n")}`);
  assert.match(warns[0]!, /"p\/d\/x"/);
});

Deno.test("An incident record says nothing lost of a signal its device stopped declaring before its window and declared again within it", async () => {
  // x left out 2.75 s before the trigger (its 1 s window), declared again after it: the window
  // never held x before then, nothing of it was lost. Before, its declaration again was marked as
  // a ring that lost changes: a WARN that its line does not hold the start of its window.
  const { log, lines } = capturingLogger({ level: "info" });
  const { clock, incidents, pollSignals, estop, session } = incidentRig({ log });
  await session(async () => {
    pollSignals(["a", "x"], 0);
    clock.advance(250);
    pollSignals(["a"], 1); // x left out 2.75 s before the trigger
    for (let i = 2; i < 12; i++) {
      clock.advance(250);
      pollSignals(["a"], i);
    }
    estop();
    clock.advance(250);
    pollSignals(["a", "x"], 12); // declared again within the window
    clock.advance(1000); // the window closes
    await incidents.settled();
  });
  assert.deepEqual(lines.filter((l) => l.includes("WARN")), []);
});
