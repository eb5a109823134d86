/**
 * An incident's page labels its chart's axes with the units the record keeps (as declared when it
 * was recorded), not the units the devices declare today (console/incidents.js,
 * IncidentsView.loadOne); a record of a version that kept no units is drawn with today's.
 *
 * The runtime in process with the simulated provider, served over real HTTP; the page in headless
 * Chromium. Playwright rewrites the record's answer: a unit that changed since it was recorded
 * (tc1_temp's "C" kept as "degF"), or no units at all (an older record).
 */
import assert from "node:assert/strict";
import type { Page, Route } from "playwright-core";
import { chromiumMissing, openChromium, PAGE_WAIT_MS } from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { Api } from "../scenarios/alarms_helpers.ts";

type Signal = { signal_id: string; unit?: string };

/** The chart's axes (data-axes) once the page drew them as `test` wants; fails after a wait. */
async function axesWhen(page: Page, test: (axes: string[]) => boolean): Promise<string[]> {
  let last: string[] = [];
  await waitFor(
    "the incident chart's axes",
    async () => {
      const attr = await page.locator("#incidents .chart").first()
        .getAttribute("data-axes", { timeout: 500 }).catch(() => null);
      last = attr === null ? [] : attr.split("|");
      return attr !== null && test(last);
    },
    PAGE_WAIT_MS,
  ).catch(() => {
    throw new Error(`the incident chart's axes never as expected (last: ${last.join("|")})`);
  });
  return last;
}

/** Opens an e-stop's incident page, every read of the record rewritten by `rewrite`. */
async function incidentPage(
  rewrite: (signals: Signal[]) => void,
  check: (page: Page) => Promise<void>,
): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "console-incident-units-" });
  const rt = await startServing(testConfig({
    runtime: { dataDir },
    providers: [simProvider("sim0")],
    history: { incidentBeforeS: 1, incidentAfterS: 1 },
  }));
  const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
  const browser = await openChromium();
  let page: Page | null = null;
  try {
    assert.equal((await api.post("/v0/estop")).status, 200);
    const id: string = await waitFor("the e-stop's incident record", async () => {
      const list = await api.get("/v0/incidents");
      return list.json.incidents?.[0]?.incident_id as string | undefined;
    }, PAGE_WAIT_MS);
    const path = `/v0/incidents/${encodeURIComponent(id)}`;
    page = await browser.newPage();
    await page.route(`**${path}`, async (route: Route) => {
      const answer = await route.fetch();
      const body = await answer.json();
      rewrite(body.signals);
      await route.fulfill({ response: answer, json: body });
    });
    await page.goto(`${api.base}/#incidents/${encodeURIComponent(id)}`);
    await check(page);
  } finally {
    // The page reads the record again once today's units arrive: a read still in the handler when
    // the browser closes must not throw from it (route.fetch: "Request context disposed").
    await page?.unrouteAll({ behavior: "ignoreErrors" });
    await browser.close();
    await rt.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
}

Deno.test({
  name: "Operator console: an incident page labels its axes with the record's units, not today's",
  ignore: chromiumMissing(),
  fn: () =>
    incidentPage(
      (signals) => {
        for (const s of signals) if (s.unit === "C") s.unit = "degF";
      },
      async (page) => {
        const axes = await axesWhen(page, (a) => a.includes("degF"));
        assert.equal(axes.includes("C"), false, `today's "C" instead of the record's: ${axes}`);
      },
    ),
});

Deno.test({
  name: "Operator console: an incident page of a record with no units labels its axes with today's",
  ignore: chromiumMissing(),
  fn: () =>
    incidentPage(
      (signals) => {
        for (const s of signals) delete s.unit;
      },
      async (page) => {
        const axes = await axesWhen(page, (a) => a.includes("C"));
        assert.ok(axes.includes("C"), `${axes}`);
      },
    ),
});
