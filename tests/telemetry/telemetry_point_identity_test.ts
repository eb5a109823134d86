/**
 * InfluxDB identifies a point by its measurement, tag set and timestamp: a second row with the
 * same three overwrites the first (InfluxDB v2 docs, "Handle duplicate data points"), where
 * VictoriaMetrics keeps both. These tests check the writer's lines by that identity.
 */
import assert from "node:assert/strict";
import type { ProviderHealthView } from "../../src/common/mod.ts";
import type { RuntimeMode } from "../../src/config/mod.ts";
import { TelemetryWriter } from "../../src/telemetry/mod.ts";
import { MAX_REMEMBERED_DATABASES } from "../../src/telemetry/_point_sequencer.ts";
import { providerHealthView, ScriptedDb, scriptedRig, SETTINGS } from "./_scripted_db.ts";
import { parseLine } from "./line_protocol_check.ts";

/** A line's InfluxDB point identity: measurement, tags sorted by key, timestamp. */
function pointIdentity(line: string): string {
  const p = parseLine(line);
  const tags = [...p.tags].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([p.measurement, tags, String(p.timestamp)]);
}

Deno.test("TelemetryWriter writes same-millisecond rows of one series as distinct InfluxDB points", async () => {
  const { clock, db, bus, writer } = scriptedRig();
  const ts = 1_760_000_000_500;
  try {
    // The mode machine can change twice within one millisecond (e.g. MANUAL -> FAULT -> IDLE).
    bus.publish({
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "FAULT",
      timestamp_ms: ts,
    });
    bus.publish({
      kind: "mode_change",
      previous_mode: "FAULT",
      new_mode: "IDLE",
      timestamp_ms: ts,
    });
    // Two operator markers of one run within one millisecond.
    for (const sequence of [3, 4]) {
      writer.recordRunEvent({
        run_id: "lab1-run",
        sequence,
        category: "annotation",
        type: "note",
        occurred_at_epoch_ms: ts,
        payload: { text: `marker ${sequence}` },
      });
    }
    await clock.advanceAsync(100);
    const lines = db.requests.flat();
    assert.equal(lines.length, 4, lines.join("\n"));
    const ids = lines.map(pointIdentity);
    assert.equal(
      new Set(ids).size,
      lines.length,
      `rows InfluxDB would merge into one point (the last overwrites):\n${lines.join("\n")}`,
    );
    // The first row of each series is written as before; the timestamps are kept.
    assert.ok(lines.includes(`runtime_mode_change previous_mode="MANUAL",new_mode="FAULT" ${ts}`));
    assert.ok(
      lines.includes(`runtime_mode_change,seq=1 previous_mode="FAULT",new_mode="IDLE" ${ts}`),
    );
    for (const l of lines) assert.equal(parseLine(l).timestamp, BigInt(ts));
    assert.equal(writer.status().total_written, 4);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter keeps a row distinct when the wall clock steps back onto a millisecond its series used", async () => {
  const { clock, db, bus, writer } = scriptedRig();
  const modeChange = (previous_mode: RuntimeMode, new_mode: RuntimeMode) =>
    bus.publish({ kind: "mode_change", previous_mode, new_mode, timestamp_ms: clock.nowMs() });
  try {
    const t = clock.nowMs();
    modeChange("IDLE", "MANUAL"); // at t
    clock.wall += 1;
    modeChange("MANUAL", "AUTO"); // at t + 1: the series' last millisecond is now t + 1
    clock.wall -= 1; // the wall clock steps back (NTP) onto t
    modeChange("AUTO", "FAULT"); // at t again, a row between
    clock.wall -= 1;
    modeChange("FAULT", "IDLE"); // at t - 1: a millisecond the series never used
    await clock.advanceAsync(100);
    const lines = db.requests.flat();
    assert.equal(lines.length, 4, lines.join("\n"));
    assert.equal(
      new Set(lines.map(pointIdentity)).size,
      lines.length,
      `rows InfluxDB would merge into one point (the last overwrites):\n${lines.join("\n")}`,
    );
    // The first row of the series at each millisecond is written untagged, as before.
    assert.ok(lines.includes(`runtime_mode_change previous_mode="IDLE",new_mode="MANUAL" ${t}`));
    assert.ok(
      lines.includes(`runtime_mode_change previous_mode="MANUAL",new_mode="AUTO" ${t + 1}`),
    );
    assert.ok(
      lines.includes(`runtime_mode_change,seq=1 previous_mode="AUTO",new_mode="FAULT" ${t}`),
    );
    assert.ok(lines.includes(`runtime_mode_change previous_mode="FAULT",new_mode="IDLE" ${t - 1}`));
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter keeps a health snapshot distinct when the wall clock steps back onto one taken before", async () => {
  const { clock, db, bus, options, writer: unused } = scriptedRig();
  await unused.stop(0);
  let uptime = 0;
  const health = (): ProviderHealthView[] => [providerHealthView({ uptime_seconds: ++uptime })];
  const writer = new TelemetryWriter({
    ...options,
    healthIntervalMs: 1000,
    healthSnapshot: () => Promise.resolve(health()),
  });
  writer.start(bus);
  try {
    await clock.advanceAsync(1000); // a snapshot at wall W
    clock.wall -= 1000; // the wall clock steps back one interval (NTP)
    await clock.advanceAsync(1000); // the next snapshot at wall W again
    await clock.advanceAsync(100);
    const lines = db.requests.flat().filter((l) => l.startsWith("runtime_provider_health"));
    assert.equal(lines.length, 2, lines.join("\n"));
    assert.equal(parseLine(lines[0]!).timestamp, parseLine(lines[1]!).timestamp);
    assert.equal(
      new Set(lines.map(pointIdentity)).size,
      lines.length,
      `rows InfluxDB would merge into one point (the last overwrites):\n${lines.join("\n")}`,
    );
  } finally {
    await writer.stop(0);
  }
});

/**
 * The scripted rig with a second database (`toSecond`: its settings), mode changes all at one
 * millisecond `ts`, and `reload`: a retarget the rig's clock lets finish.
 */
function retargetRig() {
  const rig = scriptedRig();
  const { clock, bus, writer, options } = rig;
  const second = new ScriptedDb();
  const toSecond = {
    ...options,
    influx: { ...SETTINGS, url: "http://db2.invalid:8086" },
    transport: second,
  };
  const ts = 1_760_000_000_500;
  const modeChange = (previous_mode: RuntimeMode, new_mode: RuntimeMode) =>
    bus.publish({ kind: "mode_change", previous_mode, new_mode, timestamp_ms: ts });
  const reload = async (next: typeof options) => {
    const reloaded = writer.retarget(next, 200);
    await clock.advanceAsync(0);
    await reloaded;
  };
  return { ...rig, second, toSecond, ts, modeChange, reload };
}

Deno.test("TelemetryWriter.retarget to a new database writes its first rows untagged; the same database keeps them distinct", async () => {
  const { clock, db, writer, options, second, toSecond, ts, modeChange, reload } = retargetRig();
  try {
    modeChange("IDLE", "MANUAL");
    await clock.advanceAsync(100);
    // The same database with a new token: it holds the row above, the next is tagged apart.
    await reload({ ...options, influx: { ...SETTINGS, token: "rotated" } });
    modeChange("MANUAL", "AUTO");
    await clock.advanceAsync(100);
    assert.deepEqual(db.requests.flat(), [
      `runtime_mode_change previous_mode="IDLE",new_mode="MANUAL" ${ts}`,
      `runtime_mode_change,seq=1 previous_mode="MANUAL",new_mode="AUTO" ${ts}`,
    ]);
    // A new database holds no row of the series: its first one is written untagged.
    await reload(toSecond);
    modeChange("AUTO", "FAULT");
    modeChange("FAULT", "IDLE");
    await clock.advanceAsync(100);
    assert.deepEqual(second.requests.flat(), [
      `runtime_mode_change previous_mode="AUTO",new_mode="FAULT" ${ts}`,
      `runtime_mode_change,seq=1 previous_mode="FAULT",new_mode="IDLE" ${ts}`,
    ]);
    // Telemetry off, then back on the same database: it still holds those rows.
    await reload({ ...options, enabled: false });
    await reload(toSecond);
    modeChange("IDLE", "MANUAL");
    await clock.advanceAsync(100);
    assert.equal(
      second.requests.flat().at(-1),
      `runtime_mode_change,seq=2 previous_mode="IDLE",new_mode="MANUAL" ${ts}`,
    );
    assert.equal(writer.status().total_written, 5);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget back to a database written before keeps its rows distinct: a row at a millisecond written there before the trip is tagged apart", async () => {
  const { clock, db, writer, options, second, toSecond, ts, modeChange, reload } = retargetRig();
  try {
    modeChange("IDLE", "MANUAL");
    await clock.advanceAsync(100);
    await reload(toSecond); // another database: it holds none of the row above
    modeChange("MANUAL", "AUTO");
    await clock.advanceAsync(100);
    assert.deepEqual(second.requests.flat(), [
      `runtime_mode_change previous_mode="MANUAL",new_mode="AUTO" ${ts}`,
    ]);
    // Back to the first database, and the wall clock stepped back onto that millisecond: the
    // first database holds a row of the series there, the next one must not overwrite it.
    await reload(options);
    modeChange("AUTO", "FAULT");
    await clock.advanceAsync(100);
    assert.deepEqual(db.requests.flat(), [
      `runtime_mode_change previous_mode="IDLE",new_mode="MANUAL" ${ts}`,
      `runtime_mode_change,seq=1 previous_mode="AUTO",new_mode="FAULT" ${ts}`,
    ]);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter tells MAX_REMEMBERED_DATABASES databases apart; a reload to one more forgets them all", async () => {
  const { clock, db, writer, options, reload, modeChange: change } = retargetRig();
  const modeChange = () => change("IDLE", "MANUAL");
  const elsewhere = (i: number) => ({
    ...options,
    influx: { ...SETTINGS, url: `http://db${i}.invalid:8086` },
    transport: new ScriptedDb(),
  });
  const backHome = async () => {
    await reload(options);
    // Another row at the first row's millisecond (the same row again would be written as it
    // was, untagged, remembered or not).
    change("MANUAL", "AUTO");
    await clock.advanceAsync(100);
    return db.requests.flat().at(-1)!.split(" ")[0];
  };
  try {
    modeChange();
    await clock.advanceAsync(100);
    for (let i = 1; i < MAX_REMEMBERED_DATABASES; i++) await reload(elsewhere(i));
    assert.equal(await backHome(), "runtime_mode_change,seq=1", "16 databases: remembered");
    await reload(elsewhere(MAX_REMEMBERED_DATABASES)); // the 17th
    assert.equal(await backHome(), "runtime_mode_change", "forgotten with the others");
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter writes a sample read twice within one millisecond of its provider's clock as its first row, untagged; a different value at that millisecond is tagged apart", async () => {
  const { clock, db, bus, writer } = scriptedRig();
  const ts = 1_760_000_000_700;
  const sample = (double: number, quality: "OK" | "STALE" = "OK") =>
    bus.publish({
      kind: "state_update",
      provider_id: "sim0",
      device_id: "tempctl0",
      signal_id: "temp",
      value: { type: "double", double },
      quality,
      timestamp_ms: ts,
    });
  try {
    // A provider answering two reads within one millisecond of its clock answers the same
    // sample twice (seen under load: the contract's tag set of measurement_names anolis got a
    // `seq` series); the second overwrites the first with the same fields: nothing is lost.
    sample(20.5);
    sample(20.5);
    sample(21); // another value at that millisecond: a point of its own
    sample(21); // ... read twice too: written as that row was
    sample(20.5, "STALE"); // the same value of another quality: another point
    await clock.advanceAsync(100);
    const lines = db.requests.flat().filter((l) => l.startsWith("runtime_signal"));
    const series =
      "runtime_signal,runtime_name=lab1,provider_id=sim0,device_id=tempctl0,signal_id=temp";
    assert.equal(lines.length, 5, lines.join("\n"));
    assert.equal(lines[0], lines[1], "the same sample twice: the same line, no seq");
    assert.ok(!lines[0]!.includes("seq="), lines[0]);
    assert.ok(lines[0]!.startsWith(`${series} `), lines[0]);
    assert.ok(lines[2]!.startsWith(`${series},seq=1 `), lines[2]);
    assert.equal(lines[3], lines[2]);
    assert.ok(lines[4]!.startsWith(`${series},seq=2 `), lines[4]);
    // Three points InfluxDB keeps apart, each with the fields it was last written with.
    assert.equal(new Set(lines.map(pointIdentity)).size, 3);
  } finally {
    await writer.stop(0);
  }
});
