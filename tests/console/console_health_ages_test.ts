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
import {
  chromiumMissing,
  installStoppedClock,
  openChromium,
  waitForText,
} from "../helpers/browser.ts";
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
    const browser = await openChromium();
    try {
      await waitFor(
        "tempctl0 polled",
        () => (rt.cache.signal("sim0", "tempctl0", "tc1_temp") ?? null) !== null,
      );
      const page = await browser.newPage();
      // The page's clock stands still but when the test moves it: each second is exactly one.
      await installStoppedClock(page);
      // One health read answered; the others held until it is shown, then refused (503), so
      // what moves the ages is the page's own 1 s tick alone (_held_health.ts).
      const health = await answerHealthOnce(page);
      await page.goto(`http://127.0.0.1:${rt.http!.port}/#health`);
      const cells = [FACT("Last seen"), FACT("Up for"), LAST_POLL];
      for (const cell of cells) await waitForText(page, cell, SECONDS);
      health.release();
      const read = async () =>
        await Promise.all(cells.map(async (c) => await page.locator(c).textContent() ?? ""));
      // Move the page's clock so "Up for" reads 8.5 s or more: the four steps below then cross
      // 10 s, where formatAge turns from tenths to whole seconds, in every run (a slow start put
      // it there by chance once, and the exact comparison failed).
      const upFor = Number(
        SECONDS.exec(await page.locator(FACT("Up for")).textContent() ?? "")?.[1],
      );
      assert.ok(Number.isFinite(upFor), "Up for reads in seconds");
      if (upFor < 8.5) await page.clock.runFor(Math.round((8.5 - upFor) * 1000));
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
        const ages = shown.map((row) => row[c]!);
        for (let i = 1; i < ages.length; i++) {
          const step = Math.round((seconds(ages[i]!) - seconds(ages[i - 1]!)) * 10) / 10;
          // Below 10 s an age is written to a tenth, from 10 s in whole seconds (formatAge): a
          // step that reaches a whole-second reading is a second give or take that rounding
          // (9.1 s -> 10 s is 0.9; 9.6 s -> 11 s is 1.4), one between tenths is exactly a second.
          const rounded = !ages[i]!.includes(".") || !ages[i - 1]!.includes(".");
          assert.ok(
            rounded ? Math.abs(step - 1) <= 0.5 : step === 1,
            `${cells[c]} moves a second each second: ${ages.join(", ")}`,
          );
        }
      }
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
