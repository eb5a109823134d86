/**
 * A provider restarted while the broker takes no writes (held by the MqttConnect port, as a
 * stalled broker holds them): the host's view of its devices ends as the runtime's. Whatever
 * DDEATH went out (or was due) for a device is followed by its DBIRTH once it is back, even when
 * it came back unchanged; with MAX_IN_FLIGHT writes unconfirmed the flap is one change (no DDEATH,
 * no DBIRTH: the host never saw it leave).
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { afterPolls, startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { type Received, sparkplugHost } from "../helpers/sparkplug_host.ts";
import { heldMqtt } from "../helpers/held_mqtt.ts";
import { MAX_IN_FLIGHT, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-stall-restart";
const relay = sparkplugDeviceId("sim0", "relayio0");

/** The device's births and deaths the host received, in order, from `from` on. */
const lifecycle = (messages: readonly Received[], from = 0) =>
  messages.slice(from).map((m) => m.topic).filter((t) =>
    t === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}` ||
    t === `spBv1.0/${GROUP}/DDEATH/${NODE}/${relay}` ||
    t === `spBv1.0/${GROUP}/NBIRTH/${NODE}`
  ).map((t) => t.split("/")[2]!);

async function restartProvider(rt: Kernel): Promise<void> {
  const host = rt.registry.host("sim0")!;
  const pid = host.session!.pid;
  Deno.kill(pid, "SIGKILL");
  await waitFor("sim0 down", () => !host.available || host.session?.pid !== pid, 5000);
  await waitFor(
    "sim0 restarted",
    () => host.available && host.session !== null && host.session.pid !== pid,
    10_000,
  );
}

for (const full of [false, true]) {
  Deno.test({
    name: `a provider restarted while the broker holds the writes (${
      full ? "MAX_IN_FLIGHT of them" : "under the bound"
    }): the host ends with the device born`,
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
        await waitFor("the births", () => rt!.sparkplug!.online);
        await waitFor("the relay's DBIRTH", () => lifecycle(host.messages).includes("DBIRTH"));
        port.stall();
        const from = host.messages.length;
        if (full) {
          // Filled in-process, as tests/sparkplug/after_death_test.ts does: each rebirth() is a
          // birth set the port holds. Not with NCMD Rebirths through the broker: those fold into
          // one set (MIN_REBIRTH_INTERVAL_MS, #rebirthAsked), the writes then filled only by the
          // polls' DDATA (some 11 a second, 90 s), and the folded one's births followed the
          // release, a DBIRTH of the relay last whatever the restart had left.
          for (let i = 0; i < MAX_IN_FLIGHT && port.held < MAX_IN_FLIGHT; i++) {
            rt.sparkplug!.rebirth();
          }
          assert.ok(port.held >= MAX_IN_FLIGHT, `${port.held} writes held`);
        }
        await restartProvider(rt);
        // A few polls of the device with the provider back (the node has seen it return by
        // then: its inventory events come first), still held.
        await afterPolls(rt, "sim0/relayio0", 3);
        const heldBefore = port.held;
        port.release();
        await waitFor("the held writes out", () => host.messages.length >= from + 1, 5000);
        // Settled: every write the node handed over completed (a completion may hand over more:
        // DBIRTH/DDEATH waiting for the bound), and the host has every message the node published
        // (the host's own NCMDs aside), so nothing more of the device is on its way.
        const fromNode = () => host.messages.filter((m) => !m.topic.includes("/NCMD/")).length;
        await waitFor(
          "every write out and at the host",
          () => port.held === 0 && port.unsettled === 0 && fromNode() === port.handed.length,
          15_000,
        );
        const after = lifecycle(host.messages, from);
        const lastDeviceMessage = after.filter((t) => t !== "NBIRTH").at(-1);
        assert.ok(
          after.length === 0 || lastDeviceMessage === "DBIRTH" ||
            (lastDeviceMessage === undefined && after.at(-1) === "NBIRTH"),
          `the host's last word on ${relay} is ${String(lastDeviceMessage)} (${
            JSON.stringify(after.slice(-8))
          }; ${heldBefore} writes held); the device is up in the runtime`,
        );
        assert.ok(rt.registry.host("sim0")!.available);
      } finally {
        port.release();
        await rt?.stop();
        await host.close();
        await broker.dispose();
      }
    },
  });
}
