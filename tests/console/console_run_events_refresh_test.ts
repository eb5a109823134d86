/**
 * The operator console's Runs view re-reads the events of the run it shows on the page's 2 s
 * refresh: the table used to be read once, when "Show" was pressed, so a marker another client
 * added to the open run never appeared, and a runtime gone away left the old table standing. A
 * failed re-read now gives way to the error as every other view words it (errorText). The real
 * runtime with the simulated provider; the page in headless Chromium on a stopped clock.
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

/** The page's refresh interval (console/app.js REFRESH_INTERVAL_MS). */
const REFRESH_MS = 2000;

Deno.test({
  name: "Operator console's Runs view shows a marker added over the API within one refresh",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-run-events-" });
    const config = `${dir}/runtime.yaml`;
    const [browser, first] = await launchChromiumAlongside(
      startRuntimeChildOnFreePort(async (port) => {
        await Deno.writeTextFile(
          config,
          `runtime: {name: run-events-test, data_dir: ${dir}/data}
http:
  port: ${port}
${simRuntimeConfig()}`,
        );
        return { config, port };
      }),
      (r) => r.stop(),
    );
    let rt: RuntimeChild | null = first;
    try {
      const post = async (path: string, body: unknown) => {
        const res = await fetch(`${first.base}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        const json = await res.json();
        assert.strictEqual(res.status, 200, JSON.stringify(json));
        return json;
      };
      const opened = await post("/v0/runs", { experiment_label: "events probe" });
      const runId: string = opened.run.run_id;
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors = collectPageErrors(page);
      await installStoppedClock(page);
      // The event stream stays open: only the reads of runs are counted.
      const settled = readsSettled(page, (r) => new URL(r.url()).pathname.startsWith("/v0/runs"));
      const rows = page.locator("#run-events tbody tr");
      await step("the run's events are shown", async () => {
        await page.goto(`${first.base}/#runs`);
        await page.locator(`button[aria-label="Show the events of ${runId}"]`).click({
          timeout: PAGE_WAIT_MS,
        });
        await waitForText(page, "#run-events", new RegExp(`Events of ${runId}`));
        await settled();
      });
      const before = await rows.count();
      await step("a marker added by another client appears within one refresh", async () => {
        await post(`/v0/runs/${encodeURIComponent(runId)}/events`, { type: "valve_opened" });
        await page.clock.runFor(REFRESH_MS);
        await settled();
        assert.strictEqual(
          await rows.count(),
          before + 1,
          (await page.textContent("#run-events")) ?? "",
        );
        assert.match(await page.textContent("#run-events") ?? "", /valve_opened/);
      });
      await step("a failed re-read replaces the table with the error", async () => {
        await first.stop();
        rt = null;
        await page.clock.runFor(REFRESH_MS);
        await settled();
        const text = await page.textContent("#run-events") ?? "";
        assert.match(text, /No answer from the runtime/);
        assert.doesNotMatch(text, /valve_opened/);
      });
      assert.deepStrictEqual(
        errors.filter((e) => !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(e)),
        [],
      );
    } finally {
      await browser.close();
      await (rt as RuntimeChild | null)?.stop();
    }
  },
});
