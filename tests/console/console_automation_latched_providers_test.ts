/**
 * The operator console's Automation view shows the device-loss latch's provider-wide entries
 * (GET /v0/automation/status `device_loss_latched_providers`): a provider past the latch's
 * per-provider bound holds its further lost devices as one entry, which refuses automated calls to
 * every device of the provider; the view named only the devices latched by name.
 *
 * The runtime in process with the programmable provider as a real child listing 70 devices; a
 * kill loses all 70: 64 latched by name, 6 held as one entry. Served over real HTTP; the page in
 * headless Chromium.
 */
import assert from "node:assert/strict";
import { MAX_LATCHED_DEVICES_PER_PROVIDER } from "../../src/automation/mod.ts";
import { chromiumMissing, openChromium, waitForText } from "../helpers/browser.ts";
import { startServing, tempDir, waitFor } from "../helpers/kernel.ts";
import { type Inventory, programmableProvider } from "../helpers/programmable_provider.ts";
import { automationConfig } from "../scenarios/automation_helpers.ts";

const PROVIDERS = '#automation-status div:has(> dt:text-is("Device-loss latched providers")) > dd';
const DEVICES = 70;

/** `n` devices with nothing to poll or call (dev0 ... dev<n-1>). */
function devices(n: number): Inventory {
  return {
    devices: Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`dev${i}`, { signals: [], functions: [] }]),
    ),
  };
}

Deno.test({
  name: "Operator console: the Automation view shows the device-loss latch's provider-wide entries",
  ignore: chromiumMissing(),
  fn: async () => {
    const file = `${tempDir("console-latched-providers-")}/pol.json`;
    await Deno.writeTextFile(file, JSON.stringify(devices(DEVICES)));
    const rt = await startServing(automationConfig(null, {
      config: {
        providers: [
          programmableProvider("pol", file, { restart: { maxAttempts: 5, backoffMs: [0] } }),
        ],
      },
    }));
    const browser = await openChromium();
    try {
      const pol = rt.registry.host("pol")!;
      assert.equal(pol.devices.length, DEVICES);
      // Down: every device of it is lost, each one latched until AUTO is entered while it is up.
      Deno.kill(pol.session!.pid, "SIGKILL");
      const held = DEVICES - MAX_LATCHED_DEVICES_PER_PROVIDER;
      await waitFor(
        "the provider-wide entry",
        () => rt.automation!.status().device_loss_latched_providers[0]?.losses === held,
      );
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${rt.http!.port}/#automation`);
      const text = await waitForText(page, PROVIDERS, /^pol: /);
      assert.match(
        text,
        new RegExp(
          `^pol: ${held} more lost device\\(s\\) held as one entry since .+, the latest ` +
            "pol/dev\\d+ \\(provider pol is unavailable \\([A-Z_]+\\)\\); automated calls to every " +
            "device of pol are refused$",
        ),
        text,
      );
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
