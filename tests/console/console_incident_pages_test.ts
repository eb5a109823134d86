/**
 * The Incidents view pages the list as GET /v0/incidents does (INCIDENTS_LISTED a page, Older /
 * Newer / Newest by the cursor `before`), as the Runs view pages runs. Before, it read the whole
 * list in one answer (up to history.incident_max_count, 100,000 records).
 *
 * The API over a real IncidentRecorder on a hand-fed History (tests/history/_incident_rig.ts),
 * served over real HTTP; the page in headless Chromium.
 */
import assert from "node:assert/strict";
import { MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { INCIDENTS_LISTED } from "../../console/incidents.js";
import {
  chromiumMissing,
  collectPageErrors,
  openChromium,
  waitForText,
} from "../helpers/browser.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { incidentRig } from "../history/_incident_rig.ts";

Deno.test({
  name:
    "Operator console: the incident list is paged, Older shows the incidents past the first page",
  ignore: chromiumMissing(),
  fn: async () => {
    const total = INCIDENTS_LISTED + 1;
    const rig = incidentRig({ config: { incidentMaxCount: total } });
    const fx = await startHttpFixture({
      start: false,
      services: { history: rig.history, incidents: rig.incidents },
    });
    const server = await fx.serve();
    const browser = await openChromium();
    try {
      await rig.session(async () => {
        for (let i = 0; i < total; i++) {
          rig.poll("p0", `d${i}`, 1);
          rig.loss(`d${i}`);
          rig.clock.advance(1_000 + MERGE_WINDOW_MS + 100);
          await rig.incidents.settled();
        }
        assert.equal(rig.incidents.list().length, total);
        const oldest = rig.incidents.list().at(-1)!.incident_id;

        const page = await browser.newPage();
        const errors = collectPageErrors(page);
        await page.goto(`http://127.0.0.1:${server.port}/#incidents`);
        await waitForText(page, "#incidents caption", /newest first; .*older after$/);
        const rows = () =>
          page.locator("#incidents tbody tr").evaluateAll((r) =>
            r.map((x) => x.getAttribute("data-incident"))
          );
        assert.equal((await rows()).length, INCIDENTS_LISTED, "one page");
        assert.ok(!(await rows()).includes(oldest), "the oldest is on the next page");

        await page.getByRole("button", { name: "Older incidents" }).click();
        await waitForText(page, "#incidents caption", /^Older incident records by time$/);
        assert.deepEqual(await rows(), [oldest]);
        assert.equal(
          await page.getByRole("button", { name: "Older incidents" }).isDisabled(),
          true,
          "no older",
        );

        await page.getByRole("button", { name: "Newest incidents" }).click();
        await waitForText(page, "#incidents caption", /newest first; .*older after$/);
        assert.equal((await rows()).length, INCIDENTS_LISTED);
        assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
      });
    } finally {
      await browser.close();
      await fx.close();
    }
  },
});
