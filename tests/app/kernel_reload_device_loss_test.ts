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

Deno.test("Kernel.reload removing a provider takes its devices out of the automation status's device outages", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1")] },
    });
    const rt = await startRuntime(base, { arm: true });
    try {
      const engine = rt.automation!;
      // Two failed automated calls to a sim1 device: an outage in status.
      for (let i = 0; i < 2; i++) {
        await assert.rejects(
          engine.services.callDevice(
            "sim1/motorctl0",
            "no_such_function",
            {},
            new AbortController().signal,
          ),
        );
      }
      assert.deepEqual(engine.status().device_outages.map((o) => o.device_handle), [
        "sim1/motorctl0",
      ]);
      const next = { ...rt.config, providers: rt.config.providers.filter((p) => p.id !== "sim1") };
      assert.deepEqual((await rt.reload(next)).providers.removed, ["sim1"]);
      assert.deepEqual(engine.status().device_outages, []);
      assert.equal(engine.status().last_error, null);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
