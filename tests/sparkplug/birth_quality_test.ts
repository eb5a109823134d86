/**
 * A DBIRTH carries the quality a reader sees now (StateCache.qualityNow), not the one stored: a
 * signal the provider stopped answering is STALE past its bound in GET /v0/state, and its birth
 * metric must not say Good (192). Against a real Mosquitto and the programmable provider.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { sparkplugHost } from "../helpers/sparkplug_host.ts";
import { QUALITY_CODE, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { probeValues, startRig, T0 } from "../history/_history_helpers.ts";

const GROUP = "lab";
/** The edge node's id: runtime.name of the rig's configuration. */
const NODE = "test";

Deno.test({
  name: "a DBIRTH gives a signal past its stale bound as STALE, as GET /v0/state reads it",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const clock = new TestClock();
    clock.wallMs = T0;
    const mono0 = performance.now();
    clock.mono = mono0;
    const rig = await startRig({
      clock,
      history: { diskMaxBytes: 0 },
      sparkplug: { enabled: true, brokerUrl: broker.url, groupId: GROUP, reconnectMs: 100 },
    });
    try {
      const id = sparkplugDeviceId("p0", "probe");
      const topic = `spBv1.0/${GROUP}/DBIRTH/${NODE}/${id}`;
      await waitFor("the first DBIRTH", () => host.messages.some((m) => m.topic === topic));
      await rig.poll(T0 + 1000, probeValues(20.5, 1));
      const bound = rig.rt.cache.staleAfterMs("p0", "probe", "temp");
      clock.mono = mono0 + bound + 1000;
      await rig.poll(T0 + 2000, probeValues(20.5, 2).filter((s) => s.id !== "temp"));
      const state = await rig.json("/v0/state/p0/probe");
      assert.equal(
        state.values.find((s: { signal_id: string }) => s.signal_id === "temp").quality,
        "STALE",
      );
      const before = host.messages.length;
      await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
        { name: "Node Control/Rebirth", datatype: 11, boolean_value: true },
      ]);
      const birth = await waitFor(
        "the DBIRTH after Rebirth",
        () => host.messages.slice(before).find((m) => m.topic === topic),
      );
      const temp = (birth.payload.metrics ?? []).find((m) => m.name === "temp")!;
      const props = temp.properties as { keys: string[]; values: { int_value?: number }[] };
      const quality = props.values[props.keys.indexOf("Quality")]!.int_value;
      assert.equal(quality, QUALITY_CODE.STALE, "temp's birth quality");
    } finally {
      await rig.rt.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
