/**
 * Units in the operator console (issue 37, item 1): examples/alarms.yaml run as the real `runtime`
 * process with its simulated provider, the page in headless Chromium. Every signal row shows the
 * unit its provider declares (GET …/capabilities) beside its value and every argument field the
 * unit of its ArgSpec; signals and arguments that declare none show none. The alarms and interlock
 * inputs that read a signal show its unit too.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  openChromium,
  PAGE_WAIT_MS,
  type PageGlobal,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { startRuntimeInMirror, withCheckoutMirror } from "../helpers/runtime_process.ts";
import { REPO } from "../helpers/sim_config.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

Deno.test({
  name: "Operator console shows each declared unit beside its value, field, alarm and input",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const config = await Deno.readTextFile(`${REPO}examples/alarms.yaml`);
    await withCheckoutMirror(config, async (dir) => {
      const rt = await startRuntimeInMirror(dir);
      const browser = await openChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const errors = collectPageErrors(page);
        const get = async (path: string): Promise<Json> => {
          const res = await apiFetch(`${rt.base}${path}`);
          assert.equal(res.status, 200, path);
          return await res.json();
        };
        // What the API declares: handle -> unit ("" for none), and form -> field -> unit.
        const signalUnits: Record<string, string> = {};
        const argUnits: Record<string, Record<string, string>> = {};
        for (const d of (await get("/v0/devices")).devices) {
          const caps = (await get(`/v0/devices/${d.provider_id}/${d.device_id}/capabilities`))
            .capabilities;
          for (const s of caps.signals) {
            signalUnits[`${d.provider_id}/${d.device_id}/${s.signal_id}`] = s.unit ?? "";
          }
          for (const f of caps.functions) {
            argUnits[`${d.provider_id}/${d.device_id}/${f.function_id}`] = Object.fromEntries(
              Object.entries(f.args).map(([name, spec]) => [name, (spec as Json).unit ?? ""]),
            );
          }
        }
        // The simulator declares some units and leaves others out: both cases are covered.
        assert.equal(signalUnits["sim0/tempctl0/tc1_temp"], "C");
        assert.equal(signalUnits["sim0/analogsensor0/voltage_ch1"], "V");
        assert.equal(signalUnits["sim0/motorctl0/motor1_speed"], "rpm");
        assert.equal(signalUnits["sim0/motorctl0/motor1_duty"], "");
        assert.equal(signalUnits["sim0/relayio0/relay_ch4_state"], "");
        assert.equal(argUnits["sim0/tempctl0/2"]?.value, "C");
        assert.equal(argUnits["sim0/motorctl0/10"]?.duty, "");

        await step(
          "every signal row shows its declared unit beside the value, or none",
          async () => {
            await page.goto(`${rt.base}/`);
            await waitForText(page, "#conn", /^Live$/);
            await waitForText(
              page,
              'tr[data-signal="sim0/tempctl0/tc1_temp"] td.value',
              /^-?\d+(\.\d+)?$/,
            );
            const shown = await page.locator("tr[data-signal]").evaluateAll((rows) =>
              Object.fromEntries(rows.map((r: PageGlobal) => {
                const value = r.querySelector("td.value");
                // The unit is the cell right after the value's.
                const next = value?.nextElementSibling;
                return [
                  r.getAttribute("data-signal"),
                  next?.classList.contains("unit") ? next.textContent : "(no unit cell)",
                ];
              }))
            );
            assert.deepEqual(shown, signalUnits);
            // The value cell holds the value alone (a reader of td.value gets a number).
            assert.match(
              await page.locator('tr[data-signal="sim0/tempctl0/tc1_temp"] td.value')
                .textContent() ?? "",
              /^-?\d+(\.\d+)?$/,
            );
          },
        );

        await step(
          "every argument field shows its declared unit beside the input, or none",
          async () => {
            const shown = await page.locator("form[data-fn]").evaluateAll((forms) =>
              Object.fromEntries(forms.map((f: PageGlobal) => [
                f.getAttribute("data-fn"),
                Object.fromEntries(
                  [...f.querySelectorAll(".field")].map((field: PageGlobal) => {
                    const input = field.querySelector("input, select");
                    const label = field.querySelector("label").firstChild.textContent;
                    const unit = field.querySelector(".unit");
                    // Beside the input: in the same box, right after it.
                    const beside = unit !== null && input.nextElementSibling === unit;
                    return [label, unit === null ? "" : beside ? unit.textContent : "(elsewhere)"];
                  }),
                ),
              ]))
            );
            assert.deepEqual(shown, argUnits);
          },
        );

        await step("alarms and interlock inputs show their signal's unit", async () => {
          await page.locator('.tabs a[href="#alarms"]').click();
          const high = 'tr[data-alarm="tc1_high"]';
          await page.locator(high).waitFor({ timeout: PAGE_WAIT_MS });
          await waitForText(page, `${high} .a-unit`, /^C$/);
          assert.match(await page.locator(`${high} .a-value`).textContent() ?? "", /^-?\d/);
          assert.match(await page.locator(`${high} .a-held`).textContent() ?? "", /^hi 50 C$/);
          // A bool signal declares no unit: none is shown.
          await waitForText(page, 'tr[data-alarm="relay4_on"] .a-value', /^(true|false)$/);
          assert.equal(await page.locator('tr[data-alarm="relay4_on"] .a-unit').textContent(), "");
          await waitForText(
            page,
            "tr[data-interlock] .i-inputs li",
            /^sim0\/tempctl0\/tc1_temp = -?\d+(\.\d+)? C$/,
          );
        });

        assert.deepEqual(errors, []);
      } finally {
        await browser.close();
        await rt.stop();
      }
    });
  },
});
