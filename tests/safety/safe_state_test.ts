import assert from "node:assert/strict";
import { deviceCapabilities } from "../helpers/capabilities.ts";
import type {
  ArgSpec,
  DeviceCapabilities,
  FunctionCategory,
  FunctionSpec,
  TypedValue,
  ValueType,
} from "../../src/common/mod.ts";
import type { Config } from "../../src/config/mod.ts";
import {
  effectiveSafeState,
  Estop,
  type LatchEvent,
  type LatchState,
  latchTransition,
  MAX_ZERO_CALLS_PER_FUNCTION,
  MAX_ZERO_SELECTOR_VALUES,
  NO_SAFE_STATE_WARNING,
  planSafeState,
  type SafeStateConfig,
  zeroArgSets,
} from "../../src/safety/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { rigNotStarted } from "../helpers/rig.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, hook } from "./_fixture.ts";

function arg(name: string, type: ValueType | null, o: Partial<ArgSpec> = {}): ArgSpec {
  return { name, type, unit: "", description: "", required: true, allowedValues: [], ...o };
}
function fn(
  id: number,
  name: string,
  args: ArgSpec[],
  category: FunctionCategory = "ACTUATE",
): FunctionSpec {
  return { functionId: id, name, description: "", category, actuating: category !== "READ", args };
}
function device(deviceId: string, functions: FunctionSpec[], providerId = "p"): DeviceCapabilities {
  return deviceCapabilities(providerId, deviceId, { functions });
}

const MOTOR = device("motor", [
  fn(10, "set_motor_duty", [
    arg("motor_index", "int64", { min: 1, max: 2 }),
    arg("duty", "double", { min: 0, max: 1 }),
  ]),
]);
const RELAYS = device("relays", [
  fn(1, "set_relay_ch1", [arg("enabled", "bool")]),
  fn(2, "set_relay_ch2", [arg("enabled", "bool")]),
]);
const TOOLS = device("tools", [
  fn(1, "reboot", []), // no args: an action, never zeroed
  fn(2, "set_mode", [arg("mode", "string")]),
  fn(3, "crash", [arg("exit_code", "int64", { min: 0, max: 255 })]), // 0 in range: ambiguous
  fn(4, "calibrate", [arg("channel", "int64", { min: 1, max: 4 })]), // selector only
  fn(5, "read_temp", [], "READ"),
  fn(6, "set_level", [arg("level", "double"), arg("note", "string", { required: false })]),
  fn(7, "set_offset", [arg("offset", "double", { min: 1, max: 5 })]), // 0 not allowed
]);
const DEVICES = [MOTOR, RELAYS, TOOLS];
const NO_SAFETY: SafeStateConfig = {
  hooks: [],
  setpoints: [],
  zeroIsSafe: false,
  expect: [],
  verifyTimeoutMs: 2000,
};

Deno.test("zeroArgSets zeroes levels and fans out over index selectors", () => {
  assert.deepEqual(zeroArgSets(MOTOR.functions[0]!), [
    { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0 } },
    { motor_index: { type: "int64", int64: 2 }, duty: { type: "double", double: 0 } },
  ]);
  assert.deepEqual(zeroArgSets(RELAYS.functions[0]!), [{ enabled: { type: "bool", bool: false } }]);
  assert.deepEqual(zeroArgSets(TOOLS.functions[5]!), [{ level: { type: "double", double: 0 } }]);
});

Deno.test("zeroArgSets refuses functions it cannot zero without guessing", () => {
  for (const f of TOOLS.functions.filter((f) => f.name !== "set_level")) {
    assert.equal(zeroArgSets(f), null, f.name);
  }
  const wide = fn(1, "set_pixel", [
    arg("x", "int64", { min: 1, max: 8 }),
    arg("y", "int64", { min: 1, max: 8 }),
    arg("on", "bool"),
  ]);
  assert.equal(zeroArgSets(wide), null, "64 calls exceed the per-function bound");
});

/** A function with one integer selector and one level (bool). */
function selectorFn(type: "int64" | "uint64", min?: number, max?: number): FunctionSpec {
  return fn(1, "set_output", [
    arg("channel", type, {
      ...(min === undefined ? {} : { min }),
      ...(max === undefined ? {} : { max }),
    }),
    arg("on", "bool"),
  ]);
}

