/**
 * While latched, the console's header says which devices the stop's read-back checked that cannot
 * be read now (status `estop.verification`, each check's `device_available`): after the stop, the
 * provider of one checked device crashes (no restart) and the page names that device and why,
 * not the one still up; once the latch is released the line goes.
 *
 * The runtime in process with two simulated providers as child processes, served over real HTTP;
 * the page in headless Chromium.
 */
import assert from "node:assert/strict";
import { chromiumMissing, openChromium, waitForText } from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { Api } from "../scenarios/alarms_helpers.ts";
import { twoSimsVerifiedStop } from "../safety/_fixture.ts";

const LOST = "#estop-lost";

Deno.test({
  name:
    "Operator console: while latched, the header names a read-back device whose provider crashed since the stop",
  ignore: chromiumMissing(),
  fn: async () => {
    const rt = await startServing(testConfig(twoSimsVerifiedStop()));
    const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      await page.goto(`${api.base}/`);
      await waitForText(page, "#conn", /^Live$/);
      await page.locator("#estop").click();
      await waitForText(page, "#estop-result .estop-summary", /^Latched\./);
      assert.equal(await page.locator(LOST).isHidden(), true, "both devices readable: no line");

      const sim1 = rt.registry.host("sim1")!;
      Deno.kill(sim1.session!.pid, "SIGKILL");
      await waitFor("sim1 down", () => !sim1.available);
      await waitForText(page, LOST, /^Read back at the stop, not readable now \(1\): /);
      const named = await page.locator(`${LOST} [data-lost]`).allTextContents();
      assert.deepEqual(named, ["sim1/motorctl0"]);
      assert.match(
        await page.locator(LOST).textContent() ?? "",
        /sim1\/motorctl0 \(down: provider sim1 is unavailable \(/,
      );

      assert.equal((await api.post("/v0/estop/clear")).status, 200);
      await page.locator(LOST).waitFor({ state: "hidden" });
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
