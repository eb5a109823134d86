/**
 * The operator console's Automation view shows the behavior tree again after one failed read of
 * the automation status (or of the tree): the failed status read cleared the outline, and the
 * view, which re-reads the tree only when none is shown, still counted it as shown, so the 2 s
 * refresh never read it again; the page kept no tree (or the error in its place) until the
 * operator left the view or the configuration was reloaded.
 *
 * The runtime in process with the simulated provider and a tree that waits, served over real
 * HTTP; one read of the page is refused on the way (page.route aborts it, as a dropped connection
 * does); the page in headless Chromium.
 */
import assert from "node:assert/strict";
import type { Route } from "playwright-core";
import {
  chromiumMissing,
  openChromium,
  PAGE_WAIT_MS,
  readsSettled,
  waitForText,
} from "../helpers/browser.ts";
import { startServing } from "../helpers/kernel.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

const TREE = "#automation-tree";
const OUTLINE = `${TREE} .outline`;
const EXECUTION = '#automation-status div:has(> dt:text-is("Execution")) > dd';

for (const which of ["status", "tree"]) {
  Deno.test({
    name:
      `Operator console: the Automation view shows the tree again after one failed ${which} read`,
    ignore: chromiumMissing(),
    fn: async () => {
      const dir = await TreeDir.create();
      const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
      const rt = await startServing(automationConfig(tree));
      const browser = await openChromium();
      try {
        const page = await browser.newPage();
        const base = `http://127.0.0.1:${rt.http!.port}`;
        await page.goto(`${base}/#automation`);
        await page.locator(OUTLINE).waitFor({ timeout: PAGE_WAIT_MS });
        await waitForText(page, EXECUTION, /\S/);

        // One read refused; every later one answered. The 2 s refresh reads the status; the tree
        // is read when the view is opened (here: again, from another view).
        let refused = 0;
        const path = `**/v0/automation/${which}`;
        const handler = async (route: Route) => {
          if (refused > 0) return await route.continue();
          refused++;
          await route.abort();
        };
        await page.route(path, handler);
        const failed = page.waitForEvent("requestfailed", {
          predicate: (r) => r.url().endsWith(`/v0/automation/${which}`),
          timeout: PAGE_WAIT_MS,
        });
        if (which === "tree") {
          await page.evaluate(() => location.hash = "#devices");
          await page.evaluate(() => location.hash = "#automation");
        }
        await failed;
        assert.equal(refused, 1, "one read refused");
        await page.unroute(path, handler);

        // Two more 2 s refreshes read the status, answered, and every read they set off settles.
        const settled = readsSettled(page, (r) => r.url().includes("/v0/automation/"));
        for (let i = 0; i < 2; i++) {
          await page.waitForResponse(
            (r) => r.url().endsWith("/v0/automation/status") && r.ok(),
            { timeout: PAGE_WAIT_MS },
          );
        }
        await settled();
        await waitForText(page, EXECUTION, /\S/);
        const shown = await page.locator(TREE).textContent();
        assert.equal(
          await page.locator(OUTLINE).count(),
          1,
          `the tree is shown again after the failed ${which} read; the view shows: ${
            JSON.stringify(shown)
          }`,
        );
      } finally {
        await browser.close();
        await rt.stop();
        await dir.dispose();
      }
    },
  });
}
