import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import type { ParameterConfig } from "../../src/config/mod.ts";
import { ParameterStore, parameterValueText } from "../../src/control/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";

const PARAMS: ParameterConfig[] = [
  { name: "temp", type: "double", default: 30, min: 10, max: 80.5, allowedValues: [] },
  { name: "count", type: "int64", default: 5, min: 0, max: 10, allowedValues: [] },
  { name: "armed", type: "bool", default: false, allowedValues: [] },
  { name: "profile", type: "string", default: "eco", allowedValues: ["eco", "boost"] },
  { name: "label", type: "string", default: "", allowedValues: [] },
];

function store(params: ParameterConfig[] = PARAMS) {
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  return {
    s: new ParameterStore({ parameters: params, bus, clock: systemClock, log: testLogger() }),
    events,
  };
}

Deno.test("ParameterStore lists declared parameters with defaults and their rules", () => {
  const { s } = store();
  assert.deepEqual(s.list(), [
    { name: "temp", type: "double", value: 30, min: 10, max: 80.5 },
    { name: "count", type: "int64", value: 5, min: 0, max: 10 },
    { name: "armed", type: "bool", value: false },
    { name: "profile", type: "string", value: "eco", allowed_values: ["eco", "boost"] },
    { name: "label", type: "string", value: "" },
  ]);
  assert.equal(s.get("nope"), undefined);
});

// [parameter, value, rule broken or null when accepted]
const TABLE: Array<[string, unknown, string | null]> = [
  ["temp", 42.5, null],
  ["temp", 42, null], // any number is a double
  ["temp", 10, null], // bounds inclusive
  ["temp", 80.5, null],
  ["temp", 9.99, "min"],
  ["temp", 80.6, "max"],
  ["temp", "42", "type"],
  ["temp", null, "type"],
  ["temp", true, "type"],
  ["count", 7, null],
  ["count", 7.5, "type"],
  ["count", -1, "min"],
  ["count", 11, "max"],
  ["count", 2 ** 60, "type"],
  ["armed", true, null],
  ["armed", 1, "type"],
  ["armed", "true", "type"],
  ["profile", "boost", null],
  ["profile", "turbo", "allowed_values"],
  ["profile", 3, "type"],
  ["label", "anything goes", null],
  ["label", ["a"], "type"],
];

for (const [name, value, rule] of TABLE) {
  Deno.test(`ParameterStore set ${name}=${JSON.stringify(value)} ${rule ? `breaks rule ${rule}` : "is accepted"}`, () => {
    const { s, events } = store();
    const before = s.get(name)!.value;
    if (rule === null) {
      assert.deepEqual(s.set(name, value), { name, value });
      assert.equal(s.get(name)!.value, value);
      assert.equal(events.length, 1);
    } else {
      assert.throws(() => s.set(name, value), (e: RuntimeError) => {
        assert.equal(e.code, "INVALID_ARGUMENT");
        assert.match(e.message, new RegExp(`parameter '${name}'.*\\(rule: ${rule}\\)`));
        return true;
      });
      assert.equal(s.get(name)!.value, before);
      assert.equal(events.length, 0);
    }
  });
}

Deno.test("ParameterStore set of an unknown name is NOT_FOUND", () => {
  assert.throws(() => store().s.set("nope", 1), { code: "NOT_FOUND" });
});

Deno.test("ParameterStore publishes parameter_change with text values and skips same-value sets", () => {
  const { s, events } = store();
  s.set("temp", 31.25);
  s.set("temp", 31.25);
  s.set("count", 6);
  s.set("armed", true);
  s.set("profile", "boost");
  assert.deepEqual(
    events.map((e) =>
      e.kind === "parameter_change" && [e.parameter_name, e.old_value, e.new_value]
    ),
    [
      ["temp", "30.000000", "31.250000"],
      ["count", "5", "6"],
      ["armed", "false", "true"],
      ["profile", "eco", "boost"],
    ],
  );
  assert.equal(parameterValueText("double", 0.1), "0.100000");
});

Deno.test("ParameterStore leaves out a parameter whose default breaks its own rules", () => {
  const { s } = store([
    { name: "bad", type: "double", default: 99, max: 10, allowedValues: [] },
    { name: "good", type: "bool", default: true, allowedValues: [] },
  ]);
  assert.deepEqual(s.list().map((p) => p.name), ["good"]);
});

// [parameter, value, the whole message]: the rule, the limit and what was given.
const MESSAGES: Array<[string, unknown, string]> = [
  ["temp", "42", 'expected a number (double), got string "42" (rule: type)'],
  ["temp", null, "expected a number (double), got null (rule: type)"],
  ["temp", NaN, "expected a number (double), got number NaN (rule: type)"],
  ["free", Infinity, "expected a number (double), got number Infinity (rule: type)"],
  ["free", -Infinity, "expected a number (double), got number -Infinity (rule: type)"],
  ["count", 7.5, "expected an integer (int64) within ±(2^53-1), got number 7.5 (rule: type)"],
  ["count", "7", 'expected an integer (int64) within ±(2^53-1), got string "7" (rule: type)'],
  [
    "count",
    2 ** 53,
    "expected an integer (int64) within ±(2^53-1), got number 9007199254740992 (rule: type)",
  ],
  ["armed", 1, "expected a boolean, got number 1 (rule: type)"],
  ["armed", { on: true }, "expected a boolean, got an object (rule: type)"],
  ["label", ["a"], "expected a string, got an array (rule: type)"],
  ["label", true, "expected a string, got boolean true (rule: type)"],
  ["temp", 9.99, "9.99 is below min 10 (rule: min)"],
  ["temp", 80.6, "80.6 is above max 80.5 (rule: max)"],
  ["count", -1, "-1 is below min 0 (rule: min)"],
  ["count", 11, "11 is above max 10 (rule: max)"],
  ["profile", "turbo", '"turbo" is not one of "eco", "boost" (rule: allowed_values)'],
];

