/**
 * A device that leaves (DDEATH) while the replay of its outage from the history ring is under way,
 * then comes back (DBIRTH): the rest of its replay follows the new DBIRTH, with is_historical and
 * the aliases that DBIRTH declared, each poll once, and nothing of the device between its DDEATH
 * and its DBIRTH; the seq numbers run on without a gap. Against a real Mosquitto: the node's
 * session is MQTT.js's (src/host/mqtt.ts), observed to know when the replay's first DDATA was
 * handed over (the replay outruns MAX_IN_FLIGHT, so the rest waits for the broker's PUBACKs) and
 * in which order the node published; a host reads every message through the broker. (The host's
 * arrival order is not the node's: Mosquitto hands a QoS 0 message, the DDEATH, to a subscriber
 * ahead of the QoS 1 DDATA queued behind its max_inflight_messages. Sparkplug hosts order by seq.)
 */
import assert from "node:assert/strict";
import type { MqttConnect } from "../../src/common/mod.ts";
import { decode, MAX_IN_FLIGHT } from "../../src/sparkplug/mod.ts";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { hostBackConnect, type Received, reconnectingHost } from "../helpers/sparkplug_host.ts";
import { waitFor } from "../helpers/kernel.ts";
import { P, ringRig } from "./_ring_rig.ts";

const DEVICE = `${P}:a`;
const POLLS = MAX_IN_FLIGHT + 500;
const RECONNECT_MS = 100;

