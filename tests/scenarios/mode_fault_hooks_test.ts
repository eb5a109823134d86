/**
 * A transition into FAULT cannot be vetoed, so its hooks are stop actions: every call of every
 * matching hook is attempted even after a failure, and each failure is reported in the answer
 * of the request that caused the transition and as a `hook_failure` event.
 */
import assert from "node:assert/strict";
import { recordEvents, waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { b, call, d, hook, i, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";
import { eventsOf } from "./automation_helpers.ts";

Deno.test("POST /v0/mode FAULT attempts every hook call after a failure and reports each failure", async () => {
  const stopHook = hook(
    "AUTO",
    "FAULT",
    [
      // Fails at the provider: tempctl set_relay is refused in closed mode.
      call("sim0/tempctl0", "set_relay", { relay_index: 1, state: false }),
      call("sim0/motorctl0", "set_motor_duty", { motor_index: 2, duty: 0 }),
    ],
    true,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  const afterHook = hook(
    "*",
    "FAULT",
    [
      call("sim0/relayio0", "set_relay_ch1", { enabled: false }),
    ],
    true,
    "automation.mode_transition_hooks.after_transition[0]",
  );
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim()],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [stopHook], afterTransition: [afterHook] },
      },
      safety: { present: true },
    },
  });
  const rec = recordEvents(fx.runtime);
  try {
    const rt = fx.runtime;
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "tempctl0", 1, { mode: { type: "string", string: "closed" } });
    await manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(2), duty: d(0.6) });
    await manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) });
    await rt.modes.request("AUTO");

    const r = await fx.request("POST", "/v0/mode", { body: { mode: "FAULT" } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.mode, "FAULT");
    assert.equal(r.json.hook_failures.length, 1);
    const [failure] = r.json.hook_failures;
    assert.equal(failure.transition, "AUTO->FAULT");
    assert.equal(failure.phase, "before");
    assert.equal(failure.hook, "automation.mode_transition_hooks.before_transition[0]");
    assert.equal(failure.device_handle, "sim0/tempctl0");
    assert.equal(failure.function, "set_relay");
    assert.match(failure.error, /^FAILED_PRECONDITION: /);

    // The call after the failed one was sent, and so was the after-hook (FAULT's mode gate does
    // not refuse stop actions).
    assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor2_duty"), 0);
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), false);

    const events = eventsOf(rec.events, "hook_failure");
    assert.equal(events.length, 1);
    assert.equal(events[0]!.device_handle, "sim0/tempctl0");
    assert.equal(events[0]!.error, failure.error);
  } finally {
    rec.stop();
    await fx.close();
  }
});

Deno.test("POST /v0/mode FAULT during an e-stop's FAULT hooks answers their failures once they ran, not an empty list at once", async () => {
  const stopHook = hook(
    "*",
    "FAULT",
    // Fails at the provider: tempctl set_relay is refused in closed mode.
    [call("sim0/tempctl0", "set_relay", { relay_index: 1, state: false })],
    true,
    "automation.mode_transition_hooks.after_transition[0]",
  );
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim()],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [], afterTransition: [stopHook] },
      },
      safety: { present: true },
    },
  });
  try {
    const rt = fx.runtime;
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "tempctl0", 1, { mode: { type: "string", string: "closed" } });
    // Slow tempctl0's calls down inside the provider: the e-stop's hook call is still pending
    // when the request below arrives.
    await rt.router.call({
      providerId: "sim0",
      deviceId: "chaos_control",
      functionName: "inject_call_latency",
      args: { device_id: { type: "string", string: "tempctl0" }, latency_ms: i(300) },
      origin: "manual",
    });
    const stopped = rt.estop.trigger("test");
    assert.equal(rt.modes.current(), "FAULT");
    const r = await fx.request("POST", "/v0/mode", { body: { mode: "FAULT" } });
    const estop = await stopped;
    assert.equal(estop.hook_failures.length, 1, "the e-stop's hook failed");
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.mode, "FAULT");
    assert.deepEqual(
      r.json.hook_failures,
      estop.hook_failures,
      "POST /v0/mode FAULT claimed no failure for FAULT hooks still running",
    );
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/estop while a requested FAULT's hooks run answers their failures, not an empty list", async () => {
  const stopHook = hook(
    "*",
    "FAULT",
    // Fails at the provider: tempctl set_relay is refused in closed mode.
    [call("sim0/tempctl0", "set_relay", { relay_index: 1, state: false })],
    true,
    "automation.mode_transition_hooks.after_transition[0]",
  );
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim()],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [], afterTransition: [stopHook] },
      },
      safety: { present: true },
    },
  });
  try {
    const rt = fx.runtime;
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "tempctl0", 1, { mode: { type: "string", string: "closed" } });
    await rt.router.call({
      providerId: "sim0",
      deviceId: "chaos_control",
      functionName: "inject_call_latency",
      args: { device_id: { type: "string", string: "tempctl0" }, latency_ms: i(300) },
      origin: "manual",
    });
    // FAULT requested: committed at once, its hook call slowed down in the provider.
    const mode = fx.request("POST", "/v0/mode", { body: { mode: "FAULT" } });
    await waitFor("FAULT committed", () => rt.modes.current() === "FAULT");
    const estop = await fx.request("POST", "/v0/estop", { body: { reason: "test" } });
    const requested = await mode;
    assert.equal(requested.json.hook_failures.length, 1, "the FAULT hook failed");
    assert.equal(estop.status, 200, estop.text);
    assert.deepEqual(
      estop.json.hook_failures,
      requested.json.hook_failures,
      "POST /v0/estop claimed no failure for FAULT hooks still running",
    );
  } finally {
    await fx.close();
  }
});
