/**
 * The operator console's Automation view shows each device outage in words, as it shows the
 * refused calls (`sim0/motorctl0 by mode (2 in a row): ...`), not the status's JSON text; a tree
 * ticking in AUTO whose calls are all refused is shown "Blocked", not "Running".
 *
 * The runtime in process with the simulated provider and a tree that waits, served over real
 * HTTP; two automated calls the device fails (an injected fault) make the outage; the page in
 * headless Chromium.
 */
import assert from "node:assert/strict";
import { chromiumMissing, openChromium, waitForText } from "../helpers/browser.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { policyProvider } from "../helpers/policy_provider.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { automationConfig, callAs, TreeDir, treeXml, tv } from "../scenarios/automation_helpers.ts";

const OUTAGES = '#automation-status div:has(> dt:text-is("Device outages")) > dd';

Deno.test({
  name: "Operator console: the Automation view shows device outages in words, not JSON",
  ignore: chromiumMissing(),
  fn: async () => {
    const dir = await TreeDir.create();
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const rt = await startServing(automationConfig(tree));
    const browser = await openChromium();
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

/** Calls pol/act0 `leased` (requires a lease: refused before sending) through a computed handle. */
const LEASED_CALLS = treeXml(
  `<Sequence>
      <Script code="dev := 'pol/act0'" />
      <ForceSuccess>
        <CallDevice device_handle="{dev}" function_name="leased" args="json:{}" />
      </ForceSuccess>
    </Sequence>`,
);

Deno.test({
  name: "Operator console: the Automation view shows a tree whose calls are all refused as Blocked",
  ignore: chromiumMissing(),
  fn: async () => {
    const dir = await TreeDir.create();
    const tree = await dir.write("leased.xml", LEASED_CALLS);
    const rt = await startServing(automationConfig(tree, {
      config: { providers: [simProvider("sim0"), policyProvider()] },
    }));
    const browser = await openChromium();
    try {
      // The handle is computed: the AUTO gate cannot judge the call's policy, the router refuses.
      await rt.modes.request("MANUAL");
      await rt.modes.request("AUTO");
      await waitFor(
        "the tree's calls refused",
        () => rt.automation!.status().refused_calls.length > 0,
      );
      assert.equal(rt.automation!.status().not_running, null, "the tree ticks in AUTO");
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${rt.http!.port}/#automation`);
      const text = await waitForText(page, "#automation-why", /^Blocked/);
      assert.match(
        text,
        /^Blocked: calls to pol\/act0 \w+ are refused by requires_lease \(\d+ in a row/,
      );
    } finally {
      await browser.close();
      await rt.stop();
      await dir.dispose();
    }
  },
});
