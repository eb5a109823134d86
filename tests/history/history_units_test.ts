/**
 * GET /v0/history gives each signal's unit, as GET /v0/state does: the one its device declares
 * (SignalSpec.unit), absent when it declares none; as declared when the answer is given (after a
 * wait for the disk tier, not before it).
 */
import assert from "node:assert/strict";
import { HISTORY_QUERY_DISK_WAIT_MS } from "../../src/history/mod.ts";
import {
  probeFile,
  probeTempIn,
  probeValues,
  restartDeclaringTempIn,
  startRig,
  T0,
} from "./_history_helpers.ts";
import { T, TestClock } from "../helpers/programmable_provider.ts";
import { tempDir } from "../helpers/kernel.ts";
import { InterceptedAppends } from "../helpers/journal_files.ts";
import { UNSTARTABLE_COMMAND } from "../helpers/sim_config.ts";

Deno.test("a history answer names each signal's declared unit, and none for a signal without one", async () => {
  const dataDir = tempDir("history-units-");
  const inventoryFile = await probeFile(dataDir, {
    devices: {
      probe: {
        signals: [
          { id: "temp", type: T.DOUBLE, unit: "degC" },
          { id: "count", type: T.INT64 },
          { id: "label", type: T.STRING },
        ],
        values: [],
      },
    },
  });
  const rig = await startRig({ dataDir, inventoryFile, history: { diskMaxBytes: 0 } });
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    const state = await rig.json("/v0/state/p0/probe");
    assert.equal(
      state.values.find((s: { signal_id: string }) => s.signal_id === "temp").unit,
      "degC",
    );
    const answer = await rig.json(`/v0/history/p0/probe?signal_id=temp&signal_id=count`);
    assert.equal(answer.status.code, "OK");
    const [temp, count] = answer.signals;
    assert.equal(temp.signal_id, "temp");
    assert.equal(temp.unit, "degC", "temp's declared unit");
    assert.equal(count.signal_id, "count");
    assert.equal("unit" in count, false, "count declares no unit");
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("the history CSV has a unit column: each signal's declared unit, empty for one without", async () => {
  const dataDir = tempDir("history-units-csv-");
  const inventoryFile = await probeFile(dataDir, {
    devices: {
      probe: {
        signals: [
          { id: "temp", type: T.DOUBLE, unit: "degC" },
          { id: "count", type: T.INT64 },
          { id: "label", type: T.STRING, unit: 'a,"b"' },
        ],
        values: [],
      },
    },
  });
  const rig = await startRig({ dataDir, inventoryFile, history: { diskMaxBytes: 0 } });
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    const csv = await (await rig.get(
      `/v0/history/p0/probe?signal_id=temp&signal_id=count&signal_id=label&format=csv`,
    )).text();
    const lines = csv.split("\r\n");
    assert.equal(lines[0], "signal_id,t_ms,min,max,last,count,quality,unit", "the header");
    assert.deepEqual(
      lines.slice(1, -1).map((l) => [l.split(",")[0], l.slice(l.lastIndexOf(",OK,") + 4)]),
      [["temp", "degC"], ["count", ""], ["label", '"a,""b"""']],
      "each line's unit",
    );
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("a history answer gives the units as they are when it is answered: a reload while it waits for the disk tier is in it", async () => {
  const dataDir = tempDir("history-units-reload-");
  const inventoryFile = await probeFile(dataDir, probeTempIn("degC"));
  // The disk tier's writes wait for `release` while `held` (a slow disk).
  let held = false;
  const release = Promise.withResolvers<void>();
  const files = new InterceptedAppends("/history/", async (text, append) => {
    if (held) await release.promise;
    await append(text);
  });
  // The query's wait for the disk (HISTORY_QUERY_DISK_WAIT_MS) is the test's: it says when the
  // answer waits, and ends only when the disk write does (no timed race with the reload).
  const clock = new TestClock();
  clock.wallMs = T0;
  let armed = false;
  const waiting = Promise.withResolvers<void>();
  const setTimer = clock.setTimer;
  clock.setTimer = (fn: () => void, ms: number) => {
    if (armed && ms === HISTORY_QUERY_DISK_WAIT_MS) {
      armed = false;
      waiting.resolve();
      return setTimer(() => {}, 24 * 3_600_000);
    }
    return setTimer(fn, ms);
  };
  const rig = await startRig({
    dataDir,
    inventoryFile,
    clock,
    host: { files },
    history: { stepMs: 1000 },
  });
  try {
    await rig.poll(T0 + 1000, probeValues(1, 1).slice(0, 1));
    await rig.rt.history!.flushDisk();
    held = true;
    await rig.poll(T0 + 2000, probeValues(2, 2).slice(0, 1)); // a bucket closes: its row held
    armed = true;
    // From before the ring's oldest poll (the priming one, at T0): the answer waits for the disk.
    const answer = rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0 - 1000}`);
    await waiting.promise; // the answer waits for the disk tier
    // A reload restarts the provider, which now declares temp in K.
    await restartDeclaringTempIn(rig, probeTempIn("K"), "K");
    release.resolve();
    const json = await answer;
    assert.equal(json.status.code, "OK");
    assert.equal(json.signals[0].signal_id, "temp");
    assert.equal(json.signals[0].unit, "K", "the unit as declared when the answer was given");
  } finally {
    release.resolve();
    await rig.rt.stop();
  }
});

Deno.test("a history answer keeps the units the polls were recorded in while no provider lists the device (a reload failed to start it)", async () => {
  const dataDir = tempDir("history-units-unlisted-");
  const inventoryFile = await probeFile(dataDir, probeTempIn("degC"));
  const rig = await startRig({ dataDir, inventoryFile, history: { diskMaxBytes: 0 } });
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    const p0 = rig.rt.config.providers[0]!;
    const report = await rig.rt.reload({
      ...rig.rt.config,
      providers: [{ ...p0, command: UNSTARTABLE_COMMAND }],
    });
    assert.equal(report.providers.failed.length, 1);
    assert.equal(rig.rt.inventory.capabilities("p0", "probe"), undefined, "no provider lists it");
    const answer = await rig.json(`/v0/history/p0/probe?signal_id=temp`);
    assert.equal(answer.signals[0].unit, "degC", "the unit its polls were recorded in");
    const csv = await (await rig.get(`/v0/history/p0/probe?signal_id=temp&format=csv`)).text();
    assert.match(csv.split("\r\n")[1]!, /,OK,degC$/, csv);
  } finally {
    await rig.rt.stop();
  }
});