Deno.test({
  name:
    "SparkplugEdgeNode: a DDEATH during the replay of a device's outage loses none of it: the rest follows its next DBIRTH",
  ignore: mosquittoMissing(),
  async fn() {
    // The host's QoS 1 subscription gets the whole replay: none dropped by the broker's queue.
    const broker = await Mosquitto.start({ maxQueuedMessages: 0 });
    const host = await reconnectingHost(broker.url, "g");
    /** Writes the node handed to the broker (publish calls), in order; the first replayed DDATA's. */
    const published: { topic: string; raw: Uint8Array }[] = [];
    let handed = 0;
    let watching = false;
    const replayStarted = Promise.withResolvers<void>();
    let opened = 0;
    // While the broker is away, the node's writes wait for the host to be back (hostBackConnect:
    // a restored session loses some of what was queued for it, eclipse-mosquitto/mosquitto#2349).
    const writes = hostBackConnect(host);
    const connect: MqttConnect = async (o) => {
      const s = await writes.connect(o);
      opened++;
      return {
        publish(topic, payload, qos) {
          handed++;
          if (watching) published.push({ topic, raw: payload });
          if (watching && topic === `spBv1.0/g/DDATA/n/${DEVICE}`) replayStarted.resolve();
          return s.publish(topic, payload, qos);
        },
        subscribe: (topics, qos) => s.subscribe(topics, qos),
        onConnect: (l) => s.onConnect(l),
        onClose: (l) => s.onClose(l),
        onMessage: (l) => s.onMessage(l),
        onError: (l) => s.onError(l),
        get connected() {
          return s.connected;
        },
        end: (force) => s.end(force),
      };
    };
    const rig = ringRig({ qos: 1, connect, brokerUrl: broker.url, reconnectMs: RECONNECT_MS });
    const { node, clock } = rig;
    const settled = () => node.counts.published + node.counts.publishFailures === handed;
    try {
      await rig.history.start();
      rig.addDevice("a");
      await node.start();
      rig.poll("a", 0);
      await waitFor("the first births", () => node.online);
      await waitFor(
        "the DBIRTH at the host",
        () => host.messages.some((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEVICE}`),
      );

      // The broker goes away: the node's next session waits for reconnect_ms on its clock.
      await broker.pause();
      await waitFor("the node to see the broker gone", () => !node.connected);
      writes.holdUntilHostBack();
      await waitFor("the node's reconnect timer", () => clock.pendingTimers > 0);
      await clock.advanceAsync(RECONNECT_MS);
      await waitFor("the node's next session", () => opened === 2);
      const times: number[] = [];
      for (let i = 1; i <= POLLS; i++) times.push(rig.poll("a", i));
      assert.equal(node.replayPending, true, "the outage is noted");

      // Back: births, then the replay hands over up to MAX_IN_FLIGHT writes and waits for PUBACKs.
      const marker = host.messages.length;
      const before = handed;
      watching = true;
      await broker.resume();
      await replayStarted.promise;
      assert.ok(handed - before < POLLS, "the replay waits for the broker with polls left");
      // The provider goes away meanwhile: its DDEATH follows as soon as a write completes.
      rig.setAvailable(false);
      await waitFor("the writes handed over to settle", settled);
      rig.setAvailable(true);
      await waitFor(
        "the replay to end and every write to settle",
        () => !node.replayPending && settled(),
        20000,
      );
      const sent = handed - before;
      // The node's own messages (the broker also delivers the first session's will, NDEATH).
      const fromNode = () =>
        host.messages.slice(marker).filter((m) => m.topic !== "spBv1.0/g/NDEATH/n");
      await waitFor(
        `the ${sent} messages of the node at the host`,
        () => fromNode().length === sent,
        20000,
      );
      // Every message the node published reached the host through the broker, once.
      const key = (m: { topic: string; raw: Uint8Array }) => `${m.topic} ${m.raw.join(",")}`;
      assert.deepEqual(fromNode().map(key).sort(), published.map(key).sort());
      const after: Received[] = published.map((m) => ({ ...m, payload: decode(m.raw) }));

      // Sparkplug order: NBIRTH, DBIRTH, replay, DDEATH, DBIRTH, the rest of the replay.
      const kinds = after.map((m) => m.topic.split("/")[2]);
      const deaths = kinds.flatMap((k, i) => (k === "DDEATH" ? [i] : []));
      const births = kinds.flatMap((k, i) => (k === "DBIRTH" ? [i] : []));
      assert.equal(kinds[0], "NBIRTH");
      assert.equal(deaths.length, 1, kinds.join(" "));
      assert.equal(births.length, 2, kinds.join(" "));
      assert.ok(births[0]! < deaths[0]! && deaths[0]! < births[1]!, "DBIRTH, DDEATH, DBIRTH");
      assert.ok(
        kinds.slice(deaths[0]! + 1, births[1]!).every((k) => k !== "DDATA"),
        "no DDATA of the device between its DDEATH and its DBIRTH",
      );
      // seq: 0 on the NBIRTH, then one more per message (mod 256), no gap.
      after.forEach((m, i) => assert.equal(Number(m.payload.seq), i % 256, `seq of ${i}`));

      // Each DDATA carries aliases its latest DBIRTH declared, with is_historical.
      let declared = new Set<number>();
      const replayed: number[] = [];
      for (const m of after) {
        const metrics = m.payload.metrics ?? [];
        if (m.topic === `spBv1.0/g/DBIRTH/n/${DEVICE}`) {
          declared = new Set(metrics.map((x) => Number(x.alias)));
        } else if (m.topic === `spBv1.0/g/DDATA/n/${DEVICE}`) {
          for (const x of metrics) {
            assert.ok(declared.has(Number(x.alias)), `alias ${x.alias} of the DBIRTH before`);
            assert.equal(x.is_historical, true);
          }
          replayed.push(Number(m.payload.timestamp));
        }
      }
      const missing = times.filter((t) => !replayed.includes(t));
      assert.deepEqual(
        { replayed: replayed.length, missing: missing.length },
        { replayed: POLLS, missing: 0 },
        `every poll of the outage replayed once (first missing: ${missing[0]})`,
      );
      assert.deepEqual(replayed, times, "in poll order");
      assert.equal(node.counts.storeDropped, 0);
    } finally {
      await rig.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
