/**
 * Trends and incident pages in the operator console (issue 37, item 6): examples/demo.yaml with a
 * short history (a 10 s memory ring, 1 s disk buckets, 3 s + 1 s incident windows) run as the real
 * `runtime` process with its simulated provider, the page in headless Chromium. Clicking a value
 * opens its trend, the unit on its axis and live points arriving; several signals share one
 * chart, one axis per unit; a FAULT quality shows as a gap; the range picker reaches the disk
 * tier; an e-stop's incident has a page with its chart, cause and a CSV download that is the
 * API's export. The page's Content-Security-Policy reports no violation throughout (and the
 * detector is shown to catch one).
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  chromiumMissing,
  collectPageErrors,
  launchChromiumAlongside,
  openChromium,
  PAGE_WAIT_MS,
  type PageGlobal,
  sequentialSteps,
  waitForText,
} from "../helpers/browser.ts";
import {
  startRuntimeChildOnFreePort,
  startRuntimeInMirror,
  withCheckoutMirror,
} from "../helpers/runtime_process.ts";
import { REPO, simRuntimeConfig } from "../helpers/sim_config.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** The demo with a history short enough for a test to see the ring give way to the disk tier. */
export const TREND_HISTORY_YAML = `
history:
  memory_seconds: 10
  step_ms: 1000
  incident_before_s: 3
  incident_after_s: 1
`;

