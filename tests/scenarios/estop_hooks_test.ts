/**
 * E-stop rung 1 (safety.safe_state.hooks) against the simulated provider, automation disabled:
 * the hooks run, the safe state is read back, FAULT is entered, and a clear re-arms nothing.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import {
  b,
  call,
  d,
  expectation,
  i,
  inertSim,
  manualCall,
  readSignal,
} from "../safety/_fixture.ts";

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
      expect: [
        expectation("sim0/motorctl0/motor1_duty", { equals: 0 }, 0),
        expectation("sim0/relayio0/relay_ch1_state", { equals: false }, 1),
        expectation("sim0/relayio0/relay_ch2_state", { equals: false }, 2),
        expectation("sim0/tempctl0/relay1_state", { equals: false }, 3),
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
    assert.equal(result.latched, true);
    assert.equal(result.software_safe_state, "hooks");
    assert.deepEqual(result.actions, [
      { device_handle: "sim0/motorctl0", function: "set_motor_duty", success: true },
      { device_handle: "sim0/relayio0", function: "1", success: true },
      { device_handle: "sim0/relayio0", function: "set_relay_ch2", success: true },
      { device_handle: "sim0/tempctl0", function: "set_relay", success: true },
    ]);
    assert.equal(result.uncovered_actuating_functions, 16);
    assert.equal(result.uncovered.length, 16);
    assert.match(result.warning ?? "", /'hooks' rung leaves 16 actuating function\(s\) untouched/);
    assert.equal(result.fault_engaged, true);
    assert.deepEqual(result.hook_failures, []);
    assert.deepEqual(result.drain, { complete: true, pending_providers: [] });
    assert.equal(result.verification.outcome, "verified");
    assert.deepEqual(
      result.verification.checks.map((c) => [c.signal, c.outcome, c.quality]),
      [
        ["sim0/motorctl0/motor1_duty", "verified", "OK"],
        ["sim0/relayio0/relay_ch1_state", "verified", "OK"],
        ["sim0/relayio0/relay_ch2_state", "verified", "OK"],
        ["sim0/tempctl0/relay1_state", "verified", "OK"],
      ],
    );
    assert.deepEqual(result.verification.checks[1]!.observed, { type: "bool", bool: false });
    assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor1_duty"), 0);
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), false);
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch2_state"), false);
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "relay1_state"), false);

    const status = rt.estop.status();
    assert.equal(status.latched, true);
    assert.equal(typeof status.latched_at_epoch_ms, "number");
    assert.equal(status.verification?.outcome, "verified");
    // Also without automation the e-stop enters FAULT: a reset must never leave the machine armed.
    assert.equal(rt.modes.current(), "FAULT");
    await assert.rejects(rt.modes.request("MANUAL"), (e: RuntimeError) => {
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.match(e.message, /E-stop latched/);
      return true;
    });

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
    assert.equal(rt.modes.current(), "FAULT", "clear does not change mode");
    assert.equal(rt.estop.status().latched_at_epoch_ms, null);
    await assert.rejects(
      manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) }),
      { code: "FAILED_PRECONDITION" },
      "after a clear the machine stays in FAULT until re-armed",
    );
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) });
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), true);
  } finally {
    await rt.stop();
  }
});
