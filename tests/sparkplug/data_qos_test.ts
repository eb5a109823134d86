/**
 * The MQTT QoS of what the edge node publishes (docs/sparkplug.md, "QoS and the MQTT session"),
 * read from a real Mosquitto: a host subscribed at QoS 1 receives each message at the QoS it was
 * published with. Sparkplug B 3.0 requires QoS 0 of NBIRTH, DBIRTH, NDATA and DDATA
 * (tck-id-topics-nbirth-mqtt, tck-id-topics-dbirth-mqtt, tck-id-topics-ndata-mqtt,
 * tck-id-topics-ddata-mqtt): so they go by default. `sparkplug.qos: 1` is the operator's
 * deviation (warned at load: tests/config/sparkplug_config_test.ts) for NDATA and DDATA only; the
 * births stay at QoS 0.
 */
import assert from "node:assert/strict";
import mqtt from "mqtt";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { setSimRelay } from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const TYPES = ["NBIRTH", "DBIRTH", "NDATA", "DDATA"] as const;

/** The QoS each message type of node `node` arrived at (every one seen), by a QoS 1 subscriber. */
async function qosByType(url: string, node: string, qos: 0 | 1): Promise<Map<string, number[]>> {
  const host = await mqtt.connectAsync(url, { clientId: `host-${crypto.randomUUID()}` });
  const seen = new Map<string, number[]>();
  host.on("message", (topic, _payload, packet) => {
    const type = topic.split("/")[2]!;
    if (topic.split("/")[3] !== node) return;
    seen.set(type, [...seen.get(type) ?? [], packet.qos]);
  });
  await host.subscribeAsync(`spBv1.0/${GROUP}/#`, { qos: 1 });
  let rt: Kernel | null = null;
  try {
    rt = await startRuntime(
      testConfig({
        runtime: { name: node },
        providers: [simProvider("sim0")],
        sparkplug: { enabled: true, brokerUrl: url, groupId: GROUP, qos },
      }),
    );
    await waitFor("the births", () => rt!.sparkplug!.online);
    // An NDATA (the mode) and a DDATA (a relay).
    await rt.modes.request("MANUAL");
    await setSimRelay(rt, true);
    await waitFor("one message of each type", () => TYPES.every((t) => seen.has(t)));
  } finally {
    await rt?.stop();
    await host.endAsync(true);
  }
  return seen;
}

Deno.test({
  name:
    "sparkplug: births, NDATA and DDATA go at QoS 0 by default (Sparkplug B 3.0); qos: 1 sends NDATA and DDATA at QoS 1, the births still at 0",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    try {
      const byDefault = await qosByType(broker.url, "rig-qos0", 0);
      for (const t of TYPES) {
        assert.deepEqual(new Set(byDefault.get(t)), new Set([0]), `${t} with qos 0`);
      }
      const deviating = await qosByType(broker.url, "rig-qos1", 1);
      for (const t of ["NBIRTH", "DBIRTH"]) {
        assert.deepEqual(new Set(deviating.get(t)), new Set([0]), `${t} with qos 1`);
      }
      for (const t of ["NDATA", "DDATA"]) {
        assert.deepEqual(new Set(deviating.get(t)), new Set([1]), `${t} with qos 1`);
      }
    } finally {
      await broker.dispose();
    }
  },
});
