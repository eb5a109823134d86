/** Leaving AUTO halts the tree, including a device call in flight, and no further calls follow. */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { automationConfig, cached, callAs, TreeDir, treeXml, tv } from "./automation_helpers.ts";

/** Alternates the setpoint between 30 and 31 for as long as it ticks. */
const TOGGLE_SETPOINT = treeXml(
  `<Sequence>
      <CallDevice device_handle="sim0/tempctl0" function_name="set_setpoint" args='json:{"value": 30.0}' />
      <CallDevice device_handle="sim0/tempctl0" function_name="set_setpoint" args='json:{"value": 31.0}' />
    </Sequence>`,
);

Deno.test("AutomationEngine leaving AUTO halts a running CallDevice and issues no more calls", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("toggle.xml", TOGGLE_SETPOINT);
    const rt = await startRuntime(automationConfig(tree));
    try {
      const engine = rt.automation!;
      await rt.modes.request("MANUAL");
      // Slow calls: the tree spends most of its time with a CallDevice RUNNING.
      await callAs(rt, "manual", "sim0/chaos_control", "inject_call_latency", {
        device_id: tv.s("tempctl0"),
        latency_ms: tv.i(200),
      });
      await rt.modes.request("AUTO");
      await waitFor(
        "setpoint toggled by the tree",
        () => cached(rt, "sim0/tempctl0", "setpoint") === 31,
      );
      await waitFor(
        "a call in flight",
        () =>
          engine.status().engine_diagnostics.current_running_node?.startsWith(
            "Main/Sequence[0]/CallDevice",
          ),
      );

      await rt.modes.request("MANUAL");
      assert.equal(engine.runner!.active, false);
      assert.equal(engine.status().engine_diagnostics.current_running_node, null);
      assert.equal(engine.status().execution_reason, "mode_gate");
      assert.equal(engine.runner!.tickOnce(), null);

      // Queued behind any call still in flight (calls to one provider are serialised).
      await callAs(rt, "manual", "sim0/tempctl0", "set_setpoint", { value: tv.d(50) });
      assert.equal(cached(rt, "sim0/tempctl0", "setpoint"), 50);
      const ticks = engine.status().engine_diagnostics.total_ticks;
      // Five more polls of the device: a late tree call would have moved the setpoint.
      const since = rt.cache.device("sim0", "tempctl0")!.lastPollMs;
      let polls = 0;
      let last = since;
      await waitFor("five more polls", () => {
        const now = rt.cache.device("sim0", "tempctl0")!.lastPollMs;
        if (now !== last) (polls++, last = now);
        return polls >= 5;
      });
      assert.equal(cached(rt, "sim0/tempctl0", "setpoint"), 50);
      assert.equal(engine.status().engine_diagnostics.total_ticks, ticks);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
