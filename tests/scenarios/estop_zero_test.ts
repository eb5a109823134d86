/** E-stop rung 3 (zero_is_safe) against the simulated provider. */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { b, call, d, i, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";

Deno.test("Estop zero rung zeroes every zeroable actuating function and leaves the devices safe", async () => {
  const rt = await startRuntime(testConfig({
    providers: [inertSim()],
    safety: {
      // Setpoints that miss functions fall through to zeroing.
      setpoints: [call("sim0/relayio0", "set_relay_ch1", { enabled: false })],
      zeroIsSafe: true,
    },
  }));
  try {
    const before = rt.estop.status();
    assert.equal(before.software_safe_state, "zero");
    // Not zeroable: tempctl0 set_mode (string), analogsensor0 calibrate_channel (selector only),
    // the 10 chaos_control functions (strings, no args, or integers whose range admits 0).
    assert.equal(before.uncovered_actuating_functions, 12);

    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d(0.7) });
    await manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(2), duty: d(0.3) });
    for (const ch of [1, 2, 3, 4]) {
      await manualCall(rt, "sim0", "relayio0", ch, { enabled: b(true) });
    }
    await manualCall(rt, "sim0", "tempctl0", 3, { relay_index: i(1), state: b(true) });
    await manualCall(rt, "sim0", "tempctl0", 3, { relay_index: i(2), state: b(true) });

    const result = await rt.estop.trigger();
    assert.equal(result.software_safe_state, "zero");
    // The rung leaves 12 functions untouched: the answer says so (not only the log and status).
    assert.equal(result.uncovered_actuating_functions, 12);
    assert.equal(result.uncovered.length, 12);
    assert.match(result.warning ?? "", /'zero' rung leaves 12 actuating function\(s\) untouched/);
    assert.equal(result.fault_engaged, true, "the e-stop always enters FAULT");
    assert.equal(result.verification.outcome, "unverifiable", "nothing is expected");
    assert.deepEqual(
      result.actions.map((a) => `${a.device_handle} ${a.function} ${a.success}`),
      [
        "sim0/analogsensor0 inject_noise true",
        "sim0/motorctl0 set_motor_duty true",
        "sim0/motorctl0 set_motor_duty true",
        "sim0/relayio0 set_relay_ch1 true",
        "sim0/relayio0 set_relay_ch2 true",
        "sim0/relayio0 set_relay_ch3 true",
        "sim0/relayio0 set_relay_ch4 true",
        "sim0/tempctl0 set_setpoint true",
        "sim0/tempctl0 set_relay true",
        "sim0/tempctl0 set_relay true",
      ],
    );
    const sig = (dev: string, s: string) => readSignal(rt, "sim0", dev, s);
    assert.equal(await sig("motorctl0", "motor1_duty"), 0);
    assert.equal(await sig("motorctl0", "motor2_duty"), 0);
    for (const ch of [1, 2, 3, 4]) {
      assert.equal(await sig("relayio0", `relay_ch${ch}_state`), false);
    }
    assert.equal(await sig("tempctl0", "relay1_state"), false);
    assert.equal(await sig("tempctl0", "relay2_state"), false);
    assert.equal(await sig("tempctl0", "setpoint"), 0);
  } finally {
    await rt.stop();
  }
});
