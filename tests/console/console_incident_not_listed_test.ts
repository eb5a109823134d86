/**
 * An incident whose triggers go beyond what its record lists (INCIDENT_MAX_TRIGGERS besides its
 * lead; the rest counted in `triggers_not_listed`, docs/history.md) says so in the console: the
 * page and the list showed the 32 listed and no hint that more were left out
 * (console/incidents.js causeText).
 *
 * The runtime in process with the simulated provider, served over real HTTP; an alarm flapping
 * within the merge window: its raises published on the runtime's bus as the alarm engine publishes
 * them, one incident of them all. The page in headless Chromium.
 */
import assert from "node:assert/strict";
import { INCIDENT_MAX_TRIGGERS } from "../../src/history/mod.ts";
import {
  chromiumMissing,
  collectPageErrors,
  openChromium,
  PAGE_WAIT_MS,
  waitForText,
} from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { Api } from "../scenarios/alarms_helpers.ts";
import { hotRaised } from "../history/_incident_rig.ts";

/** Raises beyond the lead and the listed ones. */
const BEYOND = 12;

Deno.test({
  name:
    "Operator console: an incident with triggers not listed says how many, on its page and in the list",
  ignore: chromiumMissing(),
  fn: async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "console-incident-not-listed-" });
    const rt = await startServing(testConfig({
      runtime: { dataDir },
      providers: [simProvider("sim0")],
      history: { incidentBeforeS: 1, incidentAfterS: 1 },
    }));
    const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
    const browser = await openChromium();
    try {
      for (let i = 0; i < 1 + INCIDENT_MAX_TRIGGERS + BEYOND; i++) {
        rt.bus.publish(hotRaised("sim0/tempctl0/tc1_temp", Date.now(), `too hot ${i}`));
      }
      const inc = await waitFor("the alarm's incident record", async () => {
        const list = await api.get("/v0/incidents");
        return list.json.incidents?.[0] as
          | { incident_id: string; also: unknown[]; triggers_not_listed: number }
          | undefined;
      }, PAGE_WAIT_MS);
      assert.equal(inc.also.length, INCIDENT_MAX_TRIGGERS);
      assert.equal(inc.triggers_not_listed, BEYOND);

      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await page.goto(`${api.base}/#incidents/${encodeURIComponent(inc.incident_id)}`);
      const said = new RegExp(`\\b${BEYOND} more triggers not listed\\b`);
      await waitForText(page, "#incidents .incident-title", /^Alarm raised: /);
      const cause = await page.locator("#incidents dl.kv div", { hasText: "Cause" })
        .locator("dd").textContent();
      assert.match(cause ?? "", said, `the page's cause: ${cause}`);
      assert.match(cause ?? "", /too hot 32; /, "the listed ones still named");

      await page.goto(`${api.base}/#incidents`);
      await waitForText(page, "#incidents caption", /^Incident records by time, newest first$/);
      const row = await page.locator(`#incidents tbody tr[data-incident="${inc.incident_id}"]`)
        .textContent();
      assert.match(row ?? "", said, `the list's row: ${row}`);
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
