/**
 * An incident's page draws its chart (console/incidents.js, IncidentsView.loadOne); the page is
 * loaded again once the units are known (the inventory read: onUnits), and both loads read the
 * record. When both answers are shown (the first arrives before the second), the second drew a
 * new chart over the first without destroying it: the first chart's ResizeObserver and uPlot
 * instance (its window listener, its canvas) stayed alive on a box no longer in the page, one more
 * for every such pair of loads. Now the chart there is destroyed before a new one is drawn.
 *
 * The page opens `#incidents/<id>` directly: its first read of the record is held (Playwright
 * routes it) until the units' load has asked again, and released then; the second is handed over
 * once the first chart is drawn. An init script counts the charts' boxes still observed by a
 * ResizeObserver (what Chart.destroy disconnects) that are no longer in the page.
 *
 * The runtime in process with the simulated provider, served over real HTTP; the page in headless
 * Chromium.
 */
import assert from "node:assert/strict";
import type { Page, Route } from "playwright-core";
import {
  chromiumMissing,
  openChromium,
  PAGE_WAIT_MS,
  type PageGlobal,
} from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { Api } from "../scenarios/alarms_helpers.ts";

/**
 * Counts, in the page, the elements with class "chart" a ResizeObserver observes (not yet
 * disconnected): `__observedCharts()` says how many are in the page and how many are not.
 */
const COUNT_OBSERVED_CHARTS = `(() => {
  const Native = globalThis.ResizeObserver;
  const live = new Map();
  globalThis.ResizeObserver = class extends Native {
    observe(target, options) {
      if (!live.has(this)) live.set(this, new Set());
      live.get(this).add(target);
      return super.observe(target, options);
    }
    unobserve(target) {
      live.get(this)?.delete(target);
      return super.unobserve(target);
    }
    disconnect() {
      live.delete(this);
      return super.disconnect();
    }
  };
  globalThis.__observedCharts = () => {
    let inPage = 0;
    let detached = 0;
    for (const targets of live.values()) {
      for (const el of targets) {
        if (!el.classList || !el.classList.contains("chart")) continue;
        if (el.isConnected) inPage++;
        else detached++;
      }
    }
    return { inPage, detached };
  };
})()`;

/**
 * Opens an e-stop's incident page directly, the first read of the record held until the units'
 * reload asked again and shown first; the second read gets `second` (once the first chart is
 * drawn and its box marked #first-chart), then `check` runs.
 */
async function twoLoadsOfOneIncident(
  second: (route: Route) => Promise<void>,
  check: (page: Page) => Promise<void>,
): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "console-incident-chart-" });
  const rt = await startServing(testConfig({
    runtime: { dataDir },
    providers: [simProvider("sim0")],
    history: { incidentBeforeS: 1, incidentAfterS: 1 },
  }));
  const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
  const browser = await openChromium();
  try {
    assert.equal((await api.post("/v0/estop")).status, 200);
    // Written incident_after_s after the e-stop.
    const id: string = await waitFor("the e-stop's incident record", async () => {
      const list = await api.get("/v0/incidents");
      return list.json.incidents?.[0]?.incident_id as string | undefined;
    }, PAGE_WAIT_MS);
    const path = `/v0/incidents/${encodeURIComponent(id)}`;

    const page = await browser.newPage();
    await page.addInitScript(COUNT_OBSERVED_CHARTS);
    const secondAsked = Promise.withResolvers<void>();
    const firstDrawn = Promise.withResolvers<void>();
    let reads = 0;
    await page.route(`**${path}`, async (route: Route) => {
      if (route.request().method() !== "GET") return await route.continue();
      const n = ++reads;
      if (n === 1) {
        const answer = await route.fetch();
        await secondAsked.promise; // the units' load asked for the record again
        await route.fulfill({ response: answer });
      } else if (n === 2) {
        secondAsked.resolve();
        await firstDrawn.promise;
        await second(route);
      } else {
        await route.continue();
      }
    });
    await page.goto(`${api.base}/#incidents/${encodeURIComponent(id)}`);
    await secondAsked.promise;
    // The first answer, shown: its chart drawn and marked.
    await page.locator("#incidents .chart canvas").first().waitFor({ timeout: PAGE_WAIT_MS });
    await page.locator("#incidents .chart").evaluate((el: PageGlobal) => el.id = "first-chart");
    firstDrawn.resolve();
    await check(page);
    assert.equal(reads, 2, "the record was read twice (the page, then the units' reload)");
  } finally {
    await browser.close();
    await rt.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
}

/** The chart boxes still observed, in the page and no longer in it (COUNT_OBSERVED_CHARTS). */
async function observedCharts(page: Page): Promise<{ inPage: number; detached: number }> {
  return await page.evaluate(() => (globalThis as PageGlobal).__observedCharts());
}

Deno.test({
  name:
    "Operator console: an incident page loaded twice with both answers shown keeps one live chart (the first is destroyed)",
  ignore: chromiumMissing(),
  fn: () =>
    twoLoadsOfOneIncident((route) => route.continue(), async (page) => {
      // The second answer, shown: a new chart in a new box.
      await page.locator("#incidents .chart:not(#first-chart) canvas").first().waitFor({
        timeout: PAGE_WAIT_MS,
      });
      assert.equal(await page.locator("#incidents .chart").count(), 1);
      assert.deepEqual(
        await observedCharts(page),
        { inPage: 1, detached: 0 },
        "the first chart was left alive (still observed) on a box no longer in the page",
      );
    }),
});

Deno.test({
  name:
    "Operator console: an incident page whose second load fails after the first drew its chart destroys that chart",
  ignore: chromiumMissing(),
  fn: () =>
    twoLoadsOfOneIncident(
      (route) =>
        route.fulfill({
          status: 503,
          contentType: "application/json",
          body: JSON.stringify({ status: { code: "UNAVAILABLE", message: "test: read failed" } }),
        }),
      async (page) => {
        // The failed read, shown: its error in place of the page and its chart.
        await page.locator("#incidents .error").waitFor({ timeout: PAGE_WAIT_MS });
        assert.equal(await page.locator("#incidents .chart").count(), 0);
        assert.deepEqual(
          await observedCharts(page),
          { inPage: 0, detached: 0 },
          "the first chart was left alive (still observed) after an error replaced it",
        );
      },
    ),
});
