/**
 * An incident record's line of a signal its device declares but that has no sample in the window
 * (its provider never reported it) says the signal's declared `value_type` and `unit`, from the
 * device's capabilities (docs/history.md, "Incidents"): not "unknown" and "". The programmable
 * provider runs as a child process, served on loopback.
 */
import assert from "node:assert/strict";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { type Inventory, T } from "../helpers/programmable_provider.ts";
import { probeFile, reloadRestartingP0, startRig, T0 } from "./_history_helpers.ts";

const INVENTORY: Inventory = {
  devices: {
    probe: {
      signals: [
        { id: "temp", type: T.DOUBLE, unit: "degC" },
        { id: "pressure", type: T.DOUBLE, unit: "kPa" },
        { id: "count", type: T.INT64, unit: "pcs" },
      ],
      values: [],
    },
  },
};

Deno.test("An incident record's line of a declared signal with no sample in its window has its declared value_type and unit", async () => {
  const dataDir = tempDir("incident-unsampled-");
  const file = await probeFile(dataDir, INVENTORY);
  // A window of nothing after the stop: the record is written at once.
  const history = { incidentBeforeS: 10, incidentAfterS: 0, diskMaxBytes: 0 };
  const rig = await startRig({ dataDir, inventoryFile: file, history });
  try {
    // The provider reports temp only: pressure and count have no sample.
    await rig.poll(T0 + 1000, [{ id: "temp", type: T.DOUBLE, double: 20.5, quality: 1 }]);
    await rig.estop("unsampled test");
    const header = await rig.incident();
    const record = await rig.json(`/v0/incidents/${header.incident_id}`);
    const lines = Object.fromEntries(
      record.signals.filter((s: { device_id: string }) => s.device_id === "probe").map((
        s: { signal_id: string; value_type: string; unit?: string; samples: unknown[] },
      ) => [s.signal_id, { value_type: s.value_type, unit: s.unit, samples: s.samples.length }]),
    );
    assert.equal(lines.temp?.value_type, "double", JSON.stringify(lines));
    assert.equal(lines.temp?.unit, "degC", JSON.stringify(lines));
    assert.ok(lines.temp.samples > 0, JSON.stringify(lines));
    assert.deepEqual(
      { pressure: lines.pressure, count: lines.count },
      {
        pressure: { value_type: "double", unit: "kPa", samples: 0 },
        count: { value_type: "int64", unit: "pcs", samples: 0 },
      },
      "a declared signal with no sample: its declared type and unit",
    );
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("A signal a reload adds to a device after the incident began has its declared value_type and unit in the record, with no sample", async () => {
  const dataDir = tempDir("incident-unsampled-added-");
  const [temp] = INVENTORY.devices.probe!.signals;
  const file = await probeFile(dataDir, { devices: { probe: { signals: [temp!], values: [] } } });
  // A window longer than the test: the record is written at the stop, after the reload.
  const history = { incidentBeforeS: 10, incidentAfterS: 600, diskMaxBytes: 0 };
  const rig = await startRig({ dataDir, inventoryFile: file, history });
  try {
    await rig.poll(T0 + 1000, [{ id: "temp", type: T.DOUBLE, double: 20.5, quality: 1 }]);
    await rig.rt.estop.trigger("added signal test");
    await waitFor("the e-stop's incident pending", () => rig.rt.incidents!.status().pending > 0);
    // The provider restarted by a reload declares pressure and count too, and reports temp only.
    await probeFile(dataDir, INVENTORY);
    await reloadRestartingP0(rig);
    await waitFor(
      "pressure declared",
      () => rig.rt.inventory.capabilities("p0", "probe")?.signals.length === 3,
    );
    await rig.poll(T0 + 2000, [{ id: "temp", type: T.DOUBLE, double: 21.5, quality: 1 }]);
  } finally {
    await rig.rt.stop(); // writes the record, its window so far
  }
  const again = await startRig({ dataDir, inventoryFile: file, history });
  try {
    const [header] = (await again.json("/v0/incidents")).incidents;
    assert.equal(header?.trigger, "estop");
    const record = await again.json(`/v0/incidents/${header.incident_id}`);
    const lines = Object.fromEntries(
      record.signals.filter((s: { device_id: string }) => s.device_id === "probe").map((
        s: { signal_id: string; value_type: string; unit?: string },
      ) => [s.signal_id, { value_type: s.value_type, unit: s.unit }]),
    );
    assert.deepEqual(lines, {
      temp: { value_type: "double", unit: "degC" },
      pressure: { value_type: "double", unit: "kPa" },
      count: { value_type: "int64", unit: "pcs" },
    }, "a signal declared after the incident began: as declared when the record was written");
  } finally {
    await again.rt.stop();
  }
});

Deno.test("An e-stop while a reload restarts the provider gives a signal never reported its type as its samples were polled in, as its unit", async () => {
  const dataDir = tempDir("incident-unsampled-restarting-");
  const file = await probeFile(dataDir, INVENTORY);
  const history = { incidentBeforeS: 10, incidentAfterS: 600, diskMaxBytes: 0 };
  const rig = await startRig({ dataDir, inventoryFile: file, history });
  try {
    await rig.poll(T0 + 1000, [{ id: "temp", type: T.DOUBLE, double: 20.5, quality: 1 }]);
    // The new process takes 2 s to answer its Hello: the e-stop comes while no provider lists it.
    await probeFile(dataDir, { ...INVENTORY, hello: { delayMs: 2000 } });
    const p0 = rig.rt.config.providers[0]!;
    const reload = rig.rt.reload({
      ...rig.rt.config,
      providers: [{ ...p0, args: [...p0.args, "--restarted"] }],
    });
    await waitFor(
      "no provider lists the probe (the reload restarts p0)",
      () => rig.rt.inventory.capabilities("p0", "probe") === undefined,
    );
    await rig.rt.estop.trigger("during the restart");
    assert.deepEqual((await reload).providers.restarted, ["p0"]);
  } finally {
    await rig.rt.stop(); // writes the record, its window so far
  }
  const again = await startRig({ dataDir, inventoryFile: file, history });
  try {
    const [header] = (await again.json("/v0/incidents")).incidents;
    assert.equal(header?.trigger, "estop");
    const record = await again.json(`/v0/incidents/${header.incident_id}`);
    const lines = Object.fromEntries(
      record.signals.filter((s: { device_id: string }) => s.device_id === "probe").map((
        s: { signal_id: string; value_type: string; unit?: string },
      ) => [s.signal_id, { value_type: s.value_type, unit: s.unit }]),
    );
    assert.deepEqual(
      lines,
      {
        temp: { value_type: "double", unit: "degC" },
        pressure: { value_type: "double", unit: "kPa" },
        count: { value_type: "int64", unit: "pcs" },
      },
      "a device no provider listed at the trigger: types as its units, as its polls were recorded",
    );
  } finally {
    await again.rt.stop();
  }
});
