/**
 * Automation status over a real kernel: a call of the tree that a gate refused (the mode gate
 * here) is not a failure of the device -- listed in `refused_calls`, never in `device_outages`,
 * and it neither extends nor ends a device's failure streak (docs/safety.md §5).
 */
import assert from "node:assert/strict";
import type { TypedValue } from "../../src/common/mod.ts";
import { policyProvider } from "../helpers/policy_provider.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { callAs, tv } from "../scenarios/automation_helpers.ts";
import { failCallsOf, MOTOR_ARGS, refusedRows, withIdleTree } from "./_kernel_rig.ts";

Deno.test("AutomationEngine lists calls a gate refused in refused_calls, apart from the device's failure streak", async () => {
  await withIdleTree(async (rt, engine) => {
    const signal = new AbortController().signal;
    await failCallsOf(rt, "motorctl0", 10); // set_motor_duty: the device fails every call
    const call = () =>
      engine.services.callDevice("sim0/motorctl0", "set_motor_duty", MOTOR_ARGS, signal);
    const fail = () => assert.rejects(call(), /injected fault/);
    const refuse = () => assert.rejects(call(), /Call blocked in IDLE mode/);
    await fail();
    await rt.modes.request("IDLE"); // the mode gate refuses
    await refuse();
    await refuse();
    let s = engine.status();
    assert.deepEqual(s.device_outages, [], "one failure, then refusals: no outage");
    assert.deepEqual(
      refusedRows(engine),
      [["sim0/motorctl0", 2, "mode"]],
    );
    assert.match(s.refused_calls[0]!.last_refusal, /^Call blocked in IDLE mode: /);
    assert.equal(s.last_error, "calls refused: sim0/motorctl0 set_motor_duty by mode (2 in a row)");

    await rt.modes.request("MANUAL");
    await fail(); // the second failure in a row: the refusals between did not end the streak
    s = engine.status();
    assert.deepEqual(
      s.device_outages.map((o) => [o.device_handle, o.consecutive_failures]),
      [["sim0/motorctl0", 2]],
    );
    assert.deepEqual(s.refused_calls, [], "a call the gates let through ends the refusals");
    assert.equal(s.last_error, "device outage: sim0/motorctl0 (2 calls failed)");

    await callAs(rt, "manual", "sim0/chaos_control", "clear_faults", {});
    await call();
    s = engine.status();
    assert.deepEqual([s.device_outages, s.refused_calls, s.last_error], [[], [], null]);
  }, { arm: true });
});

Deno.test("AutomationEngine lists calls refused by the caller's policy checks (min_interval, requires_lease, validation) in refused_calls, not device_outages", async () => {
  await withIdleTree(async (rt, engine) => {
    await rt.modes.request("MANUAL"); // the mode gate lets automated calls through outside AUTO
    const signal = new AbortController().signal;
    const call = (fn: string, args: Record<string, TypedValue> = {}) =>
      engine.services.callDevice("pol/act0", fn, args, signal);
    const refusedBy = () => refusedRows(engine);

    await assert.rejects(call("leased"), /requires a lease/);
    await assert.rejects(call("leased"), /requires a lease/);
    let s = engine.status();
    assert.deepEqual(s.device_outages, [], "a lease refusal is no device failure");
    assert.deepEqual(refusedBy(), [["pol/act0", 2, "requires_lease"]]);

    const badLevel = { level: { type: "double", double: 2 } } as const;
    await assert.rejects(call("set_level", badLevel));
    await assert.rejects(call("set_level", badLevel));
    s = engine.status();
    assert.deepEqual(s.device_outages, [], "an argument refused is no device failure");
    // Counted per function: the lease refusals of `leased` stay listed apart.
    assert.deepEqual(refusedBy(), [["pol/act0", 2, "requires_lease"], [
      "pol/act0",
      2,
      "validation",
    ]]);

    await call("set_level", { level: { type: "double", double: 0.5 } }); // sent: ends its refusals
    assert.deepEqual(refusedBy(), [["pol/act0", 2, "requires_lease"]]);
    await call("pulse");
    assert.deepEqual(
      refusedBy(),
      [["pol/act0", 2, "requires_lease"]],
      "pulse's call ends none of leased's",
    );
    await assert.rejects(call("pulse"), /min_interval_ms|sooner/);
    await assert.rejects(call("pulse"), /min_interval_ms|sooner/);
    s = engine.status();
    assert.deepEqual(s.device_outages, [], "a call too soon is no device failure");
    assert.deepEqual(refusedBy(), [["pol/act0", 2, "requires_lease"], [
      "pol/act0",
      2,
      "min_interval",
    ]]);
    assert.equal(
      s.last_error,
      "calls refused: pol/act0 leased by requires_lease (2 in a row), " +
        "pol/act0 pulse by min_interval (2 in a row)",
    );
  }, { config: { providers: [simProvider("sim0"), policyProvider()] } });
});

Deno.test("AutomationEngine entering AUTO starts refused_calls afresh (the gates are decided again), keeping the device outages", async () => {
  await withIdleTree(async (rt, engine) => {
    const signal = new AbortController().signal;
    await failCallsOf(rt, "tempctl0", 2); // set_setpoint: the device fails every call
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        engine.services.callDevice("sim0/tempctl0", "set_setpoint", { value: tv.d(30) }, signal),
        /injected fault/,
      );
    }
    await rt.modes.request("IDLE"); // the mode gate refuses
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        engine.services.callDevice("sim0/motorctl0", "set_motor_duty", MOTOR_ARGS, signal),
        /Call blocked in IDLE mode/,
      );
    }
    let s = engine.status();
    assert.deepEqual(s.refused_calls.map((r) => r.device_handle), ["sim0/motorctl0"]);
    assert.deepEqual(s.device_outages.map((o) => o.device_handle), ["sim0/tempctl0"]);

    await rt.modes.request("MANUAL");
    await rt.modes.request("AUTO");
    s = engine.status();
    assert.deepEqual(
      s.refused_calls,
      [],
      "the refusals were the previous mode's gates: AUTO entry decided them again",
    );
    assert.deepEqual(
      s.device_outages.map((o) => [o.device_handle, o.consecutive_failures]),
      [["sim0/tempctl0", 2]],
      "no call reached the device since: its outage still holds",
    );
  }, { arm: true });
});
