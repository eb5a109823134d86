/** The shipped demo tree (examples/behaviors/demo.xml) in AUTO against the simulated provider. */
import assert from "node:assert/strict";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import {
  automationConfig,
  cached,
  callAs,
  DEMO_TREE,
  enterAuto,
  eventsOf,
  tv,
} from "./automation_helpers.ts";

Deno.test("AutomationEngine runs the demo tree: heats to target_temp, runs the motor while the temperature holds, stops it on bad quality", async () => {
  const rt = await startRuntime(automationConfig(DEMO_TREE, { targetTemp: 40, motorDuty: 0.4 }));
  const rec = recordEvents(rt);
  try {
    assert.equal(cached(rt, "sim0/tempctl0", "control_mode"), "open");
    assert.equal(cached(rt, "sim0/tempctl0", "setpoint"), 60);
    await enterAuto(rt);
    assert.equal(rt.automation?.runner?.active, true);

    // Heating: closed loop at the target parameter.
    await waitFor(
      "closed-loop mode at setpoint 40",
      () =>
        cached(rt, "sim0/tempctl0", "control_mode") === "closed" &&
        cached(rt, "sim0/tempctl0", "setpoint") === 40,
    );
    // Open loop set behind the tree's back: the tree reads control_mode (a string signal) and
    // puts it back, as it corrects every readback that differs.
    await callAs(rt, "automated", "sim0/tempctl0", "set_mode", { mode: tv.s("open") });
    assert.equal(cached(rt, "sim0/tempctl0", "control_mode"), "open");
    await waitFor(
      "closed-loop mode restored by the tree",
      () => cached(rt, "sim0/tempctl0", "control_mode") === "closed",
    );
    // Far below the band (the sim starts at 25 C): the motor must not run yet.
    const temp = cached(rt, "sim0/tempctl0", "tc1_temp") as number;
    assert.ok(temp < 38, `still heating (${temp} C)`);
    assert.equal(cached(rt, "sim0/motorctl0", "motor1_duty"), 0);

    // A target within reach of the current temperature: setpoint follows, then the motor runs.
    rt.parameters!.set("target_temp", 26);
    await waitFor("setpoint 26", () => cached(rt, "sim0/tempctl0", "setpoint") === 26);
    await waitFor(
      "motor 1 at motor_duty",
      () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.4,
      15000,
    );

    // The duty parameter is applied live.
    rt.parameters!.set("motor_duty", 0.6);
    await waitFor(
      "motor 1 at the new duty",
      () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.6,
    );

    // tc1_temp turns FAULT for a while: the motor is stopped, then restarted once it is OK.
    await callAs(rt, "automated", "sim0/chaos_control", "inject_signal_fault", {
      device_id: tv.s("tempctl0"),
      signal_id: tv.s("tc1_temp"),
      duration_ms: tv.i(1500),
    });
    await waitFor(
      "tc1_temp quality FAULT",
      () => rt.cache.signal("sim0", "tempctl0", "tc1_temp")?.quality === "FAULT",
    );
    await waitFor(
      "motor stopped on bad quality",
      () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0,
    );
    await waitFor(
      "tc1_temp quality OK again",
      () => rt.cache.signal("sim0", "tempctl0", "tc1_temp")?.quality === "OK",
    );
    await waitFor("motor restarted", () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.6);

    // The whole run was healthy: no tree failure, no fault.
    assert.equal(rt.modes.current(), "AUTO");
    assert.deepEqual(eventsOf(rec.events, "bt_error"), []);
    assert.deepEqual(eventsOf(rec.events, "automation_fault"), []);
    const status = rt.automation!.status();
    assert.equal(status.execution_status, "running");
    assert.equal(status.execution_reason, undefined);
    assert.equal(status.engine_diagnostics.error_count, 0);
    assert.ok(status.engine_diagnostics.total_ticks > 0);
  } finally {
    rec.stop();
    await rt.stop();
  }
});
