/**
 * The header's "Stale: nothing received for N s" counts up while the event stream stays silent
 * (STALE_TICK_MS in console/sse.js), not frozen at the second it turned stale, and gives way to
 * "Live" as soon as something arrives. The page's clock is Playwright's, moved a second at a
 * time; the runtime's simulated provider is inert (values change only through calls) and without
 * its analog sensor (whose voltages move even then), so the stream says nothing while the test
 * moves the page's clock (the runtime's own keep-alive comes after 15 s of real time).
 *
 * The runtime in process with the simulated provider as its child process, served over real HTTP;
 * the page in headless Chromium.
 */
import assert from "node:assert/strict";
import { STALE_AFTER_MS } from "../../console/sse.js";
import { chromiumMissing, openChromium, pauseClockNow, waitForText } from "../helpers/browser.ts";
import { startServing } from "../helpers/kernel.ts";
import { SIM_INERT_YAML, simProvider, testConfig } from "../helpers/sim_config.ts";
import { Api } from "../scenarios/alarms_helpers.ts";

const STALE = /^Stale: nothing received for (\d+) s$/;

Deno.test({
  name: "Operator console: the Stale silence counts up a second each second, then Live again",
  ignore: chromiumMissing(),
  fn: async () => {
    const inert = await Deno.readTextFile(SIM_INERT_YAML);
    const quiet = inert.replace("  - id: analogsensor0\n    type: analogsensor\n", "");
    assert.notEqual(quiet, inert, `${SIM_INERT_YAML} no longer lists analogsensor0 so`);
    const yaml = await Deno.makeTempFile({ prefix: "sim-quiet-", suffix: ".yaml" });
    await Deno.writeTextFile(yaml, quiet);
    const rt = await startServing(testConfig({ providers: [simProvider("sim0", { yaml })] }));
    const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      await page.clock.install();
      await page.goto(`${api.base}/`);
      await waitForText(page, "#conn", /^Live$/);
      await waitForText(page, 'tr[data-signal="sim0/tempctl0/tc1_temp"] td.value', /^25$/);
      await pauseClockNow(page, 1000);
      await page.clock.runFor(STALE_AFTER_MS);
      const seconds = async () => {
        const text = await page.locator("#conn").textContent() ?? "";
        const m = STALE.exec(text);
        assert.ok(m, `the header says stale: ${JSON.stringify(text)}`);
        return Number(m[1]);
      };
      const shown = [await seconds()];
      for (let i = 0; i < 4; i++) {
        await page.clock.runFor(1000);
        shown.push(await seconds());
      }
      assert.deepEqual(
        shown.slice(1).map((n, i) => n - shown[i]!),
        [1, 1, 1, 1],
        `one second more each second: ${shown.join(", ")}`,
      );

      // Something arrives (a mode_change event): Live, and it stays so as the clock moves.
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitForText(page, "#conn", /^Live$/);
      await page.clock.runFor(3000);
      assert.equal(await page.locator("#conn").textContent(), "Live");
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(yaml);
    }
  },
});
