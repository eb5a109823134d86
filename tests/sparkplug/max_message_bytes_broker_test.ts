/**
 * `sparkplug.max_message_bytes` set to a real Mosquitto's `max_packet_size`. First the count: a
 * PUBLISH whose mqttPacketBytes is exactly the bound is accepted, one byte more closes the
 * connection (MQTT 3.1.1 cannot tell the client why). Then the defect it fixes: the simulated
 * provider's chaos_control device has a DBIRTH over the bound. Before, the broker closed the
 * node's connection at that DBIRTH at every births, so no device's data reached the plant; now
 * that device stays unborn (WARNed once, in the status) and the others are born and publish on
 * one connection that holds.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import mqtt from "mqtt";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { infoLines, sparkplugHost } from "../helpers/sparkplug_host.ts";
import { mqttPacketBytes } from "../../src/sparkplug/mod.ts";

const GROUP = "lab";
const NODE = "rig-fit";
/** Over chaos_control's DBIRTH (some 2.4 kB), over every other device's (at most some 1.3 kB). */
const MAX_PACKET = 2048;

Deno.test({
  name:
    "mqttPacketBytes at Mosquitto's max_packet_size is accepted, one byte more closes the connection",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start({ maxPacketSize: MAX_PACKET });
    const topic = "size/probe";
    const payloadFor = (packet: number) => packet - mqttPacketBytes(topic, 0, 1);
    const clients: mqtt.MqttClient[] = [];
    try {
      const at = await mqtt.connectAsync(broker.url, { protocolVersion: 4, reconnectPeriod: 0 });
      clients.push(at);
      await at.publishAsync(topic, Buffer.alloc(payloadFor(MAX_PACKET)), { qos: 1 });
      assert.ok(at.connected, "still connected after a packet of exactly the bound");

      const over = await mqtt.connectAsync(broker.url, { protocolVersion: 4, reconnectPeriod: 0 });
      clients.push(over);
      let closed = false;
      over.on("close", () => closed = true);
      over.publish(topic, Buffer.alloc(payloadFor(MAX_PACKET + 1)), { qos: 1 }, () => {});
      await waitFor("the broker closing the connection", () => closed);
    } finally {
      for (const c of clients) await c.endAsync(true);
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "a device whose DBIRTH is over max_message_bytes stays unborn; the others publish on a connection that holds",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start({ maxPacketSize: MAX_PACKET });
    const host = await sparkplugHost(broker.url, GROUP);
    const { lines, log } = infoLines();
    const rt = await startRuntime(
      testConfig({
        runtime: { name: NODE },
        providers: [simProvider("sim0")],
        sparkplug: {
          enabled: true,
          brokerUrl: broker.url,
          groupId: GROUP,
          reconnectMs: 100,
          maxMessageBytes: MAX_PACKET,
        },
      }),
      { host: { log } },
    );
    const of = (type: string, device?: string) =>
      host.messages.filter((m) =>
        m.topic === `spBv1.0/${GROUP}/${type}/${NODE}${device === undefined ? "" : `/${device}`}`
      );
    try {
      // Data of the other devices keeps arriving: 20 DDATA of the analog sensor.
      await waitFor(
        "20 DDATA of sim0:analogsensor0",
        () => of("DDATA", "sim0:analogsensor0").length >= 20,
        20_000,
      );
      assert.equal(of("NBIRTH").length, 1, "one connection: births once");
      assert.equal(of("NDEATH").length, 0, "the connection was never closed");
      assert.equal(rt.sparkplug!.counts.connects, 1);
      assert.equal(of("DBIRTH", "sim0:chaos_control").length, 0);
      for (const d of ["analogsensor0", "tempctl0", "motorctl0", "relayio0"]) {
        assert.equal(of("DBIRTH", `sim0:${d}`).length, 1, d);
      }
      for (const m of host.messages) {
        assert.ok(mqttPacketBytes(m.topic, m.raw.length, 0) <= MAX_PACKET, m.topic);
      }
      const unborn = rt.sparkplug!.unbornTooLarge;
      assert.equal(unborn.length, 1);
      assert.equal(unborn[0]!.deviceId, "sim0:chaos_control");
      assert.ok(unborn[0]!.bytes > MAX_PACKET, String(unborn[0]!.bytes));
      const warns = lines.filter((l) => /device "sim0:chaos_control" not born/.test(l));
      assert.equal(warns.length, 1, lines.join("\n"));
      assert.match(
        warns[0]!,
        new RegExp(
          `^WARN .*its DBIRTH is ${unborn[0]!.bytes} bytes, over sparkplug.max_message_bytes ` +
            `${MAX_PACKET}`,
        ),
      );
    } finally {
      await rt.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
