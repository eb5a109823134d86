/**
 * Sparkplug's `Providers/Up` and `Providers/Down` after a reload that could not register a
 * restarted provider's host: the provider is configured and nothing of it runs, so it is down, as
 * GET /v0/providers/health and GET /metrics list it (runtime_provider_up 0). The host must read
 * the same count. Against a real Mosquitto and the programmable provider as a child process.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, tempDir, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { lastNodeIntMetric, type Received, sparkplugHost } from "../helpers/sparkplug_host.ts";
import { refuseRegistration, withEntryChanged } from "../helpers/unregistered.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { Config } from "../../src/config/mod.ts";
import { failedStartText } from "../../src/providers/mod.ts";

const GROUP = "lab";
const NODE = "rig-unhosted";

function config(url: string, file: string): Config {
  return testConfig({
    runtime: { name: NODE },
    providers: [programmableProvider("p0", file), programmableProvider("p1", file)],
    sparkplug: { enabled: true, brokerUrl: url, groupId: GROUP, reconnectMs: 100 },
  });
}

/** The last value the host received of a node metric (by its NBIRTH name, then its alias). */
function lastNodeMetric(messages: readonly Received[], name: string): number | null {
  return lastNodeIntMetric(messages, GROUP, NODE, name);
}

Deno.test({
  name:
    "a reload that could not register a restarted provider: the host's Providers/Down counts it, as GET /metrics does",
  ignore: mosquittoMissing(),
  async fn() {
    const dir = tempDir("sparkplug-unhosted-");
    const inventory: Inventory = {
      devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] } },
    };
    const file = `${dir}/inventory.json`;
    await Deno.writeTextFile(file, JSON.stringify(inventory));
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, file));
      await waitFor(
        "Providers/Up = 2 at the host",
        () => lastNodeMetric(host.messages, "Providers/Up") === 2,
      );
      assert.equal(lastNodeMetric(host.messages, "Providers/Down"), 0);

      refuseRegistration(rt.registry, "p1");
      const reload = await rt.reload(withEntryChanged(rt.config, "p1"));
      assert.match(
        reload.providers.failed.map(failedStartText).join(),
        /^p1: Provider p1 not registered/,
      );
      assert.deepEqual(rt.registry.configuredWithoutHost(), ["p1"]);

      await waitFor(
        "Providers/Up = 1 at the host",
        () => lastNodeMetric(host.messages, "Providers/Up") === 1,
        5000,
      );
      // Let any NDATA in flight land before reading the count down.
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(
        lastNodeMetric(host.messages, "Providers/Down"),
        1,
        "p1 is configured and not running: down, as GET /metrics says (runtime_provider_up 0)",
      );
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
