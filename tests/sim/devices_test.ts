import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { CallArgs, type ReplyContext, type WireValue } from "../../src/provider_sdk/mod.ts";
import { WireValueType as T } from "../../src/adpp/mod.ts";
import { createAnalogSensor } from "../../examples/providers/sim/analogsensor.ts";
import { createMotorCtl } from "../../examples/providers/sim/motorctl.ts";
import { createRelayIo } from "../../examples/providers/sim/relayio.ts";
import { createTempCtl } from "../../examples/providers/sim/tempctl.ts";
import { SeededRandom } from "../../examples/providers/sim/rng.ts";
import { DeviceInitError, type SimDevice } from "../../examples/providers/sim/sim_device.ts";
import { parseSimConfig, SimConfigError } from "../../examples/providers/sim/config.ts";

const NO_CTX: ReplyContext = { afterReply: () => {}, replaceReplyWithRawBytes: () => {} };

function readAll(dev: SimDevice): Record<string, unknown> {
  return Object.fromEntries(dev.definition.signals.map((s) => [s.id, s.read()]));
}

async function call(dev: SimDevice, name: string, args: Record<string, WireValue>) {
  const fn = dev.definition.functions.find((f) => f.name === name)!;
  const a = new CallArgs(name, fn.args ?? [], args);
  if (fn.precheckArgs !== false) a.checkAll();
  await fn.handler(a, NO_CTX);
}

const b = (v: boolean): WireValue => ({ type: T.BOOL, bool_value: v });
const i = (v: number): WireValue => ({ type: T.INT64, int64_value: v });
const d = (v: number): WireValue => ({ type: T.DOUBLE, double_value: v });
const s = (v: string): WireValue => ({ type: T.STRING, string_value: v });

Deno.test("createTempCtl heats toward 23 + 45 C with one relay, tc2 1.5 C below", async () => {
  const dev = createTempCtl("t", {});
  await call(dev, "set_relay", { relay_index: i(2), state: b(true) });
  for (let n = 0; n < 2000; n++) dev.tick(0.1); // 200 s = 33 time constants
  const v = readAll(dev);
  ok(Math.abs((v.tc1_temp as number) - 68) < 1e-6);
  ok(Math.abs((v.tc2_temp as number) - 66.5) < 1e-6);
});

Deno.test("createTempCtl applies one first-order lag step with tau 6 s", () => {
  const dev = createTempCtl("t", { initial_temp: 23 + 10 });
  dev.tick(0.25);
  const expected = 33 + (1 - Math.exp(-0.25 / 6)) * (23 - 33);
  equal(readAll(dev).tc1_temp, expected);
});

Deno.test("createTempCtl takes its time constant from time_constant_s, which must be > 0", () => {
  const dev = createTempCtl("t", { initial_temp: 23 + 10, time_constant_s: 0.5 });
  dev.tick(0.25);
  equal(readAll(dev).tc1_temp, 33 + (1 - Math.exp(-0.25 / 0.5)) * (23 - 33));
  equal(readAll(dev).tc2_temp, 33 + (1 - Math.exp(-0.25 / 0.5)) * (23 - 1.5 - 33));
  for (const bad of [0, -1, "fast"]) {
    throws(() => createTempCtl("t", { time_constant_s: bad }), DeviceInitError);
  }
});

Deno.test("createTempCtl closed loop switches relays by the error bands", async () => {
  const dev = createTempCtl("t", { initial_temp: 20 });
  await call(dev, "set_setpoint", { value: d(40) });
  await call(dev, "set_mode", { mode: s("closed") });
  dev.tick(0.01); // err 20 > 10: both on
  deepStrictEqual([readAll(dev).relay1_state, readAll(dev).relay2_state], [true, true]);
  await call(dev, "set_setpoint", { value: d(25) });
  dev.tick(0.01); // err ~5: relay1 only
  deepStrictEqual([readAll(dev).relay1_state, readAll(dev).relay2_state], [true, false]);
  await call(dev, "set_setpoint", { value: d(10) });
  dev.tick(0.01); // err < -2: both off
  deepStrictEqual([readAll(dev).relay1_state, readAll(dev).relay2_state], [false, false]);
  for (let n = 0; n < 2000; n++) dev.tick(0.1);
  ok(Math.abs((readAll(dev).tc1_temp as number) - 10) < 1e-6, "closed mode tracks the setpoint");
});