Deno.test("zeroArgSets never drives an integer whose range contains 0 (0..3 may be a level)", () => {
  assert.equal(zeroArgSets(selectorFn("int64", 0, 3)), null, "0..3");
  assert.equal(zeroArgSets(selectorFn("int64", -2, 3)), null, "-2..3");
  assert.equal(zeroArgSets(selectorFn("uint64", 0, 1)), null, "uint64 0..1");
  assert.equal(zeroArgSets(selectorFn("int64", undefined, 3)), null, "no min: 0 may be legal");
  assert.equal(zeroArgSets(selectorFn("int64", 1, undefined)), null, "no max: unbounded");
});

Deno.test("zeroArgSets fans a selector out over exactly the integers within its bounds", () => {
  const on = (ch: TypedValue) => ({ channel: ch, on: { type: "bool", bool: false } });
  assert.deepEqual(zeroArgSets(selectorFn("int64", 2, 2)), [on({ type: "int64", int64: 2 })]);
  assert.deepEqual(zeroArgSets(selectorFn("uint64", 1, 2)), [
    on({ type: "uint64", uint64: 1 }),
    on({ type: "uint64", uint64: 2 }),
  ]);
  // Fractional bounds: only the integers inside them.
  assert.deepEqual(zeroArgSets(selectorFn("int64", 0.5, 2.5)), [
    on({ type: "int64", int64: 1 }),
    on({ type: "int64", int64: 2 }),
  ]);
  // No integer within the bounds, or an empty range: nothing to call, so not zeroable.
  assert.equal(zeroArgSets(selectorFn("int64", 1.5, 1.9)), null, "1.5..1.9");
  assert.equal(zeroArgSets(selectorFn("int64", 3, 1)), null, "3..1");
  // At most MAX_ZERO_SELECTOR_VALUES values.
  assert.equal(MAX_ZERO_SELECTOR_VALUES, 8);
  assert.equal(zeroArgSets(selectorFn("int64", 1, 8))?.length, 8);
  assert.equal(zeroArgSets(selectorFn("int64", 1, 9)), null, "9 values");
  assert.equal(zeroArgSets(selectorFn("int64", 11, 19)), null, "9 values from 11");
});

Deno.test("zeroArgSets allows up to MAX_ZERO_CALLS_PER_FUNCTION calls per function", () => {
  assert.equal(MAX_ZERO_CALLS_PER_FUNCTION, 16);
  const grid = (rows: number) =>
    fn(1, "set_cell", [
      arg("row", "int64", { min: 1, max: rows }),
      arg("col", "int64", { min: 1, max: 4 }),
      arg("on", "bool"),
    ]);
  const sixteen = zeroArgSets(grid(4));
  assert.equal(sixteen?.length, 16);
  assert.deepEqual(sixteen?.at(-1), {
    row: { type: "int64", int64: 4 },
    col: { type: "int64", int64: 4 },
    on: { type: "bool", bool: false },
  });
  assert.equal(zeroArgSets(grid(5)), null, "20 calls");
});

Deno.test("zeroArgSets zeroes a double only when its bounds admit 0", () => {
  const level = (min?: number, max?: number) =>
    zeroArgSets(
      fn(1, "set_bias", [
        arg("bias", "double", {
          ...(min === undefined ? {} : { min }),
          ...(max === undefined ? {} : { max }),
        }),
      ]),
    );
  const zero = [{ bias: { type: "double", double: 0 } }];
  assert.deepEqual(level(-1, 0), zero, "-1..0");
  assert.deepEqual(level(0, 1), zero, "0..1");
  assert.deepEqual(level(undefined, 0), zero, "..0");
  assert.equal(level(-5, -1), null, "-5..-1");
  assert.equal(level(0.1, 1), null, "0.1..1");
});

Deno.test("zeroArgSets never zeroes a READ function, whatever its arguments", () => {
  assert.equal(zeroArgSets(fn(1, "read_channel", [arg("enabled", "bool")], "READ")), null);
});

Deno.test("planSafeState with nothing declared is rung none and counts every actuating function", () => {
  const plan = planSafeState(NO_SAFETY, DEVICES);
  assert.equal(plan.rung, "none");
  assert.equal(plan.calls.length, 0);
  assert.deepEqual(plan.uncovered.map((u) => `${u.device_handle} ${u.function}`), [
    "p/motor set_motor_duty",
    "p/relays set_relay_ch1",
    "p/relays set_relay_ch2",
    ...["reboot", "set_mode", "crash", "calibrate", "set_level", "set_offset"].map((n) =>
      `p/tools ${n}`
    ), // not read_temp: READ
  ]);
});

