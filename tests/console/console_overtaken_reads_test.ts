/**
 * The console's loaders read through one LatestRead (console/latest_read.js): reads of a resource
 * overlap (the refresh cycle, an event, a reload's full refresh) and their answers arrive in any
 * order, so the answer of a read asked before one already shown is dropped -- a slow, older answer
 * arriving last never puts back what a newer one replaced.
 *
 * Each case holds one read's answer in the page (Playwright routes it: the runtime's answer is
 * fetched when asked, handed to the page only when the test releases it), lets a later read of the
 * same resource answer and be shown, then releases the held one. The page notes when its code has
 * read the held answer's body (an init script around Response.text); once it has read the held one, a
 * task turn in the page lets the loader finish (it applies, or drops, an answer in the microtasks
 * after its body is read), and the newer value must still be shown.
 *
 * The runtime in process with the simulated provider, served over real HTTP; the page in headless
 * Chromium.
 */
import assert from "node:assert/strict";
import type { Page, Route } from "playwright-core";
import {
  chromiumMissing,
  HELD,
  heldAnswerRead,
  NOTE_HELD_READ,
  openChromium,
  waitForText,
} from "../helpers/browser.ts";
import { startServing } from "../helpers/kernel.ts";
import { simProvider, simWithTargetTemp, testConfig } from "../helpers/sim_config.ts";
import { Api } from "../scenarios/alarms_helpers.ts";

/**
 * Holds the answer of the next GET of `path` once `arm()` is called: the runtime's answer is
 * fetched at once (what it says when asked), and handed to the page, marked, at `release()`.
 */
async function holdNextAnswer(page: Page, path: string) {
  let armed = false;
  const fetched = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  await page.route(`**${path}*`, async (route: Route) => {
    if (!armed || route.request().method() !== "GET") return await route.continue();
    armed = false;
    const answer = await route.fetch();
    fetched.resolve();
    await released.promise;
    await route.fulfill({ response: answer, headers: { ...answer.headers(), [HELD]: "1" } });
  });
  return {
    /** Holds the next read; resolves once its answer was fetched from the runtime. */
    arm: () => {
      armed = true;
      return fetched.promise;
    },
    /** Hands the held answer to the page; resolves once the page's code has read it and run on. */
    release: async () => {
      released.resolve();
      await heldAnswerRead(page);
      // The loader applies (or drops) the answer in the microtasks after its body is read: all
      // of them have run by the next task.
      await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)));
    },
  };
}

Deno.test({
  name:
    "Operator console: a parameter read answered after a newer one does not put the older value back",
  ignore: chromiumMissing(),
  fn: async () => {
    const rt = await startServing(simWithTargetTemp());
    const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      await page.addInitScript(NOTE_HELD_READ);
      const held = await holdNextAnswer(page, "/v0/parameters");
      await page.goto(`${api.base}/#parameters`);
      const VALUE = 'form[data-parameter="target_temp"] strong.value';
      await waitForText(page, VALUE, /^40$/);
      // The read a first change's event starts answers 30, held; the second change's read, 35,
      // answers first and is shown.
      const fetched = held.arm();
      assert.equal(
        (await api.post("/v0/parameters", { name: "target_temp", value: 30 })).status,
        200,
      );
      await fetched;
      assert.equal(
        (await api.post("/v0/parameters", { name: "target_temp", value: 35 })).status,
        200,
      );
      await waitForText(page, VALUE, /^35$/);
      await held.release();
      assert.equal(
        await page.locator(VALUE).textContent(),
        "35",
        "the older read (30), answered last, was shown over the newer one",
      );
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});

Deno.test({
  name:
    "Operator console: a run list read answered after a newer one does not take back the run it shows",
  ignore: chromiumMissing(),
  fn: async () => {
    const rt = await startServing(testConfig({ providers: [simProvider("sim0")] }));
    const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      await page.addInitScript(NOTE_HELD_READ);
      const held = await holdNextAnswer(page, "/v0/runs");
      await page.goto(`${api.base}/#runs`);
      await waitForText(page, "#runs-list", /No runs yet\./);
      // The refresh cycle's next read answers "no runs", held (the cycle waits for it); a run is
      // opened, and the read the operator's return to the view starts shows it.
      await held.arm();
      const opened = await api.post("/v0/runs", { experiment_label: "overtaken" });
      assert.equal(opened.status, 200, JSON.stringify(opened.json));
      await page.locator('.tabs a[href="#health"]').click();
      await page.locator('.tabs a[href="#runs"]').click();
      await waitForText(page, "#runs-list", /overtaken/);
      await held.release();
      assert.match(
        await page.locator("#runs-list").textContent() ?? "",
        /overtaken/,
        "the older read (no runs), answered last, was shown over the newer one",
      );
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
