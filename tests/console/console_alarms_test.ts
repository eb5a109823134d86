/**
 * Alarms and interlocks in the operator console (active alarms with ack and shelve, blocking
 * interlocks; docs/alarms.md): examples/alarms.yaml run as the real `runtime` process with its
 * simulated provider, the page in headless Chromium. One runtime and one page for the file; the
 * steps build on each other. The relay alarm (action none) is raised and cleared by switching relay
 * 4; the heater is held at ~55 °C in closed mode (interlock above 45 °C, warning above 50 °C), then
 * sent to 400 °C (the setpoint's maximum) so the over-temperature alarm (action estop) stops the
 * machine and stays active for a while after the e-stop has opened the loop. Last, a runtime
 * restart: the page re-reads what no event tells it. The simulated heater has a time constant of
 * TAU_S instead of the default 6 s (sim key `time_constant_s`), so that the steps wait for it
 * about 2 s instead of 12.
 */
import assert from "node:assert/strict";
import type { Page, Route } from "playwright-core";
import { MAX_SHELVE_MS } from "../../src/alarms/mod.ts";
import { errorMessage } from "../../src/common/mod.ts";
import {
  chromiumMissing,
  collectPageErrors,
  launchChromiumAlongside,
  PAGE_WAIT_MS,
  type PageGlobal,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  mirrorOptions,
  type RuntimeChild,
  startRuntimeChild,
  startRuntimeInMirror,
  withCheckoutMirror,
} from "../helpers/runtime_process.ts";
import { REPO, simYamlWithHeaterTau } from "../helpers/sim_config.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** The heater's time constant (s) in this test's simulated provider. */
const TAU_S = 1.5;

/**
 * examples/alarms.yaml with its simulated provider's heater TAU_S fast, and that sim config. A
 * sample goes stale after 10 s here, not two poll periods (1 s): on a loaded machine a poll late
 * by a second made an input bad and raised the alarms MAJOR for bad quality, transitions this
 * page test does not count on (docs/alarms.md; tests/alarms covers that rule).
 */
async function fastHeaterConfig(): Promise<{ config: string; sim: string }> {
  const config = await Deno.readTextFile(`${REPO}examples/alarms.yaml`);
  const fastConfig = config.replace("providers/sim/sim.yaml", "fast-sim.yaml");
  assert.notEqual(fastConfig, config, "examples/alarms.yaml no longer runs providers/sim/sim.yaml");
  assert.doesNotMatch(config, /^health:/m, "examples/alarms.yaml has a health section now");
  return {
    config: `${fastConfig}\nhealth:\n  staleness:\n    stale_after_ms: 10000\n`,
    sim: simYamlWithHeaterTau(TAU_S),
  };
}

const row = (id: string) => `tr[data-alarm="${id}"]`;
const INTERLOCK = 'tr[data-interlock="motor_blocked_while_hot"]';

