/**
 * The broker's acknowledgement of the node's NDEATH (the primary host went offline) and an NCMD
 * `Node Control/E-Stop` in one read: against a real Mosquitto, through a relay that holds what the
 * broker sends the node (tests/helpers/cuttable_relay.ts) and lets the PUBACK and the NCMD go in
 * one write. MQTT.js hands both on in one turn; the e-stop is taken (the latch), nothing of the
 * node reaches the host between its NDEATH and its next births, and those births carry the latch,
 * then the e-stop's answer. The in-process counterpart, with every order of the two:
 * death_ack_command_one_read_test.ts.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { cuttableRelay } from "../helpers/cuttable_relay.ts";
import { lastNodeValue, sparkplugHost } from "../helpers/sparkplug_host.ts";
import { NODE_METRICS } from "../../src/sparkplug/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-death-ack";
const HOST = "scada-1";
const STATE = `spBv1.0/STATE/${HOST}`;
const NBIRTH = `spBv1.0/${GROUP}/NBIRTH/${NODE}`;
const NDEATH = `spBv1.0/${GROUP}/NDEATH/${NODE}`;
/** MQTT 3.1.1 PUBACK's first byte (packet type 4). */
const PUBACK = 0x40;

Deno.test({
  name:
    "an NDEATH's PUBACK and an NCMD e-stop in one read (real Mosquitto): the e-stop is taken, nothing follows the NDEATH before the births",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const relay = cuttableRelay(broker.port);
    const host = await sparkplugHost(broker.url, GROUP);
    const state = (online: boolean, timestamp: number) =>
      host.client.publishAsync(STATE, JSON.stringify({ online, timestamp }), {
        qos: 1,
        retain: true,
      });
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(testConfig({
        runtime: { name: NODE },
        providers: [simProvider("sim0")],
        sparkplug: {
          enabled: true,
          brokerUrl: relay.url,
          groupId: GROUP,
          primaryHostId: HOST,
          reconnectMs: 100,
          commands: true,
        },
      }));
      await state(true, 1);
      await waitFor("the births", () => rt!.sparkplug!.online);
      await waitFor(
        "the latch clear at the host",
        () => lastNodeValue(host.messages, GROUP, NODE, NODE_METRICS.latched) === false,
      );

      // The host goes offline: that STATE reaches the node, what the broker sends it next (the
      // PUBACK of its NDEATH) is held back.
      const stateBytes = new TextEncoder().encode(STATE);
      relay.holdReplies((chunk) => includes(chunk, stateBytes));
      await state(false, 2);
      await waitFor("the NDEATH at the host", () => host.messages.some((m) => m.topic === NDEATH));
      await waitFor("the NDEATH's PUBACK held back", () => relay.heldReplies().length >= 4);
      assert.equal(relay.heldReplies()[0], PUBACK, "the NDEATH's PUBACK first");
      const held = relay.heldReplies().length;
      await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
        { name: NODE_METRICS.estop, datatype: 11, boolean_value: true },
      ]);
      await waitFor("the NCMD held back after it", () => relay.heldReplies().length > held);
      const deathAt = host.messages.findIndex((m) => m.topic === NDEATH);
      assert.equal(rt.estop.latched, false);
      await relay.releaseReplies();
      await waitFor("the e-stop latched", () => rt!.estop.latched);

      // The host comes back: the births carry the latch, then the answer.
      await state(true, 3);
      await waitFor(
        "the next births",
        () => host.messages.slice(deathAt).some((m) => m.topic === NBIRTH),
      );
      const after = host.messages.slice(deathAt + 1);
      const births = after.findIndex((m) => m.topic === NBIRTH);
      // The host's own NCMD comes back to it; the broker publishes the session's will (NDEATH,
      // the same bdSeq: the session ended without a DISCONNECT).
      assert.deepEqual(
        after.slice(0, births).map((m) => m.topic).filter((t) => !/\/(NCMD|NDEATH)\//.test(t)),
        [],
        "nothing of the node between its NDEATH and its births",
      );
      assert.equal(
        (after[births]!.payload.metrics ?? []).find((m) => m.name === NODE_METRICS.latched)
          ?.boolean_value,
        true,
        "the births carry the latch",
      );
      await waitFor(
        "the e-stop's answer",
        () =>
          lastNodeValue(host.messages, GROUP, NODE, NODE_METRICS.commandResult) ===
            `${NODE_METRICS.estop}: OK`,
      );
    } finally {
      await rt?.stop();
      await host.close();
      await relay.dispose();
      await broker.dispose();
    }
  },
});

/** Whether `bytes` holds `part`. */
function includes(bytes: Uint8Array, part: Uint8Array): boolean {
  outer: for (let i = 0; i + part.length <= bytes.length; i++) {
    for (let j = 0; j < part.length; j++) if (bytes[i + j] !== part[j]) continue outer;
    return true;
  }
  return false;
}
