/**
 * A signal a rediscovery removed (its provider restarted without it) is answered from the disk
 * tier; its points were polled in the unit declared then, which the answer still names (JSON
 * `unit`, the CSV's unit column), as for a device no provider lists. Before, the answer took the
 * unit from the device's declarations now, which no longer hold the signal: its degC points came
 * with no unit, while its own `unit_changes` said they were degC.
 */
import assert from "node:assert/strict";
import { probeFile, probeValues, reloadRestartingP0, startRig, T0 } from "./_history_helpers.ts";
import { T } from "../helpers/programmable_provider.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";

Deno.test("a signal a rediscovery removed keeps in history answers the unit its polls were recorded in", async () => {
  const dataDir = tempDir("history-removed-unit-");
  const inventoryFile = await probeFile(dataDir, {
    devices: {
      probe: {
        signals: [{ id: "temp", type: T.DOUBLE, unit: "degC" }, { id: "count", type: T.INT64 }],
        values: [],
      },
    },
  });
  const rig = await startRig({ dataDir, inventoryFile, history: { stepMs: 1000 } });
  try {
    await rig.poll(T0 + 1000, probeValues(20, 1).slice(0, 2));
    await rig.poll(T0 + 2000, probeValues(21, 2).slice(0, 2));
    // The provider restarts and no longer declares temp.
    await probeFile(dataDir, {
      devices: { probe: { signals: [{ id: "count", type: T.INT64 }], values: [] } },
    });
    await reloadRestartingP0(rig);
    await waitFor(
      "temp no longer declared",
      () =>
        rig.rt.inventory.capabilities("p0", "probe")?.signals.some((s) => s.signalId === "temp") ===
          false,
    );
    await rig.poll(T0 + 3000, probeValues(0, 3).slice(1, 2));
    await rig.rt.history!.flushDisk();

    const path = `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 3000}`;
    const json = await rig.json(path);
    assert.equal(json.status.code, "OK");
    const [temp] = json.signals;
    assert.deepEqual(
      temp.points.map((p: { last: unknown }) => p.last).filter((v: unknown) => v !== null),
      [20, 21],
      "the removed signal's points, from the disk tier",
    );
    assert.equal(temp.unit, "degC", "the unit its points were polled in");

    const csv = await (await rig.get(`${path}&format=csv`)).text();
    const rows = csv.split("\r\n").slice(1, -1).map((l) => l.split(","))
      .filter((f) => f[4] !== "");
    assert.deepEqual(
      rows.map((f) => [f[4], f[7]]),
      [["20", "degC"], ["21", "degC"]],
      "each CSV line with the unit it was polled in",
    );
  } finally {
    await rig.rt.stop();
  }
});
