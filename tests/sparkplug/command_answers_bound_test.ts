/**
 * The answers to commands (DDATA of `Functions/<name>`, NDATA of `Runtime/Command Result`) stay
 * under MAX_IN_FLIGHT like data: a host that keeps writing while the broker takes no writes adds
 * no write beyond the bound; the latest answer of each metric goes out once writes complete.
 * Against a real Mosquitto, through an MqttConnect port that holds the writes back (as a stalled
 * broker does) and lets them go later, in order.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { sparkplugHost } from "../helpers/sparkplug_host.ts";
import { heldMqtt } from "../helpers/held_mqtt.ts";
import { MAX_IN_FLIGHT, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-answers";
const relay = sparkplugDeviceId("sim0", "relayio0");

Deno.test({
  name:
    "command answers wait under MAX_IN_FLIGHT while the broker takes no writes; the latest of each metric goes out after",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const port = heldMqtt();
    let rt: Kernel | null = null;
    try {
      // Commands off: every command is refused at once, and answered.
      rt = await startRuntime(
        testConfig({
          runtime: { name: NODE },
          providers: [simProvider("sim0")],
          sparkplug: { enabled: true, brokerUrl: broker.url, groupId: GROUP },
        }),
        { host: { mqttConnect: port.connect } },
      );
      const node = rt.sparkplug!;
      const dbirth = await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const fnAlias = (dbirth.payload.metrics ?? []).find((m) =>
        m.name === "Functions/set_relay_ch3"
      )!.alias;

      // The broker stops taking writes; births published again meanwhile fill the writes in
      // flight (rebirth(): NCMD Rebirths while births are going out are one set after them).
      port.stall();
      while (port.held < MAX_IN_FLIGHT) node.rebirth();
      const full = port.held;

      const refused = node.counts.commandsRefused;
      for (let i = 0; i < 20; i++) {
        await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`, [
          { name: "Functions/set_relay_ch3", datatype: 11, boolean_value: i % 2 === 0 },
        ]);
        await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
          { name: "Node Control/E-Stop", datatype: 11, boolean_value: true },
        ]);
      }
      await waitFor("40 refusals", () => node.counts.commandsRefused === refused + 40);
      assert.equal(
        port.held,
        full,
        `${port.held - full} answers written beyond the ${MAX_IN_FLIGHT} writes in flight`,
      );

      // The broker takes writes again: the latest answer of each metric goes out.
      const marker = host.messages.length;
      port.release();
      const answers = () =>
        host.messages.slice(marker).flatMap((m) =>
          m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}`
            ? (m.payload.metrics ?? []).filter((x) => x.alias === fnAlias)
            : []
        );
      await waitFor("the DCMD's answer", () => answers().length > 0);
      assert.deepEqual(
        answers().map((x) => x.string_value),
        ["REFUSED: commands are off (sparkplug.commands: false)"],
      );
    } finally {
      port.release();
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "Rebirth requests while MAX_IN_FLIGHT writes are unconfirmed add no births beyond the bound: one rebirth follows once writes complete",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const port = heldMqtt();
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(
        testConfig({
          runtime: { name: NODE },
          providers: [simProvider("sim0")],
          sparkplug: { enabled: true, brokerUrl: broker.url, groupId: GROUP },
        }),
        { host: { mqttConnect: port.connect } },
      );
      const node = rt.sparkplug!;
      await waitFor("the births", () => node.online);
      port.stall();
      // Births published again fill the writes in flight (rebirth(), not folded as NCMDs are).
      while (port.held < MAX_IN_FLIGHT) node.rebirth();
      const rebirth = [{ name: "Node Control/Rebirth", datatype: 11, boolean_value: true }];
      const births = node.counts.births;
      const full = port.held;
      // A host (or a loop in one) keeps asking while the broker takes no writes.
      for (let i = 0; i < 30; i++) {
        await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, rebirth);
      }
      const marker = host.messages.length;
      await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
        { name: "Node Control/Reboot", datatype: 11, boolean_value: true },
      ]);
      await waitFor("the NCMDs read", () => node.counts.commandsRefused >= 1);
      assert.equal(
        port.held,
        full,
        `${port.held - full} birth messages written beyond the ${MAX_IN_FLIGHT} writes in flight`,
      );
      port.release();
      // The held births reach the host first; the folded Rebirth's set follows once the writes
      // have settled and MIN_REBIRTH_INTERVAL_MS after the last births is over.
      await waitFor(
        "one rebirth after the writes complete",
        () =>
          node.counts.births > births &&
          host.messages.slice(marker).some((m) => m.topic === `spBv1.0/${GROUP}/NBIRTH/${NODE}`),
      );
      assert.equal(node.counts.births, births + 1);
    } finally {
      port.release();
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
