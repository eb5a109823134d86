/**
 * The Health view's "Next restart in" countdown moves in 1 s steps: the API's next_restart_in_ms
 * is carried forward on the page's monotonic clock every second between two reads of the health
 * (every 2 s), not shown only as each read answers it. The page's clock is Playwright's, moved a
 * second at a time; the health reads after the first are held (503), so only the tick moves it.
 *
 * The runtime in process, served over real HTTP; the programmable provider exits (function 3) and
 * its supervisor waits 30 s before restarting it; the page in headless Chromium.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  installStoppedClock,
  openChromium,
  waitForText,
} from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { answerHealthOnce } from "./_held_health.ts";

const NEXT_RESTART = '[data-provider="p0"] dt:text-is("Next restart") + dd';
/**
 * The supervisor's wait before the restart: long enough for whole seconds (formatAge >= 10 s),
 * and for a loaded machine to show the page with 14 s or more still to count.
 */
const BACKOFF_MS = 50_000;

Deno.test({
  name: "Operator console: the Health view's next restart counts down in 1 s steps",
  ignore: chromiumMissing(),
  fn: async () => {
    const inventory: Inventory = {
      devices: { probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [] } },
    };
    const file = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
    await Deno.writeTextFile(file, JSON.stringify(inventory));
    const rt = await startServing(testConfig({
      providers: [
        programmableProvider("p0", file, {
          restart: { backoffMs: [BACKOFF_MS, BACKOFF_MS, BACKOFF_MS] },
        }),
      ],
    }));
    const browser = await openChromium();
    try {
      const host = rt.registry.host("p0")!;
      await host.request("call", { device_id: "probe", function_id: 3, args: {} });
      await waitFor("the restart is scheduled", () => !host.available);
      const page = await browser.newPage();
      // The page's clock stands still but when the test moves it: each second is exactly one.
      await installStoppedClock(page);
      // One health read answered; the others held until it is shown, then refused (503), so
      // what moves the countdown is the page's own 1 s tick alone (_held_health.ts).
      const health = await answerHealthOnce(page);
      await page.goto(`http://127.0.0.1:${rt.http!.port}/#health`);
      const text = await waitForText(page, NEXT_RESTART, /^in \d+ s$/);
      health.release();
      const n = Number(/^in (\d+) s$/.exec(text)![1]);
      assert.ok(n >= 14, `the restart is due in ${n} s: time enough to count four seconds`);
      const shown: string[] = [];
      for (let i = 0; i < 4; i++) {
        await page.clock.runFor(1000);
        shown.push(await page.locator(NEXT_RESTART).textContent() ?? "");
      }
      assert.deepEqual(
        shown,
        [`in ${n - 1} s`, `in ${n - 2} s`, `in ${n - 3} s`, `in ${n - 4} s`],
        `each second from "${text}"`,
      );
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(file);
    }
  },
});
