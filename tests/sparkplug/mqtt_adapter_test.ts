/**
 * The MQTT.js adapter (src/host/mqtt.ts) against a real Mosquitto: a QoS 1 publish comes back
 * through its own subscription, and the adapter leaves mqtt-packet's packet-id cache unbuilt.
 * With MQTT.js's default (`writeCache: true`) the first write builds 65536 two-byte Buffers, each
 * with its own backing store: +16 MiB RSS, +7 MiB V8 heap for the runtime with Sparkplug on
 * (bench/README.md, "Sparkplug on: what it costs in memory"). mqtt-packet is the very module
 * MQTT.js loads (the same pinned version in deno.lock), so its flag says what the adapter did.
 */
import assert from "node:assert/strict";
import mqttPacket from "mqtt-packet";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { connectMqttJs } from "../../src/host/mod.ts";

Deno.test({
  name: "the MQTT.js adapter round-trips a QoS 1 message without building the packet-id cache",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    try {
      const session = await connectMqttJs({
        url: broker.url,
        clientId: "adapter-test",
        keepAliveS: 10,
        connectTimeoutMs: 5000,
        reconnectMs: 100,
      });
      try {
        const got: Array<[string, number[]]> = [];
        session.onMessage((topic, payload) => got.push([topic, [...payload]]));
        await waitFor("the connection", () => session.connected);
        await session.subscribe(["adapter/#"], 1);
        await session.publish("adapter/a", new Uint8Array([1, 2, 3]), 1);
        await waitFor("the message back", () => got.length === 1);
        assert.deepEqual(got, [["adapter/a", [1, 2, 3]]]);
        assert.equal(mqttPacket.writeToStream.cacheNumbers, false);
      } finally {
        await session.end(true);
      }
    } finally {
      await broker.dispose();
    }
  },
});