Deno.test("createTempCtl refuses an initial_temp outside temp_range and a bad range", () => {
  throws(() => createTempCtl("t", { initial_temp: 60, temp_range: [10, 50] }), DeviceInitError);
  throws(() => createTempCtl("t", { temp_range: [50, 10] }), DeviceInitError);
  throws(() => createTempCtl("t", { initial_temp: "hot" }), DeviceInitError);
  equal(readAll(createTempCtl("t", { initial_temp: 30, temp_range: [15, 45] })).tc2_temp, 30);
});

Deno.test("createMotorCtl approaches duty * max_speed with tau 0.8 s", async () => {
  const dev = createMotorCtl("m", { max_speed: 3000 });
  await call(dev, "set_motor_duty", { motor_index: i(1), duty: d(0.5) });
  dev.tick(0.25);
  equal(readAll(dev).motor1_speed, (1 - Math.exp(-0.25 / 0.8)) * 1500);
  for (let n = 0; n < 200; n++) dev.tick(0.25);
  ok(Math.abs((readAll(dev).motor1_speed as number) - 1500) < 1e-6);
  equal(readAll(dev).motor2_speed, 0);
  throws(() => createMotorCtl("m", { max_speed: 0 }), DeviceInitError);
  throws(() => createMotorCtl("m", { max_speed: 10001 }), DeviceInitError);
});

Deno.test("createRelayIo mirrors relays 1 and 3 and inverts 2 and 4 on each tick", async () => {
  const dev = createRelayIo("r", {});
  await call(dev, "set_relay_ch1", { enabled: b(true) });
  await call(dev, "set_relay_ch2", { enabled: b(true) });
  deepStrictEqual(readAll(dev).gpio_input_1, false, "inputs change only on a tick");
  dev.tick(0.1);
  const v = readAll(dev);
  deepStrictEqual([v.gpio_input_1, v.gpio_input_2, v.gpio_input_3, v.gpio_input_4], [
    true,
    false,
    false,
    true,
  ]);
});

Deno.test("createAnalogSensor degrades GOOD -> NOISY -> FAULT with noise on", async () => {
  const dev = createAnalogSensor("a", {}, new SeededRandom(42));
  for (let n = 0; n < 200; n++) dev.tick(0.25); // 50 s with noise off: stays GOOD
  equal(readAll(dev).sensor_quality, "GOOD");
  await call(dev, "inject_noise", { enabled: b(true) });
  dev.tick(0.25);
  equal(readAll(dev).sensor_quality, "NOISY", "the timer ran while noise was off");
  dev.tick(0.25);
  equal(readAll(dev).sensor_quality, "NOISY");
  for (let n = 0; n < 40; n++) dev.tick(0.25);
  equal(readAll(dev).sensor_quality, "FAULT");
  await call(dev, "inject_noise", { enabled: b(false) });
  equal(readAll(dev).sensor_quality, "GOOD");
});

Deno.test("createAnalogSensor readings are deterministic from seed 42 and clamped to [0, 10]", () => {
  const a = readAll(createAnalogSensor("a", {}, new SeededRandom(42)));
  const b2 = readAll(createAnalogSensor("a", {}, new SeededRandom(42)));
  deepStrictEqual(a, b2);
  for (const ch of ["voltage_ch1", "voltage_ch2", "voltage_ch3", "voltage_ch4"]) {
    const v = a[ch] as number;
    ok(v >= 0 && v <= 10);
  }
  ok(Math.abs((a.voltage_ch3 as number) - 7.5) < 0.1);
});

Deno.test("parseSimConfig reads the shipped shape and reports every problem", () => {
  const c = parseSimConfig(`
provider: { name: sim0 }
devices:
  - { id: tempctl0, type: tempctl, initial_temp: 25.0 }
simulation: { mode: non_interacting, tick_rate_hz: 10 }
`);
  equal(c.mode, "non_interacting");
  equal(c.tickRateHz, 10);
  equal(c.startupPolicy, "strict");
  deepStrictEqual(c.devices, [{ id: "tempctl0", type: "tempctl", extra: { initial_temp: 25 } }]);
  try {
    parseSimConfig(`
startup_policy: lax
devices:
  - { id: chaos_control, type: relayio }
  - { id: a, type: relayio }
  - { id: a, type: relayio }
simulation: { mode: non_interacting, tick_rate_hz: 5000 }
`);
    ok(false, "must throw");
  } catch (err) {
    ok(err instanceof SimConfigError);
    equal(err.problems.length, 4, err.problems.join("\n"));
  }
  throws(() => parseSimConfig("a: 1\na: 2\nsimulation: { mode: inert }\n"), SimConfigError);
});
