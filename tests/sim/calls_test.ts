import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { StatusCode as S, type WireValue, WireValueType as T } from "../../src/adpp/mod.ts";
import { SIM_YAML, type SimProcess, withSim } from "./_sim_process.ts";
import { waitFor } from "../helpers/kernel.ts";

const b = (v: boolean): WireValue => ({ type: T.BOOL, bool_value: v });
const i = (v: number): WireValue => ({ type: T.INT64, int64_value: v });
const d = (v: number): WireValue => ({ type: T.DOUBLE, double_value: v });
const s = (v: string): WireValue => ({ type: T.STRING, string_value: v });

async function read(sim: SimProcess, device_id: string, ids: string[]): Promise<unknown[]> {
  const resp = await sim.request({ read_signals: { device_id, signal_ids: ids } });
  return (resp.read_signals?.values ?? []).map((v) => {
    const x = v.value ?? {};
    return x.bool_value ?? x.double_value ?? x.string_value ?? x.int64_value;
  });
}

async function codes(sim: SimProcess, calls: Array<[string, number, Record<string, WireValue>]>) {
  const out: number[] = [];
  for (const [dev, fn, args] of calls) out.push((await sim.call(dev, fn, args)).status?.code ?? 0);
  return out;
}

Deno.test("sim tempctl set_relay is refused in closed mode before its arguments are checked", async () => {
  await withSim(async (sim) => {
    deepStrictEqual(
      await codes(sim, [
        ["tempctl0", 3, { relay_index: i(1), state: b(true) }], // open: OK
        ["tempctl0", 1, { mode: s("closed") }],
        ["tempctl0", 3, { relay_index: i(1), state: b(false) }], // closed: refused
        ["tempctl0", 3, {}], // closed, args missing: still the precondition
        ["tempctl0", 1, { mode: s("auto") }], // not open/closed
        ["tempctl0", 1, { mode: s("open") }],
        ["tempctl0", 3, { relay_index: i(3), state: b(true) }], // index out of {1,2}
        ["tempctl0", 3, { relay_index: i(2) }], // state missing
        ["tempctl0", 3, { relay_index: d(1), state: b(true) }], // wrong type
      ]),
      [
        S.OK,
        S.OK,
        S.FAILED_PRECONDITION,
        S.FAILED_PRECONDITION,
        S.INVALID_ARGUMENT,
        S.OK,
        10,
        10,
        10,
      ],
    );
    deepStrictEqual(await read(sim, "tempctl0", ["relay1_state", "relay2_state", "control_mode"]), [
      true,
      false,
      "open",
    ]);
  });
});

Deno.test("sim tempctl set_setpoint enforces [-50, 400]", async () => {
  await withSim(async (sim) => {
    deepStrictEqual(
      await codes(sim, [
        ["tempctl0", 2, { value: d(400) }],
        ["tempctl0", 2, { value: d(400.5) }],
        ["tempctl0", 2, { value: d(-50.5) }],
        ["tempctl0", 2, { value: d(-50) }],
      ]),
      [S.OK, S.INVALID_ARGUMENT, S.INVALID_ARGUMENT, S.OK],
    );
    deepStrictEqual(await read(sim, "tempctl0", ["setpoint"]), [-50]);
  });
});

Deno.test("sim motorctl set_motor_duty checks index and duty bounds", async () => {
  await withSim(async (sim) => {
    deepStrictEqual(
      await codes(sim, [
        ["motorctl0", 10, { motor_index: i(2), duty: d(0.5) }],
        ["motorctl0", 10, { motor_index: i(0), duty: d(0.5) }],
        ["motorctl0", 10, { motor_index: i(1), duty: d(1.5) }],
        ["motorctl0", 10, { motor_index: i(1), duty: d(-0.1) }],
        ["motorctl0", 10, { motor_index: i(1) }],
        ["motorctl0", 1, { motor_index: i(1), duty: d(0) }], // unknown function id
      ]),
      [S.OK, S.INVALID_ARGUMENT, S.INVALID_ARGUMENT, S.INVALID_ARGUMENT, 10, S.NOT_FOUND],
    );
    // inert: duty is stored, speed stays 0.
    deepStrictEqual(await read(sim, "motorctl0", ["motor1_duty", "motor2_duty", "motor2_speed"]), [
      0,
      0.5,
      0,
    ]);
  });
});

