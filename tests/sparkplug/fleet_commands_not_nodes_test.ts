/**
 * The fleet view meets the commands of the plant's hosts: an NCMD or DCMD is published to an edge
 * node, by a host, not by the node, so it says nothing of the node being there. The view listed
 * every node under whose topic anything arrived: a host's Rebirth or DCMD to a node that crashed
 * before the window, or the retained NCMD a misbehaving host left on the broker (handed to every
 * new subscription: docs/sparkplug.md, "a retained command"), listed a node that published nothing
 * as reachable -- and the view sent it a Rebirth of its own. Against a real Mosquitto, a real
 * runtime, and a host publishing commands.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import mqtt from "mqtt";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { collectFleet, DataType, encode } from "../../src/sparkplug/mod.ts";
import { connectMqttJs, systemClock } from "../../src/host/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const rebirth = () =>
  Buffer.from(encode({
    timestamp: Date.now(),
    metrics: [{ name: "Node Control/Rebirth", datatype: DataType.Boolean, boolean_value: true }],
  }));

Deno.test({
  name:
    "the fleet view lists no node from the commands sent to it (a retained NCMD, a host's DCMD or Rebirth to a node gone): only what a node publishes shows it",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    let rt: Kernel | null = null;
    const host = await mqtt.connectAsync(broker.url, { clientId: `host-${crypto.randomUUID()}` });
    try {
      rt = await startRuntime(testConfig({
        runtime: { name: "rig-1" },
        providers: [simProvider("sim0")],
        sparkplug: { enabled: true, brokerUrl: broker.url, groupId: "lab" },
      }));
      // Left on the broker by a host that publishes commands retained.
      await host.publishAsync("spBv1.0/lab/NCMD/gone-long-ago", rebirth(), {
        qos: 1,
        retain: true,
      });
      let sent = false;
      const { nodes } = await collectFleet({
        url: broker.url,
        group: "lab",
        waitMs: 2000,
        connect: connectMqttJs,
        clock: systemClock,
        onUpdate: (n) => {
          // Once the view hears rig-1: a host asks a crashed node for its births, and writes to
          // a device of another.
          if (n.node !== "rig-1" || sent) return;
          sent = true;
          void host.publishAsync("spBv1.0/lab/NCMD/crashed", rebirth(), { qos: 1 });
          void host.publishAsync(
            "spBv1.0/lab/DCMD/crashed-too/sim0:relayio0",
            Buffer.from(encode({
              timestamp: Date.now(),
              metrics: [{
                name: "Functions/set_relay_ch1",
                datatype: DataType.Boolean,
                boolean_value: true,
              }],
            })),
            { qos: 1 },
          );
        },
      });
      assert.ok(sent, "the host's commands were sent during the window");
      assert.deepEqual(
        nodes.map((n) => [n.node, n.reachable, n.born]),
        [["rig-1", true, true]],
      );
    } finally {
      await host.endAsync(true);
      await rt?.stop();
      await broker.dispose();
    }
  },
});
