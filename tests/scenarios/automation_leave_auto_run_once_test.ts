/**
 * Leaving AUTO while the tree reaches a one-time step: the AUTO -> MANUAL before_transition hooks
 * run while the mode is still AUTO and the tree still ticks, its actuating calls held back by the
 * mode gate until the transition commits (which halts the tree) or is vetoed. A call held back is
 * no failure of the step (nothing was sent): a RunOnce reached then must run its step at the next
 * AUTO, as one a halt interrupted does (docs/automation.md, "Leaving AUTO" and "State").
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { cached, enterAuto } from "./automation_helpers.ts";
import { ONE_TIME_STEP, slowSim1Motor, withLeaveAutoRuntime } from "./_leave_auto_rig.ts";

Deno.test("Leaving AUTO: a RunOnce step whose call the transition held back runs at the next AUTO", async () => {
  await withLeaveAutoRuntime({ tree: ONE_TIME_STEP, hookProviders: ["sim1"] }, async (rt) => {
    await enterAuto(rt);
    // The hook's call takes 600 ms: the tree ticks (every 50 ms) while AUTO is being left.
    await slowSim1Motor(rt, 600);
    const leaving = rt.modes.request("MANUAL");
    // The step becomes due now: its call is held back until the transition commits.
    rt.parameters!.set("motor_duty", 0.6);
    assert.equal(await leaving, "MANUAL");
    await rt.cache.pollDevice("sim0", "motorctl0");
    assert.equal(cached(rt, "sim0/motorctl0", "motor2_duty"), 0, "nothing was sent meanwhile");
    // Nothing to report about the device, and no tree failure either: the call was held back.
    const status = rt.automation!.status();
    assert.deepEqual([status.refused_calls, status.device_outages, status.last_error], [
      [],
      [],
      null,
    ]);
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
    await waitFor(
      "the one-time step runs in the next AUTO",
      () => cached(rt, "sim0/motorctl0", "motor2_duty") === 0.7,
      5000,
    );
  });
});
