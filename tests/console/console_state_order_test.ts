/**
 * The Devices view orders what GET /v0/state answers against what the event stream sends by when
 * each arrived in the page, not by comparing the state read's `timestamp_epoch_ms` (the
 * provider's own clock) with a `state_update`'s `timestamp_ms` (the runtime's clock when it
 * received the sample): a provider stamps a sample before the runtime receives it, so a read of
 * the same sample looked older than the update and was dropped -- with it the STALE the read
 * reports once the provider stops answering the signal (the stream sends nothing for that), and
 * the page showed the signal OK for good. The age shown is the runtime's (`age_ms`), whatever the
 * provider's clock says.
 *
 * The runtime in process, served over real HTTP, with the programmable provider as its child
 * process (its clock a second behind the runtime's); the page in headless Chromium.
 */
import assert from "node:assert/strict";
import { chromiumMissing, openChromium, waitForText } from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { Api, program } from "../scenarios/alarms_helpers.ts";

/** The signal's staleness bound (health.staleness.stale_after_ms). */
const STALE_AFTER_MS = 1000;
/** How far behind the runtime's clock the provider stamps its samples. */
const BEHIND_MS = 1000;
/** How long the page is given to show what the API shows (a few of its 2 s refresh cycles). */
const SHOW_MS = 10_000;

const TEMP = 'tr[data-signal="p0/probe/temp"]';

Deno.test({
  name:
    "Operator console: a signal the provider stops answering shows STALE, as the state read says, after streamed updates",
  ignore: chromiumMissing(),
  fn: async () => {
    const inventory: Inventory = {
      devices: {
        probe: {
          signals: [{ id: "temp", type: T.DOUBLE }, { id: "level", type: T.DOUBLE }],
          values: [dbl("temp", 25, { ts: Date.now() - BEHIND_MS }), dbl("level", 1)],
        },
      },
    };
    const file = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
    await Deno.writeTextFile(file, JSON.stringify(inventory));
    const rt = await startServing(testConfig({
      providers: [programmableProvider("p0", file)],
      pollingIntervalMs: 100,
      health: { staleness: { warnAfterMs: 0, staleAfterMs: STALE_AFTER_MS } },
    }));
    const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      await page.goto(`${api.base}/`);
      await waitForText(page, `${TEMP} td.value`, /^25$/);

      // A new value, streamed (state_update), stamped by the provider a second behind.
      await program(rt, "p0", "probe", {
        read: { values: [dbl("temp", 26, { ts: Date.now() - BEHIND_MS }), dbl("level", 1)] },
      });
      await waitForText(page, `${TEMP} td.value`, /^26$/);
      assert.match(
        await page.locator(`${TEMP} td.age`).textContent() ?? "",
        /^\d\.\d s$/,
        "the age is the runtime's, not the provider's clock",
      );

      // The provider stops answering temp: the state read finds it STALE past its bound.
      await program(rt, "p0", "probe", { read: { values: [dbl("level", 1)] } });
      await waitFor("GET /v0/state to say temp is STALE", async () => {
        const s = await api.get("/v0/state/p0/probe?signal_id=temp");
        return s.json.values?.[0]?.quality === "STALE";
      }, SHOW_MS);
      await waitForText(page, `${TEMP} td.quality`, /^STALE$/, SHOW_MS);
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(file);
    }
  },
});