async function api(base: string, method: string, path: string, body?: unknown): Promise<Json> {
  const res = await apiFetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const json = await res.json();
  assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(json)}`);
  return json;
}

/** The chart's attribute `name` (of the first `.chart` under `scope`). */
async function chartAttr(page: Page, scope: string, name: string): Promise<string | null> {
  return await page.locator(`${scope} .chart`).first().getAttribute(name, { timeout: 500 })
    .catch(() => null);
}

/** Waits until the chart's attribute `name` passes `test`; returns it. */
async function waitForChart(
  page: Page,
  scope: string,
  name: string,
  test: (v: string) => boolean,
  what: string,
  timeout = PAGE_WAIT_MS,
): Promise<string> {
  const deadline = Date.now() + timeout;
  let last: string | null = null;
  for (;;) {
    last = await chartAttr(page, scope, name);
    if (last !== null && test(last)) return last;
    if (Date.now() > deadline) {
      const status = await page.locator(`${scope} .trend-source`).textContent({ timeout: 500 })
        .catch(() => null);
      throw new Error(
        `${scope} .chart[${name}]: never ${what} within ${timeout} ms (last: ${last}; page ` +
          `${page.url()}; source line: ${status})`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Records the page's CSP violations (a listener installed before any page script runs). */
async function watchCsp(page: Page): Promise<() => Promise<string[]>> {
  await page.addInitScript(() => {
    const g = globalThis as PageGlobal;
    g.__cspViolations = [];
    g.document.addEventListener("securitypolicyviolation", (e: PageGlobal) => {
      g.__cspViolations.push(
        `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`,
      );
    });
  });
  return async () => await page.evaluate(() => (globalThis as PageGlobal).__cspViolations ?? []);
}

Deno.test({
  name: "Operator console: a value's live trend with its unit, several signals on one chart, " +
    "quality gaps, the disk tier, an incident page with its CSV, and no CSP violation",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const config = (await Deno.readTextFile(`${REPO}examples/demo.yaml`)) + TREND_HISTORY_YAML;
    await withCheckoutMirror(config, async (dir) => {
      const rt = await startRuntimeInMirror(dir);
      const browser = await openChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const errors = collectPageErrors(page);
        const cspViolations = await watchCsp(page);
        const TEMP = "sim0/tempctl0/tc1_temp";
        const SPEED = "sim0/motorctl0/motor1_speed";
        const VOLT = "sim0/analogsensor0/voltage_ch1";

        await step("clicking a value opens its trend: unit on the axis, live points", async () => {
          await page.goto(`${rt.base}/`);
          await waitForText(page, "#conn", /^Live$/);
          const link = page.locator(`tr[data-signal="${TEMP}"] td.value a`);
          await waitForText(page, `tr[data-signal="${TEMP}"] td.value a`, /^-?\d+(\.\d+)?$/);
          await link.click();
          await page.locator("#view-trend").waitFor({ state: "visible", timeout: PAGE_WAIT_MS });
          assert.equal(
            new URLSearchParams(new URL(page.url()).hash.replace(/^#trend\?/, "")).getAll("s")
              .join(),
            TEMP,
          );
          assert.equal(await waitForChart(page, "#trend", "data-axes", (v) => v === "C", "C"), "C");
          await waitForText(page, "#trend .u-legend", new RegExp(`${TEMP} \\(C\\)`));
          const seeded = Number(
            await waitForChart(page, "#trend", "data-points", (v) => Number(v) > 0, "> 0"),
          );
          // The event stream appends: the chart holds more samples than its seed.
          await waitForChart(
            page,
            "#trend",
            "data-points",
            (v) => Number(v) > seeded + 2,
            `> ${seeded + 2} (live samples appended)`,
          );
          assert.match(
            await page.locator("#trend .trend-source").textContent() ?? "",
            /^Answered by: .*memory ring.* · then live from the event stream$/,
          );
          assert.equal(await page.locator("#trend-range").inputValue(), "5m");
        });

        await step("several signals on one chart, one axis per unit", async () => {
          // From the devices view: the + button of motor 1's speed adds it without leaving.
          await page.locator('.tabs a[href="#devices"]').click();
          const plus = page.getByRole("button", { name: `Add ${SPEED} to the trend chart` });
          await plus.click();
          await page.getByRole("button", { name: `Remove ${SPEED} from the trend chart` })
            .waitFor({ timeout: PAGE_WAIT_MS });
          await waitForText(page, "#trend-tab", /^Trend \(2\)$/);
          await page.locator("#trend-tab").click();
          await waitForChart(page, "#trend", "data-axes", (v) => v === "C|rpm", "C|rpm");
          // From the trend view: the add menu (any signal of any device).
          await page.locator("#trend-add").selectOption(VOLT);
          await page.getByRole("button", { name: "Add to chart" }).click();
          await waitForChart(page, "#trend", "data-axes", (v) => v === "C|rpm|V", "C|rpm|V");
          assert.deepEqual(
            await page.locator("#trend .chips li[data-signal]").evaluateAll((li) =>
              li.map((x: PageGlobal) => x.getAttribute("data-signal"))
            ),
            [TEMP, SPEED, VOLT],
          );
          const legend = await page.locator("#trend .u-legend").textContent() ?? "";
          for (const s of [`${TEMP} (C)`, `${SPEED} (rpm)`, `${VOLT} (V)`]) {
            assert.ok(legend.includes(s), `legend lacks ${s}: ${legend}`);
          }
          await waitForChart(page, "#trend", "data-points", (v) => Number(v) > 3, "> 3");
          // Removing one from the chart.
          await page.getByRole("button", { name: `Remove ${VOLT} from the chart` }).click();
          await waitForChart(page, "#trend", "data-axes", (v) => v === "C|rpm", "C|rpm");
        });

        await step("a signal whose quality is not OK shows a gap", async () => {
          await api(rt.base, "POST", "/v0/mode", { mode: "MANUAL" });
          await api(rt.base, "POST", "/v0/call", {
            provider_id: "sim0",
            device_id: "chaos_control",
            function_id: 2,
            args: {
              device_id: { type: "string", string: "tempctl0" },
              signal_id: { type: "string", string: "tc1_temp" },
              duration_ms: { type: "int64", int64: 1500 },
            },
          });
          await waitForText(
            page,
            `#trend .trend-gaps li[data-signal="${TEMP}"]`,
            new RegExp(`^${TEMP}: \\d+ gaps? \\(FAULT\\)`),
          );
          // Only that signal had one.
          assert.equal(await page.locator("#trend .trend-gaps li").count(), 1);
        });

        await step("the range picker reaches the disk tier, and says so", async () => {
          // Once the 10 s ring no longer holds the run's first samples, an hour back needs the
          // disk tier for its beginning.
          const deadline = Date.now() + 40_000;
          let answer: Json;
          for (;;) {
            const now = Date.now();
            answer = await api(
              rt.base,
              "GET",
              `/v0/history/sim0/tempctl0?signal_id=tc1_temp&since_ms=${
                now - 3_600_000
              }&until_ms=${now}&step_ms=3000`,
            );
            if (answer.source === "memory+disk") break;
            assert.ok(Date.now() < deadline, `never memory+disk: ${JSON.stringify(answer)}`);
            await new Promise((r) => setTimeout(r, 250));
          }
          await page.locator("#trend-range").selectOption("1h");
          await waitForChart(
            page,
            "#trend",
            "data-source",
            (v) => v === "memory+disk",
            "memory+disk",
          );
          assert.match(new URL(page.url()).hash, /[?&]r=1h(&|$)/);
          // Buckets of 2.4 s hold several polls of the moving temperature: its min–max band.
          await waitForChart(page, "#trend", "data-bands", (v) => Number(v) >= 1, ">= 1");
          // Dragging across the chart zooms in (into the last minute, where the data is); a
          // double click returns to the hour.
          const over = await page.locator("#trend .u-over").boundingBox();
          assert.ok(over);
          const y = over.y + over.height / 2;
          await page.mouse.move(over.x + over.width * 0.985, y);
          await page.mouse.down();
          await page.mouse.move(over.x + over.width - 2, y, { steps: 4 });
          await page.mouse.up();
          await waitForChart(page, "#trend", "data-zoomed", (v) => v === "true", "zoomed");
          await page.locator("#trend .u-over").dblclick();
          await waitForChart(page, "#trend", "data-zoomed", (v) => v === "false", "unzoomed");
          assert.match(
            await page.locator("#trend .trend-source").textContent() ?? "",
            /^Answered by: disk tier \(buckets of 2\.4 s\) \+ memory ring \(buckets of 2\.4 s, from /,
          );
          await waitForChart(page, "#trend", "data-points", (v) => Number(v) > 0, "> 0");

          // A custom range that ends before the ring begins: the disk tier alone answers (once
          // it holds a bucket before the ring's reach; the inputs take whole seconds).
          let from = 0;
          let to = 0;
          for (;;) {
            const memoryFrom = (await api(
              rt.base,
              "GET",
              `/v0/history/sim0/tempctl0?signal_id=tc1_temp&step_ms=1000`,
            )).memory_from_ms as number;
            to = Math.floor((memoryFrom - 1) / 1000) * 1000;
            from = to - 120_000;
            const disk = await api(
              rt.base,
              "GET",
              `/v0/history/sim0/tempctl0?signal_id=tc1_temp&since_ms=${from}&until_ms=${to}`,
            );
            if (disk.source === "disk") break;
            assert.ok(Date.now() < deadline, `never disk alone: ${JSON.stringify(disk)}`);
            await new Promise((r) => setTimeout(r, 250));
          }
          const local = (ms: number) =>
            page.evaluate(
              (x) =>
                new Date(x - new Date(x).getTimezoneOffset() * 60_000).toISOString().slice(0, 19),
              ms,
            );
          await page.locator("#trend-range").selectOption("custom");
          await page.locator("#trend-from").waitFor({ state: "visible", timeout: PAGE_WAIT_MS });
          await page.locator("#trend-from").fill(await local(from));
          await page.locator("#trend-to").fill(await local(to));
          await page.getByRole("button", { name: "Show" }).click();
          await waitForChart(page, "#trend", "data-source", (v) => v === "disk", "disk");
          assert.match(new URL(page.url()).hash, new RegExp(`&r=custom&from=${from}&to=${to}$`));
          assert.match(
            await page.locator("#trend .trend-source").textContent() ?? "",
            /^Answered by: disk tier \(buckets of 1 s\)$/,
          );
          await waitForChart(page, "#trend", "data-points", (v) => Number(v) > 0, "> 0");
        });

        await step("a trend's URL opens it again as it was (a bookmark)", async () => {
          assert.deepEqual(await cspViolations(), []); // the reload forgets them
          const url = page.url();
          await page.reload();
          await waitForText(page, "#conn", /^Live$/);
          assert.equal(page.url(), url);
          await waitForChart(page, "#trend", "data-source", (v) => v === "disk", "disk");
          await waitForChart(page, "#trend", "data-axes", (v) => v === "C|rpm", "C|rpm");
          assert.equal(await page.locator("#trend-range").inputValue(), "custom");
          assert.ok(await page.locator("#trend-from").isVisible());
          await waitForText(page, "#trend-tab", /^Trend \(2\)$/);
        });

        await step(
          "an e-stop's incident: its page with chart, cause and CSV download",
          async () => {
            await page.locator("#estop").click();
            await waitForText(page, "#estop-result .estop-summary", /^Latched\./);
            await page.locator("#estop-result-hide").click();
            await page.locator('.tabs a[href="#incidents"]').click();
            // Written incident_after_s (1 s) after the e-stop; the list is re-read every 2 s.
            const row = page.locator("#incidents tr[data-incident]").first();
            await row.waitFor({ timeout: PAGE_WAIT_MS });
            assert.match(await row.textContent() ?? "", /E-stop.*e-stop: operator console \(api\)/);
            const id = await row.getAttribute("data-incident");
            assert.ok(id);
            await row.getByRole("link", { name: "Open" }).click();
            assert.equal(new URL(page.url()).hash, `#incidents/${encodeURIComponent(id)}`);
            await waitForText(
              page,
              "#incidents .incident-title",
              /^E-stop: e-stop: operator console \(api\)$/,
            );
            assert.match(
              await page.locator("#incidents dl.kv").textContent() ?? "",
              /Causee-stop: operator console \(api\) \(also FAULT entry: mode MANUAL -> FAULT\)/,
            );
            const axes = await waitForChart(
              page,
              "#incidents",
              "data-axes",
              (v) => v !== "",
              "set",
            );
            assert.ok(axes.split("|").includes("C"), axes);
            const points = Number(
              await waitForChart(page, "#incidents", "data-points", (v) => Number(v) > 0, "> 0"),
            );
            const record = await api(rt.base, "GET", `/v0/incidents/${encodeURIComponent(id)}`);
            const numeric = record.signals.filter((s: Json) =>
              ["double", "int64", "uint64", "bool"].includes(s.value_type)
            );
            assert.equal(
              points,
              // Two samples at one time (two polls in a millisecond) are one point: the later.
              numeric.reduce(
                (n: number, s: Json) => n + new Set(s.samples.map((x: Json) => x[0])).size,
                0,
              ),
              "every sample time of every numeric signal is on the chart",
            );
            const [download] = await Promise.all([
              page.waitForEvent("download", { timeout: PAGE_WAIT_MS }),
              page.getByRole("button", { name: "Download CSV" }).click(),
            ]);
            assert.equal(download.suggestedFilename(), `${id}.csv`);
            const file = await download.path();
            const csv = await Deno.readTextFile(file);
            const res = await apiFetch(
              `${rt.base}/v0/incidents/${encodeURIComponent(id)}?format=csv`,
            );
            assert.equal(csv, await res.text(), "the download is the API's CSV export");
            assert.match(
              csv,
              /^provider_id,device_id,signal_id,t_ms,value,quality,unit,from_epoch_ms\r\n/,
            );
            assert.match(csv, /\r\nsim0,tempctl0,tc1_temp,\d+,[^\r]*,C,\r\n/);
            await waitForText(
              page,
              "#incidents .downloads .result",
              /^Saved .*\.csv \(\d+ bytes\)\.$/,
            );
            // The page's URL opens it again (a bookmark): the units arrive after the record.
            assert.deepEqual(await cspViolations(), []); // the reload forgets them
            await page.reload();
            await waitForText(
              page,
              "#incidents .incident-title",
              /^E-stop: e-stop: operator console \(api\)$/,
            );
            assert.equal(
              await waitForChart(page, "#incidents", "data-axes", (v) => v === axes, axes),
              axes,
            );
          },
        );

        await step("no CSP violation throughout (and the detector catches one)", async () => {
          assert.deepEqual(await cspViolations(), []);
          assert.deepEqual(errors, []);
          // The same detector sees an inline style the policy blocks.
          await page.evaluate(() => {
            const d = (globalThis as PageGlobal).document;
            const s = d.createElement("style");
            s.textContent = "body { color: red }";
            d.head.append(s);
          });
          const deadline = Date.now() + PAGE_WAIT_MS;
          while ((await cspViolations()).length === 0) {
            assert.ok(Date.now() < deadline, "the blocked inline style was never reported");
            await new Promise((r) => setTimeout(r, 50));
          }
          assert.match((await cspViolations())[0]!, /^style-src-elem /);
        });
      } finally {
        await browser.close();
        await rt.stop();
      }
    });
  },
});

