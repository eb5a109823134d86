/**
 * The runtime as users run it (`deno task bundle`: dist/bundle/runtime/main.js, what `deno task
 * start` and `deno compile` take) with Sparkplug on: the edge node's chunk and MQTT.js, which the
 * bundle leaves external and loads on demand (scripts/bundle.ts EXTERNAL_PACKAGES), load, and the
 * births reach a real Mosquitto, read by `mosquitto_sub` (a subscriber no one here wrote).
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { BUNDLE_RUN_CONFIG, bundles } from "../helpers/bundles.ts";
import { SIM_YAML } from "../helpers/sim_config.ts";
import { decode } from "../../src/sparkplug/mod.ts";
import { startSparkplugRuntimeChild } from "../helpers/sparkplug_host.ts";

const GROUP = "lab";
const NODE = "rig-bundle";
/** Devices of examples/providers/sim/sim.yaml. */
const SIM_DEVICES = 5;

Deno.test({
  name:
    "the bundled runtime loads the edge node and MQTT.js on demand and its births reach the broker",
  ignore: mosquittoMissing(),
  async fn() {
    const { runtime, sim } = await bundles();
    const broker = await Mosquitto.start();
    const dir = await Deno.makeTempDir({ prefix: "bundle-sparkplug-" });
    const births = await broker.subscribeRaw(
      `spBv1.0/${GROUP}/+/${NODE}/#`,
      1 + SIM_DEVICES,
    );
    const rt = await startSparkplugRuntimeChild(
      {
        node: NODE,
        dir,
        brokerUrl: broker.url,
        group: GROUP,
        simArgs:
          `run, --quiet, "${BUNDLE_RUN_CONFIG}", --allow-read, --allow-env, ${sim}, --config, ${SIM_YAML}`,
      },
      { entry: runtime, denoFlags: [BUNDLE_RUN_CONFIG] },
    );
    try {
      const messages = await births.messages;
      const topics = messages.map((m) => m.topic);
      assert.equal(topics[0], `spBv1.0/${GROUP}/NBIRTH/${NODE}`, topics.join("\n"));
      const dbirths = topics.filter((t) => t.startsWith(`spBv1.0/${GROUP}/DBIRTH/${NODE}/sim0:`));
      assert.equal(dbirths.length, SIM_DEVICES, topics.join("\n"));
      const nbirth = decode(messages[0]!.payload);
      assert.equal(nbirth.metrics?.find((m) => m.name === "bdSeq")?.long_value, 0);
      assert.equal(nbirth.metrics?.find((m) => m.name === "Runtime/Mode")?.string_value, "IDLE");
      assert.ok(
        !/not a dependency|Cannot (find|resolve)|Import .* failed/i.test(rt.stderr()),
        rt.stderr(),
      );
    } catch (err) {
      console.error(rt.stderr());
      throw err;
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
      await broker.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
