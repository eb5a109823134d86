/**
 * An incident record keeps each signal's unit as its samples were polled in when the incident began
 * (docs/history.md, "Incidents"): a reload that changes the unit before the record is written, and
 * a restart whose configuration declares another, leave the record's unit as it was; the CSV has
 * the `unit` column, as the history CSV does; a unit longer than INCIDENT_UNIT_MAX_CHARS is cut
 * in both. The programmable provider runs as a child process, served on loopback.
 */
import assert from "node:assert/strict";
import { INCIDENT_UNIT_MAX_CHARS } from "../../src/history/mod.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { type Inventory, T } from "../helpers/programmable_provider.ts";
import { UNSTARTABLE_COMMAND } from "../helpers/sim_config.ts";
import {
  type HistoryRig,
  probeFile,
  probeValues,
  restartDeclaringTempIn,
  startRig,
  T0,
} from "./_history_helpers.ts";

/** The probe with `temp` in `unit` and `label` declaring a unit CSV must quote. */
function probeIn(unit: string): Inventory {
  return {
    devices: {
      probe: {
        signals: [
          { id: "temp", type: T.DOUBLE, unit },
          { id: "count", type: T.INT64 },
          { id: "label", type: T.STRING, unit: 'a,"b"' },
        ],
        values: [],
      },
    },
  };
}

