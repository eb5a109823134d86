/**
 * The operator console keys its rows, forms and DOM ids so that ids containing `/` cannot collide:
 * with provider `s0`, device `m` signal `x/speed` and device `m/x` signal `speed` both read
 * `s0/m/x/speed` when joined with `/`, and the page used to show one row's values in the other. The
 * real runtime with the scripted provider tests/console/_slash_provider.ts, the page in headless
 * Chromium.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  chromiumMissing,
  collectPageErrors,
  launchChromiumAlongside,
  PAGE_WAIT_MS,
  type PageGlobal,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { startRuntimeWithConfigOnFreePort } from "../helpers/runtime_process.ts";
import { REPO } from "../helpers/sim_config.ts";
import { waitFor } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { M_2FX_SPEED, MX_SPEED } from "./_slash_provider.ts";

/**
 * The value cell of a device's signal, by the exact ids (not by the joined handle): a Playwright
 * selector (`:text-is`).
 */
const valueCell = (device: string, signal: string) =>
  `article.device[data-device="s0/${device}"] tr:has(> th .id:text-is("${signal}")) td.value`;

/** Resolves once the number `selector` (a CSS selector) shows reaches `atLeast`. */
async function waitForCount(page: Page, selector: string, atLeast: number): Promise<void> {
  await page.waitForFunction(
    ([sel, n]) => Number((globalThis as PageGlobal).document.querySelector(sel)?.textContent) >= n,
    [selector, atLeast] as const,
    { timeout: PAGE_WAIT_MS },
  );
}

/** Device m's counter as the runtime holds it. */
async function counterAtRuntime(base: string): Promise<number> {
  const res = await apiFetch(`${base}/v0/state/s0/m?signal_id=${encodeURIComponent("x/speed")}`);
  const body = await res.json();
  return body.values[0]?.value?.double ?? 0;
}

const COUNTER = 'td.value[data-probe="counter"]';

Deno.test({
  name: "Operator console shows each signal's own value when device ids contain '/'",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-keys-" });
    const yaml = (port: number) =>
      `runtime: {name: keys-test, data_dir: ${dir}/data}
http:
  port: ${port}
providers:
  - id: s0
    command: ${JSON.stringify(Deno.execPath())}
    args: [run, --quiet, --allow-env, ${JSON.stringify(`${REPO}tests/console/_slash_provider.ts`)}]
polling:
  interval_ms: 200
alarms:
  - id: mx_speed
    signal: s0/m/x/speed
    hi: 1000000
    message: The speed of device m/x
`;
    const [browser, rt] = await launchChromiumAlongside(
      startRuntimeWithConfigOnFreePort(`${dir}/runtime.yaml`, yaml),
      (r) => r.stop(),
    );
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors = collectPageErrors(page);
      await page.goto(`${rt.base}/`);

      await step("every device has its card", async () => {
        await page.waitForFunction(
          () => (globalThis as PageGlobal).document.querySelectorAll("article.device").length === 3,
          undefined,
          { timeout: PAGE_WAIT_MS },
        );
        const shown = await page.locator("article.device").evaluateAll((els) =>
          els.map((e) => e.getAttribute("data-device"))
        );
        assert.deepEqual(shown, ["s0/m", "s0/m/x", "s0/m_2fx"]);
      });

      await step("the two rows that join to s0/m/x/speed show their own values", async () => {
        // Device m's signal counts up on every poll: wait until the page has shown it change
        // twice, so the stream has delivered several of its updates.
        const first = Number(await waitForText(page, valueCell("m", "x/speed"), /^\d+$/));
        // A plain CSS name for the counter's cell (page.waitForFunction runs querySelector).
        await page.locator(valueCell("m", "x/speed")).evaluate((el: PageGlobal) =>
          el.dataset.probe = "counter"
        );
        await waitForCount(page, COUNTER, first + 2);
        assert.equal(await page.locator(valueCell("m/x", "speed")).textContent(), `${MX_SPEED}`);
        assert.equal(
          await page.locator(valueCell("m_2fx", "speed")).textContent(),
          `${M_2FX_SPEED}`,
        );
      });

      await step("an alarm on s0/m/x/speed shows device m/x's value only", async () => {
        // The runtime reads the alarm's handle as device m/x, signal speed (provider and signal
        // ids have no '/'): device m's counter must never reach the alarm's row. Every text the
        // row's value shows is recorded while the counter advances.
        await page.locator('.tabs a[href="#alarms"]').click();
        const value = 'tr[data-alarm="mx_speed"] .a-value';
        await waitForText(page, value, new RegExp(`^${MX_SPEED}$`));
        await page.evaluate((sel) => {
          const g: PageGlobal = globalThis;
          const el = g.document.querySelector(sel);
          g.alarmValuesShown = [el.textContent];
          new g.MutationObserver(() => g.alarmValuesShown.push(el.textContent)).observe(el, {
            childList: true,
            characterData: true,
            subtree: true,
          });
        }, value);
        // Five more polls of the counter at the runtime: their updates went out on the stream.
        const start = await counterAtRuntime(rt.base);
        await waitFor(
          "five more counter polls",
          async () => await counterAtRuntime(rt.base) >= start + 5,
          PAGE_WAIT_MS,
        );
        const shown = await page.evaluate(() => (globalThis as PageGlobal).alarmValuesShown);
        assert.deepEqual([...new Set(shown)], [`${MX_SPEED}`]);
      });

      await step("DOM ids are unique and each label names its own form's field", async () => {
        const problems = await page.evaluate(() => {
          const d: PageGlobal = (globalThis as PageGlobal).document;
          const out: string[] = [];
          const seen = new Set<string>();
          for (const el of d.querySelectorAll("[id]")) {
            if (seen.has(el.id)) out.push(`duplicate id ${el.id}`);
            seen.add(el.id);
          }
          for (const form of d.querySelectorAll("form[data-fn]")) {
            for (const label of form.querySelectorAll("label[for]")) {
              const target = d.getElementById(label.getAttribute("for"));
              if (target === null || !form.contains(target)) {
                out.push(
                  `${
                    form.getAttribute("data-fn")
                  }: label ${label.textContent} names another form's field`,
                );
              }
            }
          }
          for (const card of d.querySelectorAll("article.device")) {
            const title = d.getElementById(card.getAttribute("aria-labelledby"));
            if (title === null || !card.contains(title)) {
              out.push(`${card.getAttribute("data-device")}: titled by another card`);
            }
          }
          return out;
        });
        assert.deepEqual(problems, []);
      });

      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      assert.equal(await rt.stop(), 0, rt.stderr());
      await Deno.remove(dir, { recursive: true });
    }
  },
});
