/**
 * Alarm actions on the simulated provider. An over-temperature alarm with action estop latches
 * the e-stop (cause `alarm:<id>` in status and in estop_change) inside the poll that saw the
 * temperature, and the safe-state ladder runs in full although an engaged interlock blocks the
 * very functions it calls; an operator's call to them is refused meanwhile. An alarm with action
 * fault forces FAULT through the mode manager, its hooks included.
 */
import assert from "node:assert/strict";
import type { CallArgValue, CallConfig } from "../../src/config/mod.ts";
import { recordEvents, waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";
import { alarmsConfig, Api, callBody } from "./alarms_helpers.ts";
import { eventsOf } from "./automation_helpers.ts";

const i = (v: number): CallArgValue => ({ type: "int64", int64: v });
const d = (v: number): CallArgValue => ({ type: "double", double: v });
const b = (v: boolean): CallArgValue => ({ type: "bool", bool: v });
const s = (v: string): CallArgValue => ({ type: "string", string: v });

function call(handle: string, functionName: string, args: CallConfig["args"]): CallConfig {
  return { deviceHandle: handle, functionId: 0, functionName, args, path: "safety" };
}

Deno.test("An alarm with action estop latches the e-stop with its cause, and the ladder runs although an interlock blocks its functions", async () => {
  const fx = await startHttpFixture({
    config: {
      // A stale bound no load reaches (1 min, not tc1_temp's 1.5 s): a poll late past the bound
      // would make tc1_temp a bad input, and the interlock refuse every call and tc1_overtemp
      // latch the e-stop for it (rightly) before the limits are tried.
      health: { staleness: { warnAfterMs: 0, staleAfterMs: 60_000 } },
      safety: {
        hooks: [
          call("sim0/tempctl0", "set_mode", { mode: s("open") }),
          call("sim0/tempctl0", "set_relay", { relay_index: i(1), state: b(false) }),
          call("sim0/motorctl0", "set_motor_duty", { motor_index: i(1), duty: d(0) }),
        ],
        expect: [
          {
            signal: "sim0/motorctl0/motor1_duty",
            providerId: "sim0",
            deviceId: "motorctl0",
            signalId: "motor1_duty",
            equals: 0,
            path: "safety.safe_state.expect[0]",
          },
          {
            signal: "sim0/tempctl0/relay1_state",
            providerId: "sim0",
            deviceId: "tempctl0",
            signalId: "relay1_state",
            equals: false,
            path: "safety.safe_state.expect[1]",
          },
        ],
      },
      ...alarmsConfig(`
alarms:
  - id: tc1_overtemp
    signal: sim0/tempctl0/tc1_temp
    hihi: 40
    action: estop
    message: Heater over temperature
interlocks:
  - id: hot_lockout
    block: [sim0/motorctl0/set_motor_duty, sim0/tempctl0/*]
    while: sim0/tempctl0/tc1_temp > 26.5
    message: Motor and heater locked while above 26.5 °C
`),
    },
  });
  const rec = recordEvents(fx.runtime);
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const duty = callBody("sim0/motorctl0", 10, {
      motor_index: { type: "int64", int64: 1 },
      duty: { type: "double", double: 0.5 },
    });
    assert.equal((await api.post("/v0/call", duty)).status, 200, "cool: not blocked");
    const heat = callBody("sim0/tempctl0", 3, {
      relay_index: { type: "int64", int64: 1 },
      state: { type: "bool", bool: true },
    });
    assert.equal((await api.post("/v0/call", heat)).status, 200);

    // The open-loop heater passes 26.5 about 0.2 s after it is switched on and 40 about 2.4 s
    // after: with tempctl's 2 Hz poll hint, several polls see the interlock engaged before the
    // alarm stops the machine (a 28 C alarm could fire in the same poll as the interlock).
    await waitFor(
      "the interlock engaged",
      async () => (await api.get("/v0/interlocks")).json.interlocks[0].blocking,
      30_000,
    );
    const refused = await api.post("/v0/call", duty);
    assert.equal(refused.status, 409);
    assert.equal(refused.json.status.code, "FAILED_PRECONDITION");
    assert.match(
      refused.json.status.message,
      /^Interlock hot_lockout blocks sim0\/motorctl0 set_motor_duty: Motor and heater locked while above 26\.5 °C \(sim0\/tempctl0\/tc1_temp = (2[6-9]|3\d)\.\d+\)$/,
    );

    await waitFor("the e-stop latched", () => fx.runtime.estop.latched, 30_000);
    await waitFor("verification", () => eventsOf(rec.events, "estop_verification").length > 0);
    const status = (await api.get("/v0/runtime/status")).json;
    assert.equal(status.mode, "FAULT");
    assert.equal(status.estop.latched, true);
    assert.equal(status.estop.cause, "alarm:tc1_overtemp");
    assert.equal(status.estop.verification.outcome, "verified");
    const [change] = eventsOf(rec.events, "estop_change");
    assert.equal(change!.cause, "alarm:tc1_overtemp");
    // The value is the first sample at or above hihi; tempctl declares a 2 Hz poll hint, so how far
    // past 40 it got depends on the heater between two polls.
    const said =
      /^alarm tc1_overtemp raised MAJOR \(hihi 40\): sim0\/tempctl0\/tc1_temp = (\d+\.\d+) - Heater over temperature$/
        .exec(change!.reason ?? "");
    assert.ok(said, change!.reason ?? "no reason");
    assert.ok(Number(said[1]!) >= 40, `raised at ${said[1]}, below hihi`);
    // The latch and FAULT follow the raise at once, in the same poll; the interlock stayed
    // engaged throughout.
    const kinds = rec.events.map((e) => e.kind);
    const raisedAt = rec.events.findIndex((e) => e.kind === "alarm" && e.transition === "raise");
    assert.deepEqual(kinds.slice(raisedAt, raisedAt + 3), ["alarm", "mode_change", "estop_change"]);
    assert.deepEqual(eventsOf(rec.events, "interlock").map((e) => e.blocking), [true]);
    // Every ladder call went through (origin safety skips the interlock): outputs are safe. A
    // stop action ends with its call's answer; the device's post-call poll follows (e5b9bd44),
    // so the cache shows the effect once that poll is in.
    await waitFor("the ladder calls' effect in the cache", () => {
      const duty = fx.runtime.cache.signal("sim0", "motorctl0", "motor1_duty")?.value;
      const relay = fx.runtime.cache.signal("sim0", "tempctl0", "relay1_state")?.value;
      return duty?.type === "double" && duty.double === 0 && relay?.type === "bool" &&
        !relay.bool;
    });
    assert.deepEqual(
      fx.runtime.cache.signal("sim0", "motorctl0", "motor1_duty")!.value,
      { type: "double", double: 0 },
    );
    assert.deepEqual(
      fx.runtime.cache.signal("sim0", "tempctl0", "relay1_state")!.value,
      { type: "bool", bool: false },
    );
    assert.deepEqual(eventsOf(rec.events, "hook_failure"), []);

    const alarm = (await api.get("/v0/alarms/tc1_overtemp")).json.alarm;
    assert.equal(alarm.action, "estop");
    assert.equal(alarm.transitions[0].transition, "raise");
    assert.equal(alarm.transitions[0].level, "MAJOR");
  } finally {
    rec.stop();
    await fx.close();
  }
});

