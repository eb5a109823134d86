/**
 * An open live trend across a runtime restart: the page re-reads everything after the stream's
 * `resync` (the runtime restarted), but the trend kept its line and went on appending, so the line
 * joined the last sample before the outage straight to the first one after it, as if the signal
 * had been read all along (an operator reads the outage as a steady value). The line now breaks
 * there, a gap with no data listed under the chart. The real runtime with the simulated provider,
 * (its physics on: the temperature moves) stopped and started again on the same port and data
 * directory; the page in headless Chromium. A `resync` whose events were too old (the runtime
 * still has the samples missed) reads the trend's range again, as the rest of the page.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  launchChromiumAlongside,
  PAGE_WAIT_MS,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import {
  type RuntimeChild,
  startRuntimeChild,
  startRuntimeChildOnFreePort,
} from "../helpers/runtime_process.ts";
import { SIM_MAIN, SIM_YAML, simRuntimeConfig } from "../helpers/sim_config.ts";

const TEMP = "sim0/tempctl0/tc1_temp";

Deno.test({
  name: "TrendView breaks a live line where the runtime restarted (no data), not joining it across",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-trend-restart-" });
    const config = `${dir}/runtime.yaml`;
    const [browser, first] = await launchChromiumAlongside(
      startRuntimeChildOnFreePort(async (port) => {
        await Deno.writeTextFile(
          config,
          `runtime: {name: trend-restart-test, data_dir: ${dir}/data}
http:
  port: ${port}
providers:
  - id: sim0
    command: ${JSON.stringify(Deno.execPath())}
    args: [run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_YAML}]
`,
        );
        return { config, port };
      }),
      (r) => r.stop(),
    );
    let rt: RuntimeChild | null = first;
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors = collectPageErrors(page);
      const points = async () =>
        Number(await page.locator("#trend .chart").getAttribute("data-points") ?? "0");
      const waitForPoints = async (more: number) => {
        const deadline = Date.now() + PAGE_WAIT_MS;
        while ((await points()) < more) {
          if (Date.now() > deadline) throw new Error(`the chart never held ${more} points`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      await step("a live trend follows the stream, with no gap", async () => {
        await page.goto(`${first.base}/#trend?s=${TEMP}`);
        await waitForText(page, "#conn", /^Live$/);
        await waitForPoints(1);
        await waitForPoints((await points()) + 2);
        await waitForText(page, "#trend .trend-gaps", /^No quality gaps in this range\.$/);
      });
      await step("the runtime stops and the page sees it gone", async () => {
        await first.stop();
        rt = null;
        await waitForText(page, "#conn", /^(Disconnected|Connecting)/);
      });
      await step("the runtime is back: the line breaks over the outage", async () => {
        rt = await startRuntimeChild({ config, port: first.port });
        await waitForText(page, "#conn", /^Live$/);
        // Samples of the new run on the chart: past the outage.
        await waitForPoints((await points()) + 2);
        const text = await waitForText(
          page,
          "#trend .trend-gaps",
          /gap|No quality gaps/,
        );
        assert.match(text, new RegExp(`^${TEMP}: 1 gap \\(no data\\)`), text);
        assert.equal(await page.locator("#trend .trend-gaps li").count(), 1);
      });
      assert.deepStrictEqual(
        errors.filter((e) => !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(e)),
        [],
      );
    } finally {
      await browser.close();
      await (rt as RuntimeChild | null)?.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "TrendView reads its live range again after a resync whose events were too old",
  ignore: chromiumMissing(),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "console-trend-too-old-" });
    const config = `${dir}/runtime.yaml`;
    const [browser, rt] = await launchChromiumAlongside(
      startRuntimeChildOnFreePort(async (port) => {
        await Deno.writeTextFile(
          config,
          `runtime: {name: trend-too-old-test, data_dir: ${dir}/data}
http:
  port: ${port}
${simRuntimeConfig()}`,
        );
        return { config, port };
      }),
      (r) => r.stop(),
    );
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      let historyReads = 0;
      page.on("request", (r) => {
        if (new URL(r.url()).pathname === "/v0/history/sim0/tempctl0") historyReads++;
      });
      // The stream's first answer is one resync event, handed over once the trend is drawn; its
      // reconnections fail (a resync of theirs would read the range again, again).
      const resync = Promise.withResolvers<void>();
      let streams = 0;
      await page.route("**/v0/events*", async (route) => {
        if (++streams > 1) return await route.abort("connectionrefused");
        await resync.promise;
        await route.fulfill({
          status: 200,
          headers: { "content-type": "text/event-stream" },
          body: 'event: resync\nid: 0-1\ndata: {"reason":"too_old","last_event_id":"0-1"}\n\n',
        });
      });
      await page.goto(`${rt.base}/#trend?s=${TEMP}`);
      // The inventory read (the add menu lists signals) redraws a chart opened before it: the
      // reads before the resync are done once the chart drawn after it says who answered.
      await page.locator("#trend-add option").first().waitFor({
        state: "attached",
        timeout: PAGE_WAIT_MS,
      });
      await waitForText(page, "#trend .trend-source", /^Answered by: /);
      const before = historyReads;
      resync.resolve();
      const deadline = Date.now() + PAGE_WAIT_MS;
      while (historyReads < before + 1 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(
        historyReads,
        before + 1,
        "the trend's range was not read again after the resync",
      );
      await waitForText(page, "#trend .trend-source", /^Answered by: /);
      assert.ok(Number(await page.locator("#trend .chart").getAttribute("data-points")) > 0);
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
