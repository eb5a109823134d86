/**
 * The operator console whose first full read failed (the runtime away for a moment right after it
 * served the page: a restart after a deploy) and whose event stream opens only afterwards: the
 * devices must still appear. The stream's first opening re-reads nothing (the first read was to
 * do that), and the 2 s refresh re-reads values, not the inventory, so the Devices view stayed
 * empty -- under a "Live" header -- until some device came or went (docs/console.md: the page
 * re-reads every 2 s and re-reads everything when it cannot resume). The real runtime with the
 * simulated provider; the runtime's absence is played by the page's own routes (the inventory
 * read and the stream's first attempts fail); the page in headless Chromium.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  chromiumMissing,
  launchChromium,
  launchChromiumAlongside,
  PAGE_WAIT_MS,
  sequentialSteps,
} from "../helpers/browser.ts";
import { freePort, type RuntimeChild, startRuntimeChild } from "../helpers/runtime_process.ts";
import { simProvider, simRuntimeConfig, testConfig } from "../helpers/sim_config.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";

Deno.test({
  name:
    "Operator console shows the devices when its first full read failed before the stream opened",
  ignore: chromiumMissing(),
  fn: async (t) => {
    const step = sequentialSteps(t);
    const dir = await Deno.makeTempDir({ prefix: "console-first-read-" });
    const port = freePort();
    const config = `${dir}/runtime.yaml`;
    await Deno.writeTextFile(
      config,
      `runtime: {name: first-read-test, data_dir: ${dir}/data}
http:
  port: ${port}
${simRuntimeConfig()}`,
    );
    const [browser, rt] = await launchChromiumAlongside<RuntimeChild>(
      startRuntimeChild({ config, port }),
      (r) => r.stop(),
    );
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      let inventoryFailed = false;
      await page.route("**/v0/devices", async (route) => {
        if (!inventoryFailed) {
          inventoryFailed = true;
          await route.abort("connectionrefused");
          return;
        }
        await route.continue();
      });
      // The stream reconnects by itself: its attempts fail until the first read has failed.
      await page.route("**/v0/events*", async (route) => {
        if (!inventoryFailed) await route.abort("connectionrefused");
        else await route.continue();
      });
      await step("the first read fails, then the stream opens", async () => {
        await page.goto(`${rt.base}/#devices`);
        await waitFor("the inventory read was made", () => inventoryFailed, PAGE_WAIT_MS);
        await page.locator("#conn.conn-live").waitFor({ timeout: PAGE_WAIT_MS });
      });
      await step("the devices appear", async () => {
        await page.locator('tr[data-signal^="sim0/"]').first().waitFor({ timeout: 10_000 });
      });
    } finally {
      await browser.close();
      await rt.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

/** The runtime in process (simulated provider, one parameter) and the page in headless Chromium. */
async function withPage(
  body: (page: Page, base: string) => Promise<void>,
): Promise<void> {
  const rt = await startServing(testConfig({
    providers: [simProvider("sim0")],
    automation: {
      enabled: true,
      parameters: [{
        name: "target_temp",
        type: "double",
        default: 40,
        min: 0,
        max: 120,
        allowedValues: [],
      }],
    },
  }));
  const browser = await launchChromium();
  try {
    await body(await browser.newPage(), `http://127.0.0.1:${rt.http!.port}`);
  } finally {
    await browser.close();
    await rt.stop();
  }
}

/** Counts the page's GET requests of exactly `path`. */
function countRequests(page: Page, path: string): { n: number } {
  const count = { n: 0 };
  page.on("request", (r) => {
    if (r.method() === "GET" && new URL(r.url()).pathname === path) count.n++;
  });
  return count;
}

Deno.test({
  name: "Operator console: a resync re-reads the values at once, not at the next 2 s refresh",
  ignore: chromiumMissing(),
  fn: async () => {
    await withPage(async (page, base) => {
      // The stream's first answer is one resync event, handed over when the test says.
      const resync = Promise.withResolvers<void>();
      let first = true;
      await page.route("**/v0/events*", async (route) => {
        if (!first) return await route.continue();
        first = false;
        await resync.promise;
        await route.fulfill({
          status: 200,
          headers: { "content-type": "text/event-stream" },
          body: 'event: resync\nid: 0-1\ndata: {"reason":"too_old","last_event_id":"0-1"}\n\n',
        });
      });
      // Once armed, status reads are held for good: the 2 s refresh (which waits for its own
      // status read) then never runs again, and only the resync's full refresh can read values.
      let holdStatus = false;
      let statusHeld = 0;
      const never = Promise.withResolvers<void>();
      await page.route("**/v0/runtime/status", async (route) => {
        if (!holdStatus) return await route.continue();
        statusHeld++;
        await never.promise;
        await route.abort().catch(() => {});
      });
      const stateReads = countRequests(page, "/v0/state");
      try {
        await page.goto(`${base}/#devices`);
        await page.locator('tr[data-signal^="sim0/"]').first().waitFor({ timeout: PAGE_WAIT_MS });
        holdStatus = true;
        const before = stateReads.n;
        await waitFor("a refresh is held", () => statusHeld > 0, PAGE_WAIT_MS);
        // The held refresh's own value read.
        await waitFor("its value read", () => stateReads.n > before, PAGE_WAIT_MS);
        const held = stateReads.n;
        resync.resolve();
        await waitFor("the resync's value read", () => stateReads.n > held, PAGE_WAIT_MS);
      } finally {
        resync.resolve();
        never.resolve();
      }
    });
  },
});

Deno.test({
  name: "Operator console: a failed parameters read is retried at the next refresh",
  ignore: chromiumMissing(),
  fn: async () => {
    await withPage(async (page, base) => {
      let failed = false;
      await page.route("**/v0/parameters", async (route) => {
        if (failed) return await route.continue();
        failed = true;
        await route.abort("connectionrefused");
      });
      // The Devices view: only the full refreshes read the parameters (no view switch does).
      await page.goto(`${base}/#devices`);
      await waitFor("the parameters read failed", () => failed, PAGE_WAIT_MS);
      await page.locator('#parameters form[data-parameter="target_temp"]').waitFor({
        state: "attached",
        timeout: PAGE_WAIT_MS,
      });
    });
  },
});

Deno.test({
  name: "Operator console: a read failing for good does not make every 2 s refresh a full one",
  ignore: chromiumMissing(),
  fn: async () => {
    await withPage(async (page, base) => {
      await page.route("**/v0/parameters", (route) => route.abort("connectionrefused"));
      // No stream: its reconnections would re-read everything on their own.
      await page.route("**/v0/events*", (route) => route.abort("connectionrefused"));
      let inFlight = 0;
      page.on("request", () => inFlight++);
      page.on("requestfinished", () => inFlight--);
      page.on("requestfailed", () => inFlight--);
      const inventoryReads = countRequests(page, "/v0/devices");
      await page.clock.install();
      await page.goto(`${base}/#devices`);
      await page.locator('tr[data-signal^="sim0/"]').first().waitFor({ timeout: PAGE_WAIT_MS });
      await page.clock.pauseAt(Date.now() + 1000);
      const settled = async () => {
        await waitFor("the refresh settled", () => inFlight === 0, PAGE_WAIT_MS);
        await new Promise((r) => setTimeout(r, 100));
        await waitFor("the refresh settled", () => inFlight === 0, PAGE_WAIT_MS);
      };
      await settled();
      const before = inventoryReads.n;
      const REFRESHES = 15;
      for (let i = 0; i < REFRESHES; i++) {
        await page.clock.runFor(2000);
        await settled();
      }
      const full = inventoryReads.n - before;
      // Every 2 s before (15); backing off 2, 4, 8, 16 s: at most 5.
      assert.ok(full >= 2 && full <= 5, `${full} full refreshes of ${REFRESHES}`);
    });
  },
});
