/**
 * The operator console's Runs view keeps a marker being typed through a failed read: the runtime
 * restarting (its API gone for a moment) used to replace the view with the error, forms and all,
 * and build the forms anew, empty, once it answered again (when the read fails for another reason
 * than a restart, the run is still open and the marker can be sent as typed). The real runtime with the simulated
 * provider, stopped and started again on the same port and data directory; the page in headless
 * Chromium.
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
import { simRuntimeConfig } from "../helpers/sim_config.ts";

Deno.test({
  name: "Operator console keeps a marker being typed through a failed read (the runtime away)",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-runs-restart-" });
    const config = `${dir}/runtime.yaml`;
    const [browser, first] = await launchChromiumAlongside(
      startRuntimeChildOnFreePort(async (port) => {
        await Deno.writeTextFile(
          config,
          `runtime: {name: runs-restart-test, data_dir: ${dir}/data}
http:
  port: ${port}
${simRuntimeConfig()}`,
        );
        return { config, port };
      }),
      (r) => r.stop(),
    );
    let rt: RuntimeChild | null = first;
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors = collectPageErrors(page);
      const type = page.locator("#marker-type");
      const payload = page.locator("#marker-payload");
      await step("a run is open and a marker half typed", async () => {
        await page.goto(`${first.base}/#runs`);
        await page.locator('#run-forms button[type="submit"]').waitFor({ timeout: PAGE_WAIT_MS });
        await page.locator("#run-label").fill("restart probe");
        await page.locator('#run-forms button[type="submit"]').click();
        await waitForText(page, "#runs-result", /^Run \S+ opened\.$/);
        await type.fill("valve_opened");
        await payload.fill('{"valve": "v1"');
      });
      await step("the runtime goes away: the read fails, the form stays", async () => {
        await first.stop();
        rt = null;
        await waitForText(page, "#runs", /No answer from the runtime/);
        assert.strictEqual(await type.count(), 1, "the error replaced the marker form");
        assert.strictEqual(await type.inputValue(), "valve_opened", "the marker type was wiped");
        assert.strictEqual(await payload.inputValue(), '{"valve": "v1"');
      });
      await step(
        "the runtime is back: the run it left open is abandoned, the list says so",
        async () => {
          rt = await startRuntimeChild({ config, port: first.port });
          // A restart closes the run it found open (`abandoned`): its marker form goes with it.
          await waitForText(page, "#runs-list", /closed \(abandoned\)/);
          await page.locator("#run-label").waitFor({ timeout: PAGE_WAIT_MS });
          assert.strictEqual(await type.count(), 0);
        },
      );
      // The reads that failed while the runtime was away are logged by the browser.
      assert.deepStrictEqual(
        errors.filter((e) => !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(e)),
        [],
      );
    } finally {
      await browser.close();
      await (rt as RuntimeChild | null)?.stop();
    }
  },
});
