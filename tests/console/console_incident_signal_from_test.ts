/**
 * An incident's page says where a signal's samples begin when the record says its history ring
 * had let go of the start of its window (the signal line's `from_epoch_ms`, docs/history.md
 * "Incidents"): listed under the chart, charted or not, and in the legend of a charted line.
 * Before, the page drew such a line as if it covered the window (a line that begins late read as
 * a signal that did not change before), and a string signal said nothing at all.
 *
 * The runtime in process over the programmable provider (exact values, a wall clock the test
 * sets: tests/history/_history_helpers.ts), served over real HTTP; the page in headless Chromium.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  chromiumMissing,
  collectPageErrors,
  openChromium,
  PAGE_WAIT_MS,
  type PageGlobal,
  waitForText,
} from "../helpers/browser.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { FIRST_CAPACITY, POLL_ENTRY_BYTES, SIGNAL_ENTRY_BYTES } from "../../src/history/ring.ts";
import { type HistoryRig, probeValues, startRig, T0 } from "../history/_history_helpers.ts";

/** The list under the chart of the signals whose samples begin later. */
const LATE = "#incidents .late-signals li";

/**
 * Starts a rig over the probe with `memoryMaxBytes`, polls it (`feed`), presses the e-stop and
 * opens its incident's page; `check` runs on the page once its chart is drawn.
 */
async function onIncidentPage(
  memoryMaxBytes: number,
  feed: (rig: HistoryRig) => Promise<void>,
  check: (page: Page, incident: { until_epoch_ms: number }) => Promise<void>,
): Promise<void> {
  const rig = await startRig({
    dataDir: tempDir("console-incident-from-"),
    history: { memoryMaxBytes, incidentBeforeS: 10, incidentAfterS: 0, diskMaxBytes: 0 },
  });
  const browser = await openChromium();
  try {
    await feed(rig);
    await rig.rt.estop.trigger("signal from test");
    const header = await waitFor(
      "the e-stop's incident record",
      async () => (await rig.json("/v0/incidents")).incidents[0],
      PAGE_WAIT_MS,
    );
    const page = await browser.newPage();
    const errors = collectPageErrors(page);
    // The inventory (the units) read first: its arrival would load the incident's page again,
    // under the checks below.
    await page.goto(`${rig.base}/`);
    await page.locator("[data-device]").first().waitFor({ state: "attached" });
    await page.evaluate(
      (hash) => (globalThis as PageGlobal).location.hash = hash,
      `#incidents/${encodeURIComponent(header.incident_id)}`,
    );
    await page.locator("#incidents .chart canvas").first().waitFor({ timeout: PAGE_WAIT_MS });
    await check(page, header);
    assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
  } finally {
    await browser.close();
    await rig.rt.stop();
  }
}

/** Texts of the elements `selector` matches. */
async function texts(page: Page, selector: string): Promise<string[]> {
  return (await page.locator(selector).allTextContents()).map((t) => t.trim());
}

Deno.test({
  name:
    "Operator console: an incident's page says from when a signal's samples begin when its ring had let go of the window's start",
  ignore: chromiumMissing(),
  fn: () =>
    onIncidentPage(
      65_536,
      async (rig) => {
        await rig.poll(T0 + 500, probeValues(20, 0, "a"));
        // Too large for the ring: not kept, nor "a" before it (the label's line has from_epoch_ms).
        await rig.poll(T0 + 1500, probeValues(21, 1, "x".repeat(40_000)));
        await rig.poll(T0 + 2500, probeValues(22, 2, "c"));
      },
      async (page) => {
        const from = await page.evaluate((t) => new Date(t).toLocaleTimeString(), T0 + 2500);
        await waitForText(page, LATE, /./);
        // The label is a string: not charted, but listed with where its samples begin.
        assert.deepEqual(await texts(page, LATE), [`p0/probe/label: from ${from}`]);
        assert.equal(await page.locator(`${LATE}[data-signal="p0/probe/label"]`).count(), 1);
        // Why a line begins late, every cause named (the ring's, a retype's, a unit change's).
        assert.match(
          (await page.locator("#incidents .late-signals p").textContent()) ?? "",
          /let go of their earlier changes, or a retype or a unit change began their line/,
        );
        // The numeric lines cover the window: their legends say nothing more.
        assert.deepEqual(await texts(page, "#incidents .u-legend .u-series .u-label"), [
          "Time",
          "p0/probe/temp",
          "p0/probe/count",
        ]);
      },
    ),
});

Deno.test({
  name:
    "Operator console: an incident's chart legend says a line's ring kept no sample of its window",
  ignore: chromiumMissing(),
  fn: () =>
    onIncidentPage(
      // Room for the device's polls and one signal's first changes (temp's): count and label
      // have none (their lines' from_epoch_ms is the window's end).
      FIRST_CAPACITY * (POLL_ENTRY_BYTES + SIGNAL_ENTRY_BYTES),
      async (rig) => {
        for (let i = 0; i < 3; i++) await rig.poll(T0 + 500 + i * 1000, probeValues(20 + i, i));
      },
      async (page) => {
        await waitForText(page, LATE, /./);
        assert.deepEqual(await texts(page, LATE), [
          "p0/probe/count: no sample kept in the window",
          "p0/probe/label: no sample kept in the window",
        ]);
        assert.deepEqual(await texts(page, "#incidents .u-legend .u-series .u-label"), [
          "Time",
          "p0/probe/temp",
          "p0/probe/count (no sample kept in the window)",
        ]);
      },
    ),
});
