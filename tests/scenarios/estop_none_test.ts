/** E-stop rung 4 (nothing configured): latches without actuating and says so. */
import assert from "node:assert/strict";
import { NO_SAFE_STATE_WARNING } from "../../src/safety/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { b, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";

Deno.test("Estop none rung latches without actuating and warns", async () => {
  const rt = await startRuntime(testConfig({ providers: [inertSim()] }));
  try {
    assert.deepEqual(rt.estop.status(), {
      latched: false,
      software_safe_state: "none",
      latched_at_epoch_ms: null,
      uncovered_actuating_functions: 20,
    });
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "relayio0", 3, { enabled: b(true) });

    const result = await rt.estop.trigger();
    assert.deepEqual(result, {
      latched: true,
      software_safe_state: "none",
      actions: [],
      warning: NO_SAFE_STATE_WARNING,
    });
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
