/**
 * A live trend of a signal whose value does not change draws it on to now. The runtime streams a
 * `state_update` only when a value or its quality changes, not at every poll, so the live line of a
 * steady value (a setpoint, a relay's state) got no sample after its seed: it ended where the chart
 * was opened, sloped from there to the next change as if the value had ramped, and was trimmed
 * away once older than the range -- an OK signal shown as no line at all (console/chart.js
 * Series.holdTo, console/trend.js TrendView.draw). The chart's `data-reach` says where its line
 * ends.
 *
 * The runtime in process, served over real HTTP, with the programmable provider as its child
 * process (a probe whose temp stays 25 until the test changes it); the page in headless Chromium.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  openChromium,
  waitForText,
} from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { program } from "../scenarios/alarms_helpers.ts";

const TEMP = "p0/probe/temp";

const PROBE: Inventory = {
  devices: {
    probe: {
      signals: [{ id: "temp", type: T.DOUBLE, unit: "C" }],
      values: [dbl("temp", 25)],
    },
  },
};

Deno.test({
  name: "Operator console: a live trend draws a steady value on to now, not ending where it opened",
  ignore: chromiumMissing(),
  fn: async () => {
    const file = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
    await Deno.writeTextFile(file, JSON.stringify(PROBE));
    const rt = await startServing(testConfig({ providers: [programmableProvider("p0", file)] }));
    const base = `http://127.0.0.1:${rt.http!.port}`;
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await page.goto(`${base}/#trend?s=${TEMP}`);
      await waitForText(page, "#conn", /^Live$/);
      await waitForText(page, "#trend .trend-source", /^Answered by: /);
      const chart = page.locator("#trend .chart");
      const reach = async () => Number(await chart.getAttribute("data-reach"));
      const opened = Date.now();
      // Seconds later, with no change streamed, the line reaches the runtime's now (the same
      // clock here), within a couple of the chart's 1 s ticks.
      await new Promise((r) => setTimeout(r, 3000));
      await waitFor("the steady line drawn on to now", async () => {
        const r = await reach();
        return r > opened + 1000 && r >= Date.now() - 2500;
      }).catch(async () => {
        throw new Error(`the line ends at ${(await reach()) - Date.now()} ms from now`);
      });
      // A change goes on from there.
      await program(rt, "p0", "probe", { read: { values: [dbl("temp", 26)] } });
      const changed = Date.now();
      await waitFor("the changed line drawn on", async () => (await reach()) > changed + 1000);
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(file);
    }
  },
});
