/**
 * A DCMD to a device whose provider is down (its process died and waits for its restart; the
 * DDEATH went out): the device is still configured, only down. The node answers with the device's
 * condition, not "no such device on this node" (which tells a host the id is wrong). Against a
 * real Mosquitto and the simulated provider, killed with a long restart backoff.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import {
  commandResultAlias,
  nodeAnswers,
  withSparkplugRuntime,
} from "../helpers/sparkplug_host.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";

const GROUP = "lab";
const NODE = "rig-device-down";
const relay = sparkplugDeviceId("sim0", "relayio0");

Deno.test({
  name: "a DCMD to a device whose provider is down is answered with the device's condition",
  ignore: mosquittoMissing(),
  async fn() {
    await withSparkplugRuntime({
      group: GROUP,
      config: (brokerUrl) =>
        testConfig({
          runtime: { name: NODE },
          // Down long enough for the test: the first restart waits a minute.
          providers: [simProvider("sim0", { restart: { backoffMs: [60_000, 60_000, 60_000] } })],
          sparkplug: { enabled: true, brokerUrl, groupId: GROUP, commands: true },
        }),
      start: { arm: true },
    }, async (rt, host) => {
      await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const alias = await commandResultAlias(host, GROUP, NODE);
      const sim = rt.registry.host("sim0")!;
      Deno.kill(sim.session!.pid, "SIGKILL");
      await waitFor(
        "relayio0's DDEATH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DDEATH/${NODE}/${relay}`),
      );

      const before = host.messages.length;
      await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`, [
        { name: "Functions/set_relay_ch3", datatype: 11, boolean_value: true },
      ]);
      assert.deepEqual(
        await nodeAnswers(host, { group: GROUP, node: NODE, alias, from: before, count: 1 }),
        [`${relay}/Functions/set_relay_ch3: REFUSED: device down (provider sim0 ${sim.lifecycle})`],
        "the host is told what became of the device",
      );

      // An id no configured provider has is still "no such device".
      const unknown = sparkplugDeviceId("sim0", "nodevice");
      const from = host.messages.length;
      await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${unknown}`, [
        { name: "Functions/x", datatype: 11, boolean_value: true },
      ]);
      assert.deepEqual(
        await nodeAnswers(host, { group: GROUP, node: NODE, alias, from, count: 1 }),
        [`${unknown}/Functions/x: REFUSED: no such device on this node`],
      );
    });
  },
});
