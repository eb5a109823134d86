/** E-stop with automation enabled: FAULT is forced and reported; FAULT-entry hooks are adopted. */
import assert from "node:assert/strict";
import type { ModeChange } from "../../src/control/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { b, call, hook, manualCall, plantProvider, readSignal } from "../safety/_fixture.ts";

Deno.test("Estop with automation forces FAULT from AUTO and runs adopted *->FAULT hooks", async () => {
  const heaterOff = call("plant/plant0", "set_heater", { enabled: false });
  const fanOff = call("plant/plant0", "set_fan", { duty: 0 });
  const rt = await startRuntime(testConfig({
    providers: [plantProvider("plant")],
    automation: {
      enabled: true,
      modeTransitionHooks: {
        beforeTransition: [],
        // No safety section: these calls are adopted as safe-state hooks (docs/safety.md).
        afterTransition: [hook("*", "FAULT", [heaterOff, fanOff], true)],
      },
    },
  }));
  try {
    assert.equal(rt.estop.status().software_safe_state, "hooks");
    assert.equal(rt.estop.status().uncovered_actuating_functions, 0);
    const changes: ModeChange[] = [];
    rt.modes.onModeChange((c) => changes.push(c));
    await rt.modes.request("MANUAL");
    await manualCall(rt, "plant", "plant0", 1, { enabled: b(true) });
    await rt.modes.request("AUTO");

    const result = await rt.estop.trigger("operator");
    assert.equal(result.software_safe_state, "hooks");
    assert.deepEqual(result.actions, [
      { device_handle: "plant/plant0", function: "set_heater", success: true },
      { device_handle: "plant/plant0", function: "set_fan", success: true },
    ]);
    assert.equal(result.fault_engaged, true);
    // The FAULT hooks themselves also run as stop actions (the latch does not refuse them).
    assert.deepEqual(result.hook_failures, []);
    assert.equal(rt.modes.current(), "FAULT");
    assert.deepEqual(changes.at(-1), { previous: "AUTO", current: "FAULT" });
    assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), false);

    // Clearing the latch does not leave FAULT; FAULT still refuses actuating calls.
    rt.estop.clear();
    assert.equal(rt.modes.current(), "FAULT");
    await assert.rejects(
      manualCall(rt, "plant", "plant0", 1, { enabled: b(true) }),
      { code: "FAILED_PRECONDITION" },
    );
    await rt.modes.request("MANUAL");
    await manualCall(rt, "plant", "plant0", 1, { enabled: b(true) });
    assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), true);
  } finally {
    await rt.stop();
  }
});