for (const [name, value, message] of MESSAGES) {
  Deno.test(`ParameterStore set ${name}=${String(value)} is refused: ${message}`, () => {
    const { s } = store([
      ...PARAMS,
      { name: "free", type: "double", default: 0, allowedValues: [] },
    ]);
    assert.throws(() => s.set(name, value), (e: RuntimeError) => {
      assert.equal(e.code, "INVALID_ARGUMENT");
      assert.equal(e.message, `Invalid value for parameter '${name}': ${message}`);
      return true;
    });
  });
}

Deno.test("ParameterStore set answers with the value, also when it is unchanged", () => {
  const { s, events } = store();
  assert.deepEqual(s.set("count", 5), { name: "count", value: 5 });
  assert.deepEqual(s.set("profile", "eco"), { name: "profile", value: "eco" });
  assert.equal(events.length, 0);
});

Deno.test("ParameterStore value() is the current value, undefined for an unknown name", () => {
  const { s } = store();
  assert.equal(s.value("temp"), 30);
  assert.equal(s.value("armed"), false);
  s.set("temp", 55.5);
  assert.equal(s.value("temp"), 55.5);
  assert.equal(s.value("nope"), undefined);
});

Deno.test("ParameterStore set of an unknown name names it", () => {
  assert.throws(() => store().s.set("nope", 1), (e: RuntimeError) => {
    assert.equal(e.code, "NOT_FOUND");
    assert.equal(e.message, "Parameter not found: nope");
    return true;
  });
});

Deno.test("ParameterStore keeps the first of two parameters with one name", () => {
  const { s } = store([
    { name: "x", type: "int64", default: 1, min: 0, max: 5, allowedValues: [] },
    { name: "x", type: "string", default: "a", allowedValues: [] },
    { name: "y", type: "bool", default: true, allowedValues: [] },
  ]);
  assert.deepEqual(s.list(), [
    { name: "x", type: "int64", value: 1, min: 0, max: 5 },
    { name: "y", type: "bool", value: true },
  ]);
  assert.throws(() => s.set("x", "b"), { code: "INVALID_ARGUMENT" });
  assert.throws(() => s.set("x", 6), /\(rule: max\)/);
});

Deno.test("ParameterStore.redeclare keeps values the new declarations accept, resets the others to their default (with an event), drops removed ones and adds new ones at their default", async () => {
  const { s, events } = store();
  s.set("temp", 42);
  s.set("count", 7);
  s.set("profile", "boost");
  await Promise.resolve();
  events.length = 0;
  s.redeclare([
    PARAMS[0]!, // temp: identical
    { ...PARAMS[1]!, max: 6 }, // count: redeclared, 7 now above max: reset
    { ...PARAMS[3]!, allowedValues: ["eco", "max"] }, // profile: boost no longer allowed: reset
    { name: "fresh", type: "bool", default: true, allowedValues: [] },
  ]);
  assert.deepEqual(s.list().map((p) => [p.name, p.value]), [
    ["temp", 42],
    ["count", 5],
    ["profile", "eco"],
    ["fresh", true],
  ]);
  assert.equal(s.get("armed"), undefined);
  assert.equal(s.get("count")!.max, 6);
  await Promise.resolve();
  assert.deepEqual(
    events.map((e) =>
      e.kind === "parameter_change" ? [e.parameter_name, e.old_value, e.new_value] : e.kind
    ),
    // fresh is new (old_value ""); armed and label are no longer declared: removed (new_value "").
    [
      ["count", "7", "5"],
      ["profile", "boost", "eco"],
      ["fresh", "", "true"],
      ["armed", "false", ""],
      ["label", "", ""],
    ],
  );
});

Deno.test("ParameterStore dates a parameter's change no earlier than its change before it when the wall clock steps back (NTP)", () => {
  const W = 1_767_000_000_000;
  let wall = W;
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  const clock = { ...systemClock, nowMs: () => wall };
  const s = new ParameterStore({ parameters: PARAMS, bus, clock, log: testLogger() });
  s.set("temp", 40);
  wall = W - 10_000; // NTP steps the wall clock back 10 s
  s.set("temp", 50);
  s.set("count", 7); // another parameter: its own time
  wall = W + 5_000; // past it again: the clock's own time
  s.set("temp", 60);
  assert.deepEqual(
    events.map((e) => e.kind === "parameter_change" && [e.parameter_name, e.timestamp_ms - W]),
    [["temp", 0], ["temp", 0], ["count", -10_000], ["temp", 5_000]],
    "never earlier than the parameter's change before it",
  );
});

Deno.test("ParameterStore.set tells the mode manager of a value it changes: a string value quoted, a long one cut", () => {
  // The refusal of a MANUAL -> AUTO whose before-hooks ran during the set carries this text (the
  // 409 answer, the audit reason): a string is a client's text of up to a request body.
  const whys: string[] = [];
  const s = new ParameterStore({
    parameters: PARAMS,
    bus: new EventBus(),
    clock: systemClock,
    log: testLogger(),
    modes: { invalidateAutoEntry: (why) => void whys.push(why) },
  });
  s.set("label", "x".repeat(60_000));
  s.set("label", "a\nb");
  s.set("label", "a\nb"); // unchanged: nothing to tell
  s.set("temp", 35);
  assert.deepEqual(whys, [
    `a parameter set changed the recipe ("label" "" -> "${"x".repeat(64)}\u2026")`,
    `a parameter set changed the recipe ("label" "${"x".repeat(64)}\u2026" -> "a\\nb")`,
    'a parameter set changed the recipe ("temp" 30 -> 35)',
  ]);
});
