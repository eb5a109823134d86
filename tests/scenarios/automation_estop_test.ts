/**
 * E-stop while the tree is mid-recipe: the latch refuses its calls, FAULT halts it, outputs go
 * safe; re-arming is refused while latched, and releasing the latch restarts nothing.
 */
import assert from "node:assert/strict";
import { afterPolls, recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
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
      // A stop action ends with its call's answer; the device's post-call poll follows
      // (e5b9bd44), so the cache shows the effect once that poll is in.
      await waitFor(
        "the ladder call's effect in the cache",
        () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0,
      );
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

      // Re-arming is refused while latched: no MANUAL, no AUTO.
      await assert.rejects(enterAuto(rt), /E-stop latched: FAULT -> MANUAL refused/);
      assert.equal(rt.modes.current(), "FAULT");

      // Releasing the latch re-arms nothing: the mode stays FAULT, the tree does not tick and
      // the motor stays at 0 across several tick periods (20 Hz) and polls: three polls of the
      // motor's device after the release are the proof the window has passed.
      const ticks = engine.status().engine_diagnostics.total_ticks;
      const polls = afterPolls(rt, "sim0/motorctl0", 3, "three polls after the release");
      rt.estop.clear();
      await polls;
      assert.equal(rt.modes.current(), "FAULT");
      assert.equal(engine.status().engine_diagnostics.total_ticks, ticks);
      assert.equal(cached(rt, "sim0/motorctl0", "motor1_duty"), 0);
      assert.deepEqual(eventsOf(rec.events, "automation_fault"), []);

      // Only a deliberate re-arm (MANUAL, then AUTO) lets the same tree proceed.
      await enterAuto(rt);
      await waitFor(
        "motor restarted after the operator re-armed",
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
