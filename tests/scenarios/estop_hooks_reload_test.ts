/**
 * The hooks into FAULT of an e-stop run after its safe-state ladder, which may take long (a slow
 * provider). A reload meanwhile that fixes a `* -> FAULT` hook is the fix the operator expects:
 * the hooks that run after the ladder are those in force when they start, as for a provider that
 * comes back while FAULT stands (docs/safety.md). A reload never takes a stop action away from a
 * stop under way: the calls it dropped from the hooks in force when FAULT was entered are made too.
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, hook, inertSim, plantProvider, readSignal } from "../safety/_fixture.ts";

Deno.test("Estop runs the hooks into FAULT in force when they start, after a reload fixed one while its slow ladder ran", async () => {
  const faultHook = (setpoint: number) =>
    hook(
      "*",
      "FAULT",
      [call("sim0/tempctl0", "set_setpoint", { value: { double: setpoint } })],
      false,
      "automation.mode_transition_hooks.before_transition[0]",
    );
  const rt = await startRuntime(testConfig({
    // Each ladder call to the plant answers 3 s after it arrived: the ladder runs that long.
    providers: [plantProvider("plant", { latencyMs: 3000 }), inertSim("sim0")],
    automation: {
      enabled: true,
      modeTransitionHooks: { beforeTransition: [faultHook(99)], afterTransition: [] },
    },
    safety: { hooks: [call("plant/plant0", "set_heater", { enabled: false })] },
  }));
  try {
    let answered = false;
    const stop = rt.estop.trigger("slow ladder").finally(() => answered = true);
    // The hook's wrong setpoint is fixed while the ladder still runs.
    const report = await rt.reload({
      ...rt.config,
      automation: {
        ...rt.config.automation,
        modeTransitionHooks: { beforeTransition: [faultHook(10)], afterTransition: [] },
      },
    });
    assert.ok(
      report.applied.includes("automation.mode_transition_hooks"),
      JSON.stringify(report),
    );
    assert.equal(answered, false, "the reload applied while the ladder ran");
    const result = await stop;
    assert.deepEqual(result.hook_failures, []);
    assert.equal(
      await readSignal(rt, "sim0", "tempctl0", "setpoint"),
      10,
      "the hooks into FAULT run after the ladder are those in force when they start",
    );
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop still makes the hook calls into FAULT it started with when a reload removes the hook while its slow ladder runs", async () => {
  const faultHook = hook(
    "*",
    "FAULT",
    [call("sim0/tempctl0", "set_setpoint", { value: { double: 42 } })],
    false,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  const rt = await startRuntime(testConfig({
    // Each ladder call to the plant answers 3 s after it arrived: the ladder runs that long.
    providers: [plantProvider("plant", { latencyMs: 3000 }), inertSim("sim0")],
    automation: {
      enabled: true,
      modeTransitionHooks: { beforeTransition: [faultHook], afterTransition: [] },
    },
    safety: { hooks: [call("plant/plant0", "set_heater", { enabled: false })] },
  }));
  try {
    assert.notEqual(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 42);
    let answered = false;
    const stop = rt.estop.trigger("slow ladder").finally(() => answered = true);
    // Outside AUTO a weakening applies: the hook into FAULT goes while the ladder still runs.
    const report = await rt.reload({
      ...rt.config,
      automation: {
        ...rt.config.automation,
        modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
      },
    });
    assert.ok(
      report.applied.includes("automation.mode_transition_hooks"),
      JSON.stringify(report),
    );
    assert.equal(answered, false, "the reload applied while the ladder ran");
    const result = await stop;
    assert.deepEqual(result.hook_failures, []);
    assert.equal(
      await readSignal(rt, "sim0", "tempctl0", "setpoint"),
      42,
      "a stop under way makes the hook calls into FAULT it started with",
    );
  } finally {
    await rt.stop();
  }
});