Deno.test("sim relayio set_relay_chN switches its relay and needs a bool", async () => {
  await withSim(async (sim) => {
    deepStrictEqual(
      await codes(sim, [
        ["relayio0", 3, { enabled: b(true) }],
        ["relayio0", 4, { enabled: s("true") }],
        ["relayio0", 5, { enabled: b(true) }],
      ]),
      [S.OK, S.INVALID_ARGUMENT, S.NOT_FOUND],
    );
    deepStrictEqual(await read(sim, "relayio0", ["relay_ch1_state", "relay_ch3_state"]), [
      false,
      true,
    ]);
  });
});

Deno.test("sim analogsensor calibrate_channel needs quality GOOD and a channel in 1..4", async () => {
  await withSim(async (sim) => {
    deepStrictEqual(
      await codes(sim, [
        ["analogsensor0", 1, { channel: i(4) }],
        ["analogsensor0", 1, { channel: i(5) }],
        ["analogsensor0", 2, { enabled: b(true) }],
        ["analogsensor0", 2, { enabled: b(false) }],
      ]),
      [S.OK, S.INVALID_ARGUMENT, S.OK, S.OK],
    );
    deepStrictEqual(await read(sim, "analogsensor0", ["sensor_quality"]), ["GOOD"]);
  });
});

Deno.test("sim Call selector: name alone works, id/name mismatch and empty selector are refused", async () => {
  await withSim(async (sim) => {
    equal(
      (await sim.call("relayio0", 0, { enabled: b(true) }, "set_relay_ch2")).status?.code,
      S.OK,
    );
    equal((await sim.call("relayio0", 1, { enabled: b(true) }, "set_relay_ch2")).status?.code, 10);
    equal((await sim.call("relayio0", 0, {}, "nope")).status?.code, S.NOT_FOUND);
    equal((await sim.call("relayio0", 0, {})).status?.code, S.INVALID_ARGUMENT);
    equal((await sim.call("ghost0", 1, {})).status?.code, S.NOT_FOUND);
    equal((await sim.call("", 1, {})).status?.code, S.INVALID_ARGUMENT);
    const ok1 = await sim.call("relayio0", 1, { enabled: b(true) }, "set_relay_ch1");
    deepStrictEqual(ok1.call, { device_id: "relayio0" });
    deepStrictEqual(await read(sim, "relayio0", ["relay_ch1_state", "relay_ch2_state"]), [
      true,
      true,
    ]);
  });
});

Deno.test("sim non_interacting physics moves motors, temperatures and GPIO the right way", async () => {
  await withSim(async (sim) => {
    // After the first ticks, inverted inputs 2 and 4 read true with all relays off.
    await waitFor("inputs 2 and 4 to read true, input 1 false", async () => {
      const gpio = await read(sim, "relayio0", ["gpio_input_1", "gpio_input_2", "gpio_input_4"]);
      return gpio[0] === false && gpio[1] === true && gpio[2] === true;
    });

    const [t0] = (await read(sim, "tempctl0", ["tc1_temp"])) as number[];
    ok(t0! <= 25, `start temperature ${t0} cools toward ambient 23`);
    equal((await sim.call("tempctl0", 3, { relay_index: i(1), state: b(true) })).status?.code, 1);
    equal((await sim.call("motorctl0", 10, { motor_index: i(1), duty: d(0.5) })).status?.code, 1);

    // Target 1500 rpm (0.5 * max_speed 3000): rises, never above the target.
    await waitFor("motor 1 above 500 rpm", async () => {
      const [v] = (await read(sim, "motorctl0", ["motor1_speed"])) as number[];
      ok(v! <= 1500, `speed ${v} above target`);
      return v! > 500;
    });
    const [m2] = (await read(sim, "motorctl0", ["motor2_speed"])) as number[];
    equal(m2, 0);
    // Heater on: target 68 C, tc2 tracks 1.5 C below tc1.
    await waitFor("tc1 warming, tc2 below it", async () => {
      const [tc1, tc2] = (await read(sim, "tempctl0", ["tc1_temp", "tc2_temp"])) as number[];
      return tc1! > t0! + 1 && tc2! < tc1!;
    });
  }, SIM_YAML);
});
