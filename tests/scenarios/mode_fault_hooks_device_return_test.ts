/**
 * The hooks into FAULT are stop actions; a device that stopped answering while its provider stayed
 * up (the simulated provider's `inject_device_unavailable`) when FAULT was entered got none of
 * their calls. When it answers again while FAULT stands, the hook calls addressed to its provider
 * are made again, as for a provider that comes back (docs/safety.md).
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { call, d, hook, i, manualCall, readSignal } from "../safety/_fixture.ts";

Deno.test("A device that answers again while FAULT stands gets the hook calls into FAULT", async () => {
  const faultHook = hook(
    "*",
    "FAULT",
    [call("sim0/motorctl0", "set_motor_duty", { motor_index: 1, duty: { double: 0 } })],
    false,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  const rt = await startRuntime(testConfig({
    providers: [simProvider("sim0")],
    automation: {
      enabled: true,
      modeTransitionHooks: { beforeTransition: [faultHook], afterTransition: [] },
    },
    safety: { present: true },
  }));
  try {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d(0.5) });
    assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor1_duty"), 0.5);
    // motorctl0 stops answering for 2.5 s; sim0 stays up.
    await manualCall(rt, "sim0", "chaos_control", 1, {
      device_id: { type: "string", string: "motorctl0" },
      duration_ms: i(2500),
    });
    await waitFor(
      "motorctl0 reads fail",
      () => rt.cache.device("sim0", "motorctl0")?.available === false,
    );
    const report = await rt.modes.requestWithReport("FAULT");
    assert.equal(report.hook_failures.length, 1, JSON.stringify(report));
    assert.equal(rt.registry.host("sim0")!.available, true);

    await waitFor(
      "motorctl0 answers again",
      () => rt.cache.device("sim0", "motorctl0")?.available === true,
    );
    // Bounded: the hook call made again ends well within it.
    await waitFor(
      "the hook call made again",
      async () => await readSignal(rt, "sim0", "motorctl0", "motor1_duty") === 0,
      3000,
    ).catch(() => {});
    assert.equal(
      await readSignal(rt, "sim0", "motorctl0", "motor1_duty"),
      0,
      "the device that answers again while FAULT stands got the hook calls into FAULT",
    );
    assert.equal(rt.modes.current(), "FAULT");
  } finally {
    await rt.stop();
  }
});
