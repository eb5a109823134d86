/**
 * The node metrics (mode, e-stop latch) reach the Sparkplug host even when they change while the
 * broker is not taking writes (MAX_IN_FLIGHT writes unconfirmed: a broker that stalls without
 * dropping the connection). Against a real Mosquitto, through an MqttConnect port that holds the
 * writes back (as a stalled broker does) and lets them go later, in order.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { type Received, sparkplugHost } from "../helpers/sparkplug_host.ts";
import { heldMqtt } from "../helpers/held_mqtt.ts";
import { MAX_IN_FLIGHT } from "../../src/sparkplug/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-backlog";

/** The last value the host received of a node metric (by its NBIRTH name, then its alias). */
function lastNodeMetric(messages: readonly Received[], name: string): unknown {
  let alias: number | null = null;
  let value: unknown = undefined;
  const valueOf = (m: Record<string, unknown>) => m.boolean_value ?? m.string_value;
  for (const m of messages) {
    if (m.topic === `spBv1.0/${GROUP}/NBIRTH/${NODE}`) {
      const b = (m.payload.metrics ?? []).find((x) => x.name === name);
      alias = b === undefined ? null : Number(b.alias);
      value = b === undefined ? undefined : valueOf(b);
    } else if (m.topic === `spBv1.0/${GROUP}/NDATA/${NODE}` && alias !== null) {
      const d = (m.payload.metrics ?? []).find((x) => Number(x.alias) === alias);
      if (d !== undefined) value = valueOf(d);
    }
  }
  return value;
}

Deno.test({
  name:
    "an e-stop while MAX_IN_FLIGHT writes are unconfirmed reaches the host (NDATA) once they complete",
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
          sparkplug: { enabled: true, brokerUrl: broker.url, groupId: GROUP, commands: true },
        }),
        { host: { mqttConnect: port.connect } },
      );
      await waitFor("the births", () => rt!.sparkplug!.online);
      await waitFor(
        "Runtime/Estop Latched false at the host",
        () => lastNodeMetric(host.messages, "Runtime/Estop Latched") === false,
      );

      // The broker stops taking writes; rebirths requested meanwhile fill the writes in flight.
      // Asked of the node in-process (as tests/sparkplug/after_death_test.ts does), not by NCMD
      // through the broker: NCMD Rebirths fold into one set (MIN_REBIRTH_INTERVAL_MS,
      // #rebirthAsked), the writes then filled only by the polls' DDATA (some 11 a second, 90 s),
      // and the folded one's NBIRTH, with the latch as it is by then, followed the release: it
      // told the host the latch whether or not the NDATA did.
      port.stall();
      for (let i = 0; i < MAX_IN_FLIGHT && port.held < MAX_IN_FLIGHT; i++) rt.sparkplug!.rebirth();
      assert.ok(port.held >= MAX_IN_FLIGHT, `${port.held} writes held`);

      await rt.estop.trigger("while the broker stalls");
      assert.equal(rt.estop.latched, true);
      assert.equal(rt.modes.current(), "FAULT");

      // The broker takes writes again: what was held goes out, in order.
      port.release();
      await waitFor(
        "Runtime/Estop Latched true at the host",
        () => lastNodeMetric(host.messages, "Runtime/Estop Latched") === true,
        5000,
      ).catch((err) => {
        throw new Error(
          `${(err as Error).message}: the runtime is latched in ${rt!.modes.current()}, the host ` +
            `still reads Runtime/Estop Latched = ${
              String(lastNodeMetric(host.messages, "Runtime/Estop Latched"))
            }, Runtime/Mode = ${String(lastNodeMetric(host.messages, "Runtime/Mode"))}`,
        );
      });
      assert.equal(lastNodeMetric(host.messages, "Runtime/Mode"), "FAULT");
    } finally {
      port.release();
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
