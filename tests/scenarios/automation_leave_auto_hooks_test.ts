/**
 * Leaving AUTO while the tree keeps commanding: the AUTO -> MANUAL before_transition hooks run
 * while the mode is still AUTO, and what a hook stops must stay stopped -- the tree may not
 * re-command it before the transition commits (docs/automation.md, "Leaving AUTO").
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { cached, enterAuto, treeXml } from "./automation_helpers.ts";
import { slowSim1Motor, withLeaveAutoRuntime } from "./_leave_auto_rig.ts";

/** Runs motor 1 of sim0 (the leave-AUTO hook stops it, then sim1's: the slow call). */
const RUN_MOTOR = treeXml(
  `<Sequence>
      <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty"
                  args='json:{"motor_index": 1, "duty": 0.3}' />
      <Sleep msec="20" />
    </Sequence>`,
);

Deno.test("Leaving AUTO: the tree cannot re-command what the before_transition hooks stop while they run", async () => {
  await withLeaveAutoRuntime({ tree: RUN_MOTOR, hookProviders: ["sim0", "sim1"] }, async (rt) => {
    await enterAuto(rt);
    await waitFor(
      "the tree runs motor 1",
      () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.3,
    );
    // The hook's second call (to sim1) takes 400 ms: the tree ticks meanwhile.
    await slowSim1Motor(rt, 400);
    assert.equal(await rt.modes.request("MANUAL"), "MANUAL");
    assert.equal(rt.modes.current(), "MANUAL");
    await rt.cache.pollDevice("sim0", "motorctl0");
    assert.equal(
      cached(rt, "sim0/motorctl0", "motor1_duty"),
      0,
      "motor 1 stopped by the hook stays stopped",
    );
    // Held back while AUTO was being left: nothing to report about the device.
    const status = rt.automation!.status();
    assert.deepEqual([status.refused_calls, status.device_outages, status.last_error], [
      [],
      [],
      null,
    ]);
  });
});
