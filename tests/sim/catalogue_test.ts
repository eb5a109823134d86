import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import {
  StatusCode,
  type WireArgSpec,
  WireQuality,
  type WireSignalValue,
  WireValueType as T,
} from "../../src/adpp/mod.ts";
import { withSim } from "./_sim_process.ts";

const CONFIG = 2;
const ACTUATE = 3;

/** [signal_id, name, value_type, unit, poll_hint_hz, stale_after_ms], as anolis-provider-sim's. */
type SignalRow = [string, string, number, string, number, number];
/** [function_id, name, category, args (only the wire fields that must be present)]. */
type FunctionRow = [number, string, number, Array<Record<string, unknown>>];

const arg = (name: string, type: number, extra: Record<string, unknown> = {}) => ({
  name,
  type,
  required: true,
  ...extra,
});

const CATALOGUE: Record<string, { signals: SignalRow[]; functions: FunctionRow[] }> = {
  tempctl0: {
    signals: [
      ["tc1_temp", "TC1 Temperature", T.DOUBLE, "C", 2, 1500],
      ["tc2_temp", "TC2 Temperature", T.DOUBLE, "C", 2, 1500],
      ["relay1_state", "Relay 1 State", T.BOOL, "", 2, 1500],
      ["relay2_state", "Relay 2 State", T.BOOL, "", 2, 1500],
      ["control_mode", "Control Mode", T.STRING, "", 0.5, 3000],
      ["setpoint", "Setpoint", T.DOUBLE, "C", 0.5, 3000],
    ],
    functions: [
      [1, "set_mode", CONFIG, [arg("mode", T.STRING)]],
      [2, "set_setpoint", CONFIG, [
        arg("value", T.DOUBLE, { unit: "C", min_double: -50, max_double: 400 }),
      ]],
      [3, "set_relay", ACTUATE, [
        arg("relay_index", T.INT64, { min_int64: 1, max_int64: 2 }),
        arg("state", T.BOOL),
      ]],
    ],
  },
  motorctl0: {
    signals: [
      ["motor1_speed", "Motor 1 Speed", T.DOUBLE, "rpm", 5, 800],
      ["motor2_speed", "Motor 2 Speed", T.DOUBLE, "rpm", 5, 800],
      ["motor1_duty", "Motor 1 Duty", T.DOUBLE, "", 2, 1500],
      ["motor2_duty", "Motor 2 Duty", T.DOUBLE, "", 2, 1500],
    ],
    functions: [
      [10, "set_motor_duty", ACTUATE, [
        arg("motor_index", T.INT64, { min_int64: 1, max_int64: 2 }),
        arg("duty", T.DOUBLE, { min_double: 0, max_double: 1 }),
      ]],
    ],
  },
  relayio0: {
    signals: [
      ...[1, 2, 3, 4].map((n): SignalRow => [
        `relay_ch${n}_state`,
        `Relay Ch${n} State`,
        T.BOOL,
        "",
        1,
        2000,
      ]),
      ...[1, 2, 3, 4].map((n): SignalRow => [
        `gpio_input_${n}`,
        `GPIO Input ${n}`,
        T.BOOL,
        "",
        1,
        2000,
      ]),
    ],
    functions: [1, 2, 3, 4].map((n): FunctionRow => [
      n,
      `set_relay_ch${n}`,
      ACTUATE,
      [arg("enabled", T.BOOL)],
    ]),
  },
  analogsensor0: {
    signals: [
      ...[1, 2, 3, 4].map((n): SignalRow => [
        `voltage_ch${n}`,
        `Voltage Ch${n}`,
        T.DOUBLE,
        "V",
        10,
        500,
      ]),
      ["sensor_quality", "Sensor Quality", T.STRING, "", 0.5, 3000],
    ],
    functions: [
      [1, "calibrate_channel", CONFIG, [arg("channel", T.INT64, { min_int64: 1, max_int64: 4 })]],
      [2, "inject_noise", CONFIG, [arg("enabled", T.BOOL)]],
    ],
  },
  chaos_control: {
    signals: [],
    functions: [
      [1, "inject_device_unavailable", ACTUATE, [
        arg("device_id", T.STRING),
        arg("duration_ms", T.INT64, { unit: "ms" }),
      ]],
      [2, "inject_signal_fault", ACTUATE, [
        arg("device_id", T.STRING),
        arg("signal_id", T.STRING),
        arg("duration_ms", T.INT64, { unit: "ms" }),
      ]],
      [3, "inject_call_latency", ACTUATE, [
        arg("device_id", T.STRING),
        arg("latency_ms", T.INT64, { unit: "ms" }),
      ]],
      [4, "inject_call_failure", ACTUATE, [
        arg("device_id", T.STRING),
        arg("function_id", T.STRING),
        arg("failure_rate", T.DOUBLE),
      ]],
      [5, "clear_faults", ACTUATE, []],
      [6, "crash", ACTUATE, [arg("exit_code", T.INT64, { min_int64: 0, max_int64: 255 })]],
      [7, "hang", ACTUATE, [arg("duration_ms", T.INT64, { unit: "ms", min_int64: 0 })]],
      [8, "send_garbage_frame", ACTUATE, []],
      [9, "send_oversize_frame", ACTUATE, []],
      [10, "inject_stuck_outputs", ACTUATE, [
        arg("device_id", T.STRING),
        arg("duration_ms", T.INT64, { unit: "ms", min_int64: 1 }),
      ]],
    ],
  },
};

