/**
 * The operator console's Runs view reaches every run kept, not only the newest: the list showed
 * the 20 newest (`?limit=20`, no page after it), so an older run's events could not be opened from
 * the page. It now pages with Older, Newer and Newest (cursor `before=`, the last run shown), and
 * the run forms keep the open run whatever page is shown. The real runtime with the simulated
 * provider; the page in headless Chromium on a stopped clock.
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

/** Runs per page (console/runs.js RUNS_LISTED). */
const PAGE = 20;
/** Closed runs made before the open one: two full pages and part of a third. */
const CLOSED = 2 * PAGE + 5;

Deno.test({
  name:
    "Operator console's Runs view pages to runs older than the newest 20, the open run's forms kept",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-runs-pages-" });
    const config = `${dir}/runtime.yaml`;
    const [browser, rt] = await launchChromiumAlongside(
      startRuntimeChildOnFreePort(async (port) => {
        await Deno.writeTextFile(
          config,
          `runtime: {name: runs-pages-test, data_dir: ${dir}/data}
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
      const labels: string[] = []; // oldest first
      for (let i = 1; i <= CLOSED; i++) {
        const id: string = (await post("/v0/runs", { experiment_label: `r${i}` })).run.run_id;
        await post(`/v0/runs/${encodeURIComponent(id)}/close`, { close_reason: "completed" });
        labels.push(`r${i}`);
      }
      await post("/v0/runs", { experiment_label: "open-one" });
      labels.push("open-one");
      const newestFirst = labels.toReversed();

      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors = collectPageErrors(page);
      await installStoppedClock(page);
      const settled = readsSettled(page, (r) => new URL(r.url()).pathname.startsWith("/v0/runs"));
      const shownLabels = async () =>
        await page.locator(".runs-table tbody tr td:nth-child(2)").allTextContents();
      const closeForm = page.locator("#run-forms h3", { hasText: "Close the run" });
      await step("the newest 20, older after", async () => {
        await page.goto(`${rt.base}/#runs`);
        await waitForText(page, "#runs-list caption", /Recent runs \(newest first\), older after/);
        await settled();
        assert.deepStrictEqual(await shownLabels(), newestFirst.slice(0, PAGE));
        assert.ok(await page.locator('button[aria-label="Newer runs"]').isDisabled());
      });
      await step("Older: the next 20, then the last 6", async () => {
        await page.locator('button[aria-label="Older runs"]').click({ timeout: PAGE_WAIT_MS });
        await waitForText(
          page,
          "#runs-list caption",
          /Older runs \(newest first\), before .*, older after/,
        );
        await settled();
        assert.deepStrictEqual(await shownLabels(), newestFirst.slice(PAGE, 2 * PAGE));
        await page.locator('button[aria-label="Older runs"]').click({ timeout: PAGE_WAIT_MS });
        await waitForText(page, "#runs-list caption", /Older runs \(newest first\), before \S+$/);
        await settled();
        assert.deepStrictEqual(await shownLabels(), newestFirst.slice(2 * PAGE));
        assert.ok(await page.locator('button[aria-label="Older runs"]').isDisabled());
        // The open run (not on this page) keeps its forms: a close is offered, not an open.
        assert.ok(await closeForm.count() > 0, "the open run's close form stays on an older page");
      });
      await step("an older run's events open from its page", async () => {
        const oldest = (await page.locator(".runs-table tbody tr:last-child td:first-child")
          .textContent())!;
        await page.locator(`button[aria-label="Show the events of ${oldest}"]`).click({
          timeout: PAGE_WAIT_MS,
        });
        await waitForText(page, "#run-events caption", new RegExp(`Events of ${oldest}:`));
      });
      await step("a refresh keeps the page shown", async () => {
        await page.clock.runFor(2000);
        await settled();
        assert.deepStrictEqual(await shownLabels(), newestFirst.slice(2 * PAGE));
      });
      await step("Newer: back one page; Newest: the first", async () => {
        await page.locator('button[aria-label="Newer runs"]').click({ timeout: PAGE_WAIT_MS });
        await waitForText(
          page,
          "#runs-list caption",
          /Older runs \(newest first\), before .*, older after/,
        );
        await settled();
        assert.deepStrictEqual(await shownLabels(), newestFirst.slice(PAGE, 2 * PAGE));
        await page.locator('button[aria-label="Newest runs"]').click({ timeout: PAGE_WAIT_MS });
        await waitForText(page, "#runs-list caption", /Recent runs \(newest first\), older after/);
        await settled();
        assert.deepStrictEqual(await shownLabels(), newestFirst.slice(0, PAGE));
      });
      // Failed loads are the parameters' 503 (automation is not configured here).
      assert.deepStrictEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
