/** E-stop rung 1 (safety.safe_state.hooks) against the simulated provider, automation disabled. */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { b, call, d, i, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";

Deno.test("Estop hooks rung runs the declared hooks in order and leaves the devices safe", async () => {
  const rt = await startRuntime(testConfig({
    providers: [inertSim()],
    safety: {
      hooks: [
        call("sim0/motorctl0", "set_motor_duty", { motor_index: 1, duty: 0 }), // int 0 -> double
        call("sim0/relayio0", 1, { enabled: false }),
        call("sim0/relayio0", "set_relay_ch2", { enabled: false }),
        call("sim0/tempctl0", "set_relay", { relay_index: 1, state: false }),
      ],
    },
  }));
  try {
    const before = rt.estop.status();
    assert.equal(before.software_safe_state, "hooks");
    assert.equal(before.latched, false);
    assert.equal(before.latched_at_epoch_ms, null);
    // 20 actuating functions on the sim (CONFIG counts), 4 targeted.
    assert.equal(before.uncovered_actuating_functions, 16);

    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d(0.8) });
    await manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) });
    await manualCall(rt, "sim0", "relayio0", 2, { enabled: b(true) });
    await manualCall(rt, "sim0", "tempctl0", 3, { relay_index: i(1), state: b(true) });
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), true);

    const result = await rt.estop.trigger("test");
    assert.deepEqual(result, {
      latched: true,
      software_safe_state: "hooks",
      actions: [
        { device_handle: "sim0/motorctl0", function: "set_motor_duty", success: true },
        { device_handle: "sim0/relayio0", function: "1", success: true },
        { device_handle: "sim0/relayio0", function: "set_relay_ch2", success: true },
        { device_handle: "sim0/tempctl0", function: "set_relay", success: true },
      ],
    });
    assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor1_duty"), 0);
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), false);
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch2_state"), false);
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "relay1_state"), false);

    const status = rt.estop.status();
    assert.equal(status.latched, true);
    assert.equal(typeof status.latched_at_epoch_ms, "number");
    // Without automation the mode is untouched and no fault is reported.
    assert.equal(rt.modes.current(), "MANUAL");

    await assert.rejects(
      manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) }),
      { code: "FAILED_PRECONDITION" },
    );
    await assert.rejects(
      manualCall(rt, "sim0", "tempctl0", 2, { value: d(50) }), // CONFIG is actuating too
      { code: "FAILED_PRECONDITION" },
    );
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), false);

    assert.deepEqual(rt.estop.clear(), { latched: false });
    assert.equal(rt.modes.current(), "MANUAL", "clear does not change mode");
    assert.equal(rt.estop.status().latched_at_epoch_ms, null);
    await manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) });
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), true);
  } finally {
    await rt.stop();
  }
});
