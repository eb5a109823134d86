/**
 * The operator console whose first full read failed (the runtime away for a moment right after it
 * served the page: a restart after a deploy) and whose event stream opens only afterwards: the
 * devices must still appear. The stream's first opening re-reads nothing (the first read was to
 * do that), and the 2 s refresh re-reads values, not the inventory, so the Devices view stayed
 * empty -- under a "Live" header -- until some device came or went (docs/console.md: the page
 * re-reads every 2 s and re-reads everything when it cannot resume). The real runtime with the
 * simulated provider; the runtime's absence is played by the page's own routes (the inventory
 * read and the stream's first attempts fail); the page in headless Chromium.
 */
import {
  chromiumMissing,
  launchChromiumAlongside,
  PAGE_WAIT_MS,
  sequentialSteps,
} from "../helpers/browser.ts";
import { freePort, type RuntimeChild, startRuntimeChild } from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { waitFor } from "../helpers/kernel.ts";

Deno.test({
  name:
    "Operator console shows the devices when its first full read failed before the stream opened",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-first-read-" });
    const port = freePort();
    const config = `${dir}/runtime.yaml`;
    await Deno.writeTextFile(
      config,
      `runtime: {name: first-read-test, data_dir: ${dir}/data}
http:
  port: ${port}
providers:
  - id: sim0
    command: ${JSON.stringify(Deno.execPath())}
    args: [run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_INERT_YAML}]
`,
    );
    const [browser, rt] = await launchChromiumAlongside<RuntimeChild>(
      startRuntimeChild({ config, port }),
      (r) => r.stop(),
    );
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      let inventoryFailed = false;
      await page.route("**/v0/devices", async (route) => {
        if (!inventoryFailed) {
          inventoryFailed = true;
          await route.abort("connectionrefused");
          return;
        }
        await route.continue();
      });
      // The stream reconnects by itself: its attempts fail until the first read has failed.
      await page.route("**/v0/events*", async (route) => {
        if (!inventoryFailed) await route.abort("connectionrefused");
        else await route.continue();
      });
      await step("the first read fails, then the stream opens", async () => {
        await page.goto(`${rt.base}/#devices`);
        await waitFor("the inventory read was made", () => inventoryFailed, PAGE_WAIT_MS);
        await page.locator("#conn.conn-live").waitFor({ timeout: PAGE_WAIT_MS });
      });
      await step("the devices appear", async () => {
        await page.locator('tr[data-signal^="sim0/"]').first().waitFor({ timeout: 10_000 });
      });
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
