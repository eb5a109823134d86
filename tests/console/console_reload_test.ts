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
  type PageGlobal,
  waitForText,
} from "../helpers/browser.ts";
import { MAX_PROVIDER_BADGES } from "../../console/status.js";
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
        // A new value half entered in another parameter's form stays through the reload.
        const typed = page.locator('form[data-parameter="target_temp"] input');
        await typed.fill("55");

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
        assert.strictEqual(
          await typed.inputValue(),
          "55",
          "what the operator typed in target_temp's form was wiped by the reload",
        );
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
          /Not started/,
        );
        assert.match(text, /LifecycleDOWN/);
        assert.match(
          text,
          /Not startedprovider ghost0 failed to start at a configuration reload \(cannot start provider 'ghost0'/,
        );
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
    "Operator console keeps a half-filled function form when a reload adds a provider beside its device",
  ignore: chromiumMissing(),
  fn: async () => {
    const demo = await Deno.readTextFile(`${REPO}examples/demo.yaml`);
    const sim0 = /\n {2}- id: sim0\n(?: {4}.*\n)+/.exec(demo)?.[0];
    assert.ok(sim0, "the demo declares sim0");
    await withCheckoutMirror(demo, async (dir) => {
      const [browser, rt] = await launchChromiumAlongside(
        startRuntimeInMirror(dir),
        (r) => r.stop(),
      );
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const errors = collectPageErrors(page);
        await page.goto(`${rt.base}/#devices`);
        const duty = page.locator("#fn-sim0-motorctl0-10-arg-duty");
        await duty.waitFor({ timeout: PAGE_WAIT_MS });
        // Half filled: the duty typed, the motor not yet; a check refusal shown beside the form.
        await duty.fill("0.25");
        const form = page.locator('form[data-fn="sim0/motorctl0/10"]');
        await form.locator('button[type="submit"]').click();
        await waitForText(page, 'form[data-fn="sim0/motorctl0/10"] .result', /Not sent/);

        await Deno.writeTextFile(
          `${dir}/config.yaml`,
          demo.replace(sim0, sim0 + sim0.replace("- id: sim0", "- id: sim1")),
        );
        rt.signal("SIGHUP");
        await waitFor("the reload summary", () => /config reload: /.test(rt.stderr()));
        await page.locator('article[data-device="sim1/motorctl0"]').waitFor({
          timeout: PAGE_WAIT_MS,
        });
        assert.strictEqual(
          await duty.inputValue(),
          "0.25",
          "what the operator typed in sim0's form was wiped by the reload",
        );
        assert.match(await form.locator(".result").textContent() ?? "", /Not sent/);
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
    "Operator console's header stays short when a reload brings the machine to 40 providers, 39 down",
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
        // A laptop's screen: the header is sticky, so what it takes the views never get.
        const viewport = { width: 1024, height: 700 };
        const page = await browser.newPage({ viewport });
        const errors = collectPageErrors(page);
        await page.goto(`${rt.base}/#devices`);
        await waitForText(page, "#providers", /sim0 AVAILABLE/);
        let ghosts = "";
        for (let n = 1; n < 40; n++) {
          ghosts += `  - id: line${String(n).padStart(2, "0")}\n    command: ./no-such-provider\n`;
        }
        await Deno.writeTextFile(
          `${dir}/config.yaml`,
          demo.replace("\npolling:\n", `${ghosts}\npolling:\n`),
        );
        rt.signal("SIGHUP");
        await waitFor("the reload summary", () => /config reload: /.test(rt.stderr()));
        const text = await waitForText(page, "#providers", /line39|of 40 AVAILABLE/);
        const r = await page.evaluate(() => {
          const d = (globalThis as PageGlobal).document;
          return {
            header: d.querySelector("header.machine").getBoundingClientRect().height,
            badges: d.querySelectorAll("#providers .badge").length,
          };
        });
        assert.ok(
          r.header <= viewport.height / 2,
          `the sticky header is ${r.header} px tall, of ${viewport.height}: ${text}`,
        );
        assert.ok(r.badges <= MAX_PROVIDER_BADGES, `${r.badges} badges`);
        // What is down is named (the first ones), and how many: the Health view has them all.
        assert.match(text, /1 of 40 AVAILABLE/);
        assert.match(text, /line01 UNAVAILABLE/);
        assert.match(text, new RegExp(`${39 - (MAX_PROVIDER_BADGES - 1)} more`));
        await page.locator('#providers a[href="#health"]').click();
        await page.locator('section[data-provider="line39"]').waitFor({ timeout: PAGE_WAIT_MS });
        assert.deepStrictEqual(errors, []);
      } finally {
        await browser.close();
        await rt.stop();
      }
    });
  },
});