Deno.test("An incident record keeps the units declared when it began, after a reload changed one and across a restart", async () => {
  const dataDir = tempDir("incident-units-");
  const file = await probeFile(dataDir, probeIn("degC"));
  // A window longer than the test: the record is written after the reload, at the unit change
  // (the device's first poll after it: incident_unit_change_test.ts) or at the latest at the stop.
  const history = { incidentBeforeS: 10, incidentAfterS: 600, diskMaxBytes: 0 };
  let rig = await startRig({ dataDir, inventoryFile: file, history });
  let id = "";
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    await rig.rt.estop.trigger("units test");
    await waitFor("the e-stop's incident pending", () => rig.rt.incidents!.status().pending > 0);
    // The provider restarted by a reload reads its inventory again: temp is now in K.
    await restartDeclaringTempIn(rig, probeIn("K"), "K");
  } finally {
    await rig.rt.stop(); // the record is written by now (or at the latest here)
  }
  // The next start declares temp in K too.
  rig = await startRig({ dataDir, inventoryFile: file, history });
  try {
    const [header] = await rig.json("/v0/incidents").then((l) => l.incidents);
    assert.equal(header?.trigger, "estop");
    id = header.incident_id;
    const record = await rig.json(`/v0/incidents/${id}`);
    const units = Object.fromEntries(
      record.signals.map((s: { signal_id: string; unit?: string }) => [s.signal_id, s.unit]),
    );
    assert.deepEqual(
      units,
      { temp: "degC", count: "", label: 'a,"b"' },
      "each signal's unit as polled in when the incident began",
    );
    const csv = await (await rig.get(`/v0/incidents/${id}?format=csv`)).text();
    const lines = csv.split("\r\n");
    assert.equal(lines[0], "provider_id,device_id,signal_id,t_ms,value,quality,unit,from_epoch_ms");
    const unitOf = (signal: string) => {
      const line = lines.find((l) => l.startsWith(`p0,probe,${signal},`));
      assert.ok(line !== undefined, `a CSV line of ${signal}: ${csv}`);
      return line.slice(line.lastIndexOf(",OK,") + 4, line.lastIndexOf(",")); // then from_epoch_ms
    };
    assert.equal(unitOf("temp"), "degC");
    assert.equal(unitOf("count"), "");
    assert.equal(unitOf("label"), '"a,""b"""');
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("An incident record cuts a unit longer than INCIDENT_UNIT_MAX_CHARS, with an ellipsis, in the record and in the CSV", async () => {
  const dataDir = tempDir("incident-unit-bound-");
  // Longer than the bound by 50; the characters around the bound differ, so a cut one character
  // off shows.
  const long = "kPa/" + "0123456789".repeat(Math.ceil((INCIDENT_UNIT_MAX_CHARS + 50) / 10));
  const cut = `${long.slice(0, INCIDENT_UNIT_MAX_CHARS)}\u2026`;
  const exact = "m".repeat(INCIDENT_UNIT_MAX_CHARS);
  const inventory: Inventory = {
    devices: {
      probe: {
        signals: [
          { id: "temp", type: T.DOUBLE, unit: long },
          { id: "count", type: T.INT64, unit: exact },
          { id: "label", type: T.STRING },
        ],
        values: [],
      },
    },
  };
  const file = await probeFile(dataDir, inventory);
  // A window of nothing after the stop: the record is written at once.
  const history = { incidentBeforeS: 10, incidentAfterS: 0, diskMaxBytes: 0 };
  const rig = await startRig({ dataDir, inventoryFile: file, history });
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    await rig.rt.estop.trigger("unit bound test");
    const header = await waitFor(
      "the e-stop's incident record",
      async () => (await rig.json("/v0/incidents")).incidents[0],
    );
    const record = await rig.json(`/v0/incidents/${header.incident_id}`);
    const units = Object.fromEntries(
      record.signals.map((s: { signal_id: string; unit?: string }) => [s.signal_id, s.unit]),
    );
    assert.deepEqual(
      units,
      { temp: cut, count: exact, label: "" },
      "a longer unit cut to the bound with an ellipsis; one at the bound whole",
    );
    const csv = await (await rig.get(`/v0/incidents/${header.incident_id}?format=csv`)).text();
    const lines = csv.split("\r\n");
    const unitOf = (signal: string) => {
      const line = lines.find((l) => l.startsWith(`p0,probe,${signal},`));
      assert.ok(line !== undefined, `a CSV line of ${signal}: ${csv}`);
      return line.slice(line.lastIndexOf(",OK,") + 4, line.lastIndexOf(",")); // then from_epoch_ms
    };
    assert.equal(unitOf("temp"), cut);
    assert.equal(unitOf("count"), exact);
  } finally {
    await rig.rt.stop();
  }
});

/** The units of a record's signals of p0/probe, by signal id (undefined: the line has none). */
async function recordUnits(rig: HistoryRig, id: string): Promise<Record<string, unknown>> {
  const record = await rig.json(`/v0/incidents/${id}`);
  return Object.fromEntries(
    record.signals.filter((s: { device_id: string }) => s.device_id === "probe")
      .map((s: { signal_id: string; unit?: string }) => [s.signal_id, s.unit]),
  );
}

Deno.test("An e-stop while a reload restarts the provider keeps the units its samples were polled in, not those its new process declares later", async () => {
  const dataDir = tempDir("incident-units-restarting-");
  const file = await probeFile(dataDir, probeIn("degC"));
  const history = { incidentBeforeS: 10, incidentAfterS: 600, diskMaxBytes: 0 };
  const rig = await startRig({ dataDir, inventoryFile: file, history });
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    // The new process declares temp in K, and takes 2 s to answer its Hello.
    await probeFile(dataDir, { ...probeIn("K"), hello: { delayMs: 2000 } });
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
    assert.equal(
      rig.rt.inventory.capabilities("p0", "probe")?.signals.find((s) => s.signalId === "temp")
        ?.unit,
      "K",
    );
  } finally {
    await rig.rt.stop(); // writes the record, its window so far
  }
  const again = await startRig({ dataDir, inventoryFile: file, history });
  try {
    const [header] = (await again.json("/v0/incidents")).incidents;
    assert.equal(header?.trigger, "estop");
    assert.deepEqual(
      await recordUnits(again, header.incident_id),
      { temp: "degC", count: "", label: 'a,"b"' },
      "each signal's unit as its samples were polled in when the incident began",
    );
  } finally {
    await again.rt.stop();
  }
});

Deno.test("A device lost because a reload failed to start its provider keeps its units in the record", async () => {
  const dataDir = tempDir("incident-units-failed-start-");
  const file = await probeFile(dataDir, probeIn("degC"));
  const history = { incidentBeforeS: 10, incidentAfterS: 0, diskMaxBytes: 0 };
  const rig = await startRig({ dataDir, inventoryFile: file, history });
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    const p0 = rig.rt.config.providers[0]!;
    const report = await rig.rt.reload({
      ...rig.rt.config,
      providers: [{ ...p0, command: UNSTARTABLE_COMMAND }],
    });
    assert.equal(report.providers.failed.length, 1);
    const header = await rig.incident();
    assert.equal(header.trigger, "device_loss");
    assert.deepEqual(
      await recordUnits(rig, header.incident_id),
      { temp: "degC", count: "", label: 'a,"b"' },
      "the units its samples were polled in, not none (a record of a version that kept none)",
    );
  } finally {
    await rig.rt.stop();
  }
});