/** The ArgSpec fields the catalogue fixes: name, type, unit (when set), required, bounds present. */
function essentials(a: WireArgSpec): Record<string, unknown> {
  const out: Record<string, unknown> = { name: a.name, type: a.type, required: a.required };
  if (a.unit) out.unit = a.unit;
  for (
    const k of ["min_double", "max_double", "min_int64", "max_int64", "min_uint64", "max_uint64"]
  ) {
    if (Object.hasOwn(a, k)) out[k] = a[k as keyof WireArgSpec];
  }
  return out;
}

Deno.test("sim DescribeDevice returns the exact catalogue of every device type", async () => {
  await withSim(async (sim) => {
    for (const [deviceId, expected] of Object.entries(CATALOGUE)) {
      const resp = await sim.request({ describe_device: { device_id: deviceId } });
      equal(resp.status?.code, StatusCode.OK, deviceId);
      equal(resp.describe_device?.device?.device_id, deviceId);
      const caps = resp.describe_device?.capabilities;
      deepStrictEqual(
        (caps?.signals ?? []).map((s) => [
          s.signal_id,
          s.name,
          s.value_type,
          s.unit ?? "",
          s.poll_hint_hz,
          s.stale_after_ms,
        ]),
        expected.signals,
        deviceId,
      );
      const functions = caps?.functions ?? [];
      deepStrictEqual(
        functions.map((f) => [
          f.function_id,
          f.name,
          f.policy?.category,
          (f.args ?? []).map(essentials),
        ]),
        expected.functions,
        deviceId,
      );
      for (const f of functions) {
        equal(f.policy?.requires_lease ?? false, false);
        equal(f.policy?.is_idempotent ?? false, false);
        equal((f.results ?? []).length, 0);
        for (const a of f.args ?? []) equal((a.allowed_values ?? []).length, 0);
      }
    }
  });
});

Deno.test("sim DescribeDevice answers NOT_FOUND for an unknown device and INVALID_ARGUMENT for an empty id", async () => {
  await withSim(async (sim) => {
    equal(
      (await sim.request({ describe_device: { device_id: "tempctl9" } })).status?.code,
      StatusCode.NOT_FOUND,
    );
    equal((await sim.request({ describe_device: {} })).status?.code, StatusCode.INVALID_ARGUMENT);
  });
});

function byId(values: WireSignalValue[] | undefined): Record<string, WireSignalValue> {
  return Object.fromEntries((values ?? []).map((v) => [v.signal_id, v]));
}

Deno.test("sim ReadSignals with no ids returns each type's default set with safe start values", async () => {
  await withSim(async (sim) => {
    const read = async (device_id: string) =>
      (await sim.request({ read_signals: { device_id } })).read_signals?.values ?? [];

    const temp = await read("tempctl0");
    deepStrictEqual(temp.map((v) => v.signal_id), [
      "tc1_temp",
      "tc2_temp",
      "relay1_state",
      "relay2_state",
    ]);
    deepStrictEqual(temp.map((v) => v.value), [
      { type: T.DOUBLE, double_value: 25, kind: "double_value" },
      { type: T.DOUBLE, double_value: 25, kind: "double_value" },
      { type: T.BOOL, bool_value: false, kind: "bool_value" },
      { type: T.BOOL, bool_value: false, kind: "bool_value" },
    ]);
    for (const v of temp) {
      equal(v.quality, WireQuality.OK);
      ok((v.timestamp?.seconds ?? 0) > 1_600_000_000, "timestamp is the read time");
    }

    const motor = await read("motorctl0");
    deepStrictEqual(motor.map((v) => [v.signal_id, v.value?.double_value]), [
      ["motor1_speed", 0],
      ["motor2_speed", 0],
    ]);

    const relay = await read("relayio0");
    deepStrictEqual(
      relay.map((v) => [v.signal_id, v.value?.bool_value]),
      [
        ...[1, 2, 3, 4].map((n) => [`relay_ch${n}_state`, false]),
        ...[1, 2, 3, 4].map((n) => [`gpio_input_${n}`, false]), // inert: no tick ran
      ],
    );

    const analog = byId(await read("analogsensor0"));
    deepStrictEqual(Object.keys(analog), [
      "voltage_ch1",
      "voltage_ch2",
      "voltage_ch3",
      "voltage_ch4",
      "sensor_quality",
    ]);
    equal(analog.sensor_quality!.value?.string_value, "GOOD");
    for (const [id, base] of [["voltage_ch1", 2.5], ["voltage_ch2", 5], ["voltage_ch4", 3.3]]) {
      const v = analog[id as string]!.value?.double_value ?? NaN;
      ok(Math.abs(v - (base as number)) < 0.1, `${id} = ${v} near ${base}`);
    }

    const chaos = await sim.request({ read_signals: { device_id: "chaos_control" } });
    equal(chaos.status?.code, StatusCode.OK);
    equal((chaos.read_signals?.values ?? []).length, 0);
  });
});

Deno.test("sim ReadSignals omits unknown ids and answers NOT_FOUND when none is known", async () => {
  await withSim(async (sim) => {
    const some = await sim.request({
      read_signals: { device_id: "tempctl0", signal_ids: ["setpoint", "nope", "control_mode"] },
    });
    deepStrictEqual(
      some.read_signals?.values?.map((
        v,
      ) => [v.signal_id, v.value?.double_value ?? v.value?.string_value]),
      [["setpoint", 60], ["control_mode", "open"]],
    );
    const none = await sim.request({
      read_signals: { device_id: "tempctl0", signal_ids: ["nope"] },
    });
    equal(none.status?.code, StatusCode.NOT_FOUND);
    const chaos = await sim.request({
      read_signals: { device_id: "chaos_control", signal_ids: ["x"] },
    });
    equal(chaos.status?.code, StatusCode.NOT_FOUND);
    const unknown = await sim.request({ read_signals: { device_id: "ghost0" } });
    equal(unknown.status?.code, StatusCode.NOT_FOUND);
  });
});
