/**
 * The node's count of NBIRTHs another client published as it
 * (runtime_sparkplug_foreign_births_total, 60961fb9) is a node metric too,
 * `Sparkplug/Foreign Births` (UInt64): in every NBIRTH, and in an NDATA when it changes, so a
 * host and the fleet view learn what only the runtime's own metrics said (the same bdSeq in two
 * copies of one configuration looks like a reconnect to them). A runtime on a real Mosquitto; a
 * second MQTT client of the test publishes NBIRTHs as its node.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import mqtt from "mqtt";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { DataType, encode } from "../../src/sparkplug/mod.ts";
import { sparkplugHost } from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-twin";
const NBIRTH = `spBv1.0/${GROUP}/NBIRTH/${NODE}`;
const NDATA = `spBv1.0/${GROUP}/NDATA/${NODE}`;
const NCMD = `spBv1.0/${GROUP}/NCMD/${NODE}`;
const METRIC = "Sparkplug/Foreign Births";

Deno.test({
  name:
    "SparkplugEdgeNode: Sparkplug/Foreign Births is 0 in the NBIRTH, goes out in an NDATA at each NBIRTH another client publishes as the node, and the next NBIRTH carries it",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let twin: mqtt.MqttClient | null = null;
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(testConfig({
        runtime: { name: NODE },
        providers: [simProvider("sim0")],
        sparkplug: {
          enabled: true,
          brokerUrl: broker.url,
          groupId: GROUP,
          clientId: "machine-a",
          commands: true,
        },
      }));
      const node = rt.sparkplug!;
      await waitFor("the births", () => node.online);
      // The node's births are those of its bdSeq (the twin's below are of another).
      const ownBirths = () =>
        host.messages.filter((m) =>
          m.topic === NBIRTH &&
          m.payload.metrics?.some((x) => x.name === "bdSeq" && Number(x.long_value) === 0)
        );
      const first = await waitFor("the NBIRTH", () => ownBirths()[0]);
      const born = first.payload.metrics?.find((m) => m.name === METRIC);
      assert.ok(born, `the NBIRTH carries ${METRIC}`);
      assert.equal(born.datatype, DataType.UInt64);
      assert.equal(Number(born.long_value), 0);
      const alias = born.alias;
      assert.equal(typeof alias, "number");
      const counts = () =>
        host.messages.filter((m) => m.topic === NDATA)
          .flatMap((m) => m.payload.metrics ?? [])
          .filter((m) => m.alias === alias)
          .map((m) => Number(m.long_value));

      // A change of another node metric does not repeat the count.
      await rt.modes.request("MANUAL");
      await waitFor(
        "the mode's NDATA",
        () =>
          host.messages.some((m) =>
            m.topic === NDATA && m.payload.metrics?.some((x) => x.string_value === "MANUAL")
          ),
      );
      assert.deepEqual(counts(), []);

      // Another client publishes as this edge node (its own client id, its own bdSeq), twice.
      twin = await mqtt.connectAsync(broker.url, { clientId: "machine-b" });
      const twinBirth = () =>
        Buffer.from(encode({
          timestamp: Date.now(),
          seq: 0,
          metrics: [{ name: "bdSeq", datatype: DataType.UInt64, long_value: 7 }],
        }));
      await twin.publishAsync(NBIRTH, twinBirth(), { qos: 0 });
      await waitFor("the NDATA of the count", () => counts().length >= 1 ? true : null);
      assert.deepEqual(counts(), [1]);
      await twin.publishAsync(NBIRTH, twinBirth(), { qos: 0 });
      await waitFor("the NDATA of the next", () => counts().length >= 2 ? true : null);
      assert.deepEqual(counts(), [1, 2]);
      assert.equal(node.counts.foreignBirths, 2);

      // A Rebirth: the node's next NBIRTH carries the count.
      await host.send(NCMD, [{
        name: "Node Control/Rebirth",
        datatype: DataType.Boolean,
        boolean_value: true,
      }]);
      const again = await waitFor("the node's next NBIRTH", () => ownBirths()[1]);
      const carried = again.payload.metrics?.find((m) => m.name === METRIC);
      assert.equal(Number(carried?.long_value), 2);
      assert.equal(carried?.alias, alias);
      // Its own births are not counted.
      assert.equal(node.counts.foreignBirths, 2);
    } finally {
      await twin?.endAsync(true);
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
