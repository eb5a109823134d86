/**
 * The device-loss latch across a reload that removes a provider (docs/safety.md, "A device that
 * drops out, and the device-loss latch"): a device that is no longer configured leaves the latch;
 * it is not "lost" forever, nor warned about at every entry into AUTO.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

Deno.test("Kernel.reload removing a provider takes its devices out of the device-loss latch", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1")] },
    });
    const rt = await startRuntime(base, { arm: true });
    try {
      const next = { ...rt.config, providers: rt.config.providers.filter((p) => p.id !== "sim1") };
      const report = await rt.reload(next);
      assert.deepEqual(report.providers.removed, ["sim1"]);
      // Give a latch (if any) the time to be published.
      await waitFor("the reload settled", () => rt.registry.host("sim1") === undefined, 2000);
      const latched = rt.automation!.status().device_loss_latched;
      assert.deepEqual(latched.filter((h) => h.startsWith("sim1/")), []);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
