/**
 * The Health view's ages -- a provider's "Last seen" and "Up for", each device's "Last poll" --
 * move in 1 s steps: the API's ages are carried forward on the page's monotonic clock every second
 * between two reads of the health (every 2 s), as the "Next restart" countdown is
 * (console_restart_countdown_test.ts), not shown only as each read answers them. The page's clock
 * is Playwright's, moved a second at a time; one health read is answered and the
 * others are held, then refused (503), so only the page's own tick moves them.
 *
 * The runtime in process with the simulated provider, served over real HTTP; the page in headless
 * Chromium.
 */
import assert from "node:assert/strict";
import { chromiumMissing, launchChromium, waitForText } from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { answerHealthOnce } from "./_held_health.ts";

const FACT = (name: string) => `[data-provider="sim0"] dt:text-is("${name}") + dd`;
/** The "Last poll" cell of device tempctl0 (the third column of its row). */
const LAST_POLL = '[data-provider="sim0"] tr:has(> td:text-is("tempctl0")) > td:nth-child(3)';
/** An age as the console writes it in seconds (formatAge below 120 s), "ago" or not. */
const SECONDS = /^(\d+(?:\.\d)?) s(?: ago)?$/;

Deno.test({
  name: "Operator console: the Health view's last seen, up for and last poll age in 1 s steps",
  ignore: chromiumMissing(),
  fn: async () => {
    const rt = await startServing(testConfig({ providers: [simProvider("sim0")] }));
    const browser = await launchChromium();
    try {
      await waitFor(
        "tempctl0 polled",
        () => (rt.cache.signal("sim0", "tempctl0", "tc1_temp") ?? null) !== null,
      );
      const page = await browser.newPage();
      // The page's clock stands still but when the test moves it: each second is exactly one.
      await page.clock.install();
      await page.clock.pauseAt(Date.now() + 1000);
      // One health read answered; the others held until it is shown, then refused (503), so
      // what moves the ages is the page's own 1 s tick alone (_held_health.ts).
      const health = await answerHealthOnce(page);
      await page.goto(`http://127.0.0.1:${rt.http!.port}/#health`);
      const cells = [FACT("Last seen"), FACT("Up for"), LAST_POLL];
      for (const cell of cells) await waitForText(page, cell, SECONDS);
      health.release();
      const read = async () =>
        await Promise.all(cells.map(async (c) => await page.locator(c).textContent() ?? ""));
      const shown: string[][] = [];
      for (let i = 0; i < 4; i++) {
        await page.clock.runFor(1000);
        shown.push(await read());
      }
      const seconds = (text: string) => {
        const m = SECONDS.exec(text);
        assert.ok(m, `an age in seconds: "${text}"`);
        return Number(m[1]);
      };
      for (let c = 0; c < cells.length; c++) {
        const steps = shown.slice(1).map((row, i) =>
          Math.round((seconds(row[c]!) - seconds(shown[i]![c]!)) * 10) / 10
        );
        assert.deepEqual(
          steps,
          [1, 1, 1],
          `${cells[c]} moves a second each second: ${shown.map((r) => r[c]).join(", ")}`,
        );
      }
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
