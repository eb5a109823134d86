/**
 * An open trend follows the inventory: a configuration reload that removes a signal on the chart,
 * or changes its type to one that is not charted, is said above the chart at once (as opening
 * such a trend says it), not only when the chart is opened again; a trend hidden meanwhile is
 * read again when shown, so what it says is what the inventory holds then.
 *
 * The runtime in process, served over real HTTP, with the programmable provider as its child
 * process (its inventory read from a file at start: a reload pointing it at another file restarts
 * it with that one); the page in headless Chromium.
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

const TEMP = "p0/probe/temp";
const LEVEL = "p0/probe/level";
const ERROR = "#trend p.error";

/** temp and level, both doubles. */
const BEFORE: Inventory = {
  devices: {
    probe: {
      signals: [{ id: "temp", type: T.DOUBLE }, { id: "level", type: T.DOUBLE }],
      values: [dbl("temp", 25), dbl("level", 1)],
    },
  },
};

/** temp is a string now; level is gone. */
const AFTER: Inventory = {
  devices: {
    probe: {
      signals: [{ id: "temp", type: T.STRING }],
      values: [{ id: "temp", type: T.STRING, string: "warm", quality: 1 }],
    },
  },
};

Deno.test({
  name:
    "Operator console: an open trend says at once that a reload removed its signal or changed its type",
  ignore: chromiumMissing(),
  fn: async () => {
    const before = await Deno.makeTempFile({ prefix: "probe-before-", suffix: ".json" });
    const after = await Deno.makeTempFile({ prefix: "probe-after-", suffix: ".json" });
    await Deno.writeTextFile(before, JSON.stringify(BEFORE));
    await Deno.writeTextFile(after, JSON.stringify(AFTER));
    const rt = await startServing(testConfig({ providers: [programmableProvider("p0", before)] }));
    const base = `http://127.0.0.1:${rt.http!.port}`;
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await page.goto(`${base}/`);
      await waitForText(page, `tr[data-signal="${TEMP}"] td.value`, /^25$/);
      await page.goto(`${base}/#trend?s=${TEMP}&s=${LEVEL}`);
      await waitForText(page, "#trend .trend-source", /^Answered by: /);
      assert.equal(await page.locator(ERROR).isHidden(), true, "no problem while both exist");

      await rt.reload({ ...rt.config, providers: [programmableProvider("p0", after)] });
      // While the changed provider restarts, neither signal has a device (said so, truthfully);
      // once it is back, the retyped one is named as not chartable.
      const said = await waitForText(page, ERROR, /not chartable/);
      assert.equal(
        said,
        `not a signal of a known device: ${LEVEL}; ` +
          `not chartable (strings and bytes are not): ${TEMP} (string)`,
      );

      // Hidden, the trend is not read; shown again, it says what the inventory holds then.
      await page.goto(`${base}/#devices`);
      await rt.reload({ ...rt.config, providers: [programmableProvider("p0", before)] });
      await waitForText(page, `tr[data-signal="${LEVEL}"] td.value`, /^1$/);
      await page.locator('.tabs a[href="#trend"]').click();
      await waitForText(page, "#trend .trend-source", /^Answered by: /);
      await waitFor("the problem line hidden", async () => await page.locator(ERROR).isHidden());
      assert.deepEqual(
        await page.locator("#trend .chips li[data-signal]").evaluateAll((li) =>
          li.map((x) => x.getAttribute("data-signal"))
        ),
        [TEMP, LEVEL],
      );
      // A read while the provider restarts may answer 503 (the browser logs it): not a page error.
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(before);
      await Deno.remove(after);
    }
  },
});
