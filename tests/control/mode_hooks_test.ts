/** Mode-transition hooks and call gating against the simulated provider (in-process: rig.ts). */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import type { HookConfig } from "../../src/config/mod.ts";
import { validateDeclaredCalls } from "../../src/control/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { b, call, d, hook, i, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";

const RELAY = "sim0/relayio0";
const relay = (ch: number, on: boolean) => call(RELAY, `set_relay_ch${ch}`, { enabled: on });
/** Satisfies the refuse-hookless AUTO gate. */
const AUTO_FAULT = hook("AUTO", "FAULT", [relay(4, false)], false);

async function withRuntime(
  o: {
    automation?: boolean;
    policy?: "BLOCK" | "OVERRIDE";
    before?: HookConfig[];
    after?: HookConfig[];
  },
  body: (rt: Kernel) => Promise<void> | void,
): Promise<void> {
  await using r = await rig({
    providers: [inertSim()],
    automation: {
      enabled: o.automation ?? true,
      manualGatingPolicy: o.policy ?? "BLOCK",
      modeTransitionHooks: { beforeTransition: o.before ?? [], afterTransition: o.after ?? [] },
    },
    safety: { present: true },
  });
  await body(r.kernel);
}

/** Relay changes in the order the cache saw them (it publishes state_update on change only). */
function recordChanges(rt: Kernel): { log: string[]; stop: () => void } {
  const log: string[] = [];
  const stop = rt.bus.subscribe(({ event: e }) => {
    if (e.kind === "mode_change") log.push(`mode ${e.previous_mode}->${e.new_mode}`);
    if (
      e.kind === "state_update" && e.signal_id.startsWith("relay_ch") && e.value.type === "bool"
    ) {
      log.push(`${e.signal_id.slice(0, 9)}=${e.value.bool}`);
    }
  });
  return { log, stop };
}

Deno.test("ModeManager runs before-hooks in config order, commits, then runs after-hooks", async () => {
  await withRuntime({
    before: [
      hook("MANUAL", "AUTO", [relay(1, true), relay(2, true)]),
      hook("*", "AUTO", [relay(1, false)]),
      hook("AUTO", "MANUAL", [relay(3, true)]), // does not match MANUAL -> AUTO
    ],
    after: [hook("MANUAL", "*", [relay(3, true)]), AUTO_FAULT],
  }, async (rt) => {
    await rt.modes.request("MANUAL");
    await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"); // the cache holds the start values
    const rec = recordChanges(rt);
    try {
      assert.equal(await rt.modes.request("AUTO"), "AUTO");
    } finally {
      rec.stop();
    }
    assert.deepEqual(rec.log, [
      "relay_ch1=true",
      "relay_ch2=true",
      "relay_ch1=false",
      "mode MANUAL->AUTO",
      "relay_ch3=true",
    ]);
  });
});

Deno.test("ModeManager hook calls are gated by the mode at call time (IDLE refuses actuating hooks)", async () => {
  await withRuntime({
    before: [hook("IDLE", "MANUAL", [relay(1, true)], true)],
    after: [hook("MANUAL", "IDLE", [relay(2, true)], true)],
  }, async (rt) => {
    await assert.rejects(rt.modes.request("MANUAL"), (e: RuntimeError) => {
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.match(e.message, /vetoed.*blocked in IDLE/);
      return true;
    });
    assert.equal(rt.modes.current(), "IDLE");
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), false);
  });
  await withRuntime({
    before: [hook("IDLE", "MANUAL", [relay(1, true)], false)],
    after: [hook("MANUAL", "IDLE", [relay(2, true)], true)],
  }, async (rt) => {
    assert.equal(await rt.modes.request("MANUAL"), "MANUAL");
    assert.equal(await rt.modes.request("IDLE"), "IDLE", "after-hook failure is only logged");
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), false);
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch2_state"), false);
  });
});

