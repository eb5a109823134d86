/**
 * GET /v0/history names a signal's declared `value_type` when the ring holds no value of it (its
 * provider never reported one), as an incident record's line does (docs/history.md): from the
 * device's capabilities, or, while no provider lists the device (a reload failed to start it),
 * from the declarations its polls were recorded in (History.declaredUnits) -- not "unknown". The
 * programmable provider runs as a child process, served on loopback.
 */
import assert from "node:assert/strict";
import { tempDir } from "../helpers/kernel.ts";
import { type Inventory, T } from "../helpers/programmable_provider.ts";
import { probeFile, startRig, T0 } from "./_history_helpers.ts";
import { UNSTARTABLE_COMMAND } from "../helpers/sim_config.ts";

const INVENTORY: Inventory = {
  devices: {
    probe: {
      signals: [
        { id: "temp", type: T.DOUBLE, unit: "degC" },
        { id: "pressure", type: T.DOUBLE, unit: "kPa" },
        { id: "count", type: T.INT64 },
      ],
      values: [],
    },
  },
};

/** Each probe signal's `value_type` and `unit` in a GET /v0/history answer over all its signals. */
async function answerTypes(
  rig: Awaited<ReturnType<typeof startRig>>,
): Promise<Record<string, { value_type: string; unit?: string }>> {
  const answer = await rig.json(`/v0/history/p0/probe?since_ms=${T0}&until_ms=${T0 + 5000}`);
  assert.equal(answer.status.code, "OK", JSON.stringify(answer));
  return Object.fromEntries(
    answer.signals.map((s: { signal_id: string; value_type: string; unit?: string }) => [
      s.signal_id,
      { value_type: s.value_type, ...(s.unit === undefined ? {} : { unit: s.unit }) },
    ]),
  );
}

Deno.test("a history answer names the declared value_type of a signal never reported", async () => {
  const dataDir = tempDir("history-unsampled-type-");
  const inventoryFile = await probeFile(dataDir, INVENTORY);
  const rig = await startRig({ dataDir, inventoryFile, history: { diskMaxBytes: 0 } });
  try {
    // The provider reports temp only: pressure and count have no value in the ring.
    await rig.poll(T0 + 1000, [{ id: "temp", type: T.DOUBLE, double: 20.5, quality: 1 }]);
    assert.deepEqual(await answerTypes(rig), {
      temp: { value_type: "double", unit: "degC" },
      pressure: { value_type: "double", unit: "kPa" },
      count: { value_type: "int64" },
    });
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("a history answer names the declared value_type of a signal never reported while no provider lists the device (a reload failed to start it)", async () => {
  const dataDir = tempDir("history-unsampled-type-unlisted-");
  const inventoryFile = await probeFile(dataDir, INVENTORY);
  const rig = await startRig({ dataDir, inventoryFile, history: { diskMaxBytes: 0 } });
  try {
    await rig.poll(T0 + 1000, [{ id: "temp", type: T.DOUBLE, double: 20.5, quality: 1 }]);
    const p0 = rig.rt.config.providers[0]!;
    const report = await rig.rt.reload({
      ...rig.rt.config,
      providers: [{ ...p0, command: UNSTARTABLE_COMMAND }],
    });
    assert.equal(report.providers.failed.length, 1);
    assert.equal(rig.rt.inventory.capabilities("p0", "probe"), undefined, "no provider lists it");
    assert.deepEqual(await answerTypes(rig), {
      temp: { value_type: "double", unit: "degC" },
      pressure: { value_type: "double", unit: "kPa" },
      count: { value_type: "int64" },
    }, "the types and units its polls were recorded in");
  } finally {
    await rig.rt.stop();
  }
});
