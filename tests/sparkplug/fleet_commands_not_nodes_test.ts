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
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { DataType, encode } from "../../src/sparkplug/mod.ts";
import { rebirth, withFleetLab } from "./_fleet_rig.ts";

Deno.test({
  name:
    "the fleet view lists no node from the commands sent to it (a retained NCMD, a host's DCMD or Rebirth to a node gone): only what a node publishes shows it",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const host = await lab.client("host");
      await lab.runtime("rig-1");
      // Left on the broker by a host that publishes commands retained.
      await host.publishAsync("spBv1.0/lab/NCMD/gone-long-ago", rebirth(), {
        qos: 1,
        retain: true,
      });
      let sent = false;
      const { nodes } = await lab.collect({
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
    }),
});
