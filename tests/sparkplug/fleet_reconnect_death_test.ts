/**
 * The fleet view's own connection drops during its window (a network blip between the view and the
 * broker, the broker up all along) while a node dies: the node's NDEATH (QoS 1) was published while
 * the view was away. With a clean session the broker kept nothing for the view, so the NDEATH was
 * lost and the dead node listed reachable. On a real Mosquitto, through a TCP relay the test cuts
 * and restores (MQTT.js reconnects through it every second, under the same client id).
 */
import assert from "node:assert/strict";
import mqtt from "mqtt";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { connectMqttJs } from "../../src/host/mod.ts";
import { cuttableRelay } from "../helpers/cuttable_relay.ts";
import { withFleetLab } from "./_fleet_rig.ts";

Deno.test({
  name:
    "a node that dies while the fleet view's connection is down is listed dead: the broker kept its NDEATH for the view's session",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const relay = cuttableRelay(lab.broker.port);
      try {
        const rt = await lab.runtime("rig-cut");
        const clientIds: string[] = [];
        let seen: () => void = () => {};
        const born = new Promise<void>((r) => (seen = r));
        let reconnected: () => void = () => {};
        const back = new Promise<void>((r) => (reconnected = r));
        const view = lab.collect({
          url: relay.url,
          waitMs: 8000,
          connect: async (o) => {
            clientIds.push(o.clientId);
            const session = await connectMqttJs(o);
            let connects = 0;
            session.onConnect(() => {
              if (++connects === 2) reconnected();
            });
            return session;
          },
          onUpdate: (n) => {
            if (n.node === "rig-cut" && n.born) seen();
          },
        });
        await born;
        relay.cut();
        await lab.stop(rt); // its NDEATH, at QoS 1, while the view is away
        relay.restore();
        await back;
        const { nodes } = await view;
        assert.deepEqual(nodes.map((n) => [n.node, n.reachable]), [["rig-cut", false]]);
        // The view's session is not left on the broker once the view is done.
        const probe = mqtt.connect(lab.broker.url, { clientId: clientIds[0]!, clean: false });
        try {
          const connack = await new Promise<{ sessionPresent: boolean }>((r) =>
            probe.once("connect", r)
          );
          assert.equal(connack.sessionPresent, false, "the view's session is left on the broker");
        } finally {
          await probe.endAsync(true);
        }
      } finally {
        await relay.dispose();
      }
    }),
});
