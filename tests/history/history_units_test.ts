/**
 * GET /v0/history gives each signal's unit, as GET /v0/state does: the one its device declares
 * (SignalSpec.unit), absent when it declares none.
 */
import assert from "node:assert/strict";
import { probeFile, probeValues, startRig, T0 } from "./_history_helpers.ts";
import { T } from "../helpers/programmable_provider.ts";
import { tempDir } from "../helpers/kernel.ts";

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
