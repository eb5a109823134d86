/**
 * A signal retyped by a rediscovery within an incident's window (docs/history.md, "Incidents",
 * "A retype within the window"): the record keeps its lead-up, the samples polled before the
 * trigger in the type and unit they were polled in, and never labels a sample with a unit it was
 * not polled in. The programmable provider runs as a child process, served on loopback.
 */
import assert from "node:assert/strict";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { type Inventory, type Sample, T } from "../helpers/programmable_provider.ts";
import { probeFile, restartDeclaringTempIn, startRig, T0 } from "./_history_helpers.ts";

/** The probe with `temp` of `type` in `unit`, and `count` (int64, no unit). */
function probeWith(type: number, unit: string): Inventory {
  return {
    devices: {
      probe: {
        signals: [{ id: "temp", type, unit }, { id: "count", type: T.INT64 }],
        values: [],
      },
    },
  };
}

const count = (n: number): Sample => ({ id: "count", type: T.INT64, int64: String(n), quality: 1 });

Deno.test("an incident record keeps the lead-up of a signal retyped within its window, in the type and unit it was polled in", async () => {
  const dataDir = tempDir("incident-retype-");
  const file = await probeFile(dataDir, probeWith(T.DOUBLE, "degC"));
  // A window longer than the test: without the retype the record would wait for the stop.
  const history = { incidentBeforeS: 10, incidentAfterS: 600, diskMaxBytes: 0 };
  let rig = await startRig({ dataDir, inventoryFile: file, history });
  try {
    await rig.poll(T0 + 1000, [{ id: "temp", type: T.DOUBLE, double: 20.5, quality: 1 }, count(1)]);
    await rig.poll(T0 + 2000, [{ id: "temp", type: T.DOUBLE, double: 21.5, quality: 1 }, count(2)]);
    await rig.rt.estop.trigger("retype test");
    await waitFor("the e-stop's incident pending", () => rig.rt.incidents!.status().pending > 0);
    // The provider restarted by a reload reads its inventory again: temp is an int64 count now.
    await restartDeclaringTempIn(rig, probeWith(T.INT64, "count"), "count");
    await rig.poll(T0 + 3000, [{ id: "temp", type: T.INT64, int64: "7", quality: 1 }, count(3)]);
  } finally {
    await rig.rt.stop(); // the record is written by now (or at the latest here)
  }
  rig = await startRig({ dataDir, inventoryFile: file, history });
  try {
    const [header] = await rig.json("/v0/incidents").then((l) => l.incidents);
    assert.equal(header?.trigger, "estop");
    const record = await rig.json(`/v0/incidents/${header.incident_id}`);
    // deno-lint-ignore no-explicit-any
    const temps = record.signals.filter((s: any) => s.signal_id === "temp");
    assert.equal(temps.length, 1, `one line of temp: ${JSON.stringify(temps)}`);
    const [temp] = temps;
    assert.equal(temp.value_type, "double", "its samples' type: the doubles polled before");
    assert.equal(temp.unit, "degC", "the unit they were polled in");
    assert.equal(temp.from_epoch_ms, undefined, "its samples cover the window's start");
    assert.deepEqual(
      temp.samples,
      [[T0 + 1000, 20.5, "OK"], [T0 + 2000, 21.5, "OK"]],
      "the lead-up, and no sample of the new type labelled with the old unit",
    );
    // deno-lint-ignore no-explicit-any
    const countLine = record.signals.find((s: any) => s.signal_id === "count");
    assert.deepEqual(
      countLine.samples.map((s: unknown[]) => s[1]),
      [1, 2],
      "the record ends at the retype: its window is read then",
    );
  } finally {
    await rig.rt.stop();
  }
});
