/**
 * Store and forward of a write the broker never acknowledged, against a real Mosquitto and the
 * simulated provider (sparkplug.qos 1, the history ring as the store): the broker hangs (SIGSTOP)
 * while a relay change goes out live, then dies (SIGKILL) and comes back. The change's DDATA was
 * handed to MQTT.js and never acknowledged: it reaches the host with is_historical after the next
 * births, as what found the node offline does. (tests/sparkplug/lost_write_test.ts and
 * replay_walk_test.ts show the node's part among doubles; mqtt_adapter_test.ts the adapter's.)
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { decode, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { heldMqtt } from "../helpers/held_mqtt.ts";
import { setSimRelay, sparkplugHost } from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-lost-write";
const relay = sparkplugDeviceId("sim0", "relayio0");

Deno.test({
  name:
    "a live DDATA the broker never acknowledged (it hung, then died) is replayed after the next births",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    // A new host subscribes as soon as the broker is back; the node reconnects only after 3 s
    // (reconnect_ms): the host is subscribed before the node's births.
    let host = await sparkplugHost(broker.url, GROUP);
    // MQTT.js as the runtime's port, never stalled: it shows when the DDATA was handed over.
    const port = heldMqtt();
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(
        testConfig({
          runtime: { name: NODE },
          providers: [simProvider("sim0")],
          history: { enabled: true, diskMaxBytes: 0 },
          sparkplug: {
            enabled: true,
            brokerUrl: broker.url,
            groupId: GROUP,
            qos: 1,
            reconnectMs: 3000,
          },
        }),
        { arm: true, host: { mqttConnect: port.connect } },
      );
      const dbirth = await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const alias = (dbirth.payload.metrics ?? []).find((m) => m.name === "relay_ch3_state")!.alias;
      const wasOn = (dbirth.payload.metrics ?? []).find((m) => m.name === "relay_ch3_state")!
        .boolean_value === true;

      broker.signal("SIGSTOP");
      const node = rt.sparkplug!;
      await setSimRelay(rt, !wasOn);
      await waitFor("the relay's new value polled", () => {
        const v = rt!.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
        return v?.type === "bool" && v.bool === !wasOn;
      });
      await waitFor(
        "its DDATA handed to the client",
        () =>
          port.handed.some((w) =>
            w.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}` &&
            (decode(w.payload).metrics ?? []).some((x) =>
              x.alias === alias && x.boolean_value === !wasOn
            )
          ),
      );
      assert.ok(port.unsettled > 0, "not acknowledged: the broker is stopped");
      await host.close();
      await broker.pause({ kill: true });
      await waitFor("the node offline", () => !node.connected);
      await broker.resume();
      host = await sparkplugHost(broker.url, GROUP);
      const ddata = await waitFor(
        "the relay change replayed",
        () =>
          host.messages.filter((m) => m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}`)
            .flatMap((m) => m.payload.metrics ?? [])
            .find((x) => x.alias === alias && x.is_historical === true),
        10_000,
      ).catch(() => null);
      assert.ok(
        host.messages.some((m) => m.topic === `spBv1.0/${GROUP}/NBIRTH/${NODE}`),
        "the node was born again",
      );
      assert.equal(
        ddata?.boolean_value,
        !wasOn,
        "the unacknowledged change reaches the host with is_historical after the births",
      );
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
