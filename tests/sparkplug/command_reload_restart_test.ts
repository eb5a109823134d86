/**
 * A DCMD to a device whose provider a configuration reload is restarting (its entry changed), in
 * the window between the old process's removal and the new one's registration -- held open by
 * another provider the same reload removes, whose process takes seconds to exit: the device is
 * configured and coming back, so the node answers with its condition (its provider is being
 * restarted), not "no such device on this node" (which tells a host the id is wrong). The same in
 * the window of a reload that starts sim1 again after the reload before failed to start it: it took
 * out the host left listed down, and sim1's entry is in the file all along
 * (ProviderRegistry.configured). Against a real Mosquitto, the simulated provider and the
 * programmable one (real child processes).
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { reloadIntoWindow, slowToExit } from "../helpers/reload_window.ts";
import { simProvider, testConfig, withUnstartable } from "../helpers/sim_config.ts";
import {
  commandResultAlias,
  nodeAnswers,
  type SparkplugHost,
  withSparkplugRuntime,
} from "../helpers/sparkplug_host.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { failedStartText } from "../../src/providers/mod.ts";

const GROUP = "lab";
const NODE = "rig-reload-restart";
const relay = sparkplugDeviceId("sim1", "relayio0");

/**
 * A runtime with sim0, sim1 and `slow` (once its stdin closes, it takes 4 s to exit: a reload
 * that removes it holds its other providers' starts that long), a Sparkplug host on a real broker,
 * sim1/relayio0 born; `body` runs with them, everything stopped after it.
 */
async function withRig(
  prefix: string,
  body: (
    kernel: Kernel,
    host: SparkplugHost,
    alias: Awaited<ReturnType<typeof commandResultAlias>>,
  ) => Promise<void>,
): Promise<void> {
  const slow = await slowToExit(prefix);
  await withSparkplugRuntime({
    group: GROUP,
    config: (brokerUrl) =>
      testConfig({
        runtime: { name: NODE, shutdownTimeoutMs: 10_000 },
        providers: [
          simProvider("sim0"),
          simProvider("sim1"),
          slow,
        ],
        sparkplug: { enabled: true, brokerUrl, groupId: GROUP, commands: true },
      }),
    start: { arm: true },
  }, async (rt, host) => {
    await waitFor(
      "sim1/relayio0's DBIRTH",
      () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
    );
    await body(rt, host, await commandResultAlias(host, GROUP, NODE));
  });
}

/** The node's answer to a DCMD writing sim1/relayio0's set_relay_ch3 sent now. */
async function relayAnswer(
  host: SparkplugHost,
  alias: Awaited<ReturnType<typeof commandResultAlias>>,
): Promise<unknown[]> {
  const before = host.messages.length;
  await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`, [
    { name: "Functions/set_relay_ch3", datatype: 11, boolean_value: true },
  ]);
  return await nodeAnswers(host, { group: GROUP, node: NODE, alias, from: before, count: 1 });
}

Deno.test({
  name: "a DCMD to a device whose provider a reload is restarting is answered: device down, " +
    "its provider being restarted by the reload",
  ignore: mosquittoMissing(),
  async fn() {
    await withRig("sparkplug-reload-window-", async (kernel, host, alias) => {
      const { reload } = await reloadIntoWindow(kernel);
      await waitFor(
        "sim1/relayio0's DDEATH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DDEATH/${NODE}/${relay}`),
      );

      const before = host.messages.length;
      const answers = await relayAnswer(host, alias);
      assert.ok(kernel.registry.replacing("sim1"), "the answer came within the window");
      assert.deepEqual(
        answers,
        [
          `${relay}/Functions/set_relay_ch3: REFUSED: device down ` +
          `(provider sim1 is being restarted by a configuration reload)`,
        ],
        "the host is told the device is coming back, not that the id is wrong",
      );

      const report = await reload;
      assert.deepEqual(report.providers.restarted, ["sim1"], JSON.stringify(report));
      // Back: its DBIRTH again.
      await waitFor(
        "sim1/relayio0's DBIRTH again",
        () =>
          host.messages.slice(before).find((m) =>
            m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`
          ),
      );
    });
  },
});

Deno.test({
  name: "a DCMD to a device whose provider a reload starts again after the reload before failed " +
    "to start it is answered: device down, not no such device",
  ignore: mosquittoMissing(),
  async fn() {
    await withRig("sparkplug-reload-again-", async (kernel, host, alias) => {
      const good = kernel.config.providers;
      const sim1 = good.find((p) => p.id === "sim1")!;
      // sim1's entry changed to a command that does not exist: its new process cannot start, and
      // its host is listed down until the next reload.
      const broken = await kernel.reload(withUnstartable(kernel.config, "sim1"));
      assert.match(
        broken.providers.failed.map(failedStartText).join(),
        /^sim1: cannot start provider/,
      );
      const listedDown = await relayAnswer(host, alias);
      assert.equal(listedDown.length, 1);
      assert.ok(
        String(listedDown[0]).startsWith(
          `${relay}/Functions/set_relay_ch3: REFUSED: device down (provider sim1 failed to ` +
            "start at a configuration reload (cannot start provider",
        ),
        `listed down, its device is down, in the one wording of why: ${listedDown[0]}`,
      );
      // Fixed, and slow removed: the reload takes out the host listed down, then starts sim1
      // again once slow has exited (4 s): no host of sim1 meanwhile, its entry in the file.
      const fixed = kernel.reload({
        ...kernel.config,
        providers: [good[0]!, sim1],
      });
      await waitFor(
        "the host listed down taken out, sim1 not registered again yet",
        () =>
          kernel.registry.host("sim1") === undefined && kernel.registry.configured("sim1") &&
          !kernel.registry.replacing("sim1"),
        10_000,
      );
      const answers = await relayAnswer(host, alias);
      assert.equal(kernel.registry.host("sim1"), undefined, "the answer came within the window");
      assert.deepEqual(
        answers,
        [
          `${relay}/Functions/set_relay_ch3: REFUSED: device down ` +
          `(provider sim1 is being started by a configuration reload)`,
        ],
        "the host is told the device is down, not that the id is wrong",
      );
      const report = await fixed;
      assert.deepEqual(report.providers.added, ["sim1"], JSON.stringify(report));
    });
  },
});
