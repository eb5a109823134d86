/**
 * A DCMD to a device whose provider a configuration reload is restarting (its entry changed), in
 * the window after the new process's registration and before it is up (its Hello never answered
 * while the test looks): the node answers with the device's condition in the words of the device
 * conditions and the e-stop (its provider is being restarted by a configuration reload), as it
 * does before the registration -- not in its lifecycle's words, nor "no such device on this
 * node". Against a real Mosquitto, the simulated provider and the programmable one (real child
 * processes).
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import {
  commandResultAlias,
  nodeAnswers,
  withSparkplugRuntime,
} from "../helpers/sparkplug_host.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";

const GROUP = "lab";
const NODE = "rig-reload-registered";
const relay = sparkplugDeviceId("sim1", "relayio0");

Deno.test({
  name: "a DCMD to a device whose provider a reload restarts, its new process registered and " +
    "not up, is answered: device down, its provider being restarted by the reload",
  ignore: mosquittoMissing(),
  async fn() {
    const dir = tempDir("sparkplug-reload-registered-");
    const hangFile = `${dir}/hang.json`;
    await Deno.writeTextFile(
      hangFile,
      JSON.stringify({
        hello: { hang: true },
        devices: { relayio0: { signals: [{ id: "x", type: T.DOUBLE }] } },
      }),
    );
    await withSparkplugRuntime({
      group: GROUP,
      config: (brokerUrl) =>
        testConfig({
          runtime: { name: NODE },
          providers: [simProvider("sim0"), simProvider("sim1")],
          sparkplug: { enabled: true, brokerUrl, groupId: GROUP, commands: true },
        }),
      start: { arm: true },
    }, async (kernel, host) => {
      await waitFor(
        "sim1/relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const alias = await commandResultAlias(host, GROUP, NODE);
      const before = kernel.registry.host("sim1")!;
      // sim1's entry changed: its new process never answers Hello while the test looks.
      const reload = kernel.reload({
        ...kernel.config,
        providers: [kernel.config.providers[0]!, programmableProvider("sim1", hangFile)],
      });
      try {
        await waitFor("sim1's new host registered, not up", () => {
          const h = kernel.registry.host("sim1");
          return h !== undefined && h !== before && !h.available;
        }, 10_000);
        await waitFor(
          "sim1/relayio0's DDEATH",
          () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DDEATH/${NODE}/${relay}`),
        );
        const restarting = "provider sim1 is being restarted by a configuration reload";
        assert.equal(kernel.outages.condition("sim1", "relayio0").reason, restarting);
        const from = host.messages.length;
        await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`, [
          { name: "Functions/set_relay_ch3", datatype: 11, boolean_value: true },
        ]);
        const answers = await nodeAnswers(host, {
          group: GROUP,
          node: NODE,
          alias,
          from,
          count: 1,
        });
        const h = kernel.registry.host("sim1");
        assert.ok(h !== before && h?.available === false, "the answer came within the window");
        assert.deepEqual(answers, [
          `${relay}/Functions/set_relay_ch3: REFUSED: device down (${restarting})`,
        ]);
      } finally {
        await kernel.stop();
        await reload.catch(() => {});
      }
    });
  },
});
