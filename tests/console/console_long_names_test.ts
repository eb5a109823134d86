/**
 * The operator console fits a tablet's screen whatever the length of the names it shows: a
 * runtime name, provider id, device id, label, signal id, unit, alarm id and message of one long
 * word each (no space to break at) used to widen the page past the screen, pushing the mode
 * buttons out of sight and the Devices view's cards and the alarms' buttons off to the right.
 * The real runtime with the scripted provider tests/console/_long_names_provider.ts, the page in
 * headless Chromium at 800 px.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  launchChromiumAlongside,
  PAGE_WAIT_MS,
  type PageGlobal,
  sequentialSteps,
} from "../helpers/browser.ts";
import { startRuntimeWithConfigOnFreePort } from "../helpers/runtime_process.ts";
import { REPO } from "../helpers/sim_config.ts";
import { DEVICE_ID, longWord, SIGNAL_ID } from "./_long_names_provider.ts";

/** A tablet held upright. */
const VIEWPORT = { width: 800, height: 1000 };
/** The longest id the configuration admits (alarms, providers). */
const MAX_ID_CHARS = 64;

Deno.test({
  name: "Operator console keeps every view within a tablet's width when names are very long words",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-long-names-" });
    const providerId = longWord("provider_of_the_second_vacuum_line", MAX_ID_CHARS);
    const alarmId = longWord("alarm_upstream_chamber_pressure_high", MAX_ID_CHARS);
    const yaml = (port: number) =>
      `runtime: {name: ${
        longWord("runtime_of_the_second_vacuum_line_rig", 100)
      }, data_dir: ${dir}/data}
http:
  port: ${port}
providers:
  - id: ${providerId}
    command: ${JSON.stringify(Deno.execPath())}
    args: [run, --quiet, --allow-env, ${
        JSON.stringify(`${REPO}tests/console/_long_names_provider.ts`)
      }]
polling:
  interval_ms: 200
alarms:
  - id: ${alarmId}
    signal: ${providerId}/${DEVICE_ID}/${SIGNAL_ID}
    hi: 50
    message: ${longWord("UpstreamChamberPressureTooHigh", 150)}
`;
    const [browser, rt] = await launchChromiumAlongside(
      startRuntimeWithConfigOnFreePort(`${dir}/runtime.yaml`, yaml),
      (r) => r.stop(),
    );
    try {
      const page = await browser.newPage({ viewport: VIEWPORT });
      const errors = collectPageErrors(page);
      /** How far the page and the named elements reach to the right (px). */
      const reach = (selectors: string[]) =>
        page.evaluate((sels) => {
          const d = (globalThis as PageGlobal).document;
          return {
            page: d.documentElement.scrollWidth,
            ...Object.fromEntries(
              sels.map((s: string) => [s, d.querySelector(s)?.getBoundingClientRect().right ?? -1]),
            ),
          };
        }, selectors);

      await step("Devices: the header, the mode buttons and the device's card", async () => {
        await page.goto(`${rt.base}/#devices`);
        await page.locator(`article.device[data-device="${providerId}/${DEVICE_ID}"] form`)
          .waitFor({ timeout: PAGE_WAIT_MS });
        await page.locator("#mode-buttons button").first().waitFor({ timeout: PAGE_WAIT_MS });
        await page.locator("#providers .badge").waitFor({ timeout: PAGE_WAIT_MS });
        const r = await reach([
          "#mode-buttons button",
          "#providers .badge",
          "article.device",
          "article.device form button[type=submit]",
        ]);
        assert.ok(r.page <= VIEWPORT.width, `the page is ${r.page} px wide: ${JSON.stringify(r)}`);
        for (const [what, right] of Object.entries(r)) {
          assert.ok(right > 0 && right <= VIEWPORT.width, `${what} reaches ${right} px`);
        }
      });

      await step("Alarms: the active alarm's Acknowledge stays on the screen", async () => {
        await page.goto(`${rt.base}/#alarms`);
        const ack = page.locator(`tr.alarm button:text-is("Acknowledge")`);
        await ack.waitFor({ timeout: PAGE_WAIT_MS });
        const r = await reach(["tr.alarm"]);
        const box = await ack.boundingBox();
        assert.ok(r.page <= VIEWPORT.width, `the page is ${r.page} px wide`);
        assert.ok(
          box !== null && box.x + box.width <= VIEWPORT.width,
          `Acknowledge at ${JSON.stringify(box)}`,
        );
      });
      // Without an automation section, GET /v0/parameters and /v0/automation/status answer 503.
      assert.deepStrictEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
