/**
 * The Incidents list is in the order of the incidents' times (its Time column), newest first, not
 * in the order they were recorded (the API's). A device loss is dated from its first failed read
 * but found down only once its reads have failed for a while (3 x polling.interval_ms: 3 minutes
 * with a 1-minute poll); an e-stop pressed meanwhile is recorded first. Before, the loss was listed
 * above the e-stop under "newest first" though it happened 50 s before it.
 *
 * The runtime in process over the programmable provider (a wall clock and a monotonic clock the
 * test sets: tests/history/_history_helpers.ts), served over real HTTP; the page in headless
 * Chromium.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  openChromium,
  waitForText,
} from "../helpers/browser.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { programReadFailure } from "../helpers/programmable_provider.ts";
import { probeValues, startRig, T0 } from "../history/_history_helpers.ts";

Deno.test({
  name:
    "Operator console: the incident list is by the incidents' times, a device loss found after a later e-stop below it",
  ignore: chromiumMissing(),
  fn: async () => {
    const rig = await startRig({
      dataDir: tempDir("console-incident-order-"),
      history: { incidentBeforeS: 2, incidentAfterS: 0, diskMaxBytes: 0 },
    });
    const browser = await openChromium();
    try {
      // Down once its reads have failed for 3 minutes (the monotonic clock is the test's).
      rig.rt.outages.setDownAfterMs(180_000);
      rig.clock.mono = 1_000_000;
      await rig.poll(T0 + 10_000, probeValues(1, 1));
      await programReadFailure(rig.rt.registry.host("p0")!);
      rig.clock.wallMs = T0 + 10_500;
      await rig.rt.cache.pollDevice("p0", "probe"); // its first failed read: the loss's date
      rig.clock.mono += 49_500;
      rig.clock.wallMs = T0 + 60_000;
      await rig.rt.estop.trigger("order test");
      await waitFor("the e-stop's record", () => rig.rt.incidents!.list().length === 1);
      rig.clock.mono += 180_000;
      rig.clock.wallMs = T0 + 240_000;
      await rig.rt.cache.pollDevice("p0", "probe"); // fails still: the device is down now
      await waitFor("the loss's record", () => rig.rt.incidents!.list().length === 2);
      await rig.rt.incidents!.settled();
      const listed = (await rig.json("/v0/incidents")).incidents as {
        incident_id: string;
        trigger: string;
        trigger_at_epoch_ms: number;
      }[];
      // The API's order: as recorded, the loss after the e-stop.
      assert.deepEqual(
        listed.map((i) => [i.trigger, i.trigger_at_epoch_ms]),
        [["device_loss", T0 + 10_500], ["estop", T0 + 60_000]],
      );

      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await page.goto(`${rig.base}/#incidents`);
      await waitForText(page, "#incidents caption", /^Incident records by time, newest first$/);
      assert.deepEqual(
        await page.locator("#incidents tbody tr").evaluateAll((rows) =>
          rows.map((r) => r.getAttribute("data-incident"))
        ),
        [listed[1]!.incident_id, listed[0]!.incident_id],
        "the e-stop (the later) first, then the loss",
      );
      const times = await page.locator("#incidents tbody tr td:first-child").allTextContents();
      assert.deepEqual(
        times,
        await page.evaluate(
          (ts) => ts.map((t) => new Date(t).toLocaleString()),
          [T0 + 60_000, T0 + 10_500],
        ),
      );
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      await rig.rt.stop();
    }
  },
});
