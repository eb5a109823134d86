/**
 * The Health view shows the claims still held for devices a provider does not list (GET
 * /v0/providers/health `held_claims`, docs/http-api.md "Resource claims"): a device that failed its
 * init at the provider's restart is not in the liveness table, its claims are in a table of their
 * own, updated when the provider comes back; while a reload restarts the provider, the claims of
 * its old process, until that process has exited.
 *
 * The runtime in process, served over real HTTP, with the programmable provider as its child
 * process (its inventory read from a file at each start); the page in headless Chromium.
 */
import assert from "node:assert/strict";
import {
  chromiumMissing,
  collectPageErrors,
  openChromium,
  PAGE_WAIT_MS,
  waitForText,
} from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";

const device = (claim: string) => ({
  signals: [{ id: "v", type: T.DOUBLE }],
  tags: { "anolis.claim": claim },
});
/** dcmt_0 and ph_0, each claiming its bus address (ph_0 a GPIO line too). */
const BOTH: Inventory = {
  devices: { dcmt_0: device("i2c:/dev/i2c-1:0x61"), ph_0: device("i2c:/dev/i2c-1:0x63 gpio:5") },
};
/**
 * The caption of the table of p0's held claims: those of devices it no longer lists, or of its old
 * process a reload is stopping.
 */
const HELD_CAPTION = "Claims still held for devices p0 does not list";
/** That table, by its caption's first word (whatever the rest says). */
const HELD_TABLE = '[data-provider="p0"] table:has(caption:text-matches("^Claims "))';
const HELD = `${HELD_TABLE} tbody tr`;
/** How long p0's old process takes to exit, and the reload's stop budget: longer than the test. */
const HELD_OPEN_MS = 120_000;
const LIVENESS =
  '[data-provider="p0"] table:has(caption:text-is("Device liveness of p0")) tbody tr';

Deno.test({
  name:
    "Operator console: the Health view lists the claims a provider holds for devices it no longer lists",
  ignore: chromiumMissing(),
  fn: async () => {
    const file = await Deno.makeTempFile({ prefix: "held-claims-", suffix: ".json" });
    await Deno.writeTextFile(file, JSON.stringify(BOTH));
    const rt = await startServing(
      testConfig({ providers: [programmableProvider("p0", file, { restart: {} })] }),
    );
    const browser = await openChromium();
    try {
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await page.goto(`http://127.0.0.1:${rt.http!.port}/#health`);
      await waitForText(page, '[data-provider="p0"] h3', /AVAILABLE/);
      assert.deepEqual(await page.locator(LIVENESS).locator("td:first-child").allTextContents(), [
        "dcmt_0",
        "ph_0",
      ]);
      assert.equal(await page.locator(HELD).count(), 0, "no held claims while both are listed");

      // ph_0 fails its init: the provider's next process lists dcmt_0 alone.
      await Deno.writeTextFile(file, JSON.stringify({ devices: { dcmt_0: BOTH.devices.dcmt_0! } }));
      const host = rt.registry.host("p0")!;
      const first = host.session!.pid;
      Deno.kill(first, "SIGKILL");
      await waitFor(
        "p0 back",
        () => host.available && host.session !== null && host.session.pid !== first,
        30_000,
      );
      await waitForText(page, HELD, /ph_0/);
      assert.deepEqual(
        await page.locator(HELD).evaluateAll((rows) =>
          rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent))
        ),
        [["ph_0", "i2c:/dev/i2c-1:0x63 gpio:5"]],
      );
      assert.equal(await page.locator(`${HELD_TABLE} caption`).textContent(), HELD_CAPTION);
      assert.deepEqual(await page.locator(LIVENESS).locator("td:first-child").allTextContents(), [
        "dcmt_0",
      ]);
      // A read while the provider restarts may answer 503 (the browser logs it): not a page error.
      // The API's answers are checked against the OpenAPI document (collectPageErrors).
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(file);
    }
  },
});

Deno.test({
  name:
    "Operator console: the Health view lists the claims of a provider's old process a reload restarting it is still stopping",
  ignore: chromiumMissing(),
  fn: async () => {
    const KEY = "i2c:/dev/i2c-1:0x61";
    // p0's process does not exit by itself once its stdin closes, and the reload's stop budget
    // (runtime.shutdown_timeout_ms) outlasts the test: the window stays open until the test ends
    // the old process (a window of a few seconds closed before a loaded machine showed the page).
    const file = await Deno.makeTempFile({ prefix: "held-claims-", suffix: ".json" });
    const pidFile = await Deno.makeTempFile({ prefix: "held-claims-", suffix: ".pids" });
    await Deno.writeTextFile(
      file,
      JSON.stringify({ exitDelayMs: HELD_OPEN_MS, pidFile, devices: { dcmt_0: device(KEY) } }),
    );
    const rt = await startServing(
      testConfig({
        providers: [programmableProvider("p0", file)],
        runtime: { shutdownTimeoutMs: HELD_OPEN_MS },
      }),
    );
    const browser = await openChromium();
    let reload: Promise<unknown> | null = null;
    let oldPid = 0;
    try {
      const page = await browser.newPage();
      const errors = collectPageErrors(page);
      await page.goto(`http://127.0.0.1:${rt.http!.port}/#health`);
      await waitForText(page, '[data-provider="p0"] h3', /AVAILABLE/);
      assert.equal(await page.locator(HELD).count(), 0, "no held claims while p0 lists dcmt_0");

      // A reload changes p0's entry: its old process is stopped (slowly), then a new one started.
      reload = rt.reload({
        ...rt.config,
        providers: rt.config.providers.map((p) => ({ ...p, timeoutMs: p.timeoutMs + 1 })),
      });
      await waitFor(
        "p0's old process still ending",
        () => rt.registry.host("p0") === undefined && rt.registry.retiringHosts().length === 1,
        10_000,
        0,
      );
      oldPid = Number((await Deno.readTextFile(pidFile)).split("\n")[0]); // the first p0 wrote
      // The new process (its inventory read at its start) exits as soon as it is asked to.
      await Deno.writeTextFile(file, JSON.stringify({ devices: { dcmt_0: device(KEY) } }));
      // The page's health reads (the 2 s refresh, p0's events) show them within the window.
      await waitForText(page, HELD, /dcmt_0/);
      assert.equal(rt.registry.retiringHosts().length, 1, "shown within the window");
      assert.equal(await page.locator(`${HELD_TABLE} caption`).textContent(), HELD_CAPTION);
      assert.deepEqual(
        await page.locator(HELD).evaluateAll((rows) =>
          rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent))
        ),
        [["dcmt_0", KEY]],
      );
      // The old process ends: the reload goes on to start the new one.
      Deno.kill(oldPid, "SIGKILL");
      await reload;
      // The new process lists dcmt_0: its claim is the device's own again, none held apart.
      await page.locator(HELD_TABLE).waitFor({ state: "detached", timeout: PAGE_WAIT_MS });
      assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      try {
        if (oldPid !== 0) Deno.kill(oldPid, "SIGKILL"); // a failed test does not wait for it
      } catch { /* exited */ }
      await reload?.catch(() => {});
      await browser.close();
      await rt.stop();
      await Deno.remove(file);
      await Deno.remove(pidFile);
    }
  },
});