Deno.test("An alarm with action fault forces FAULT through the normal transition, its hooks included", async () => {
  const fx = await startHttpFixture({
    config: {
      providers: [simProvider("sim0", { yaml: SIM_INERT_YAML })],
      automation: {
        modeTransitionHooks: {
          beforeTransition: [{
            from: "*",
            to: "FAULT",
            failOnError: true,
            path: "automation.mode_transition_hooks.before_transition[0]",
            calls: [call("sim0/relayio0", "set_relay_ch1", { enabled: b(false) })],
          }],
          afterTransition: [],
        },
      },
      ...alarmsConfig(`
alarms:
  - { id: too_fast, signal: sim0/motorctl0/motor1_duty, hi: 0.5, action: fault }
`),
    },
  });
  const rec = recordEvents(fx.runtime);
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const relay = callBody("sim0/relayio0", 1, { enabled: { type: "bool", bool: true } });
    assert.equal((await api.post("/v0/call", relay)).status, 200);
    const fast = callBody("sim0/motorctl0", 10, {
      motor_index: { type: "int64", int64: 1 },
      duty: { type: "double", double: 0.7 },
    });
    assert.equal((await api.post("/v0/call", fast)).status, 200);
    await waitFor("FAULT", () => fx.runtime.modes.current() === "FAULT");
    await waitFor("the FAULT hook switched relay 1 off", () => {
      const v = fx.runtime.cache.signal("sim0", "relayio0", "relay_ch1_state")?.value;
      return v?.type === "bool" && v.bool === false;
    });
    assert.deepEqual(
      eventsOf(rec.events, "mode_change").map((e) => `${e.previous_mode}->${e.new_mode}`),
      ["IDLE->MANUAL", "MANUAL->FAULT"],
    );
    assert.deepEqual(eventsOf(rec.events, "hook_failure"), []);
    assert.equal(fx.runtime.estop.latched, false, "fault is not the e-stop");
    assert.equal((await api.get("/v0/runtime/status")).json.estop.cause, null);
    assert.equal((await api.get("/v0/alarms/too_fast")).json.alarm.state, "active");
    const refused = await api.post("/v0/call", fast);
    assert.equal(refused.status, 409, "FAULT refuses actuating calls until an operator re-arms");
  } finally {
    rec.stop();
    await fx.close();
  }
});
