/**
 * A trend of a device the runtime no longer has (a reload removed its provider) still draws its
 * last minutes from the history, whose answer keeps the unit its polls were recorded in
 * (docs/history.md: "the unit is the one its polls were recorded in"): the chart's axis names that
 * unit, so that a line of the same unit as another on the chart shares its axis, instead of being
 * drawn on a second axis labelled "(no unit)" because the inventory no longer lists the device
 * (console/trend.js, TrendView.reload).
 *
 * The runtime in process, served over real HTTP, with two programmable providers as child
 * processes (the same inventory: a probe whose temp is in "C"); the page in headless Chromium.
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
import { Api } from "../scenarios/alarms_helpers.ts";

const KEPT = "p0/probe/temp";
const REMOVED = "p1/probe/temp";

const PROBE: Inventory = {
  devices: {
    probe: {
      signals: [{ id: "temp", type: T.DOUBLE, unit: "C" }],
      values: [dbl("temp", 25)],
    },
  },
};

Deno.test({
  name:
    "Operator console: a removed device's trend names the unit its polls were recorded in, on one axis with the same unit",
  ignore: chromiumMissing(),
  fn: async () => {
    const file = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
    await Deno.writeTextFile(file, JSON.stringify(PROBE));
    const rt = await startServing(testConfig({
      providers: [programmableProvider("p0", file), programmableProvider("p1", file)],
    }));
    const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
    const browser = await openChromium();
    try {
      // p1's probe polled (its ring holds samples, and the unit they were polled in), then removed.
      await waitFor("p1's probe polled", async () => {
        const r = await api.get("/v0/history/p1/probe?signal_id=temp");
        return r.status === 200 && r.json.signals?.[0]?.points?.length > 0;
      });
      const removedAt = Date.now();
      await rt.reload({ ...rt.config, providers: [programmableProvider("p0", file)] });
      await waitFor("p1 gone from the inventory", async () => {
        const r = await api.get("/v0/devices");
        return r.status === 200 && JSON.stringify(r.json).includes('"p1"') === false;
      });
      // The premise: the history still answers p1's temp, with its recorded unit.
      const answer = await api.get("/v0/history/p1/probe?signal_id=temp");
      assert.equal(answer.status, 200);
      assert.equal(answer.json.signals[0].unit, "C", JSON.stringify(answer.json));

      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await page.goto(`${api.base}/`);
      await waitForText(page, `tr[data-signal="${KEPT}"] td.value`, /^25$/);
      await page.goto(`${api.base}/#trend?s=${KEPT}&s=${REMOVED}`);
      await waitForText(page, "#trend .trend-source", /^Answered by: /);
      // Said above the chart, and still drawn from the history.
      await waitForText(page, "#trend p.error", /not a signal of a known device: p1\/probe\/temp/);
      const chart = page.locator("#trend .chart");
      await waitFor(
        "the removed device's points drawn",
        async () => Number(await chart.getAttribute("data-points")) > 1,
      );
      assert.equal(await chart.getAttribute("data-axes"), "C", "one axis, the recorded unit");
      // Its line ends where its polls did (no sample tells a removal): its value is not drawn on
      // to now as a steady one's is (p0's, with the stream live).
      await waitForText(page, "#conn", /^Live$/);
      await new Promise((r) => setTimeout(r, 2500));
      const [kept, removed] = (await chart.getAttribute("data-reach"))!.split("|").map(Number);
      assert.ok(kept! > removedAt + 2000, `p0's line reaches now: ${kept! - removedAt}`);
      assert.ok(removed! <= removedAt + 500, `p1's line ends: ${removed! - removedAt}`);
      // Parameters and automation are not configured here (503, which the browser logs).
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(file);
    }
  },
});