Deno.test("ModeManager vetoes on a provider-side hook failure and stops the remaining hook calls", async () => {
  await withRuntime({
    before: [
      hook("MANUAL", "AUTO", [relay(2, true), relay(1, true), relay(3, true)], true),
      hook("MANUAL", "AUTO", [relay(4, true)], true),
    ],
    after: [AUTO_FAULT],
  }, async (rt) => {
    await rt.modes.request("MANUAL");
    // Every call to relayio0 set_relay_ch1 now fails inside the provider.
    await rt.router.call({
      providerId: "sim0",
      deviceId: "chaos_control",
      functionName: "inject_call_failure",
      args: {
        device_id: { type: "string", string: "relayio0" },
        function_id: { type: "string", string: "1" },
        failure_rate: d(1),
      },
      origin: "manual",
    });
    await assert.rejects(rt.modes.request("AUTO"), (e: RuntimeError) => {
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.match(e.message, /vetoed.*set_relay_ch1/);
      return true;
    });
    assert.equal(rt.modes.current(), "MANUAL");
    const ch = (n: number) => readSignal(rt, "sim0", "relayio0", `relay_ch${n}_state`);
    assert.deepEqual([await ch(2), await ch(3), await ch(4)], [true, false, false]);
  });
});

Deno.test("ModeManager converts hook args to the function's ArgSpec types", async () => {
  await withRuntime({
    after: [
      hook("IDLE", "MANUAL", [
        // YAML `duty: 1` is an int64 scalar; the function wants a double.
        call("sim0/motorctl0", 10, { motor_index: 2, duty: 1 }),
        call("sim0/tempctl0", "set_setpoint", { value: 30 }),
        // A scalar written for a string argument is passed as its text.
        call("sim0/tempctl0", "set_mode", { mode: "closed" }),
      ]),
    ],
  }, async (rt) => {
    await rt.modes.request("MANUAL");
    assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor2_duty"), 1);
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 30);
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "control_mode"), "closed");
  });
});

Deno.test("ModeManager refuses a second transition while hooks run, but FAULT always gets through", async () => {
  await withRuntime({
    before: [hook("MANUAL", "AUTO", [relay(1, true)])],
    after: [AUTO_FAULT],
  }, async (rt) => {
    await rt.modes.request("MANUAL");
    // Slow the hook's call down inside the provider.
    await rt.router.call({
      providerId: "sim0",
      deviceId: "chaos_control",
      functionName: "inject_call_latency",
      args: { device_id: { type: "string", string: "relayio0" }, latency_ms: i(200) },
      origin: "manual",
    });
    const toAuto = rt.modes.request("AUTO");
    await assert.rejects(rt.modes.request("IDLE"), (e: RuntimeError) => {
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.match(e.message, /MANUAL -> AUTO is in progress/);
      return true;
    });
    assert.equal(await rt.modes.request("FAULT"), "FAULT");
    await assert.rejects(toAuto, (e: RuntimeError) => {
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.match(e.message, /changed concurrently/);
      return true;
    });
    assert.equal(rt.modes.current(), "FAULT");
  });
});

Deno.test("ModeManager refuses an operator's re-arm until a forced FAULT's hooks have finished", async () => {
  await withRuntime({ after: [hook("*", "FAULT", [relay(1, false)], false)] }, async (rt) => {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) });
    // Slow the FAULT hook's call down inside the provider.
    await rt.router.call({
      providerId: "sim0",
      deviceId: "chaos_control",
      functionName: "inject_call_latency",
      args: { device_id: { type: "string", string: "relayio0" }, latency_ms: i(300) },
      origin: "manual",
    });
    const forced = rt.modes.forceFault("test");
    assert.equal(rt.modes.current(), "FAULT", "committed before any await");
    // Before this was refused, the re-arm went through and the hook's relay-off landed after it.
    await assert.rejects(rt.modes.request("MANUAL"), (e: RuntimeError) => {
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.match(e.message, /^FAULT hooks are still running/);
      return true;
    });
    assert.equal(await forced, true);
    assert.equal(await rt.modes.request("MANUAL"), "MANUAL");
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), false);
  });
});