async function api(rt: RuntimeChild, method: string, path: string, body?: unknown) {
  const res = await apiFetch(`${rt.base}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() as Json };
}

/** POST /v0/call on the simulated provider; asserts it ran. */
async function call(rt: RuntimeChild, device: string, fn: number, args: Json): Promise<void> {
  const r = await api(rt, "POST", "/v0/call", {
    provider_id: "sim0",
    device_id: device,
    function_id: fn,
    args,
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
}

const relay4 = (rt: RuntimeChild, on: boolean) =>
  call(rt, "relayio0", 4, { enabled: { type: "bool", bool: on } });

async function alarmState(rt: RuntimeChild, id: string): Promise<Json> {
  return (await api(rt, "GET", `/v0/alarms/${id}`)).json.alarm;
}

/** GET /v0/alarms and /v0/interlocks (and /v0/alarms/{id}), as the page asks for them. */
const ALARM_READS = /\/v0\/(alarms|interlocks)(\/[^/]+)?$/;

/**
 * Runs `fn` while the page cannot read the alarms or interlocks (its GETs fail): what changes
 * on the page meanwhile came from the event stream. Counts the reads refused.
 */
async function streamOnly(page: Page, fn: () => Promise<void>): Promise<number> {
  let refused = 0;
  const handler = async (route: Route) => {
    if (route.request().method() !== "GET") return await route.continue();
    refused++;
    await route.abort();
  };
  await page.route(ALARM_READS, handler);
  try {
    await fn();
  } finally {
    await page.unroute(ALARM_READS, handler);
  }
  return refused;
}

/** Waits until the row's `data-state` is `state`. */
async function rowState(page: Page, id: string, state: string): Promise<void> {
  await page.locator(`${row(id)}[data-state="${state}"]`).waitFor({ timeout: PAGE_WAIT_MS });
}

Deno.test({
  name:
    "Operator console shows alarms live, acks and shelves them, and shows interlocks and the e-stop cause",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const { config, sim } = await fastHeaterConfig();
    await withCheckoutMirror(config, async (dir) => {
      const launched = await launchChromiumAlongside(startRuntimeInMirror(dir), (r) => r.stop());
      const browser = launched[0];
      let rt = launched[1];
      // Started again on the port the page was opened on.
      const start = () => startRuntimeChild(mirrorOptions(dir, launched[1].port));
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const errors = collectPageErrors(page);

        await step("the header counts alarms and interlocks: nothing active at first", async () => {
          await page.goto(`${rt.base}/`);
          await waitForText(page, "#conn", /^Live$/);
          await waitForText(page, "#alarm-summary", /^none$/);
          await waitForText(page, "#interlock-summary", /^none$/);
          assert.equal(await page.locator("#estop-cause").isVisible(), false);
        });

        await step("the Alarms view lists every alarm and interlock as configured", async () => {
          await page.locator('.tabs a[href="#alarms"]').click();
          await page.locator(row("relay4_on")).waitFor({ timeout: PAGE_WAIT_MS });
          const ids = await page.locator("tr[data-alarm]").evaluateAll((els) =>
            els.map((e) => `${e.getAttribute("data-alarm")}:${e.getAttribute("data-state")}`)
          );
          assert.deepEqual(ids, ["tc1_high:normal", "tc1_overtemp:normal", "relay4_on:normal"]);
          const high = await page.locator(row("tc1_high")).textContent() ?? "";
          assert.match(high, /Heater above 50 °C/);
          assert.match(high, /sim0\/tempctl0\/tc1_temp/);
          assert.match(high, /hi 50/);
          assert.match(
            await page.locator(`${row("tc1_high")} .a-value`).textContent() ?? "",
            /^\d/,
          );
          await page.locator(`${INTERLOCK}[data-blocking="false"]`).waitFor();
          const interlock = await page.locator(INTERLOCK).textContent() ?? "";
          assert.match(interlock, /not blocking/);
          assert.match(interlock, /sim0\/motorctl0\/set_motor_duty/);
          assert.match(interlock, /while sim0\/tempctl0\/tc1_temp > 45/);
          assert.match(interlock, /Motors stay as they are while the heater is above 45 °C/);
        });

        await step(
          "shelve is offered, at most 8 h, only for an alarm whose action is none",
          async () => {
            const refused = await api(rt, "POST", "/v0/alarms/tc1_overtemp/shelve", {
              duration_ms: 60000,
            });
            assert.equal(refused.status, 409);
            const overtemp = page.locator(row("tc1_overtemp"));
            assert.equal(await overtemp.locator('[data-op="shelve"]').count(), 0);
            assert.equal(await overtemp.locator("select").count(), 0);
            assert.equal(
              await overtemp.locator(".no-shelve").textContent(),
              "Cannot be shelved: its action estop stops the machine.",
            );
            for (const id of ["tc1_high", "relay4_on"]) {
              const durations = await page.locator(`${row(id)} select option`).evaluateAll((
                els,
              ) => els.map((e) => Number(e.getAttribute("value"))));
              assert.deepEqual(durations, [900000, 3600000, 14400000, MAX_SHELVE_MS]);
            }
          },
        );

        await step("an alarm raised shows up live, from the event stream", async () => {
          // On the Devices view the page does not re-read the alarms periodically: what changes
          // the header now can only be the `alarm` event.
          await page.locator('.tabs a[href="#devices"]').click();
          await page.locator("article.device").first().waitFor();
          assert.equal((await api(rt, "POST", "/v0/mode", { mode: "MANUAL" })).status, 200);
          await waitForText(page, "#mode", /^MANUAL$/);
          await streamOnly(page, async () => {
            await relay4(rt, true);
            await waitForText(page, "#alarm-summary", /^1 MINOR$/);
          });
          assert.equal(
            await page.locator('#alarm-summary a[href="#alarms"]').count(),
            1,
            "the count leads to the Alarms view",
          );
          await page.locator("#alarm-summary a").click();
          await rowState(page, "relay4_on", "active");
          const r = page.locator(row("relay4_on"));
          assert.equal(await r.locator(".a-state").textContent(), "ACTIVEMINOR");
          assert.equal(await r.locator(".a-value").textContent(), "true");
          assert.equal(await r.locator(".a-held").textContent(), "past alarm_when true");
          assert.match(await r.locator(".a-since").textContent() ?? "", /\d/);
          assert.equal(await r.locator('[data-op="ack"]').isVisible(), true);
          assert.equal(await r.locator('[data-op="unshelve"]').isVisible(), false);
        });

        await step("Acknowledge changes its state to acknowledged", async () => {
          const r = page.locator(row("relay4_on"));
          await r.getByRole("button", { name: "Acknowledge relay4_on" }).click();
          await rowState(page, "relay4_on", "active_acked");
          await waitForText(page, `${row("relay4_on")} .result`, /^Acknowledged at /);
          assert.equal((await alarmState(rt, "relay4_on")).state, "active_acked");
          assert.equal(await r.locator('[data-op="ack"]').isVisible(), false);
          await waitForText(page, "#alarm-summary", /^1 acknowledged$/);
        });

        await step("a none alarm is shelved for the chosen duration, then unshelved", async () => {
          const r = page.locator(row("relay4_on"));
          await r.getByLabel("Shelve for").selectOption({ label: "1 h" });
          await r.getByRole("button", { name: "Shelve relay4_on" }).click();
          await rowState(page, "relay4_on", "shelved");
          await waitForText(page, `${row("relay4_on")} .result`, /^Shelved at .* until /);
          const shelved = await alarmState(rt, "relay4_on");
          assert.equal(shelved.state, "shelved");
          assert.equal(shelved.shelved_until_epoch_ms - shelved.since_epoch_ms, 3600000);
          assert.match(await r.locator(".until").textContent() ?? "", /^until \d/);
          await waitForText(page, "#alarm-summary", /^1 shelved$/);
          await r.getByRole("button", { name: "Unshelve relay4_on" }).click();
          // Its condition still holds: back to active, unacknowledged.
          await rowState(page, "relay4_on", "active");
          await waitForText(page, "#alarm-summary", /^1 MINOR$/);
          assert.equal((await alarmState(rt, "relay4_on")).state, "active");
        });

        await step("the recent transitions are readable, newest first", async () => {
          const r = page.locator(row("relay4_on"));
          await r.locator("summary").click();
          await waitForText(page, `${row("relay4_on")} summary`, /^Recent transitions \(4\)$/)
            .catch(async (err) => {
              // Which transitions there were, for a failure that cannot be run again.
              const seen = (await alarmState(rt, "relay4_on")).transitions;
              throw new Error(`${errorMessage(err)}; transitions: ${JSON.stringify(seen)}`);
            });
          const lines = await r.locator(".transitions li").allTextContents();
          assert.deepEqual(
            lines.map((l) => l.replace(/^.*? (raise|ack|shelve|unshelve) /, "$1 ")),
            [
              "unshelve → ACTIVE MINOR, alarm_when true, value true",
              "shelve → shelved MINOR, alarm_when true, value true",
              "ack → acknowledged MINOR, alarm_when true, value true",
              "raise → ACTIVE MINOR, alarm_when true, value true",
            ],
          );
        });

        await step("a refusal is shown as the runtime words it", async () => {
          // The operator presses Acknowledge just as the alarm clears: the runtime refuses.
          const path = "**/v0/alarms/relay4_on/ack";
          await page.route(path, async (route) => {
            await relay4(rt, false);
            await waitFor(
              "relay4_on cleared",
              async () => (await alarmState(rt, "relay4_on")).state === "normal",
            );
            await route.continue();
          });
          try {
            await page.locator(row("relay4_on")).getByRole("button", {
              name: "Acknowledge relay4_on",
            }).click();
            const shown = await waitForText(page, `${row("relay4_on")} .result`, /^409 /);
            const direct = await api(rt, "POST", "/v0/alarms/relay4_on/ack");
            assert.equal(direct.status, 409);
            assert.equal(shown, `409 FAILED_PRECONDITION: ${direct.json.status.message}`);
            assert.match(shown, /relay4_on is normal/);
          } finally {
            await page.unroute(path);
          }
          await rowState(page, "relay4_on", "normal");
          await waitForText(page, "#alarm-summary", /^none$/);
        });

        await step("an interlock shows as blocking, live, with what it saw", async () => {
          await page.locator('.tabs a[href="#alarms"]').click();
          await streamOnly(page, async () => {
            // Closed loop at 55 °C: above the interlock's 45 and the warning's 50, below 60.
            await call(rt, "tempctl0", 2, { value: { type: "double", double: 55 } });
            await call(rt, "tempctl0", 1, { mode: { type: "string", string: "closed" } });
            // The values an alarm and an interlock read follow their signal (state_update).
            await page.waitForFunction(
              () => {
                const d = (globalThis as PageGlobal).document;
                const alarm = d.querySelector('tr[data-alarm="tc1_overtemp"] .a-value');
                const input = d.querySelector("tr[data-interlock] .i-inputs li");
                return Number(alarm?.textContent) > 40 &&
                  /^sim0\/tempctl0\/tc1_temp = (4[1-9]|[5-9]\d)/.test(input?.textContent ?? "");
              },
              undefined,
              { timeout: PAGE_WAIT_MS },
            );
            await page.locator(`${INTERLOCK}[data-blocking="true"]`).waitFor({
              timeout: PAGE_WAIT_MS,
            });
          });
          const il = page.locator(INTERLOCK);
          assert.equal(await il.getAttribute("class"), "interlock is-blocking");
          assert.match(await il.locator(".i-state").textContent() ?? "", /^BLOCKINGsince \d/);
          assert.match(
            await il.locator(".i-reason").textContent() ?? "",
            /^sim0\/tempctl0\/tc1_temp = \d+(\.\d+)?$/,
          );
          await waitForText(page, "#interlock-summary", /^1 blocking$/);
          await rowState(page, "tc1_high", "active");
          assert.equal(
            await page.locator(`${row("tc1_high")} .a-held`).textContent(),
            "past hi 50 C", // the limit in its signal's unit
          );
          await waitForText(page, "#alarm-summary", /^1 MINOR$/);
          const listed = (await api(rt, "GET", "/v0/interlocks")).json.interlocks[0];
          assert.equal(listed.blocking, true);
        });

        await step("an estop alarm latches the e-stop and the panel shows its cause", async () => {
          // Far above 60 when it raises: after the e-stop the heater cools for a few seconds
          // before the alarm clears (below 55), time for the page to be looked at.
          await call(rt, "tempctl0", 2, { value: { type: "double", double: 400 } });
          await waitForText(page, "#latch", /^LATCHED since /, 30000);
          // The alarm's row first: it stays active only while the heater cools (~2 s at TAU_S);
          // the cause and the mode below stay until a reset.
          await rowState(page, "tc1_overtemp", "active");
          const r = page.locator(row("tc1_overtemp"));
          assert.equal(await r.locator(".a-state").textContent(), "ACTIVEMAJOR");
          assert.equal(await r.locator(".a-held").textContent(), "past hihi 60 C");
          await waitForText(
            page,
            "#estop-cause",
            /^Cause: alarm:tc1_overtemp — Heater over temperature, machine stopped$/,
          );
          assert.equal(await page.locator("#estop-cause").isVisible(), true);
          const status = (await api(rt, "GET", "/v0/runtime/status")).json;
          assert.equal(status.estop.cause, "alarm:tc1_overtemp");
          assert.equal(
            await page.locator("#estop-cause [data-cause]").getAttribute("href"),
            "#alarms",
          );
          await waitForText(page, "#mode", /^FAULT$/);
        });

        await step("every control has a label or a name", async () => {
          const unnamed = await page.evaluate(() => {
            const d: PageGlobal = (globalThis as PageGlobal).document;
            const out: string[] = [];
            for (const el of d.querySelectorAll("input, select")) {
              if (el.labels.length === 0) out.push(`${el.tagName} #${el.id}`);
            }
            for (const el of d.querySelectorAll("button, a[href], summary")) {
              const name = el.getAttribute("aria-label") ?? el.textContent.trim();
              if (name === "") out.push(`${el.tagName} ${el.outerHTML.slice(0, 60)}`);
            }
            return out;
          });
          assert.deepEqual(unnamed, []);
        });

        await step(
          "on a tablet the alarms fit the screen, the operate column included",
          async () => {
            await page.setViewportSize({ width: 820, height: 1180 });
            const fit = await page.evaluate(() => {
              const d: PageGlobal = (globalThis as PageGlobal).document;
              const table = d.querySelector(".alarms-table");
              return {
                page: d.documentElement.scrollWidth - (globalThis as PageGlobal).innerWidth,
                table: table.scrollWidth - table.clientWidth,
              };
            });
            assert.ok(fit.page <= 0, `page overflows by ${fit.page} px`);
            assert.ok(fit.table <= 0, `alarms table overflows by ${fit.table} px`);
            await page.setViewportSize({ width: 1280, height: 900 });
          },
        );

        await step("after a reconnection the page re-reads what it missed", async () => {
          // A restarted runtime starts over: nothing shelved, not latched, and no event says so.
          // The heater alarms may have cleared by now (the e-stop opened the loop a few steps
          // ago), so a shelve the restart forgets stands for what the page must re-read.
          const shelved = await api(rt, "POST", "/v0/alarms/relay4_on/shelve", {
            duration_ms: 600000,
          });
          assert.equal(shelved.status, 200, JSON.stringify(shelved.json));
          await waitForText(page, "#alarm-summary", /1 shelved$/);
          await page.locator('.tabs a[href="#devices"]').click();
          assert.equal(await page.locator("#estop-cause").isVisible(), true);
          assert.match(await page.locator("#latch").textContent() ?? "", /^LATCHED since /);
          await rt.stop();
          await waitForText(page, "#conn", /^Disconnected/);
          rt = await start();
          await waitForText(page, "#conn", /^Live$/, 60000);
          await waitForText(page, "#alarm-summary", /^none$/);
          await waitForText(page, "#interlock-summary", /^none$/);
          await waitForText(page, "#latch", /^released$/);
          assert.equal(await page.locator("#estop-cause").isVisible(), false);
          await page.locator('.tabs a[href="#alarms"]').click();
          await rowState(page, "tc1_overtemp", "normal");
          await rowState(page, "relay4_on", "normal");
        });

        const real = errors.filter((e) => !/Failed to load resource/.test(e));
        assert.deepEqual(real, []);
      } finally {
        await browser.close();
        await rt.stop();
      }
    }, { "fast-sim.yaml": sim });
  },
});
