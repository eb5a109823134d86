/**
 * E-stop rung 2 (setpoints covering every actuating function) and read-only calls while latched.
 * Uses tests/safety/_plant_provider.ts: the simulated provider cannot be fully covered by setpoints
 * (its chaos_control functions crash or break the provider) and has no READ function.
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import {
  b,
  call,
  d,
  expectation,
  manualCall,
  plantProvider,
  readSignal,
} from "../safety/_fixture.ts";

Deno.test("Estop setpoints rung applies full-coverage setpoints; read-only calls pass the latch", async () => {
  const rt = await startRuntime(testConfig({
    providers: [plantProvider("plant")],
    safety: {
      setpoints: [
        call("plant/plant0", "set_fan", { duty: { double: 0 } }),
        call("plant/plant0", 1, { enabled: false }),
      ],
      zeroIsSafe: true, // not needed: setpoints come first
      expect: [
        expectation("plant/plant0/heater_on", { equals: false }, 0),
        expectation("plant/plant0/fan_duty", { min: 0, max: 0.01 }, 1),
      ],
    },
  }));
  try {
    const before = rt.estop.status();
    assert.equal(before.software_safe_state, "setpoints");
    assert.equal(before.uncovered_actuating_functions, 0);
    assert.deepEqual(before.plan, {
      rung: "setpoints",
      calls: [
        {
          device_handle: "plant/plant0",
          function: "set_fan",
          args: { duty: { type: "double", double: 0 } },
        },
        {
          device_handle: "plant/plant0",
          function: "1",
          args: { enabled: { type: "bool", bool: false } },
        },
      ],
      uncovered: [],
    });
    assert.deepEqual(before.unverified_devices, []);
    // Read-only calls pass even in IDLE.
    await manualCall(rt, "plant", "plant0", 3);
    await rt.modes.request("MANUAL");
    await manualCall(rt, "plant", "plant0", 1, { enabled: b(true) });
    await manualCall(rt, "plant", "plant0", 2, { duty: d(0.9) });

    const result = await rt.estop.trigger();
    assert.equal(result.software_safe_state, "setpoints");
    assert.deepEqual(result.actions, [
      { device_handle: "plant/plant0", function: "set_fan", success: true },
      { device_handle: "plant/plant0", function: "1", success: true },
    ]);
    assert.equal(result.warning, undefined, "every actuating function is covered");
    assert.equal(result.verification.outcome, "verified");
    assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), false);
    assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), 0);

    await assert.rejects(
      manualCall(rt, "plant", "plant0", 1, { enabled: b(true) }),
      { code: "FAILED_PRECONDITION" },
    );
    const reads = await readSignal(rt, "plant", "plant0", "status_reads");
    const r = await manualCall(rt, "plant", "plant0", 3);
    assert.equal(r.functionName, "read_status");
    assert.equal(await readSignal(rt, "plant", "plant0", "status_reads"), (reads as number) + 1);
    assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), false);
  } finally {
    await rt.stop();
  }
});
