/**
 * The times the console writes after an action -- "OK at <time>" under a call's form, "Acknowledged
 * at <time>" beside an alarm -- are the runtime's, as every other time on the page is (the alarms'
 * transitions, the e-stop latch, the runs): a tablet whose clock is hours off must not say the call
 * ran at a time the audit trail and the alarm's transitions contradict. The page's clock is
 * Playwright's, set OFFSET_MS ahead of the runtime's and running from there.
 *
 * The runtime in process with the simulated provider as its child process, served over real HTTP;
 * the page in headless Chromium.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { chromiumMissing, openChromium, waitForText } from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig, Api } from "../scenarios/alarms_helpers.ts";

/** How far ahead of the runtime's clock the page's clock runs: 3 h 17 min. */
const OFFSET_MS = (3 * 60 + 17) * 60_000;
/** The slack either side of when an action ran, for the runtime's clock as the page carries it. */
const SLACK_MS = 1500;

const CALIBRATE = 'form[data-fn="sim0/analogsensor0/1"]';
const ALARM = 'tr[data-alarm="tc1_hot"]';

/**
 * Every time of day the page writes (toLocaleTimeString) for a runtime time in [from, to]: the
 * page formats, so the locale and time zone are the page's.
 */
async function timesOfDay(page: Page, from: number, to: number): Promise<string[]> {
  return await page.evaluate(([a, b]) => {
    const out: string[] = [];
    for (let ms = a!; ms <= b! + 999; ms += 1000) out.push(new Date(ms).toLocaleTimeString());
    return out;
  }, [from - SLACK_MS, to + SLACK_MS]);
}

Deno.test({
  name:
    "Operator console writes a call's 'OK at' and an alarm's acknowledge time on the runtime's clock, not the browser's",
  ignore: chromiumMissing(),
  fn: async () => {
    const { alarms } = alarmsConfig(`
alarms:
  - { id: tc1_hot, signal: sim0/tempctl0/tc1_temp, hi: 10, message: always above 10 here }
`);
    const rt = await startServing(testConfig({ providers: [simProvider("sim0")], alarms }));
    const api = new Api(`http://127.0.0.1:${rt.http!.port}`);
    const browser = await openChromium();
    try {
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitFor(
        "tc1_hot raised",
        async () => (await api.get("/v0/alarms/tc1_hot")).json.alarm.state === "active",
      );
      const page = await browser.newPage();
      await page.clock.install({ time: Date.now() + OFFSET_MS });
      await page.goto(`${api.base}/`);
      // The runtime's clock is known to the page once a state read answered (ages shown).
      await waitForText(page, 'tr[data-signal="sim0/tempctl0/tc1_temp"] td.age', /\d s$/);

      const form = page.locator(CALIBRATE);
      await form.getByLabel("channel").fill("1");
      const calledFrom = Date.now();
      await form.getByRole("button", { name: "Run calibrate_channel" }).click();
      const ok = await waitForText(page, `${CALIBRATE} .result`, /^OK at /);
      const calledTo = Date.now();
      const okAt = /^OK at (.+); the device was re-polled\.$/.exec(ok)?.[1];
      assert.ok(okAt !== undefined, `a call's result: ${JSON.stringify(ok)}`);
      const callTimes = await timesOfDay(page, calledFrom, calledTo);
      assert.ok(
        callTimes.includes(okAt),
        `"OK at ${okAt}" is the runtime's time of the call, one of ${callTimes.join(", ")}`,
      );

      await page.goto(`${api.base}/#alarms`);
      const ack = page.getByRole("button", { name: "Acknowledge tc1_hot" });
      const ackedFrom = Date.now();
      await ack.click();
      const acked = await waitForText(page, `${ALARM} .result`, /^Acknowledged at /);
      const ackedTo = Date.now();
      const ackedAt = /^Acknowledged at (.+)\.$/.exec(acked)?.[1];
      assert.ok(ackedAt !== undefined, `an acknowledge's result: ${JSON.stringify(acked)}`);
      const ackTimes = await timesOfDay(page, ackedFrom, ackedTo);
      assert.ok(
        ackTimes.includes(ackedAt),
        `"Acknowledged at ${ackedAt}" is the runtime's time of the ack, one of ${
          ackTimes.join(", ")
        }`,
      );
      // The same time as the ack transition the runtime recorded (and the page lists).
      const alarm = (await api.get("/v0/alarms/tc1_hot")).json.alarm;
      const recorded = alarm.transitions.findLast((t: { transition: string }) =>
        t.transition === "ack"
      );
      assert.equal(
        ackedAt,
        await page.evaluate((ms) => new Date(ms).toLocaleTimeString(), recorded.at_epoch_ms),
      );
    } finally {
      await browser.close();
      await rt.stop();
    }
  },
});
