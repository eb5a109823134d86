/**
 * The fleet view asks a node it has seen only through its data for a Rebirth (births are not
 * retained). It asked once: an NCMD lost on the way (QoS 0, as Sparkplug B 3.0 requires of NCMD:
 * a broker restarting, the node reconnecting at that moment) left the node `?` in every column for
 * the whole window. On a real Mosquitto, an edge node of the test's own (an MQTT client publishing
 * its NDATA) that ignores the first Rebirth it is sent, as a node whose copy of it was lost.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { DataType, decode, encode } from "../../src/sparkplug/mod.ts";
import { FLEET_GROUP, withFleetLab } from "./_fleet_rig.ts";

Deno.test({
  name:
    "the fleet view asks again for the births of a node that did not answer its first Rebirth, and lists it born",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const node = await lab.client("deaf-first");
      const topic = (type: string) => `spBv1.0/${FLEET_GROUP}/${type}/deaf-1`;
      const rebirths: number[] = [];
      let born: () => void = () => {};
      const birthSent = new Promise<void>((r) => (born = r));
      node.on("message", (_t, payload) => {
        const p = decode(new Uint8Array(payload));
        const asked = (p.metrics ?? []).some((m) => m.name === "Node Control/Rebirth");
        if (!asked) return;
        rebirths.push(rebirths.length + 1);
        if (rebirths.length === 1) return; // this copy was lost
        void node.publishAsync(
          topic("NBIRTH"),
          Buffer.from(encode({
            timestamp: Date.now(),
            seq: 0,
            metrics: [
              { name: "bdSeq", datatype: DataType.UInt64, long_value: 4 },
              { name: "Runtime/Mode", datatype: DataType.String, string_value: "MANUAL" },
            ],
          })),
          { qos: 0 },
        ).then(() => born());
      });
      await node.subscribeAsync(topic("NCMD"), { qos: 0 });
      // Its data, until it is born (the view subscribes at some point of this).
      const data = Buffer.from(encode({
        timestamp: Date.now(),
        seq: 1,
        metrics: [{ name: "Alarms/Active", datatype: DataType.Int32, int_value: 0 }],
      }));
      let ticking = true;
      const ticker = (async () => {
        while (ticking) {
          await node.publishAsync(topic("NDATA"), data, { qos: 0 });
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      let answered = false;
      try {
        const { nodes } = await lab.collect({
          waitMs: 5000,
          onUpdate: (n) => {
            if (n.node === "deaf-1" && n.born) answered = true;
          },
        });
        assert.deepEqual(
          nodes.map((n) => [n.node, n.born, n.mode]),
          [["deaf-1", true, "MANUAL"]],
          `Rebirths the node got: ${rebirths.length}`,
        );
        assert.ok(answered);
        await birthSent;
      } finally {
        ticking = false;
        await ticker;
      }
    }),
});
