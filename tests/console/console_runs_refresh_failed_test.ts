/**
 * The operator console's Runs view says a failed re-read in the header, as every other view does
 * (_Refresh failed: ..._), and the line goes with the next re-read that succeeds: its reads caught
 * their errors and showed them in place only, so the 2 s refresh took a failed read of the runs
 * for a success and the header said nothing. The real runtime with the simulated provider; the
 * reads of the runs are refused on the way (page.route aborts them, as a dropped connection does)
 * while every other read is answered; the page in headless Chromium on a stopped clock.
 */
import assert from "node:assert/strict";
import type { Route } from "playwright-core";
import {
  chromiumMissing,
  installStoppedClock,
  launchChromiumAlongside,
  PAGE_WAIT_MS,
  readsSettled,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { type RuntimeChild, startRuntimeChildOnFreePort } from "../helpers/runtime_process.ts";
import { simRuntimeConfig } from "../helpers/sim_config.ts";

/** The page's refresh interval (console/app.js REFRESH_INTERVAL_MS). */
const REFRESH_MS = 2000;

Deno.test({
  name: "Operator console's Runs view sets and clears the header's Refresh failed line",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-runs-failed-" });
    const config = `${dir}/runtime.yaml`;
    const [browser, rt] = await launchChromiumAlongside(
      startRuntimeChildOnFreePort(async (port) => {
        await Deno.writeTextFile(
          config,
          `runtime: {name: runs-failed-test, data_dir: ${dir}/data}
http:
  port: ${port}
${simRuntimeConfig()}`,
        );
        return { config, port };
      }),
      (r: RuntimeChild) => r.stop(),
    );
    try {
      const res = await fetch(`${rt.base}/v0/runs`, { method: "POST" });
      const runId: string = (await res.json()).run.run_id;
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await installStoppedClock(page);
      // Every read but the event stream, which stays open.
      const settled = readsSettled(page, (r) => {
        const path = new URL(r.url()).pathname;
        return path.startsWith("/v0/") && path !== "/v0/events";
      });
      const line = page.locator("#refresh-error");
      await step("the runs and a run's events are shown, no failure said", async () => {
        await page.goto(`${rt.base}/#runs`);
        await page.locator(`button[aria-label="Show the events of ${runId}"]`).click({
          timeout: PAGE_WAIT_MS,
        });
        await waitForText(page, "#run-events", new RegExp(`Events of ${runId}`));
        await page.clock.runFor(REFRESH_MS);
        await settled();
        assert.strictEqual(await line.isVisible(), false);
      });
      const refuse = (route: Route) => route.abort();
      for (
        const [what, pattern] of [["list", "**/v0/runs?*"], ["events", "**/events?*"]] as const
      ) {
        await step(`a failed re-read of the ${what} sets the line`, async () => {
          await page.route(pattern, refuse);
          await page.clock.runFor(REFRESH_MS);
          await settled();
          await waitForText(page, "#refresh-error", /^Refresh failed: /);
          assert.strictEqual(await line.isVisible(), true);
          assert.match(await page.textContent("#runs") ?? "", /No answer from the runtime/);
        });
        await step(`the next re-read that succeeds (${what}) clears it`, async () => {
          await page.unroute(pattern, refuse);
          // The failed read owes a full re-read, due one refresh later: two refreshes at most.
          for (let i = 0; i < 2 && await line.isVisible(); i++) {
            await page.clock.runFor(REFRESH_MS);
            await settled();
          }
          assert.strictEqual(await line.isVisible(), false);
          assert.match(await page.textContent("#run-events") ?? "", /run_opened/);
        });
      }
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
