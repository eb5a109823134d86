/**
 * The MQTT.js adapter (src/host/mqtt.ts) against a real Mosquitto: a QoS 1 publish comes back
 * through its own subscription, a retained one is handed over flagged, and the adapter leaves mqtt-packet's packet-id cache unbuilt.
 * With MQTT.js's default (`writeCache: true`) the first write builds 65536 two-byte Buffers, each
 * with its own backing store: +16 MiB RSS, +7 MiB V8 heap for the runtime with Sparkplug on
 * (bench/README.md, "Sparkplug on: what it costs in memory"). mqtt-packet is the very module
 * MQTT.js loads (the same pinned version in deno.lock), so its flag says what the adapter did.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import mqtt from "mqtt";
import mqttPacket from "mqtt-packet";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { connectMqttJs } from "../../src/host/mod.ts";

Deno.test({
  name:
    "the MQTT.js adapter round-trips a QoS 1 message, flags a retained one, and builds no packet-id cache",
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
        const got: Array<[string, number[], boolean]> = [];
        session.onMessage((topic, payload, retained) => got.push([topic, [...payload], retained]));
        await waitFor("the connection", () => session.connected);
        // A message the broker retained from before the subscription comes flagged as retained.
        const other = await mqtt.connectAsync(broker.url, { clientId: "adapter-test-other" });
        await other.publishAsync("adapter/r", Buffer.from([9]), { qos: 1, retain: true });
        await other.endAsync(true);
        await session.subscribe(["adapter/#"], 1);
        await waitFor("the retained message", () => got.length === 1);
        await session.publish("adapter/a", new Uint8Array([1, 2, 3]), 1);
        await waitFor("the message back", () => got.length === 2);
        assert.deepEqual(got, [["adapter/r", [9], true], ["adapter/a", [1, 2, 3], false]]);
        assert.equal(mqttPacket.writeToStream.cacheNumbers, false);
      } finally {
        await session.end(true);
      }
    } finally {
      await broker.dispose();
    }
  },
});
