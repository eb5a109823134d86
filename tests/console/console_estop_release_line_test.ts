/**
 * The line a release from this page leaves under the mode buttons ("E-stop latch released. The
 * mode stays FAULT: switch to MANUAL to re-arm.") is true only until the latch is engaged again
 * or the mode moves on: an e-stop latched after it (another client's, an alarm's) or a switch to
 * MANUAL by another client must take it away, not leave a page whose header says LATCHED (or
 * MANUAL) telling the operator, under the buttons, that the latch is released in FAULT.
 *
 * The runtime in process with the simulated provider, served over real HTTP; the page in headless
 * Chromium; the other client is the test's own HTTP requests.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { chromiumMissing, openChromium, waitForText } from "../helpers/browser.ts";
import { startServing } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { Api } from "../scenarios/alarms_helpers.ts";

const RELEASED = /^E-stop latch released\./;

/** Presses E-STOP on the page, then releases the latch from the page (with its confirmation). */
async function stopAndRelease(page: Page): Promise<void> {
  await page.locator("#estop").click();
  await waitForText(page, "#estop-result .estop-summary", /^Latched\./);
  await waitForText(page, "#latch", /^LATCHED since /);
  await page.locator("#estop-clear").click();
  await page.locator("#clear-confirm").click();
  await waitForText(page, "#mode-result", RELEASED);
  await waitForText(page, "#latch", /^released$/);
}

Deno.test({
  name:
    "Operator console: the 'E-stop latch released' line goes once another client latches the e-stop again or switches to MANUAL",
  ignore: chromiumMissing(),
  fn: async () => {
    const rt = await startServing(testConfig({ providers: [simProvider("sim0")] }));
    const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      await page.goto(`${api.base}/`);
      await waitForText(page, "#conn", /^Live$/);

      // Latched again by another client: the header says LATCHED; the line must not say released.
      await stopAndRelease(page);
      assert.equal((await api.post("/v0/estop", { reason: "another client" })).status, 200);
      await waitForText(page, "#latch", /^LATCHED since /);
      const afterLatch = await page.locator("#mode-result").textContent() ?? "";
      assert.doesNotMatch(
        afterLatch,
        RELEASED,
        "the page says the latch is released while its header says LATCHED",
      );

      // Released from the page again, then re-armed by another client: FAULT no longer stands.
      assert.equal((await api.post("/v0/estop/clear")).status, 200);
      await waitForText(page, "#latch", /^released$/);
      await stopAndRelease(page);
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitForText(page, "#mode", /^MANUAL$/);
      const afterArm = await page.locator("#mode-result").textContent() ?? "";
      assert.doesNotMatch(
        afterArm,
        RELEASED,
        "the page says the mode stays FAULT while its header says MANUAL",
      );
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