Deno.test("ModeManager.forceFault during an e-stop's FAULT (hooks not run yet) resolves only once they have run", async () => {
  await withRuntime({ after: [hook("*", "FAULT", [relay(1, false)], false)] }, async (rt) => {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) });
    // Slow the FAULT hook's call down inside the provider.
    await rt.router.call({
      providerId: "sim0",
      deviceId: "chaos_control",
      functionName: "inject_call_latency",
      args: { device_id: { type: "string", string: "relayio0" }, latency_ms: i(300) },
      origin: "manual",
    });
    // The e-stop commits FAULT at once and runs the FAULT hooks after its ladder.
    const stopped = rt.estop.trigger("test");
    assert.equal(rt.modes.current(), "FAULT");
    // An alarm's fault action meanwhile: FAULT is in force, its hooks are not done.
    assert.equal(await rt.modes.forceFault("alarm"), true);
    assert.equal(
      await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"),
      false,
      "forceFault answered before the FAULT hooks had run",
    );
    await stopped;
  });
});

Deno.test("ModeManager refuses AUTO without a hook covering AUTO -> FAULT while actuating functions exist", async () => {
  await withRuntime({ before: [hook("MANUAL", "AUTO", [relay(1, false)])] }, async (rt) => {
    await rt.modes.request("MANUAL");
    await assert.rejects(rt.modes.request("AUTO"), (e: RuntimeError) => {
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.match(e.message, /^refusing AUTO/);
      return true;
    });
    assert.equal(rt.modes.current(), "MANUAL");
  });
});

Deno.test("CallRouter with the mode gate: IDLE blocks, MANUAL passes, AUTO follows the policy", async () => {
  for (const policy of ["BLOCK", "OVERRIDE"] as const) {
    await withRuntime({ policy, after: [AUTO_FAULT] }, async (rt) => {
      const set = (on: boolean) => manualCall(rt, "sim0", "relayio0", 1, { enabled: b(on) });
      await assert.rejects(set(true), (e: RuntimeError) => {
        assert.equal(e.code, "FAILED_PRECONDITION");
        assert.match(e.message, /blocked in IDLE/);
        return true;
      });
      await rt.modes.request("MANUAL");
      await set(true);
      await rt.modes.request("AUTO");
      if (policy === "BLOCK") await assert.rejects(set(false), { code: "FAILED_PRECONDITION" });
      else await set(false);
      await rt.router.call({
        providerId: "sim0",
        deviceId: "motorctl0",
        functionId: 10,
        args: { motor_index: i(1), duty: d(0.25) },
        origin: "automated",
      });
      assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), policy === "BLOCK");
      assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor1_duty"), 0.25);
    });
  }
});

Deno.test("validateDeclaredCalls reports every declared call that does not resolve", async () => {
  await withRuntime({}, (rt) => {
    const cfg = testConfig({
      automation: {
        modeTransitionHooks: {
          beforeTransition: [hook("*", "AUTO", [
            call("sim0/relayio0", "set_relay_ch1", { enabled: true }, "h[0]"),
            call("nope/relayio0", "set_relay_ch1", {}, "h[1]"),
            call("sim0/ghost", "x", {}, "h[2]"),
          ])],
          afterTransition: [hook("*", "*", [
            call("sim0/relayio0", 99, {}, "a[0]"),
            {
              ...call("sim0/relayio0", 1, { enabled: true }, "a[1]"),
              functionName: "set_relay_ch2",
            },
          ])],
        },
      },
      safety: {
        hooks: [call("sim0/motorctl0", "set_motor_duty", { motor_index: 1 }, "s[0]")],
        setpoints: [
          call("sim0/motorctl0", "set_motor_duty", { motor_index: 1, duty: "fast" }, "s[1]"),
          call("sim0/tempctl0", "set_setpoint", { value: { double: 20.5 } }, "s[2]"),
        ],
      },
    });
    const problems = validateDeclaredCalls(cfg, rt.inventory);
    assert.deepEqual(problems.map((p) => p.split(":")[0]), [
      "h[1]",
      "h[2]",
      "a[0]",
      "a[1]",
      "s[0]",
      "s[1]",
    ]);
    assert.match(problems[0]!, /provider not found: "nope"/);
    assert.match(problems[1]!, /device not found: "sim0\/ghost"/);
    assert.match(problems[2]!, /function_id 99 not found/);
    assert.match(problems[3]!, /is "set_relay_ch1", not "set_relay_ch2"/);
    assert.match(problems[4]!, /args\.duty: required argument missing/);
    assert.match(problems[5]!, /args\.duty: expected double, got string/);
  });
});
