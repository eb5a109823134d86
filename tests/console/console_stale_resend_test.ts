/**
 * The operator console sends a refused command (401) again with the token the operator then
 * enters only within RESEND_WITHIN_MS of the first try (console/api.js): a mode change the
 * operator asked for and came back to the token prompt for minutes later does not act on a
 * machine that moved on; a prompt answered at once still sends it. An E-STOP is sent with the
 * token however late it comes: a stop is always the safe direction.
 *
 * The 401 is the runtime's answer to the command sent with a token it does not know, substituted by
 * the page's network route once per command: the runtime's own revocation (a reload replacing the
 * token) also ends the page's event stream, whose 401 opens the same prompt at a moment the test
 * could not order against the click. The page's clock is Playwright's, so the
 * minutes pass without waiting for them.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import {
  chromiumMissing,
  collectPageErrors,
  launchChromiumAlongside,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { startRuntimeWithConfigOnFreePort } from "../helpers/runtime_process.ts";
import { simRuntimeConfig } from "../helpers/sim_config.ts";

const ADMIN = "console-admin-token-8a1b2c3d";
const OPERATOR = "console-operator-token-4e5f6a7b";

Deno.test({
  name:
    "Operator console: a command refused for its token is sent again only if the token comes within RESEND_WITHIN_MS",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-resend-" });
    const yaml = (port: number) =>
      `runtime: {name: resend-test, data_dir: ${dir}/data}
http:
  port: ${port}
  auth_enabled: true
  auth_exempt_loopback: false
  tokens:
    - {name: shift, role: operator, token: ${OPERATOR}}
${simRuntimeConfig()}`;
    const [browser, rt] = await launchChromiumAlongside(
      startRuntimeWithConfigOnFreePort(`${dir}/runtime.yaml`, yaml, {
        env: { RUNTIME_API_TOKEN: ADMIN },
        token: ADMIN,
      }),
      (r) => r.stop(),
    );
    const mode = async () => {
      const r = await apiFetch(`${rt.base}/v0/mode`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      return (await r.json()).mode;
    };
    try {
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await page.clock.install();
      // Each POST /v0/mode that `refuseNext` allows is answered 401 (as for a token revoked).
      let refuseNext = 0;
      let modePosts = 0;
      await page.route("**/v0/mode", async (route) => {
        if (route.request().method() !== "POST") return await route.continue();
        modePosts++;
        if (refuseNext > 0) {
          refuseNext--;
          // The runtime's own answer to a token it does not know (nothing acts).
          const headers = { ...route.request().headers(), authorization: "Bearer revoked-token" };
          return await route.fulfill({ response: await route.fetch({ headers }) });
        }
        await route.continue();
      });
      const enterToken = async () => {
        await page.locator("#token-dialog[open]").waitFor();
        await page.locator("#token-input").fill(OPERATOR);
        await page.getByRole("button", { name: "Use token" }).click();
        await page.locator("#token-dialog").waitFor({ state: "hidden" });
      };

      await step("the operator token opens the page", async () => {
        await page.goto(`${rt.base}/`);
        await enterToken();
        await waitForText(page, "#runtime-name", /^resend-test$/);
        await waitForText(page, "#mode", /^IDLE$/);
      });

      await step("a prompt answered minutes later does not send the command", async () => {
        refuseNext = 1;
        await page.locator('#mode-buttons [data-mode="MANUAL"]').click();
        await page.locator("#token-dialog[open]").waitFor();
        await page.clock.fastForward(5 * 60_000);
        await enterToken();
        const text = await waitForText(page, "#mode-result", /^401/);
        assert.match(
          text,
          /^401 UNAUTHENTICATED: POST \/v0\/mode was not sent again: the token came 30\d s after it was refused \(more than 15 s\); send it again if it still applies/,
        );
        // Before: the prompt's token sent it again, and the machine went to MANUAL.
        assert.equal(modePosts, 1, "not sent again");
        assert.equal(await mode(), "IDLE");
      });

      await step("a prompt answered at once sends it again", async () => {
        refuseNext = 1;
        await page.locator('#mode-buttons [data-mode="MANUAL"]').click();
        await enterToken();
        await waitForText(page, "#mode-result", /^Mode MANUAL$/);
        assert.equal(await mode(), "MANUAL");
      });
      await step(
        "an E-STOP refused for its token is sent with the token however late it comes",
        async () => {
          // A stop is always the safe direction: the operator who pressed it and then found the
          // token wants the machine stopped, not told to press again.
          let estopPosts = 0;
          let refuseEstop = true;
          await page.route("**/v0/estop", async (route) => {
            if (route.request().method() !== "POST") return await route.continue();
            estopPosts++;
            if (refuseEstop) {
              refuseEstop = false;
              const headers = {
                ...route.request().headers(),
                authorization: "Bearer revoked-token",
              };
              return await route.fulfill({ response: await route.fetch({ headers }) });
            }
            await route.continue();
          });
          await page.locator("#estop").click();
          await page.locator("#token-dialog[open]").waitFor();
          await page.clock.fastForward(5 * 60_000);
          await enterToken();
          await waitForText(page, "#mode", /^FAULT$/);
          assert.equal(estopPosts, 2, "sent again with the token");
          assert.equal(await mode(), "FAULT");
        },
      );
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      assert.equal(await rt.stop(), 0, rt.stderr());
      await Deno.remove(dir, { recursive: true });
    }
  },
});
