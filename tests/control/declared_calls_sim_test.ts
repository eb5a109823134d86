/**
 * Declared calls against the simulated provider (in-process, tests/helpers/rig.ts): runDeclaredCall through
 * the runtime's CallRouter, and the start-up preflight validateDeclaredCalls.
 */
import assert from "node:assert/strict";
import { PROVIDER_TEXT_CHARS, type RuntimeError } from "../../src/common/mod.ts";
import { runDeclaredCall, validateDeclaredCalls } from "../../src/control/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, hook, inertSim, readSignal } from "../safety/_fixture.ts";

/** A runtime over one inert sim with automation on (so the mode gate refuses actuation in IDLE). */
async function withRuntime(body: (rt: Kernel) => Promise<void> | void): Promise<void> {
  await using r = await rig({
    providers: [inertSim()],
    automation: { enabled: true },
    safety: { present: true },
  });
  await body(r.kernel);
}

const relay = (rt: Kernel, ch: number) => readSignal(rt, "sim0", "relayio0", `relay_ch${ch}_state`);

Deno.test("runDeclaredCall refuses what does not resolve with the router's codes, as a rejection", async () => {
  await withRuntime(async (rt) => {
    const refused: Array<[ReturnType<typeof call>, string, string]> = [
      [
        call("relayio0", "set_relay_ch1", { enabled: true }, "hooks[2].calls[0]"),
        "INVALID_ARGUMENT",
        'hooks[2].calls[0].device_handle: "relayio0" is not provider/device',
      ],
      [call("nope/relayio0", "set_relay_ch1"), "NOT_FOUND", "Provider not found: nope"],
      [call("sim0/ghost", "set_relay_ch1"), "NOT_FOUND", "Device not found: sim0/ghost"],
      [call("sim0/relayio0", 99), "NOT_FOUND", "Function not found: sim0/relayio0 function_id 99"],
      [
        { ...call("sim0/relayio0", 1, { enabled: true }), functionName: "set_relay_ch2" },
        "INVALID_ARGUMENT",
        'function_id 1 is "set_relay_ch1", not "set_relay_ch2" (sim0/relayio0)',
      ],
      [
        call("sim0/relayio0", "set_relay_ch1", { enabled: "yes" }),
        "INVALID_ARGUMENT",
        "args.enabled: expected bool, got string",
      ],
    ];
    for (const [declared, code, message] of refused) {
      // A promise either way: the caller awaits it, nothing is thrown synchronously.
      const pending = runDeclaredCall(rt.router, declared, "safety");
      await assert.rejects(pending, (e: RuntimeError) => {
        assert.equal(e.code, code, message);
        assert.equal(e.message, message);
        return true;
      });
    }
    assert.equal(await relay(rt, 1), false);
  });
});

Deno.test("runDeclaredCall refuses a device_handle of 10 kB that is not provider/device with a bounded message, the handle cut and quoted", async () => {
  await withRuntime(async (rt) => {
    const handle = `relay\n${"x".repeat(10_000)}`;
    const declared = call(handle, "set_relay_ch1", { enabled: true }, "hooks[0].calls[0]");
    await assert.rejects(runDeclaredCall(rt.router, declared, "safety"), (e: RuntimeError) => {
      assert.equal(e.code, "INVALID_ARGUMENT");
      assert.equal(
        e.message,
        `hooks[0].calls[0].device_handle: "relay\\n${
          "x".repeat(PROVIDER_TEXT_CHARS - 6)
        }\u2026" is not provider/device`,
      );
      return true;
    });
  });
});

Deno.test("runDeclaredCall passes the origin to the router's gates", async () => {
  await withRuntime(async (rt) => {
    assert.equal(rt.modes.current(), "IDLE");
    const on = call("sim0/relayio0", "set_relay_ch1", { enabled: true });
    await assert.rejects(runDeclaredCall(rt.router, on, "hook"), (e: RuntimeError) => {
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.match(e.message, /blocked in IDLE/);
      return true;
    });
    assert.equal(await relay(rt, 1), false);
    // The safe state must get through every mode gate.
    assert.deepEqual(await runDeclaredCall(rt.router, on, "safety"), {
      providerId: "sim0",
      deviceId: "relayio0",
      functionId: 1,
      functionName: "set_relay_ch1",
      results: {},
      postCallPollTriggered: true,
    });
    assert.equal(await relay(rt, 1), true);
  });
});