Deno.test("planSafeState prefers hooks and reports what they leave untouched", () => {
  const hooks = [
    call("p/relays", "set_relay_ch1", { enabled: false }),
    call("p/absent", "set_relay_ch2", { enabled: false }), // covers nothing: no such device
  ];
  const plan = planSafeState({ ...NO_SAFETY, hooks, zeroIsSafe: true }, DEVICES);
  assert.equal(plan.rung, "hooks");
  assert.deepEqual(plan.calls, [
    {
      kind: "declared",
      call: hooks[0],
      label: { device_handle: "p/relays", function: "set_relay_ch1" },
    },
    {
      kind: "declared",
      call: hooks[1],
      label: { device_handle: "p/absent", function: "set_relay_ch2" },
    },
  ]);
  assert.deepEqual(plan.uncovered.map((u) => `${u.device_handle} ${u.function}`), [
    "p/motor set_motor_duty",
    "p/relays set_relay_ch2",
    ...["reboot", "set_mode", "crash", "calibrate", "set_level", "set_offset"].map((n) =>
      `p/tools ${n}`
    ),
  ]);
});

Deno.test("planSafeState takes setpoints only when they cover every actuating function", () => {
  const full = [
    call("p/motor", 10, { motor_index: 1, duty: { double: 0 } }),
    call("p/relays", "set_relay_ch1", { enabled: false }),
    call("p/relays", "set_relay_ch2", { enabled: false }),
    ...["reboot", "set_mode", "crash", "calibrate", "set_level", "set_offset"].map((n) =>
      call("p/tools", n)
    ),
  ];
  const covered = planSafeState({ ...NO_SAFETY, setpoints: full }, DEVICES);
  assert.equal(covered.rung, "setpoints");
  assert.equal(covered.uncovered.length, 0);
  // id-labelled: function_name when given, else the id as text
  assert.deepEqual(covered.calls[0]!.label, { device_handle: "p/motor", function: "10" });

  const partial = full.slice(1);
  assert.equal(planSafeState({ ...NO_SAFETY, setpoints: partial }, DEVICES).rung, "none");
  const zero = planSafeState({ ...NO_SAFETY, setpoints: partial, zeroIsSafe: true }, DEVICES);
  assert.equal(zero.rung, "zero");
  // a call whose id and name disagree covers nothing
  const mismatch = [...partial, { ...call("p/motor", 10), functionName: "set_relay_ch1" }];
  assert.equal(planSafeState({ ...NO_SAFETY, setpoints: mismatch }, DEVICES).rung, "none");
});

Deno.test("planSafeState zero rung calls every zeroable function and counts the rest", () => {
  const plan = planSafeState({ ...NO_SAFETY, zeroIsSafe: true }, DEVICES);
  assert.equal(plan.rung, "zero");
  assert.deepEqual(
    plan.calls.map((c) => `${c.label.device_handle} ${c.label.function}`),
    [
      "p/motor set_motor_duty",
      "p/motor set_motor_duty",
      "p/relays set_relay_ch1",
      "p/relays set_relay_ch2",
      "p/tools set_level",
    ],
  );
  // A zero call names the function by id, with the zeroed arguments.
  assert.deepEqual(plan.calls[1], {
    kind: "zero",
    providerId: "p",
    deviceId: "motor",
    functionId: 10,
    args: { motor_index: { type: "int64", int64: 2 }, duty: { type: "double", double: 0 } },
    label: { device_handle: "p/motor", function: "set_motor_duty" },
  });
  assert.deepEqual(
    plan.uncovered.map((u) => u.function),
    ["reboot", "set_mode", "crash", "calibrate", "set_offset"],
  );
});

