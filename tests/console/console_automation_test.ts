/**
 * The operator console's Automation view says in one line why the behavior tree runs or not, and
 * shows the execution status as the runtime words it (it once read `running (undefined)` in AUTO),
 * from the demo configuration run as the real `runtime` process: IDLE, MANUAL, AUTO, then a device
 * that drops out in AUTO (the device-loss latch forces FAULT) and MANUAL with the device still down
 * (AUTO would be refused).
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  launchChromiumAlongside,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { startRuntimeInMirror, withCheckoutMirror } from "../helpers/runtime_process.ts";
import { REPO } from "../helpers/sim_config.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const WHY = "#automation-why";
/** The value of one fact of the Automation view (a Playwright selector). */
const fact = (name: string) => `#automation-status div:has(> dt:text-is("${name}")) > dd`;

async function api(base: string, method: string, path: string, body?: unknown): Promise<Json> {
  const res = await apiFetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json;
}

/**
 * FAULT -> MANUAL, retried while the runtime answers that the FAULT hooks are still running (its
 * documented refusal); any other refusal, or one lasting 15 s, fails.
 */
async function rearmAfterFaultHooks(base: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const res = await apiFetch(`${base}/v0/mode`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mode: "MANUAL" }),
    });
    const json = await res.json();
    if (res.status === 200) return;
    const hooksRunning = /FAULT hooks are still running/.test(JSON.stringify(json));
    assert.ok(hooksRunning && Date.now() < deadline, JSON.stringify(json));
    await new Promise((r) => setTimeout(r, 100));
  }
}

Deno.test({
  name:
    "Operator console's Automation view says why the tree runs or not, a device drop-out included",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    // OVERRIDE: the test injects the drop-out with a manual chaos call while in AUTO.
    const demo = (await Deno.readTextFile(`${REPO}examples/demo.yaml`)).replace(
      /^automation:\n/m,
      "automation:\n  manual_gating_policy: OVERRIDE\n",
    );
    assert.match(demo, /manual_gating_policy: OVERRIDE/);
    await withCheckoutMirror(demo, async (dir) => {
      const [browser, rt] = await launchChromiumAlongside(
        startRuntimeInMirror(dir),
        (r) => r.stop(),
      );
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const errors = collectPageErrors(page);
        await page.goto(`${rt.base}/#automation`);

        await step("IDLE: the mode gates the tree", async () => {
          const s = await api(rt.base, "GET", "/v0/automation/status");
          assert.equal(s.execution_reason, "mode_gate");
          assert.deepEqual(s.not_running, { cause: "mode", mode: "IDLE" });
          await waitForText(page, fact("Execution"), /^running \(mode_gate\)$/);
          await waitForText(
            page,
            WHY,
            /^Not running: mode is IDLE: the tree ticks only in AUTO; switch to MANUAL, then AUTO \(IDLE -> AUTO is no transition\)$/,
          );
        });

        await step("MANUAL: the line follows the mode", async () => {
          await api(rt.base, "POST", "/v0/mode", { mode: "MANUAL" });
          await waitForText(
            page,
            WHY,
            /^Not running: mode is MANUAL: the tree ticks only in AUTO$/,
          );
        });

        await step("AUTO: Running, and no 'undefined' reason", async () => {
          await api(rt.base, "POST", "/v0/mode", { mode: "AUTO" });
          const s = await api(rt.base, "GET", "/v0/automation/status");
          assert.equal(s.execution_status, "running");
          assert.equal(s.execution_reason, undefined, "no anolis reason while running");
          assert.equal(s.not_running, null);
          // Once the page has read the status of AUTO (no more mode_gate):
          const execution = await waitForText(page, fact("Execution"), /^running(?! \(mode_gate)/);
          assert.equal(execution, "running");
          assert.doesNotMatch(
            await page.locator("#automation-status").textContent() ?? "",
            /undefined/,
          );
          await waitForText(page, WHY, /^Running$/);
        });

        await step(
          "a device that drops out in AUTO: latched, FAULT, and the line says how to re-arm",
          async () => {
            // chaos_control inject_device_unavailable(motorctl0, 60 s): its reads fail, the
            // device-loss latch forces FAULT (the demo tree names it).
            await api(rt.base, "POST", "/v0/call", {
              provider_id: "sim0",
              device_id: "chaos_control",
              function_id: 1,
              args: {
                device_id: { type: "string", string: "motorctl0" },
                duration_ms: { type: "int64", int64: 60000 },
              },
            });
            const text = await waitForText(page, WHY, /^Latched: /, 10_000);
            assert.match(text, /device-loss latch: sim0\/motorctl0 was lost \(its reads fail\)/);
            assert.match(text, /re-arm deliberately \(FAULT -> MANUAL -> AUTO\)/);
            await waitForText(
              page,
              fact("Blocked devices"),
              /^sim0\/motorctl0 \(down: its reads fail, since /,
            );
          },
        );

        await step(
          "out of FAULT with the device still down: blocked, AUTO would be refused",
          async () => {
            // The AUTO -> FAULT hooks call motorctl0, whose reads fail: until they have finished
            // the runtime refuses the re-arm and says to retry (CI once got here first).
            await rearmAfterFaultHooks(rt.base);
            const text = await waitForText(page, WHY, /^Blocked: /);
            assert.match(
              text,
              /^Blocked: mode is MANUAL: the tree ticks only in AUTO; AUTO is refused while sim0\/motorctl0 is down \(its reads fail\)$/,
            );
            const s = await api(rt.base, "GET", "/v0/automation/status");
            assert.deepEqual(s.not_running, { cause: "mode", mode: "MANUAL" });
            assert.equal(s.blocked_devices[0].device_handle, "sim0/motorctl0");
          },
        );

        assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
      } finally {
        await browser.close();
        await rt.stop();
      }
    });
  },
});
