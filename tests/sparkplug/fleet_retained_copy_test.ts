/**
 * The fleet view meets a broker's retained copies of node messages. Sparkplug B publishes every
 * node message with retain false (births are not retained); a publisher that sets the flag anyway
 * leaves its NBIRTH on the broker, which hands it to every new subscription, the view's too, long
 * after the node is gone (its NDEATH is not retained). The view listed such a node as reachable,
 * born, with the mode and latch of its birth. A copy is history, as a retained command is to the
 * edge node (docs/sparkplug.md): the view takes what arrives live. Against a real Mosquitto and a
 * real runtime.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { DataType, encode } from "../../src/sparkplug/mod.ts";
import { withFleetLab } from "./_fleet_rig.ts";

Deno.test({
  name:
    "the fleet view does not list a node from a retained copy of its NBIRTH (the node long gone): only messages that arrive live show a node",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const old = await lab.client("old");
      // A node of another make that retained its birth, then went away (cleanly: no will).
      await old.publishAsync(
        "spBv1.0/lab/NBIRTH/gone",
        Buffer.from(encode({
          timestamp: Date.now(),
          metrics: [
            { name: "bdSeq", datatype: DataType.UInt64, long_value: 0 },
            { name: "Runtime/Mode", alias: 1, datatype: DataType.String, string_value: "MANUAL" },
            {
              name: "Runtime/Estop Latched",
              alias: 2,
              datatype: DataType.Boolean,
              boolean_value: false,
            },
          ],
        })),
        { qos: 1, retain: true },
      );
      await old.endAsync();
      await lab.runtime("rig-1");
      const { nodes } = await lab.collect();
      assert.deepEqual(
        nodes.map((n) => [n.node, n.reachable, n.born, n.mode]),
        [["rig-1", true, true, "IDLE"]],
      );
    }),
});
