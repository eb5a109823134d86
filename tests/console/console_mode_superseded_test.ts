/**
 * The console's mode switch says why the machine is in FAULT when a mode listener superseded the
 * transition the operator asked for (FAULT forced on entering AUTO): the `POST /v0/mode` answer's
 * `superseded_by` and `superseded_reason` are shown on the line under the buttons, as a warning. The two `mode_change`
 * events (into AUTO, then into FAULT) may reach the page before the answer or after it; either
 * way the line stays: the event into AUTO is no move on from it.
 *
 * The runtime in process with the simulated provider and a tree that waits, served over real
 * HTTP; the listener is the test's own, registered on the runtime's ModeManager as the runtime's
 * listeners are (an alarm, the device-loss latch); the page in headless Chromium. The events come
 * first when the test holds the answer (page.route) until the header, which follows them, says
 * FAULT; the answer comes first when an init script (_hold_stream.ts) holds the event stream.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  chromiumMissing,
  collectPageErrors,
  openChromium,
  waitForText,
} from "../helpers/browser.ts";
import { startServing } from "../helpers/kernel.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";
import { holdStreamScript } from "./_hold_stream.ts";

const REASON = "unsafe on entering AUTO";
const LINE = `Mode FAULT: AUTO asked; superseded by AUTO->FAULT: ${REASON}`;

/** The page's global object inside page.evaluate (no DOM library in Deno's type checker). */
// deno-lint-ignore no-explicit-any
type Held = any;

async function switchTo(page: Page, mode: string, result: RegExp): Promise<void> {
  await page.locator(`#mode-buttons [data-mode="${mode}"]`).click();
  await waitForText(page, "#mode-result", result);
}

Deno.test({
  name:
    "Operator console: AUTO asked and superseded by a listener's FAULT shows 'Mode FAULT: AUTO asked; superseded by AUTO->FAULT: <reason>', whether the mode events come before the answer or after it",
  ignore: chromiumMissing(),
  fn: async () => {
    const dir = await TreeDir.create();
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const rt = await startServing(automationConfig(tree));
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await page.addInitScript(holdStreamScript('"new_mode":"AUTO"'));
      await page.goto(`http://127.0.0.1:${rt.http!.port}/`);
      await waitForText(page, "#conn", /^Live$/);
      await switchTo(page, "MANUAL", /^Mode MANUAL$/);

      const forced: Promise<boolean>[] = [];
      rt.modes.onModeChange(({ current }) => {
        if (current === "AUTO") forced.push(rt.modes.forceFault(REASON));
      });

      // The events first: the answer waits until the header says FAULT.
      await page.route("**/v0/mode", async (route) => {
        const response = await route.fetch();
        await waitForText(page, "#mode", /^FAULT$/);
        await route.fulfill({ response });
      });
      await switchTo(page, "AUTO", new RegExp(`^${LINE}$`));
      await page.unroute("**/v0/mode");
      assert.equal(forced.length, 1, "the listener forced FAULT");
      assert.equal(await forced[0], true);
      assert.equal(rt.modes.current(), "FAULT");
      assert.match(await page.locator("#mode-result").getAttribute("class") ?? "", /\bwarn\b/);
      // Leaving FAULT moves on: the line says that answer, without a word of supersession.
      await switchTo(page, "MANUAL", /^Mode MANUAL$/);

      // The answer first: the event stream is held until the answer is shown.
      await page.evaluate(() => (globalThis as Held).__streamHeld = true);
      await switchTo(page, "AUTO", new RegExp(`^${LINE}$`));
      await page.waitForFunction(() => (globalThis as Held).__markHeld === true);
      await page.evaluate(() => (globalThis as Held).__resumeStream());
      await page.waitForFunction(() => (globalThis as Held).__marksParsed >= 2);
      // The event handler acts on it in the same task it parses it: done by the next task.
      await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)));
      await waitForText(page, "#mode", /^FAULT$/);
      assert.equal(await page.locator("#mode-result").textContent(), LINE);
      assert.equal(forced.length, 2);
      assert.equal(await forced[1], true);
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await rt.stop();
      await dir.dispose();
    }
  },
});
