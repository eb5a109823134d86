/**
 * The operator console follows a configuration reload (SIGHUP) without a page reload: on a
 * `config_reload` event with result `applied` it re-reads everything, so a parameter the new file
 * declares appears in the Parameters view (a new declaration publishes no parameter_change of its
 * own). The demo configuration as a real `runtime` process, the page in headless Chromium.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  launchChromiumAlongside,
  PAGE_WAIT_MS,
  waitForText,
} from "../helpers/browser.ts";
import { startRuntimeInMirror, withCheckoutMirror } from "../helpers/runtime_process.ts";
import { REPO } from "../helpers/sim_config.ts";
import { waitFor } from "../helpers/kernel.ts";

Deno.test({
  name: "Operator console shows what a configuration reload declared, without a page reload",
  ignore: chromiumMissing(),
  fn: async () => {
    const demo = await Deno.readTextFile(`${REPO}examples/demo.yaml`);
    assert.match(demo, /\n {2}parameters:\n/, "the demo declares parameters");
    await withCheckoutMirror(demo, async (dir) => {
      const [browser, rt] = await launchChromiumAlongside(
        startRuntimeInMirror(dir),
        (r) => r.stop(),
      );
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const errors = collectPageErrors(page);
        await page.goto(`${rt.base}/#parameters`);
        await page.locator('form[data-parameter="target_temp"]').waitFor({ timeout: PAGE_WAIT_MS });
        assert.strictEqual(await page.locator('form[data-parameter="reload_probe"]').count(), 0);

        await Deno.writeTextFile(
          `${dir}/config.yaml`,
          demo.replace(
            "\n  parameters:\n",
            "\n  parameters:\n    - name: reload_probe\n      type: double\n      default: 1.5\n",
          ),
        );
        rt.signal("SIGHUP");
        await waitFor("the reload summary", () => /config reload: /.test(rt.stderr()));
        const probe = page.locator('form[data-parameter="reload_probe"]');
        await probe.waitFor({ timeout: PAGE_WAIT_MS });
        assert.match(await probe.locator("strong.value").textContent() ?? "", /^1\.5$/);
        assert.deepStrictEqual(errors, []);
      } finally {
        await browser.close();
        await rt.stop();
      }
    });
  },
});

Deno.test({
  name:
    "Operator console lists a provider a reload failed to start, with the reason, in the Health view",
  ignore: chromiumMissing(),
  fn: async () => {
    const demo = await Deno.readTextFile(`${REPO}examples/demo.yaml`);
    assert.match(demo, /\npolling:\n/);
    await withCheckoutMirror(demo, async (dir) => {
      const [browser, rt] = await launchChromiumAlongside(
        startRuntimeInMirror(dir),
        (r) => r.stop(),
      );
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const errors = collectPageErrors(page);
        await page.goto(`${rt.base}/#health`);
        await page.locator('section[data-provider="sim0"]').waitFor({ timeout: PAGE_WAIT_MS });
        await Deno.writeTextFile(
          `${dir}/config.yaml`,
          demo.replace(
            "\npolling:\n",
            "  - id: ghost0\n    command: ./no-such-provider\n\npolling:\n",
          ),
        );
        rt.signal("SIGHUP");
        await waitFor("the reload summary", () => /config reload: /.test(rt.stderr()));
        // The section may first show a read taken before the start failed: wait for the reason.
        const text = await waitForText(
          page,
          'section[data-provider="ghost0"]',
          /Failed to start/,
        );
        assert.match(text, /LifecycleDOWN/);
        assert.match(text, /Failed to startcannot start provider 'ghost0'/);
        assert.deepStrictEqual(errors, []);
      } finally {
        await browser.close();
        await rt.stop();
      }
    });
  },
});
