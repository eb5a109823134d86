/**
 * An e-stop latched and cleared before the node's first births (here: the births wait for the
 * primary host, which is not online yet) reaches the host's history: after the NBIRTH (which
 * carries the latch as it is then: clear), NDATA with is_historical say it latched and cleared,
 * each at its time, before the births. Against a real Mosquitto and the simulated provider.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { sparkplugHost } from "../helpers/sparkplug_host.ts";
import { historicalNode, LATCHED, latchHistoryAfterBirths } from "./_latch_history.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-ub";
const HOST = "scada-1";

Deno.test({
  name:
    "SparkplugEdgeNode: an e-stop latched and cleared before the first births reaches the host's history after them",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const state = (body: unknown) =>
      host.client.publishAsync(`spBv1.0/STATE/${HOST}`, JSON.stringify(body), {
        qos: 1,
        retain: true,
      });
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(
        testConfig({
          runtime: { name: NODE },
          providers: [simProvider("sim0")],
          sparkplug: {
            enabled: true,
            brokerUrl: broker.url,
            groupId: GROUP,
            primaryHostId: HOST,
            reconnectMs: 100,
          },
        }),
        { arm: true },
      );
      const node = rt.sparkplug!;
      // An unreadable STATE handled: the node is subscribed, and not born (the host is not online).
      await state({ status: "up" });
      await waitFor(
        "the unreadable STATE to be ignored",
        () => node.counts.hostStatesIgnored === 1,
      );
      assert.equal(node.counts.births, 0, "not born yet");

      const latchedAt = Date.now();
      await rt.estop.trigger("before the first births");
      await waitFor("FAULT", () => rt!.modes.current() === "FAULT");
      rt.estop.clear();
      await waitFor("the latch cleared", () => !rt!.estop.latched);
      assert.equal(node.counts.births, 0, "still not born");

      await state({ online: true, timestamp: Date.now() });
      const { born, history } = await latchHistoryAfterBirths(rt, host, GROUP, NODE);
      assert.deepEqual(
        history.map((h) => h.value),
        [true, false],
        `the host's history of ${LATCHED} after the births: ${JSON.stringify(history)}`,
      );
      for (const h of history) {
        assert.ok(h.t >= latchedAt && h.t <= born, `at its time, before the births: ${h.t}`);
      }
      assert.ok(
        historicalNode(host.messages, GROUP, NODE, "Runtime/Mode").some((h) => h.value === "FAULT"),
        "the mode through FAULT too",
      );
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
