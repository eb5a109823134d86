/**
 * The fleet view subscribed at QoS 0: the broker delivered a node's NDEATH (its will, and its
 * clean stop's, both published at QoS 1 as Sparkplug B asks) at QoS 0 to it, unacknowledged, so a
 * copy lost showed a dead node reachable. It subscribes at QoS 1 now. The test reads what Mosquitto
 * itself sends the view: a TCP relay between the view's MQTT.js client and the broker parses the
 * broker's packets (the SUBACK's granted QoS, each PUBLISH's QoS) and passes them on unchanged.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { FLEET_GROUP, withFleetLab } from "./_fleet_rig.ts";

/** What the broker sent through the relay: each SUBACK's return codes, each PUBLISH's. */
interface Tap {
  readonly url: string;
  readonly subacks: number[][];
  readonly publishes: Array<{ topic: string; qos: number }>;
  close(): Promise<void>;
}

/**
 * A relay on a free loopback port to the broker on `brokerPort`: client bytes go through as they
 * are; the broker's are parsed as MQTT 3.1.1 packets (fixed header, remaining length) on the way.
 */
function mqttTap(brokerPort: number): Tap {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const subacks: number[][] = [];
  const publishes: Array<{ topic: string; qos: number }> = [];
  const conns: Deno.Conn[] = [];
  const pipes: Promise<unknown>[] = [];
  const parser = () => {
    let buf = new Uint8Array(0);
    return (chunk: Uint8Array) => {
      const joined = new Uint8Array(buf.length + chunk.length);
      joined.set(buf);
      joined.set(chunk, buf.length);
      buf = joined;
      for (;;) {
        let len = 0;
        let i = 1;
        for (let mul = 1; i < buf.length && i <= 4; i++, mul *= 128) {
          len += (buf[i]! & 127) * mul;
          if ((buf[i]! & 128) === 0) break;
        }
        if (i >= buf.length || buf.length < i + 1 + len) return;
        const type = buf[0]! >> 4;
        const body = buf.subarray(i + 1, i + 1 + len);
        if (type === 9) subacks.push([...body.subarray(2)]);
        if (type === 3) {
          const topicLen = (body[0]! << 8) | body[1]!;
          publishes.push({
            topic: new TextDecoder().decode(body.subarray(2, 2 + topicLen)),
            qos: (buf[0]! >> 1) & 3,
          });
        }
        buf = buf.slice(i + 1 + len);
      }
    };
  };
  const accepting = (async () => {
    for await (const down of listener) {
      const up = await Deno.connect({ hostname: "127.0.0.1", port: brokerPort });
      conns.push(down, up);
      const parse = parser();
      pipes.push(down.readable.pipeTo(up.writable).catch(() => {}));
      pipes.push(
        up.readable.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, out) {
              parse(chunk);
              out.enqueue(chunk);
            },
          }),
        ).pipeTo(down.writable).catch(() => {}),
      );
    }
  })().catch(() => {});
  const port = (listener.addr as Deno.NetAddr).port;
  return {
    url: `mqtt://127.0.0.1:${port}`,
    subacks,
    publishes,
    async close() {
      listener.close();
      await accepting;
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed by its pipe */ }
      }
      await Promise.all(pipes);
    },
  };
}

Deno.test({
  name:
    "the fleet view subscribes at QoS 1 (granted by Mosquitto): a node's NDEATH reaches it at QoS 1 and shows the node dead",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const tap = mqttTap(lab.broker.port);
      try {
        const rt = await lab.runtime("rig-qos");
        let seen: () => void = () => {};
        const born = new Promise<void>((r) => (seen = r));
        const view = lab.collect({
          url: tap.url,
          waitMs: 5000,
          onUpdate: (n) => {
            if (n.node === "rig-qos" && n.born) seen();
          },
        });
        await born;
        await lab.stop(rt); // its NDEATH, at QoS 1
        const { nodes } = await view;
        assert.deepEqual(nodes.map((n) => [n.node, n.reachable]), [["rig-qos", false]]);
        assert.deepEqual(tap.subacks, [[1]], "the view's one SUBSCRIBE, granted QoS 1");
        const ndeath = tap.publishes.filter((p) =>
          p.topic === `spBv1.0/${FLEET_GROUP}/NDEATH/rig-qos`
        );
        // Its clean stop's (and, were the stop's end forced, its will: also QoS 1).
        assert.ok(ndeath.length >= 1, JSON.stringify(tap.publishes));
        assert.deepEqual(ndeath.map((p) => p.qos), ndeath.map(() => 1), JSON.stringify(ndeath));
      } finally {
        await tap.close();
      }
    }),
});