Deno.test({
  name: "Operator console: with bearer auth, an incident's CSV and JSONL downloads carry the token",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const TOKEN = "console-trends-token-4d5e6f70";
    const dir = await Deno.makeTempDir({ prefix: "console-trends-auth-" });
    const [browser, rt] = await launchChromiumAlongside(
      startRuntimeChildOnFreePort(async (port) => {
        await Deno.writeTextFile(
          `${dir}/runtime.yaml`,
          `runtime: {name: trends-auth, data_dir: ${dir}/data}
http:
  port: ${port}
  auth_enabled: true
  auth_exempt_loopback: false
history: {incident_before_s: 2, incident_after_s: 1}
${simRuntimeConfig()}`,
        );
        return {
          config: `${dir}/runtime.yaml`,
          port,
          env: { RUNTIME_API_TOKEN: TOKEN },
          token: TOKEN,
        };
      }),
      (r) => r.stop(),
    );
    const auth = { authorization: `Bearer ${TOKEN}` };
    try {
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      const cspViolations = await watchCsp(page);
      let id = "";
      await step("the page asks for the token; an e-stop's incident is listed", async () => {
        await page.goto(`${rt.base}/#incidents`);
        await page.locator("#token-dialog[open]").waitFor({ timeout: PAGE_WAIT_MS });
        await page.locator("#token-input").fill(TOKEN);
        await page.locator("#token-input").press("Enter");
        await page.locator("#token-dialog").waitFor({ state: "hidden", timeout: PAGE_WAIT_MS });
        const stop = await apiFetch(`${rt.base}/v0/estop`, { method: "POST", headers: auth });
        assert.equal(stop.status, 200, await stop.text());
        const row = page.locator("#incidents tr[data-incident]").first();
        await row.waitFor({ timeout: PAGE_WAIT_MS });
        id = (await row.getAttribute("data-incident")) ?? "";
        await row.getByRole("link", { name: "Open" }).click();
        await waitForText(page, "#incidents .incident-title", /^E-stop: e-stop \(api\)$/);
      });

      await step(
        "Download JSONL and CSV: the API's exports, which refuse a request without the token",
        async () => {
          const path = `/v0/incidents/${encodeURIComponent(id)}`;
          // What a plain link would get.
          const bare = await apiFetch(`${rt.base}${path}?format=csv`);
          assert.equal(bare.status, 401);
          await bare.body?.cancel();
          for (const [format, ext] of [["CSV", "csv"], ["JSONL", "jsonl"]] as const) {
            const [download] = await Promise.all([
              page.waitForEvent("download", { timeout: PAGE_WAIT_MS }),
              page.getByRole("button", { name: `Download ${format}` }).click(),
            ]);
            assert.equal(download.suggestedFilename(), `${id}.${ext}`);
            const got = await Deno.readTextFile(await download.path());
            const res = await apiFetch(`${rt.base}${path}?format=${ext}`, { headers: auth });
            assert.equal(res.status, 200);
            assert.equal(got, await res.text(), `the ${format} download is the API's export`);
          }
          assert.equal(await page.locator("#token-dialog").isVisible(), false, "asked again");
          assert.deepEqual(await cspViolations(), []);
          // The 401s before the token was entered (and the 503 of a runtime without automation)
          // are the browser's own lines, as in console_network_test.ts.
          assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
        },
      );
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "Operator console: a trend whose history answer is incomplete (disk tier unreadable) says so",
  ignore: chromiumMissing(),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "console-trends-incomplete-" });
    await Deno.mkdir(`${dir}/data`);
    // A file where the disk tier's folder should be: every read of it fails.
    await Deno.writeTextFile(`${dir}/data/history`, "not a folder\n");
    const [browser, rt] = await launchChromiumAlongside(
      startRuntimeChildOnFreePort(async (port) => {
        await Deno.writeTextFile(
          `${dir}/runtime.yaml`,
          `runtime: {name: trends-incomplete, data_dir: ${dir}/data}
http: {port: ${port}}
${simRuntimeConfig()}`,
        );
        return { config: `${dir}/runtime.yaml`, port };
      }),
      (r) => r.stop(),
    );
    try {
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await page.goto(`${rt.base}/`);
      await waitForText(page, "#conn", /^Live$/);
      const sig = "sim0/tempctl0/tc1_temp";
      await waitForText(page, `tr[data-signal="${sig}"] td.value a`, /^-?\d+(\.\d+)?$/);
      await page.goto(`${rt.base}/#trend?s=${encodeURIComponent(sig)}`);
      await waitForText(
        page,
        "#trend p.error",
        /^sim0\/tempctl0: older points may be missing \(the disk tier could not be read\)$/,
      );
      // The chart is still drawn from the ring.
      await waitForChart(page, "#trend", "data-points", (v) => Number(v) > 0, "> 0");
      // The 503s of a runtime without automation are the browser's own lines.
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
