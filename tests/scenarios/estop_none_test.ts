/** E-stop rung 4 (nothing configured): latches without actuating and says so. */
import assert from "node:assert/strict";
import { NO_SAFE_STATE_WARNING } from "../../src/safety/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { b, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";

Deno.test("Estop none rung latches without actuating and warns", async () => {
  const rt = await startRuntime(testConfig({ providers: [inertSim()] }));
  try {
    const before = rt.estop.status();
    assert.equal(before.latched, false);
    assert.equal(before.software_safe_state, "none");
    assert.equal(before.latched_at_epoch_ms, null);
    assert.equal(before.uncovered_actuating_functions, 20);
    assert.deepEqual(before.plan.calls, []);
    assert.equal(before.plan.uncovered.length, 20);
    // Every sim device has actuating functions and none is expected: nothing can be verified.
    assert.deepEqual(before.unverified_devices, [
      "sim0/analogsensor0",
      "sim0/motorctl0",
      "sim0/relayio0",
      "sim0/tempctl0",
      "sim0/chaos_control",
    ]);
    assert.equal(before.verification, null);
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "relayio0", 3, { enabled: b(true) });

    const result = await rt.estop.trigger();
    assert.equal(result.latched, true);
    assert.equal(result.software_safe_state, "none");
    assert.deepEqual(result.actions, []);
    assert.equal(result.warning, NO_SAFE_STATE_WARNING);
    assert.equal(result.uncovered_actuating_functions, 20);
    assert.equal(result.verification.outcome, "unverifiable");
    // Nothing was actuated: the relay is still on, and it cannot be switched while latched.
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch3_state"), true);
    await assert.rejects(
      manualCall(rt, "sim0", "relayio0", 3, { enabled: b(false) }),
      { code: "FAILED_PRECONDITION" },
    );
    assert.equal(rt.estop.status().latched, true);
  } finally {
    await rt.stop();
  }
});
