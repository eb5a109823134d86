/**
 * An incident's download (Download CSV / JSONL: a GET the page fetches with the token) asks for
 * the token when refused 401, even after the operator cancelled a prompt: that cancel only stops
 * the page's background reads from asking at every refresh, as a command already asks
 * (console_estop_declined_token_test.ts). Before, the download failed 401 at once with no prompt.
 * The pair: a reload replaces the operator's token (rotated) while an incident's page is open; the
 * next refresh's prompt is cancelled; then the operator downloads the record. Cancelled again, the
 * page says the download was not made and saves nothing; with the token entered it is saved.
 *
 * The runtime as a real process with the simulated provider, the page in headless Chromium.
 */
import assert from "node:assert/strict";
import type { Download } from "playwright-core";
import {
  chromiumMissing,
  collectPageErrors,
  PAGE_WAIT_MS,
  type PageGlobal,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { waitFor } from "../helpers/kernel.ts";
import { enterToken, rotateAndCancel, shiftTokenYaml, withConsoleRuntime } from "./_token_rig.ts";

const ADMIN = "console-admin-token-2a3b4c5d";
const OPERATOR = "console-operator-token-6e7f8a9b";
const ROTATED = "console-operator-token-rotated-0c1d2e3f";

const yaml = (dir: string, port: number, token: string) =>
  shiftTokenYaml({
    dir,
    port,
    name: "download-token-test",
    token,
    extra: "history: {incident_before_s: 1, incident_after_s: 1}\n",
  });

Deno.test({
  name:
    "Operator console: an incident download refused 401 after the token prompt was cancelled asks for the token; cancelled again, nothing is saved",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const prefix = "console-download-token-";
    await withConsoleRuntime({ prefix, admin: ADMIN, token: OPERATOR, yaml }, async (r) => {
      const { browser, rt } = r;
      const admin = (path: string, init: RequestInit = {}) =>
        fetch(`${rt.base}${path}`, { ...init, headers: { authorization: `Bearer ${ADMIN}` } });
      const stop = await admin("/v0/estop", { method: "POST" });
      assert.equal(stop.status, 200, await stop.text());
      // Written incident_after_s (1 s) after the e-stop.
      const id: string = await waitFor("the e-stop's incident record", async () => {
        const r = await admin("/v0/incidents");
        return (await r.json()).incidents?.[0]?.incident_id as string | undefined;
      }, PAGE_WAIT_MS);
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      const downloads: Download[] = [];
      page.on("download", (d) => downloads.push(d));

      await step("the operator's token opens the incident's page", async () => {
        await page.goto(`${rt.base}/`);
        await enterToken(page, OPERATOR);
        // The inventory read (the units) first: its arrival loads an incident's page again,
        // which after the rotation below would be refused and replace the page.
        await page.locator("[data-device]").first().waitFor({ state: "attached" });
        await page.evaluate(
          (hash) => (globalThis as PageGlobal).location.hash = hash,
          `#incidents/${encodeURIComponent(id)}`,
        );
        await waitForText(page, "#incidents .incident-title", /^E-stop: /);
      });

      await step("a reload rotates the token: the page asks, the operator cancels", async () => {
        await rotateAndCancel(page, r, ROTATED);
      });

      const result = "#incidents .downloads .result";
      await step("Download CSV asks for the token; cancelled, nothing is saved", async () => {
        await page.getByRole("button", { name: "Download CSV" }).click();
        // Either the prompt opens, or the download fails at once without one.
        await page.locator(`#token-dialog[open], ${result}.error`).first().waitFor();
        assert.equal(
          await page.locator("#token-dialog[open]").count(),
          1,
          `no token prompt for the refused download: ${await page.locator(result).textContent()}`,
        );
        await page.getByRole("button", { name: "Cancel" }).click();
        await waitForText(
          page,
          `${result}.error`,
          /^Not downloaded: the token prompt was cancelled \(401 UNAUTHENTICATED: .*\)\. Press Download CSV again to enter the token\.$/,
        );
      });

      await step("Download CSV again, the token entered: the record is saved", async () => {
        const [download] = await Promise.all([
          page.waitForEvent("download", { timeout: PAGE_WAIT_MS }),
          (async () => {
            await page.getByRole("button", { name: "Download CSV" }).click();
            await page.locator("#token-dialog[open]").waitFor();
            await page.locator("#token-input").fill(ROTATED);
            await page.getByRole("button", { name: "Use token" }).click();
          })(),
        ]);
        assert.equal(download.suggestedFilename(), `${id}.csv`);
        const csv = await Deno.readTextFile(await download.path());
        const api = await admin(`/v0/incidents/${encodeURIComponent(id)}?format=csv`);
        assert.equal(csv, await api.text(), "the download is the API's CSV export");
        await waitForText(page, result, /^Saved .*\.csv \(\d+ bytes\)\.$/);
        assert.equal(downloads.length, 1, "the cancelled download saved nothing");
      });
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    });
  },
});
