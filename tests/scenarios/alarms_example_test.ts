/**
 * The worked example docs/alarms.md walks through (examples/alarms.yaml: the demo machine with
 * alarms and an interlock), started as a real `runtime` process with its simulated provider, and
 * driven over HTTP as the document does: the heater held at 52 °C by its closed loop, the motor
 * is refused above 45 °C, a warning above 50 °C, and with the setpoint raised to 70 °C, above
 * 60 °C the over-temperature alarm stops the machine. The closed loop approaches its setpoint
 * without passing it, so the motor call meets the interlock however late it lands (heating open
 * loop with both relays left it about a second before the e-stop). The heater's time constant is
 * TAU_S instead of the simulator's 6 s (fewer seconds of waiting).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startRuntimeInMirror, withCheckoutMirror } from "../helpers/runtime_process.ts";
import { REPO, simYamlWithHeaterTau } from "../helpers/sim_config.ts";
import { Api, callBody } from "./alarms_helpers.ts";

/** The heater's time constant (s) in this test's simulated provider. */
const TAU_S = 3;

/** Where the closed loop holds the heater: above the interlock's 45, below the e-stop's 60. */
const HELD_C = 52;

const setSetpoint = (value: number) =>
  callBody("sim0/tempctl0", 2, { value: { type: "double", double: value } });
const setMode = (mode: "open" | "closed") =>
  callBody("sim0/tempctl0", 1, { mode: { type: "string", string: mode } });

Deno.test("examples/alarms.yaml: the motor is refused while hot and the over-temperature alarm stops the machine", async () => {
  const example = await Deno.readTextFile(`${REPO}examples/alarms.yaml`);
  const fast = example.replace("providers/sim/sim.yaml", "fast-sim.yaml");
  assert.notEqual(fast, example, "examples/alarms.yaml no longer runs providers/sim/sim.yaml");
  assert.doesNotMatch(example, /^health:/m, "examples/alarms.yaml has a health section now");
  // A stale bound no load reaches (1 min, not tc1_temp's 1.5 s): a poll late past the bound would
  // make tc1_temp a bad input, and tc1_overtemp latch the e-stop for it (rightly) before the test
  // heats.
  const config = `${fast}\nhealth:\n  staleness:\n    stale_after_ms: 60000\n`;
  await withCheckoutMirror(config, async (dir) => {
    const rt = await startRuntimeInMirror(dir);
    try {
      const api = new Api(rt.base);
      const alarms = (await api.get("/v0/alarms")).json.alarms;
      assert.deepEqual(
        alarms.map((a: { id: string; state: string }) => `${a.id}:${a.state}`),
        ["tc1_high:normal", "tc1_overtemp:normal", "relay4_on:normal"],
      );
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      assert.equal((await api.post("/v0/call", setSetpoint(HELD_C))).status, 200);
      assert.equal((await api.post("/v0/call", setMode("closed"))).status, 200);

      await waitFor(
        "the interlock engaged",
        async () => (await api.get("/v0/interlocks")).json.interlocks[0].blocking,
        30_000,
      );
      const motor = await api.post(
        "/v0/call",
        callBody("sim0/motorctl0", 10, {
          motor_index: { type: "int64", int64: 1 },
          duty: { type: "double", double: 0.5 },
        }),
      );
      assert.equal(motor.status, 409);
      assert.match(
        motor.json.status.message,
        /^Interlock motor_blocked_while_hot blocks sim0\/motorctl0 set_motor_duty: Motors stay as they are while the heater is above 45 °C \(sim0\/tempctl0\/tc1_temp = \d+\.\d+\)$/,
      );

      assert.equal((await api.post("/v0/call", setSetpoint(70))).status, 200);
      const status = await waitFor("the over-temperature alarm stopped the machine", async () => {
        const s = (await api.get("/v0/runtime/status")).json;
        return s.estop.latched && s.estop.verification ? s : null;
      }, 30_000);
      assert.equal(status.mode, "FAULT");
      assert.equal(status.estop.cause, "alarm:tc1_overtemp");
      assert.equal(status.estop.verification.outcome, "verified");
      const after = (await api.get("/v0/alarms")).json.alarms;
      const byId = Object.fromEntries(after.map((a: { id: string }) => [a.id, a]));
      assert.deepEqual(byId.tc1_high.transitions[0].cause, "hi");
      const overtemp = byId.tc1_overtemp.transitions[0];
      assert.deepEqual([overtemp.transition, overtemp.level, overtemp.cause, overtemp.limit], [
        "raise",
        "MAJOR",
        "hihi",
        60,
      ]);
      assert.ok(overtemp.value.double > 60);
      // The ladder switched the heater off (set_mode open, relays off) despite the interlock. A
      // stop action ends with its call's answer; the device's post-call poll follows (e5b9bd44),
      // so the state shows the effect once that poll is in.
      const state = await waitFor("the ladder calls' effect in /v0/state", async () => {
        const s = (await api.get(
          "/v0/state/sim0/tempctl0?signal_id=relay1_state&signal_id=relay2_state",
        )).json;
        const off = s.values.every((v: { value: { type: string; bool?: boolean } | null }) =>
          v.value?.type === "bool" && v.value.bool === false
        );
        return off ? s : null;
      });
      assert.deepEqual(
        state.values.map((v: { value: unknown }) => v.value),
        [{ type: "bool", bool: false }, { type: "bool", bool: false }],
      );
      assert.match(rt.stderr(), /ERROR .*alarm tc1_overtemp raised MAJOR \(hihi 60\)/);
      assert.match(rt.stderr(), /WARN .*E-STOP latched: alarm tc1_overtemp raised MAJOR/);
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
    }
  }, { "fast-sim.yaml": simYamlWithHeaterTau(TAU_S) });
});
