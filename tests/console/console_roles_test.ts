/**
 * The operator console with a viewer token: a refused role is shown as the runtime words it (the
 * role needed, the token's name and role) with how to go on, the "Enter API token" button is
 * offered to switch tokens, and the e-stop still works for the viewer.
 */
import { apiFetch } from "../helpers/openapi_check.ts";
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  launchChromiumAlongside,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { startRuntimeWithConfigOnFreePort } from "../helpers/runtime_process.ts";
import { simRuntimeConfig } from "../helpers/sim_config.ts";

const ADMIN = "console-admin-token-1c2d3e4f";
const VIEWER = "console-viewer-token-5a6b7c8d";
const OPERATOR = "console-operator-token-9e0f1a2b";

Deno.test({
  name:
    "Operator console shows a refused role with the role needed, offers to switch token, and lets a viewer stop",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-roles-" });
    const yaml = (port: number) =>
      `runtime: {name: roles-test, data_dir: ${dir}/data}
http:
  port: ${port}
  auth_enabled: true
  auth_exempt_loopback: false
  tokens:
    - {name: dash, role: viewer, token: ${VIEWER}}
    - {name: shift, role: operator, token: ${OPERATOR}}
${simRuntimeConfig()}`;
    const [browser, rt] = await launchChromiumAlongside(
      startRuntimeWithConfigOnFreePort(`${dir}/runtime.yaml`, yaml, {
        env: { RUNTIME_API_TOKEN: ADMIN },
        token: ADMIN,
      }),
      (r) => r.stop(),
    );
    try {
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await step("the viewer token opens the page", async () => {
        await page.goto(`${rt.base}/`);
        await page.locator("#token-dialog[open]").waitFor();
        await page.locator("#token-input").fill(VIEWER);
        await page.getByRole("button", { name: "Use token" }).click();
        await page.locator("#token-dialog").waitFor({ state: "hidden" });
        await waitForText(page, "#runtime-name", /^roles-test$/);
        assert.equal(await page.locator("#token-button").isVisible(), false);
      });

      await step("a mode change is refused with the role needed and a way on", async () => {
        await page.locator('#mode-buttons [data-mode="MANUAL"]').click();
        const text = await waitForText(page, "#mode-result", /^403/);
        assert.equal(
          text,
          "403 PERMISSION_DENIED: POST /v0/mode: role operator required (token 'dash' has role " +
            'viewer) — This token may not do this: use "Enter API token" to switch to a token ' +
            "with that role.",
        );
        assert.equal(await page.locator("#token-button").isVisible(), true);
        await waitForText(page, "#mode", /^IDLE$/);
      });

      await step("the viewer may trigger the e-stop", async () => {
        await page.locator("#estop").click();
        await page.locator("#estop-result.estop-result:not(.pending)").waitFor();
        assert.equal(await page.locator("#estop-result.failed").count(), 0);
        await waitForText(page, "#mode", /^FAULT$/);
      });

      await step("switching to the operator token through the button clears the stop", async () => {
        await page.locator("#token-button").click();
        await page.locator("#token-dialog[open]").waitFor();
        await page.locator("#token-input").fill(OPERATOR);
        await page.getByRole("button", { name: "Use token" }).click();
        await page.locator("#token-dialog").waitFor({ state: "hidden" });
        const res = await apiFetch(`${rt.base}/v0/estop/clear`, {
          method: "POST",
          headers: { authorization: `Bearer ${VIEWER}` },
        });
        await res.body?.cancel();
        assert.equal(res.status, 403, "the viewer itself still may not clear");
        assert.equal(
          await page.evaluate(() => sessionStorage.getItem("runtime-console.api-token")),
          OPERATOR,
        );
      });
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      assert.equal(await rt.stop(), 0, rt.stderr());
      await Deno.remove(dir, { recursive: true });
    }
  },
});
