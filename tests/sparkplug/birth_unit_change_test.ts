/**
 * A provider that crash-restarts (its supervisor, not a reload: the same host, the cache keeps
 * what it can) declaring another unit for a signal: the device's new DBIRTH declares the new
 * `engUnit`, and a host stores the metric's birth value in it. The value polled before the restart
 * was in the old unit (77 degF is no 77 degC): the birth carries no value for it, as the replay
 * leaves such samples out (docs/sparkplug.md). Against a real Mosquitto and the programmable
 * provider as a child process.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { type Inventory, T, TestClock } from "../helpers/programmable_provider.ts";
import { engUnit, sparkplugHost } from "../helpers/sparkplug_host.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { probeFile, startRig, T0 } from "../history/_history_helpers.ts";

const GROUP = "lab";
/** The edge node's id: runtime.name of the rig's configuration. */
const NODE = "test";

const inventory = (unit: string): Inventory => ({
  devices: { probe: { signals: [{ id: "temp", type: T.DOUBLE, unit }], values: [] } },
});

Deno.test({
  name:
    "a DBIRTH after a crash-restart declaring another unit carries no value polled in the old unit",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const clock = new TestClock();
    clock.wallMs = T0;
    const dataDir = tempDir("sparkplug-birth-unit-");
    const file = await probeFile(dataDir, inventory("degF"));
    const rig = await startRig({
      clock,
      dataDir,
      inventoryFile: file,
      restart: true,
      history: { diskMaxBytes: 0 },
      sparkplug: { enabled: true, brokerUrl: broker.url, groupId: GROUP, reconnectMs: 100 },
    });
    try {
      const topic = `spBv1.0/${GROUP}/DBIRTH/${NODE}/${sparkplugDeviceId("p0", "probe")}`;
      await waitFor("the first DBIRTH", () => host.messages.some((m) => m.topic === topic));
      await rig.poll(T0 + 1000, [{ id: "temp", type: T.DOUBLE, double: 77, quality: 1 }]);
      const before = host.messages.length;
      await probeFile(dataDir, inventory("degC"));
      const p0 = rig.rt.registry.host("p0")!;
      const pid = p0.session!.pid;
      await p0.request("call", { device_id: "probe", function_id: 3, args: {} });
      const birth = await waitFor(
        "the DBIRTH after the restart",
        () => host.messages.slice(before).find((m) => m.topic === topic),
      );
      assert.notEqual(p0.session?.pid, pid);
      const temp = (birth.payload.metrics ?? []).find((m) => m.name === "temp")!;
      assert.equal(engUnit(temp), "degC", "the new DBIRTH declares temp in degC");
      assert.equal(temp.double_value ?? null, null, "77 was polled in degF");
      assert.equal(temp.is_null, true);
    } finally {
      await rig.rt.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
