/**
 * Leaving AUTO, vetoed: the AUTO -> MANUAL before_transition hook fails its call (failOnError), so
 * the mode stays AUTO. The tree's actuating call that the transition held back meanwhile (unsent)
 * then goes out, and the tree carries on: held back is no failure (docs/automation.md, "Leaving
 * AUTO").
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { cached, enterAuto } from "./automation_helpers.ts";
import {
  failSim1Motor,
  ONE_TIME_STEP,
  slowSim1Motor,
  withLeaveAutoRuntime,
} from "./_leave_auto_rig.ts";

/**
 * How long the hook's call to sim1 is held there before it fails: the time the test has to see
 * the tree's call held back while the transition runs (well within the call's timeout_ms, 5000).
 */
const HOOK_CALL_LATENCY_MS = 2000;

Deno.test("Leaving AUTO vetoed by a hook: the call held back meanwhile goes out and the tree carries on", async () => {
  await withLeaveAutoRuntime({ tree: ONE_TIME_STEP, hookProviders: ["sim1"] }, async (rt) => {
    await enterAuto(rt);
    await slowSim1Motor(rt, HOOK_CALL_LATENCY_MS);
    await failSim1Motor(rt);
    let settled = false;
    const leaving = rt.modes.request("MANUAL").finally(() => settled = true);
    // Caught at once (asserted below): a rejection left unhandled meanwhile fails the test run.
    const outcome = leaving.then(() => null, (err: unknown) => err);
    // The step becomes due now: its CallDevice runs, its call held back by the transition.
    rt.parameters!.set("motor_duty", 0.6);
    await waitFor(
      "the tree's call is asked while AUTO is being left",
      () =>
        /CallDevice/.test(rt.automation!.status().engine_diagnostics.current_running_node ?? ""),
    );
    await rt.cache.pollDevice("sim0", "motorctl0");
    assert.equal(settled, false, "still leaving AUTO (the hook's call is held at sim1)");
    assert.equal(cached(rt, "sim0/motorctl0", "motor2_duty"), 0, "held back, unsent");

    const err = await outcome;
    assert.ok(err instanceof Error, "the leave is refused");
    assert.match(err.message, /AUTO -> MANUAL vetoed/);
    assert.equal(rt.modes.current(), "AUTO");
    await waitFor(
      "the held call goes out once the veto ends the transition",
      () => cached(rt, "sim0/motorctl0", "motor2_duty") === 0.7,
      5000,
    );
    await waitFor(
      "the step done, nothing runs",
      () => rt.automation!.status().engine_diagnostics.current_running_node === null,
    );
    // A call held back, then sent and done: nothing to report about the device, no tree failure.
    const status = rt.automation!.status();
    assert.deepEqual([status.refused_calls, status.device_outages, status.last_error], [
      [],
      [],
      null,
    ]);
  });
});