Deno.test("runDeclaredCall selects by id or name and converts YAML scalars to the ArgSpec types", async () => {
  await withRuntime(async (rt) => {
    await rt.modes.request("MANUAL");
    const byId = await runDeclaredCall(
      rt.router,
      call("sim0/motorctl0", 10, { motor_index: 2, duty: 1 }), // `duty: 1` is a YAML integer
      "hook",
    );
    assert.equal(byId.functionName, "set_motor_duty");
    assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor2_duty"), 1);
    // `function_id: 2` in YAML is an integer; the function's argument is a string.
    const byName = await runDeclaredCall(
      rt.router,
      call("sim0/chaos_control", "inject_call_failure", {
        device_id: "relayio0",
        function_id: 2,
        failure_rate: 1,
      }),
      "hook",
    );
    assert.equal(byName.functionId, 4);
    // The provider got function_id "2": set_relay_ch2 now fails inside it, set_relay_ch1 does not.
    await assert.rejects(
      runDeclaredCall(rt.router, call("sim0/relayio0", 2, { enabled: true }), "hook"),
      /function call failed \(injected fault\)/,
    );
    await runDeclaredCall(rt.router, call("sim0/relayio0", 1, { enabled: true }), "hook");
    assert.deepEqual([await relay(rt, 1), await relay(rt, 2)], [true, false]);
  });
});

Deno.test("validateDeclaredCalls checks every hook, safe-state hook and setpoint, in that order", async () => {
  await withRuntime((rt) => {
    const cfg = testConfig({
      automation: {
        modeTransitionHooks: {
          beforeTransition: [
            hook("*", "AUTO", [
              call("sim0/relayio0", "set_relay_ch1", { enabled: true }, "b[0][0]"),
              call("relayio0", "set_relay_ch1", { enabled: true }, "b[0][1]"),
            ]),
            hook("*", "MANUAL", [call("nope/relayio0", 1, {}, "b[1][0]")]),
          ],
          afterTransition: [
            hook("*", "*", [
              call("sim0/ghost", "x", {}, "a[0][0]"),
              call("sim0/relayio0", 99, {}, "a[0][1]"),
              { ...call("sim0/relayio0", 1, { enabled: true }, "a[0][2]"), functionName: "x" },
            ]),
          ],
        },
      },
      safety: {
        hooks: [
          call("sim0/relayio0", "nope", {}, "h[0]"),
          call("sim0/motorctl0", "set_motor_duty", { motor_index: 1 }, "h[1]"),
          // YAML integers for a double and for a string argument are converted, not reported.
          call("sim0/chaos_control", "inject_call_failure", {
            device_id: "relayio0",
            function_id: 1,
            failure_rate: 0,
          }, "h[2]"),
        ],
        setpoints: [
          call("sim0/motorctl0", "set_motor_duty", { motor_index: 1, duty: 0 }, "s[0]"),
          call("sim0/motorctl0", 10, { motor_index: 3, duty: 0 }, "s[1]"),
          call("sim0/tempctl0", "set_setpoint", { value: "hot" }, "s[2]"),
        ],
      },
    });
    assert.deepEqual(validateDeclaredCalls(cfg, rt.inventory), [
      'b[0][1]: device_handle "relayio0" is not provider/device',
      'b[1][0]: provider not found: "nope"',
      'a[0][0]: device not found: "sim0/ghost"',
      'a[0][1]: function_id 99 not found on "sim0/relayio0"',
      'a[0][2]: function_id 1 is "set_relay_ch1", not "x" on "sim0/relayio0"',
      'h[0]: function "nope" not found on "sim0/relayio0"',
      'h[1]: args.duty: required argument missing for "set_motor_duty"',
      "s[1]: args.motor_index: 3 is above the maximum 2",
      "s[2]: args.value: expected double, got string",
    ]);
    assert.deepEqual(validateDeclaredCalls(testConfig(), rt.inventory), []);
  });
});