Deno.test("effectiveSafeState adopts *->FAULT hooks only without a safety section and with automation", () => {
  const faultHook = hook("*", "FAULT", [call("p/relays", "set_relay_ch1", { enabled: false })]);
  const autoFault = hook("AUTO", "FAULT", [call("p/relays", "set_relay_ch2", { enabled: false })]);
  const anyManual = hook("*", "MANUAL", [call("p/relays", "set_relay_ch2", { enabled: true })]);
  const withHooks = (o: Parameters<typeof testConfig>[0] = {}): Config =>
    testConfig({
      ...o,
      automation: {
        enabled: true,
        modeTransitionHooks: {
          beforeTransition: [autoFault, anyManual],
          afterTransition: [faultHook],
        },
      },
    });

  const adopted = effectiveSafeState(withHooks());
  assert.equal(adopted.adopted, true);
  assert.deepEqual(adopted.safeState.hooks, faultHook.calls);

  assert.equal(effectiveSafeState(withHooks({ safety: { present: true } })).adopted, false);
  const disabled = testConfig({
    automation: {
      enabled: false,
      modeTransitionHooks: { beforeTransition: [], afterTransition: [faultHook] },
    },
  });
  assert.equal(effectiveSafeState(disabled).adopted, false);
  assert.deepEqual(effectiveSafeState(disabled).safeState.hooks, []);
  // Automation on but no * -> FAULT hook: nothing adopted, the configured safe state stands.
  const noFaultHook = testConfig({
    automation: {
      enabled: true,
      modeTransitionHooks: { beforeTransition: [autoFault, anyManual], afterTransition: [] },
    },
  });
  assert.deepEqual(effectiveSafeState(noFaultHook), {
    safeState: noFaultHook.safety.safeState,
    adopted: false,
  });
});

const LATCH: Array<{ from: LatchState; event: LatchEvent; to: LatchState }> = [
  { from: "released", event: "trigger", to: "latched" },
  { from: "latched", event: "trigger", to: "latched" },
  { from: "latched", event: "clear", to: "released" },
  { from: "released", event: "clear", to: "released" },
];
for (const row of LATCH) {
  Deno.test(`latchTransition ${row.from} -${row.event}-> ${row.to}`, () => {
    assert.equal(latchTransition(row.from, row.event), row.to);
  });
}

/**
 * An e-stop without a mode manager (nothing commits FAULT) and without a safe state, over the
 * runtime's router and read ports (tests/helpers/rig.ts: the Kernel, not started, no providers).
 */
function estopWithoutDevices() {
  const { router, inventory, cache, host } = rigNotStarted().kernel;
  return new Estop({
    router,
    inventory,
    reads: cache,
    clock: host.clock,
    log: testLogger(),
    safeState: NO_SAFETY,
  });
}

Deno.test("Estop latch gate refuses actuating calls and passes read-only ones while latched", async () => {
  const estop = estopWithoutDevices();
  const read = { fn: TOOLS.functions[4]!, device: TOOLS, origin: "manual" as const };
  const actuate = { fn: RELAYS.functions[0]!, device: RELAYS, origin: "automated" as const };
  const config = { fn: TOOLS.functions[1]!, device: TOOLS, origin: "manual" as const };
  assert.equal(estop.gate(actuate), null);

  const result = await estop.trigger("unit test");
  assert.deepEqual(result, {
    latched: true,
    software_safe_state: "none",
    actions: [],
    uncovered_actuating_functions: 0,
    uncovered: [],
    warning: NO_SAFE_STATE_WARNING,
    fault_engaged: false,
    hook_failures: [],
    drain: { complete: true, pending_providers: [] },
    verification: { outcome: "unverifiable", elapsed_ms: 0, checks: [] },
  });
  assert.equal(estop.gate(read), null);
  assert.equal(estop.gate(actuate)?.code, "FAILED_PRECONDITION");
  assert.equal(estop.gate(config)?.code, "FAILED_PRECONDITION", "CONFIG counts as actuating");
  assert.equal(estop.gate({ ...actuate, origin: "safety" }), null);
  const status = estop.status();
  assert.equal(status.latched, true);
  assert.equal(typeof status.latched_at_epoch_ms, "number");

  assert.deepEqual(estop.clear(), { latched: false });
  assert.equal(estop.gate(actuate), null);
  assert.deepEqual(estop.status(), {
    latched: false,
    software_safe_state: "none",
    latched_at_epoch_ms: null,
    uncovered_actuating_functions: 0,
    cause: null,
    cause_alarm_retired: null,
    plan: { rung: "none", calls: [], uncovered: [] },
    unverified_devices: [],
    unverified_reasons: [],
    verification: {
      outcome: "unverifiable",
      elapsed_ms: 0,
      checks: [],
    },
  });
});
