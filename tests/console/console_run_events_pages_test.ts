/**
 * The operator console's Runs view reaches every event of a run, however long: the events table
 * used to show a run's first 50 events only (`?limit=50`, no page after it), so a marker added
 * later in a long run never appeared. It now shows pages of RUN_EVENTS_LISTED, with Earlier,
 * Later and Latest (the run's last page, found by one-event reads within RUN_EVENTS_PROBES_MAX).
 * The real runtime with the simulated provider; the page in headless Chromium on a stopped clock.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  installStoppedClock,
  launchChromiumAlongside,
  PAGE_WAIT_MS,
  readsSettled,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { type RuntimeChild, startRuntimeChildOnFreePort } from "../helpers/runtime_process.ts";
import { simRuntimeConfig } from "../helpers/sim_config.ts";

/** Events per page (console/runs.js RUN_EVENTS_LISTED). */
const PAGE = 50;
/** Markers added before the last one: with run_opened, the run has MARKERS + 2 events. */
const MARKERS = 2 * PAGE + 21;

Deno.test({
  name: "Operator console's Runs view pages to a marker added after a run's first 50 events",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-run-pages-" });
    const config = `${dir}/runtime.yaml`;
    const [browser, rt] = await launchChromiumAlongside(
      startRuntimeChildOnFreePort(async (port) => {
        await Deno.writeTextFile(
          config,
          `runtime: {name: run-pages-test, data_dir: ${dir}/data}
http:
  port: ${port}
${simRuntimeConfig()}`,
        );
        return { config, port };
      }),
      (r: RuntimeChild) => r.stop(),
    );
    try {
      const post = async (path: string, body: unknown) => {
        const res = await fetch(`${rt.base}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        const json = await res.json();
        assert.strictEqual(res.status, 200, JSON.stringify(json));
        return json;
      };
      const runId: string = (await post("/v0/runs", { experiment_label: "long" })).run.run_id;
      const events = `/v0/runs/${encodeURIComponent(runId)}/events`;
      for (let i = 1; i <= MARKERS; i++) await post(events, { type: `m${i}` });
      const last = (await post(events, { type: "final_marker" })).event.sequence;
      assert.strictEqual(last, MARKERS + 2);

      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors = collectPageErrors(page);
      await installStoppedClock(page);
      const settled = readsSettled(page, (r) => new URL(r.url()).pathname.startsWith("/v0/runs"));
      const rows = page.locator("#run-events tbody tr");
      const seqs = async () => (await rows.locator("td:first-child").allTextContents()).map(Number);
      const range = (from: number, to: number) =>
        Array.from({ length: to - from + 1 }, (_, i) => from + i);
      await step("Show: the first page, and more after it", async () => {
        await page.goto(`${rt.base}/#runs`);
        await page.locator(`button[aria-label="Show the events of ${runId}"]`).click({
          timeout: PAGE_WAIT_MS,
        });
        await waitForText(page, "#run-events caption", /events 1 to 50, more after/);
        await settled();
        assert.deepStrictEqual(await seqs(), range(1, PAGE));
      });
      await step("Later: the next page", async () => {
        await page.locator('button[aria-label="Later events"]').click({ timeout: PAGE_WAIT_MS });
        await waitForText(page, "#run-events caption", /events 51 to 100, more after/);
        await settled();
        assert.deepStrictEqual(await seqs(), range(PAGE + 1, 2 * PAGE));
      });
      await step("Latest: the run's last page, with the last marker", async () => {
        await page.locator('button[aria-label="Latest events"]').click({ timeout: PAGE_WAIT_MS });
        await waitForText(page, "#run-events caption", new RegExp(`events ${last - PAGE + 1} to`));
        await settled();
        assert.deepStrictEqual(await seqs(), range(last - PAGE + 1, last));
        assert.match(
          await page.textContent("#run-events tbody tr:last-child") ?? "",
          /final_marker/,
        );
        assert.doesNotMatch(await page.textContent("#run-events caption") ?? "", /more after/);
      });
      await step("a marker added later shows on the latest page within one refresh", async () => {
        await post(events, { type: "after_latest" });
        await page.clock.runFor(2000);
        await settled();
        assert.deepStrictEqual(await seqs(), range(last - PAGE + 2, last + 1));
        assert.match(
          await page.textContent("#run-events tbody tr:last-child") ?? "",
          /after_latest/,
        );
      });
      await step("Earlier: back one page", async () => {
        await page.locator('button[aria-label="Earlier events"]').click({ timeout: PAGE_WAIT_MS });
        // The latest page is last - PAGE + 2 to last + 1 now: the page before it ends where it began.
        const from = last - 2 * PAGE + 2;
        await waitForText(page, "#run-events caption", new RegExp(`events ${from} to `));
        await settled();
        assert.deepStrictEqual(await seqs(), range(from, last - PAGE + 1));
      });
      // Failed loads are the parameters' 503 (automation is not configured here).
      assert.deepStrictEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
