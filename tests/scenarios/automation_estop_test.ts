/** E-stop while the tree is mid-recipe: the latch refuses its calls, FAULT halts it, outputs go safe. */
import assert from "node:assert/strict";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import {
  automationConfig,
  cached,
  enterAuto,
  eventsOf,
  MOTOR_THEN_SLEEP,
  TreeDir,
  tv,
} from "./automation_helpers.ts";

Deno.test("AutomationEngine halts on an e-stop mid-tree and its calls stay refused while latched", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("motor.xml", MOTOR_THEN_SLEEP);
    const rt = await startRuntime(
      automationConfig(tree, { config: { safety: { zeroIsSafe: true } } }),
    );
    const rec = recordEvents(rt);
    try {
      const engine = rt.automation!;
      await enterAuto(rt);
      await waitFor(
        "motor 1 started by the tree",
        () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.5,
      );
      await waitFor(
        "tree mid-recipe",
        () =>
          engine.status().engine_diagnostics.current_running_node === "Main/Sequence[0]/Sleep[1]",
      );

      const result = await rt.estop.trigger("scenario");
      assert.equal(result.software_safe_state, "zero");
      assert.equal(result.fault_engaged, true);
      assert.equal(rt.modes.current(), "FAULT");
      // Halted: nothing running, no ticks while not in AUTO.
      const status = engine.status();
      assert.equal(status.engine_diagnostics.current_running_node, null);
      assert.equal(status.execution_reason, "mode_gate");
      assert.equal(engine.runner!.active, false);
      assert.equal(engine.runner!.tickOnce(), null);
      assert.equal(cached(rt, "sim0/motorctl0", "motor1_duty"), 0);
      // The tree's call path is refused by the latch (and FAULT).
      await assert.rejects(
        engine.services.callDevice(
          "sim0/motorctl0",
          "set_motor_duty",
          { motor_index: tv.i(1), duty: tv.d(0.5) },
          new AbortController().signal,
        ),
        { code: "FAILED_PRECONDITION" },
      );

      // Re-armed to AUTO while still latched: the tree ticks but its CallDevice fails.
      await enterAuto(rt);
      const err = await waitFor("bt_error", () => eventsOf(rec.events, "bt_error")[0]);
      assert.equal(err.error, "BT returned FAILURE");
      assert.equal(err.node, "Main/Sequence[0]/CallDevice[0]");
      assert.equal(cached(rt, "sim0/motorctl0", "motor1_duty"), 0);
      assert.deepEqual(eventsOf(rec.events, "automation_fault"), [], "a FAILURE is not a fault");

      // Releasing the latch lets the same tree proceed.
      rt.estop.clear();
      await waitFor(
        "motor restarted after clear",
        () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.5,
      );
    } finally {
      rec.stop();
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
