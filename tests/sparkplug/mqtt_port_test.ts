/**
 * The MQTT client is a port (MqttConnect, src/common/mqtt.ts) that the composition root wires: the
 * kernel uses the one its host hands it (KernelHost.mqttConnect), else the MQTT.js adapter of
 * src/host/mqtt.ts. Here a host's connect that records what it is asked and hands over to the
 * MQTT.js adapter, against a real Mosquitto.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { connectMqttJs } from "../../src/host/mod.ts";
import { decode } from "../../src/sparkplug/mod.ts";
import type { MqttConnect, MqttSessionOptions } from "../../src/common/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";

Deno.test({
  name: "the kernel's edge node connects through the MqttConnect its host hands it",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const asked: MqttSessionOptions[] = [];
    const published: string[] = [];
    const mqttConnect: MqttConnect = async (o) => {
      asked.push(o);
      const session = await connectMqttJs(o);
      return {
        ...session,
        publish: (topic, payload, qos) => {
          published.push(topic);
          return session.publish(topic, payload, qos);
        },
        get connected() {
          return session.connected;
        },
      };
    };
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(
        testConfig({
          runtime: { name: "rig-port" },
          providers: [simProvider("sim0")],
          sparkplug: { enabled: true, brokerUrl: broker.url, groupId: "lab", reconnectMs: 100 },
        }),
        { host: { mqttConnect } },
      );
      await waitFor("the births", () => rt!.sparkplug!.online);
      await waitFor(
        "NBIRTH through the port",
        () => published.includes("spBv1.0/lab/NBIRTH/rig-port"),
      );
      assert.equal(asked.length, 1);
      assert.equal(asked[0]!.url, broker.url);
      assert.equal(asked[0]!.clientId, "lab-rig-port");
      assert.equal(asked[0]!.will?.topic, "spBv1.0/lab/NDEATH/rig-port");
      const will = decode(asked[0]!.will!.payload);
      assert.equal(will.metrics?.find((m) => m.name === "bdSeq")?.long_value, 0);
    } finally {
      await rt?.stop();
      await broker.dispose();
    }
  },
});
