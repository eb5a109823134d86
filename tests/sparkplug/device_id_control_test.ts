/**
 * A device id with a control character (a provider that reads ids from hardware may end one with
 * a CR) or a Unicode non-character must not cost the node its broker connection: Mosquitto closes
 * a connection that publishes to a topic holding one (MQTT 3.1.1 4.7.3: "SHOULD NOT"; Mosquitto
 * takes them as malformed), so the device's DBIRTH would end the session, and every reconnect's
 * births end the next one. Its Sparkplug id percent-encodes them. Against a real Mosquitto.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { withRealTimers } from "../helpers/clock.ts";
import { sparkplugHost } from "../helpers/sparkplug_host.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { connectMqttJs } from "../../src/host/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import {
  sparkplugDeviceId,
  sparkplugDeviceProvider,
  SparkplugEdgeNode,
} from "../../src/sparkplug/mod.ts";
import { deviceCaps, signalSpec } from "./_edge_node_rig.ts";

const GROUP = "lab";
const NODE = "ctl";

Deno.test("a Sparkplug device id holds no control character, and is still inverted exactly", () => {
  const odd = ["dev\r", "a\tb", "x\u0000", "y\u007f", "z\u0085", "\u009f", "\ufdd0", "\uffff"];
  for (const d of [...odd, "\u{1fffe}", "%09", "%", "a:b/c"]) {
    const id = sparkplugDeviceId("p0", d);
    assert.doesNotMatch(id, /[\p{Cc}\p{Noncharacter_Code_Point}]/u, JSON.stringify(id));
    assert.equal(sparkplugDeviceProvider(id), "p0", JSON.stringify(d));
  }
  assert.equal(sparkplugDeviceId("p0", "dev\r"), "p0:dev%0d");
  assert.equal(sparkplugDeviceId("p0", "\uffff"), "p0:%ef%bf%bf");
  assert.notEqual(sparkplugDeviceId("p0", "a\tb"), sparkplugDeviceId("p0", "a%09b"));
  // Ids without those characters are written as before.
  assert.equal(sparkplugDeviceId("sim:0", "a/b+c#d%e f"), "sim%3a0:a%2fb%2bc%23d%25e f");
});

Deno.test({
  name:
    "devices whose ids hold a CR or a non-character are born, and the node keeps its broker connection",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const providers = [{
      id: "p0",
      available: true,
      devices: [
        deviceCaps("p0", "probe\r", { signals: [signalSpec("temp", "double")] }),
        deviceCaps("p0", "probe\uffff", { signals: [signalSpec("temp", "double")] }),
        deviceCaps("p0", "plain", { signals: [signalSpec("temp", "double")] }),
      ],
    }];
    const inventory = {
      providers: () => providers,
      provider: (id: string) => providers.find((p) => p.id === id),
      devices: () => providers.flatMap((p) => p.devices.map((c) => c.device)),
      capabilities: (p: string, d: string) =>
        providers.find((x) => x.id === p)?.devices.find((c) => c.device.deviceId === d),
      onChange: () => () => {},
      onAvailability: () => () => {},
    } as unknown as InventoryReader;
    const node = new SparkplugEdgeNode({
      config: {
        ...testConfig().sparkplug,
        enabled: true,
        brokerUrl: broker.url,
        groupId: GROUP,
        reconnectMs: 100,
      },
      edgeNodeId: NODE,
      clientId: "ctl-node",
      connect: connectMqttJs,
      bus: { subscribe: () => () => {} },
      inventory,
      reads: { signal: () => undefined, qualityNow: (_p, _d, _s, s) => s.quality },
      status: () => ({
        mode: "IDLE",
        estopLatched: false,
        alarmsActive: 0,
        alarmsUnacked: 0,
        providersUp: 1,
        providersDown: 0,
      }),
      runtimeVersion: "test",
      clock: withRealTimers({ nowMs: () => Date.now(), monoMs: () => performance.now() }),
      log: testLogger(),
    });
    try {
      await node.start();
      const births = (m: { topic: string }) => /\/DBIRTH\//.test(m.topic);
      await waitFor("the three DBIRTHs", () => host.messages.filter(births).length >= 3);
      for (const d of ["probe\r", "probe\uffff"]) {
        const topic = `spBv1.0/${GROUP}/DBIRTH/${NODE}/${sparkplugDeviceId("p0", d)}`;
        assert.ok(host.messages.some((m) => m.topic === topic), topic);
      }
      // Still on its first connection: a Rebirth goes out on it.
      await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
        { name: "Node Control/Rebirth", datatype: 11, boolean_value: true },
      ]);
      await waitFor("the births again", () => host.messages.filter(births).length >= 6);
      assert.equal(node.counts.connects, 1);
      assert.equal(node.bdSeq, 0);
    } finally {
      await node.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
