/**
 * A live (not replayed) DDATA handed to MQTT before its device's DDEATH, whose write then fails
 * with the connection, is not lost when no replay of the device was under way (nothing saved for
 * it): the history ring still holds its poll, so after the device's next DBIRTH the host gets it
 * with is_historical, as a device whose replay was cut by its DDEATH gets the rest of its replay
 * (tests/sparkplug/ddeath_lost_replay_test.ts).
 *
 * Against a real Mosquitto through MQTT.js (tests/helpers/held_mqtt.ts): the live DDATA are held
 * back (the node has handed them over, MQTT.js has not got them yet), the device leaves (DDEATH),
 * the broker goes away, and the held writes are then let go into the closed client, which fails
 * them. The host counts the polls it receives across the DDEATH/DBIRTH.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { heldBrokerRig } from "./_device_replay_rig.ts";
import { P } from "./_ring_rig.ts";

const DEVICE = `${P}:a`;
const DDATA = `spBv1.0/g/DDATA/n/${DEVICE}`;
const POLLS = 5;

Deno.test({
  name: "SparkplugEdgeNode replays after the next DBIRTH the live DDATA that failed after the " +
    "device's DDEATH with no replay of it under way",
  ignore: mosquittoMissing(),
  async fn() {
    const brokerRig = await heldBrokerRig();
    const { broker, host, port, rig } = brokerRig;
    const { node } = rig;
    try {
      await waitFor("the births written", () => port.unsettled === 0 && port.handed.length >= 2);

      // Live polls, each one DDATA handed over and held before MQTT.js: no outage, no replay.
      port.stall();
      const times: number[] = [];
      for (let i = 1; i <= POLLS; i++) {
        times.push(rig.poll("a", i));
        await waitFor(`the live DDATA of poll ${i} handed over`, () => port.held === i);
      }
      assert.equal(node.replayPending, false, "nothing waits for a replay: the DDATA went live");
      // The device leaves: its DDEATH is handed over behind them.
      rig.setAvailable(false);
      const ddeath = `spBv1.0/g/DDEATH/n/${DEVICE}`;
      await waitFor("the DDEATH handed over", () => port.heldTopics.includes(ddeath));
      // The connection goes away; the held writes then fail in the closed client.
      await broker.pause();
      await waitFor("the node to see the broker gone", () => !node.connected);
      const failuresBefore = node.counts.publishFailures;
      const held = port.held;
      const handedBefore = port.handed.length;
      port.release();
      await waitFor(
        `the ${held} held writes to fail`,
        () => node.counts.publishFailures === failuresBefore + held,
      );
      // From now on the node's writes wait for the host to be back (its writes of the
      // connection that went away have all failed: none of them is held).
      brokerRig.holdUntilHostBack();

      // The device is back and the broker too: births, then what the host missed.
      rig.setAvailable(true);
      const marker = host.messages.length;
      await brokerRig.nextSession();
      await broker.resume();
      await waitFor(
        "the births, any replay and every write settled",
        () => node.online && !node.replayPending && port.unsettled === 0,
        20000,
      );
      // The DDATA handed over on the last connection (those before failed: never written).
      const handed = port.handed.slice(handedBefore + held).filter((w) => w.topic === DDATA);
      const atHost = await waitFor(
        `the ${handed.length} DDATA of the last connection at the host`,
        () => {
          const got = host.messages.slice(marker).filter((m) => m.topic === DDATA);
          return got.length === handed.length ? got : null;
        },
        20000,
      );
      const received = atHost.map((m) => Number(m.payload.timestamp));
      const missing = times.filter((t) => !received.includes(t));
      assert.deepEqual(
        { received: received.length, missing: missing.length },
        { received: POLLS, missing: 0 },
        "every poll whose live DDATA failed reaches the host once after the next DBIRTH",
      );
      assert.deepEqual(received, times, "in poll order");
      for (const m of atHost) {
        for (const x of m.payload.metrics ?? []) assert.equal(x.is_historical, true);
      }
      assert.equal(node.counts.storeDropped, 0);
    } finally {
      await brokerRig.dispose();
    }
  },
});
