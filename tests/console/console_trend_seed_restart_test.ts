/**
 * A trend seeded from GET /v0/history across a runtime restart: the history answer records no
 * restart, and the seeded line joined the last point of the earlier run (from the disk tier) to
 * the first of the new one, as if the signal had been read during the outage. The line now
 * breaks where the answer has no point for longer than TREND_GAP_INTERVALS sample spacings (the
 * disk tier's 1 s buckets here: 3 s), a gap with no data listed under the chart. The real runtime
 * with the simulated provider, stopped, left down past that bound (the runtime's own wall clock:
 * no page clock can give it) and started again on the same data directory; the page in headless
 * Chromium, opened after the restart, or opened before it with its seed read held over it (the
 * stream's resync reads the range again, from the new run: the same answer must not join).
 */
import assert from "node:assert/strict";
import type { Page, Route } from "playwright-core";
import {
  chromiumMissing,
  collectPageErrors,
  launchChromiumAlongside,
  PAGE_WAIT_MS,
  waitForText,
} from "../helpers/browser.ts";
import {
  type RuntimeChild,
  startRuntimeChild,
  startRuntimeChildOnFreePort,
} from "../helpers/runtime_process.ts";
import { SIM_MAIN, SIM_YAML } from "../helpers/sim_config.ts";

const TEMP = "sim0/tempctl0/tc1_temp";
/** The config's polling.interval_ms and history.step_ms (the disk tier's buckets). */
const POLL_MS = 250;
const DISK_STEP_MS = 1000;
/** console/trend.js TREND_GAP_INTERVALS: the outage must be longer than this many disk steps. */
const GAP_INTERVALS = 3;
const BOUND_MS = GAP_INTERVALS * DISK_STEP_MS;

/** A runtime child with the simulated provider, stopped and started again past the bound. */
async function restartRig(dir: string) {
  const config = `${dir}/runtime.yaml`;
  const [browser, first] = await launchChromiumAlongside(
    startRuntimeChildOnFreePort(async (port) => {
      await Deno.writeTextFile(
        config,
        `runtime: {name: trend-seed-restart-test, data_dir: ${dir}/data}
http:
  port: ${port}
polling: {interval_ms: ${POLL_MS}}
history: {step_ms: ${DISK_STEP_MS}}
providers:
  - id: sim0
    command: ${JSON.stringify(Deno.execPath())}
    args: [run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_YAML}]
`,
      );
      return { config, port };
    }),
    (r) => r.stop(),
  );
  /** The signal's history points over the last 5 minutes, as the page asks (200 ms step). */
  const history = async (): Promise<number[]> => {
    const now = Date.now();
    const res = await fetch(
      `${first.base}/v0/history/sim0/tempctl0?signal_id=tc1_temp&since_ms=${
        now - 300_000
      }&until_ms=${now}&step_ms=200`,
    );
    const body = await res.json();
    assert.strictEqual(res.status, 200, JSON.stringify(body));
    return (body.signals?.[0]?.points ?? []).map((p: { t_ms: number }) => p.t_ms);
  };
  /** Polls `ok` on real time (the runtime polls on its own clock), within PAGE_WAIT_MS. */
  const until = async (what: string, ok: () => Promise<boolean>) => {
    const deadline = Date.now() + PAGE_WAIT_MS;
    while (!(await ok())) {
      if (Date.now() > deadline) throw new Error(`never: ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const rig = {
    browser,
    base: first.base,
    rt: first as RuntimeChild | null,
    /** Two disk buckets of the first run at least. */
    firstRun: () =>
      until("the first run's history", async () => {
        const ts = await history();
        return ts.length > 0 && ts.at(-1)! - ts[0]! >= 2 * DISK_STEP_MS;
      }),
    /** Stops the runtime, waits past the bound, starts it again; the new run polled. */
    restart: async () => {
      await first.stop();
      rig.rt = null;
      const stoppedAt = Date.now();
      // The outage must outlast the bound: the runtime's wall clock, which no fake clock moves.
      await new Promise((r) => setTimeout(r, BOUND_MS + DISK_STEP_MS - (Date.now() - stoppedAt)));
      rig.rt = await startRuntimeChild({ config, port: first.port });
      await until("the new run's points", async () => {
        return (await history()).filter((t) => t > stoppedAt).length >= 4;
      });
      // What a seed reads has the outage, and nothing else as long.
      const ts = await history();
      const gaps = ts.slice(1).map((t, i) => t - ts[i]!);
      assert.strictEqual(gaps.filter((g) => g > BOUND_MS).length, 1, JSON.stringify(gaps));
    },
    close: async () => {
      await browser.close();
      await rig.rt?.stop();
    },
  };
  return rig;
}

/** Waits for the trend's gap list and checks it names one gap with no data, and only that. */
async function oneNoDataGap(page: Page) {
  await waitForText(page, "#trend .trend-source", /^Answered by: /);
  const text = await waitForText(page, "#trend .trend-gaps", /gap|No quality gaps/);
  assert.match(text, new RegExp(`^${TEMP}: 1 gap \\(no data\\)`), text);
  assert.equal(await page.locator("#trend .trend-gaps li").count(), 1);
}

Deno.test({
  name: "TrendView breaks a line seeded from the history where the runtime was down (no data)",
  ignore: chromiumMissing(),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "console-trend-seed-restart-" });
    const rig = await restartRig(dir);
    try {
      await rig.firstRun();
      await rig.restart();
      const page = await rig.browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors = collectPageErrors(page);
      await page.goto(`${rig.base}/#trend?s=${TEMP}`);
      await oneNoDataGap(page);
      assert.deepStrictEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
    } finally {
      await rig.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "TrendView does not join a line over a restart seen while its seed was read",
  ignore: chromiumMissing(),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "console-trend-seed-restart-" });
    const rig = await restartRig(dir);
    try {
      await rig.firstRun();
      const page = await rig.browser.newPage({ viewport: { width: 1280, height: 900 } });
      // Every history read is held (the seed under way) over the restart; then those asked before
      // it are dropped as connections the stop cut, and the one the stream's resync asked (the
      // runtime restarted: the range is read again) is answered by the new run.
      const held: Route[] = [];
      let reads = 0;
      let released = false;
      await page.route("**/v0/history/**", async (route) => {
        reads++;
        if (released) return await route.continue();
        held.push(route);
      });
      await page.goto(`${rig.base}/#trend?s=${TEMP}`);
      await waitForText(page, "#conn", /^Live$/);
      await page.locator("#trend-add option").first().waitFor({
        state: "attached",
        timeout: PAGE_WAIT_MS,
      });
      const before = held.length;
      assert.ok(before >= 1, "no history read held");
      await rig.restart();
      const deadline = Date.now() + 3 * PAGE_WAIT_MS;
      while (held.length === before) {
        if (Date.now() > deadline) throw new Error("the range was not read again after the resync");
        await new Promise((r) => setTimeout(r, 50));
      }
      released = true;
      for (const route of held.slice(0, -1)) await route.abort();
      await held.at(-1)!.continue();
      await oneNoDataGap(page);
      assert.ok(reads >= 2, `history reads: ${reads}`);
    } finally {
      await rig.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
