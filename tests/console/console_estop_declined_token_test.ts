/**
 * An operator's command asks for the token again after the operator cancelled the prompt: the
 * prompt's cancel only stops the page's background reads from asking at every refresh. The pair: a
 * reload replaces the operator's token (rotated) while the page is open; its next read is refused,
 * the prompt opens, the operator cancels it (the new token is not at hand); then presses E-STOP.
 * The stop is refused 401 too, and must ask for the token (and then be sent, however late:
 * docs/console.md "Token"), not fail without a prompt.
 *
 * The runtime as a real process with the simulated provider, the page in headless Chromium.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  pauseClockNow,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { enterToken, rotateAndCancel, shiftTokenYaml, withConsoleRuntime } from "./_token_rig.ts";

const ADMIN = "console-admin-token-7d1e2f3a";
const OPERATOR = "console-operator-token-4b5c6d7e";
const ROTATED = "console-operator-token-rotated-8f9a0b1c";

const runtime = (prefix: string) => ({
  prefix,
  admin: ADMIN,
  token: OPERATOR,
  yaml: (dir: string, port: number, token: string) =>
    shiftTokenYaml({ dir, port, name: "declined-test", token }),
});

Deno.test({
  name:
    "Operator console: an E-STOP after the token prompt was cancelled (a reload rotated the token) asks for the token and stops",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    await withConsoleRuntime(runtime("console-declined-"), async (r) => {
      const page = await r.browser.newPage();
      const errors = collectPageErrors(page);
      await step("the operator's token opens the page", async () => {
        await page.goto(`${r.rt.base}/`);
        await enterToken(page, OPERATOR);
        await waitForText(page, "#conn", /^Live$/);
        await waitForText(page, "#mode", /^IDLE$/);
      });

      await step("a reload rotates the token: the page asks, the operator cancels", async () => {
        await rotateAndCancel(page, r, ROTATED);
      });

      await step("E-STOP asks for the token, and is sent with the one entered", async () => {
        await page.locator("#estop").click();
        // Either the prompt opens, or the stop fails at once without one.
        await page.locator("#token-dialog[open], #estop-result.failed").first().waitFor();
        assert.equal(
          await page.locator("#token-dialog[open]").count(),
          1,
          `no token prompt for the refused e-stop: ${await page.locator("#estop-result")
            .textContent()}`,
        );
        await page.locator("#token-input").fill(ROTATED);
        await page.getByRole("button", { name: "Use token" }).click();
        await page.locator("#estop-result.estop-result:not(.pending)").waitFor();
        assert.equal(await page.locator("#estop-result.failed").count(), 0);
        await waitForText(page, "#mode", /^FAULT$/);
      });
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    });
  },
});

Deno.test({
  name:
    "Operator console: a token entered at a command's prompt reconnects the refused event stream at once, not after its backoff",
  ignore: chromiumMissing(),
  fn: async () => {
    await withConsoleRuntime(runtime("console-declined-stream-"), async ({ browser, rt }) => {
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      // The page's timers stand still once refused (pauseClockNow below): the stream's backoff after its
      // 401 never ends by itself.
      await page.clock.install();
      await page.goto(`${rt.base}/`);
      await page.locator("#token-dialog[open]").waitFor();
      await page.getByRole("button", { name: "Cancel" }).click();
      await waitForText(page, "#conn", /^Disconnected .*401 UNAUTHENTICATED/);
      await pauseClockNow(page);
      await page.locator("#estop").click();
      await page.locator("#token-dialog[open]").waitFor();
      await page.locator("#token-input").fill(OPERATOR);
      await page.getByRole("button", { name: "Use token" }).click();
      await page.locator("#estop-result.estop-result:not(.pending)").waitFor();
      assert.equal(await page.locator("#estop-result.failed").count(), 0);
      await waitForText(page, "#conn", /^Live$/);
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    });
  },
});
