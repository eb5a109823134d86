/**
 * What the tree's calls tell automation status about a device, over a real kernel and the
 * simulated provider: a call that reached the provider and failed there is the device's failure
 * even when the tree was halted meanwhile.
 */
import assert from "node:assert/strict";
import type { TypedValue } from "../../src/common/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { automationConfig, callAs, TreeDir, treeXml, tv } from "../scenarios/automation_helpers.ts";

const MOTOR_ARGS: Record<string, TypedValue> = { motor_index: tv.i(1), duty: tv.d(0.2) };

Deno.test("AutomationEngine counts a sent call's failure toward device_outages even when the tree was halted while it was in flight", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const rt = await startRuntime(automationConfig(tree));
    try {
      const engine = rt.automation!;
      await rt.modes.request("MANUAL"); // the mode gate lets automated calls through outside AUTO
      await callAs(rt, "manual", "sim0/chaos_control", "inject_call_failure", {
        device_id: tv.s("motorctl0"),
        function_id: tv.s("10"), // set_motor_duty
        failure_rate: tv.d(1),
      });
      // The halt comes once the call's decision was written ahead: the router sends the request
      // in the microtasks that follow, before the timer fires -- the tree is halted while its sent call is in flight.
      let halt: AbortController | null = null;
      rt.router.setAuditSink({
        record: (d) => rt.audit.record(d),
        writeAhead: async (call, options) => {
          const intent = await rt.audit.writeAhead(call, options);
          const h = halt;
          setTimeout(() => h?.abort(), 0);
          return intent;
        },
      });
      for (let i = 0; i < 2; i++) {
        halt = new AbortController();
        await assert.rejects(
          engine.services.callDevice("sim0/motorctl0", "set_motor_duty", MOTOR_ARGS, halt.signal),
          /injected fault/,
        );
        assert.equal(halt.signal.aborted, true, "halted while the call was in flight");
      }
      const s = engine.status();
      assert.deepEqual(
        s.device_outages.map((o) => [o.device_handle, o.consecutive_failures]),
        [["sim0/motorctl0", 2]],
        "the device failed both calls it was sent",
      );
      assert.match(s.device_outages[0]!.last_error, /injected fault/);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
