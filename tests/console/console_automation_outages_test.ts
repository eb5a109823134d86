/**
 * The operator console's Automation view shows each device outage in words, as it shows the
 * refused calls (`sim0/motorctl0 by mode (2 in a row): ...`), not the status's JSON text.
 *
 * The runtime in process with the simulated provider and a tree that waits, served over real
 * HTTP; two automated calls the device fails (an injected fault) make the outage; the page in
 * headless Chromium.
 */
import assert from "node:assert/strict";
import { chromiumMissing, launchChromium, waitForText } from "../helpers/browser.ts";
import { startServing } from "../helpers/kernel.ts";
import { automationConfig, callAs, TreeDir, treeXml, tv } from "../scenarios/automation_helpers.ts";

const OUTAGES = '#automation-status div:has(> dt:text-is("Device outages")) > dd';

Deno.test({
  name: "Operator console: the Automation view shows device outages in words, not JSON",
  ignore: chromiumMissing(),
  fn: async () => {
    const dir = await TreeDir.create();
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const rt = await startServing(automationConfig(tree));
    const browser = await launchChromium();
    try {
      await rt.modes.request("MANUAL"); // the mode gate lets automated calls through
      await callAs(rt, "manual", "sim0/chaos_control", "inject_call_failure", {
        device_id: tv.s("motorctl0"),
        function_id: tv.s("10"), // set_motor_duty
        failure_rate: tv.d(1),
      });
      const signal = new AbortController().signal;
      const args = { motor_index: tv.i(1), duty: tv.d(0.2) };
      for (let i = 0; i < 2; i++) {
        await assert.rejects(
          rt.automation!.services.callDevice("sim0/motorctl0", "set_motor_duty", args, signal),
          /injected fault/,
        );
      }
      assert.equal(rt.automation!.status().device_outages.length, 1);
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${rt.http!.port}/#automation`);
      const text = await waitForText(page, OUTAGES, /sim0\/motorctl0/);
      assert.match(
        text,
        /^sim0\/motorctl0 \(2 calls failed in a row\): .*injected fault/,
        `one outage in words: ${text}`,
      );
    } finally {
      await browser.close();
      await rt.stop();
      await dir.dispose();
    }
  },
});
