/**
 * The e-stop answer shown says "Latch released." only for a release of its own latch: a release
 * the event stream delivers after the answer of a later trigger (the answer overtook the stream),
 * but which happened before that trigger, released an older latch and must not relabel the new
 * answer. Every trigger publishes its own `estop_change` (latched) as it latches, so the stream
 * orders the release before it.
 *
 * The runtime in process with the simulated provider, served over real HTTP; the page in headless
 * Chromium. An init script (_hold_stream.ts) holds the page's event stream (a wrapper around its
 * fetch of /v0/events passes nothing on while held), so the release is delivered after the
 * answer; it also notes when the page has parsed a streamed release (JSON.parse without a
 * reviver, as the page's event handler calls it; the API's answers are parsed with one).
 */
import assert from "node:assert/strict";
import { chromiumMissing, openChromium, waitForText } from "../helpers/browser.ts";
import { startServing } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { Api } from "../scenarios/alarms_helpers.ts";
import { holdStreamScript } from "./_hold_stream.ts";

const SUMMARY = "#estop-result .estop-summary";

Deno.test({
  name:
    "Operator console: a streamed e-stop release that happened before a later trigger does not mark that trigger's answer released",
  ignore: chromiumMissing(),
  fn: async () => {
    const rt = await startServing(testConfig({ providers: [simProvider("sim0")] }));
    const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      await page.addInitScript(holdStreamScript('"latched":false'));
      await page.goto(`${api.base}/`);
      await waitForText(page, "#conn", /^Live$/);
      // Another client latches; the page shows it latched.
      assert.equal((await api.post("/v0/estop", { reason: "another client" })).status, 200);
      await page.locator("#estop-clear").waitFor({ state: "visible" });
      // The stream is held; another client releases (its estop_change is held in the page).
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        (globalThis as any).__streamHeld = true;
      });
      assert.equal((await api.post("/v0/estop/clear")).status, 200);
      // deno-lint-ignore no-explicit-any
      await page.waitForFunction(() => (globalThis as any).__markHeld === true);
      // The operator presses E-STOP: its answer arrives, the stream still held.
      await page.locator("#estop").click();
      await waitForText(page, SUMMARY, /^Latched\./);
      // The older release reaches the page after the answer.
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        (globalThis as any).__resumeStream();
      });
      // deno-lint-ignore no-explicit-any
      await page.waitForFunction(() => (globalThis as any).__marksParsed >= 1);
      // The event handler acts on it in the same task it parses it: done by the next task.
      await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)));
      assert.match(
        await page.locator(SUMMARY).textContent() ?? "",
        /^Latched\./,
        "a release from before the trigger marked the trigger's answer released",
      );
      assert.equal((await api.get("/v0/runtime/status")).json.estop.latched, true);
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
