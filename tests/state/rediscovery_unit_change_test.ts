/**
 * A provider that crash-restarts declaring another unit for a signal (the same type): the value
 * the cache kept from before was polled in the old unit. GET /v0/state labels each value with the
 * unit the signal declares now, so the old value must not be served under the new one (GET
 * /v0/history says that sample was in `unit_before`); a value whose unit held is kept as before.
 * Over real HTTP, the programmable provider as a child process its supervisor restarts.
 */
import assert from "node:assert/strict";
import { probeFile, startRig, T0 } from "../history/_history_helpers.ts";
import { type Inventory, T } from "../helpers/programmable_provider.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";

const inventory = (tempUnit: string): Inventory => ({
  devices: {
    probe: {
      signals: [
        { id: "temp", type: T.DOUBLE, unit: tempUnit },
        { id: "count", type: T.INT64, unit: "pcs" },
      ],
      values: [],
    },
  },
});

interface StateValue {
  signal_id: string;
  value: unknown;
  unit?: string;
}

Deno.test("a value kept across a rediscovery that changed its signal's unit is not served under the new unit", async () => {
  const dataDir = tempDir("state-unit-change-");
  const file = await probeFile(dataDir, inventory("degF"));
  const rig = await startRig({ dataDir, inventoryFile: file, restart: true });
  try {
    await rig.poll(T0 + 1_000, [
      { id: "temp", type: T.DOUBLE, double: 77, quality: 1 },
      { id: "count", type: T.INT64, int64: "5", quality: 1 },
    ]);
    const before = await rig.json("/v0/state/p0/probe");
    assert.deepEqual(
      before.values.map((v: StateValue) => [v.signal_id, v.value, v.unit]),
      [
        ["temp", { type: "double", double: 77 }, "degF"],
        ["count", { type: "int64", int64: 5 }, "pcs"],
      ],
    );
    // temp is declared in degC now: the provider restarts (function 3 exits) and describes it so.
    // The new process answers no value yet (its answer lists none): nothing replaces the kept one.
    await probeFile(dataDir, inventory("degC"));
    const host = rig.rt.registry.host("p0")!;
    const pid = host.session!.pid;
    await host.request("call", { device_id: "probe", function_id: 3, args: {} });
    await waitFor("rediscovered", () => host.available && host.session!.pid !== pid);
    rig.clock.wallMs = T0 + 2_000;
    await rig.rt.cache.pollDevice("p0", "probe");

    // History: the 77 was recorded in degF (the change to degC came after it).
    const history = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0}`);
    assert.equal(history.signals[0].unit, "degC");
    assert.deepEqual(
      history.signals[0].unit_changes.map((c: { unit_before: string; unit: string }) => [
        c.unit_before,
        c.unit,
      ]),
      [["degF", "degC"]],
    );

    const after = await rig.json("/v0/state/p0/probe");
    const temp = after.values.find((v: StateValue) => v.signal_id === "temp");
    assert.ok(
      temp === undefined || (temp.value as { type: string }).type === "unknown",
      `temp's degF value is not served as degC: ${JSON.stringify(temp)}`,
    );
    // A signal whose unit held keeps its last value (its quality the outage's).
    const count = after.values.find((v: StateValue) => v.signal_id === "count");
    assert.deepEqual([count.value, count.unit], [{ type: "int64", int64: 5 }, "pcs"]);
    assert.equal(rig.rt.cache.signal("p0", "probe", "temp"), undefined);
  } finally {
    await rig.rt.stop();
  }
});
