/**
 * While no provider lists a device (a reload restarting its provider, or failing to start it), a
 * signal retyped at its last discovery still answers as one series of its type as declared then
 * (History.declaredUnits): the disk tier's rows of its old type are left out, as while it is listed
 * (docs/history.md "A retyped signal starts a new series"). The programmable provider runs as a
 * child process, served on loopback.
 */
import assert from "node:assert/strict";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { type Inventory, T } from "../helpers/programmable_provider.ts";
import { probeFile, reloadRestartingP0, startRig, T0 } from "./_history_helpers.ts";
import { UNSTARTABLE_COMMAND } from "../helpers/sim_config.ts";

const inventory = (tempType: number): Inventory => ({
  devices: { probe: { signals: [{ id: "temp", type: tempType, unit: "degC" }], values: [] } },
});

/** temp's value_type and its points' `last` values in an answer over the T0 bucket. */
async function tempSeries(
  rig: Awaited<ReturnType<typeof startRig>>,
): Promise<{ value_type: string; lasts: unknown[] }> {
  const answer = await rig.json(
    `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 9_999}`,
  );
  assert.equal(answer.status.code, "OK", JSON.stringify(answer));
  const s = answer.signals[0];
  return { value_type: s.value_type, lasts: s.points.map((p: { last: unknown }) => p.last) };
}

Deno.test("a signal retyped at its last discovery keeps out its old type's disk rows while no provider lists its device", async () => {
  const dataDir = tempDir("history-unlisted-retype-");
  const file = await probeFile(dataDir, inventory(T.DOUBLE));
  const rig = await startRig({ dataDir, inventoryFile: file, history: { stepMs: 10_000 } });
  try {
    const temp = (x: number) => [{ id: "temp", type: T.DOUBLE, double: x, quality: 1 }];
    await rig.poll(T0 + 1_000, temp(20.5));
    await rig.poll(T0 + 2_000, temp(21.5));
    // Into the next bucket: the T0 bucket's row (doubles) goes to disk.
    await rig.poll(T0 + 25_000, temp(22.5));
    await rig.rt.history!.flushDisk();
    // temp is an int64 now (the provider restarted with a new description); never reported since.
    await probeFile(dataDir, inventory(T.INT64));
    await reloadRestartingP0(rig);
    await waitFor(
      "temp declared an int64",
      () =>
        rig.rt.inventory.capabilities("p0", "probe")?.signals.find((s) => s.signalId === "temp")
          ?.valueType === "int64",
    );
    assert.deepEqual(await tempSeries(rig), { value_type: "int64", lasts: [] }, "listed");

    const p0 = rig.rt.config.providers[0]!;
    const report = await rig.rt.reload({
      ...rig.rt.config,
      providers: [{ ...p0, command: UNSTARTABLE_COMMAND }],
    });
    assert.equal(report.providers.failed.length, 1);
    assert.equal(rig.rt.inventory.capabilities("p0", "probe"), undefined, "no provider lists it");
    assert.deepEqual(
      await tempSeries(rig),
      { value_type: "int64", lasts: [] },
      "unlisted: the type it was declared at its last discovery, none of the old type's rows",
    );
  } finally {
    await rig.rt.stop();
  }
});
