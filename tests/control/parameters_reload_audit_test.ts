/**
 * ParameterStore under a configuration reload (redeclare: which declarations count as unchanged,
 * duplicates, invalid defaults, removed parameters, events) and its audit records (every set,
 * accepted or refused, with who asked; every reset by a reload). No processes: the store alone with an event bus and a
 * recording audit sink.
 */
import assert from "node:assert/strict";
import type { ParameterConfig } from "../../src/config/mod.ts";
import { type AuditDecision, ParameterStore, type ParameterValue } from "../../src/control/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";

const BASE: ParameterConfig[] = [
  { name: "temp", type: "double", default: 30, min: 10, max: 80, allowedValues: [] },
  { name: "profile", type: "string", default: "eco", allowedValues: ["eco", "boost"] },
];

function store(params: ParameterConfig[] = BASE) {
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  const audit: AuditDecision[] = [];
  const s = new ParameterStore({
    parameters: params,
    bus,
    clock: systemClock,
    log: testLogger(),
    audit: { record: (d) => void audit.push(d) },
  });
  return { s, events, audit };
}

Deno.test("ParameterStore.redeclare keeps a value the new declaration still accepts, else resets it to the default", () => {
  // A reload that narrowed the bounds around a still-valid value used to reset it to the default,
  // and a running tree drove the new value at once.
  const changes: [string, Partial<ParameterConfig>, number][] = [
    ["nothing", {}, 55],
    ["default", { default: 31 }, 55],
    ["min narrowed, still below", { min: 11 }, 55],
    ["max narrowed, still above", { max: 79 }, 55],
    ["max narrowed below the value", { max: 50 }, 30],
    ["min raised above the value", { min: 60, default: 70 }, 70],
  ];
  for (const [what, change, expected] of changes) {
    const { s } = store();
    s.set("temp", 55);
    assert.deepStrictEqual(
      s.valueChanges([{ ...BASE[0]!, ...change }, BASE[1]!]).length,
      expected === 55 ? 0 : 1,
      `valueChanges: ${what}`,
    );
    s.redeclare([{ ...BASE[0]!, ...change }, BASE[1]!]);
    assert.strictEqual(s.value("temp"), expected, `changed ${what}`);
  }
  const strings: [string, string[], string][] = [
    ["same", ["eco", "boost"], "boost"],
    ["its value no longer allowed", ["eco", "turbo"], "eco"],
    ["one more value", ["eco", "boost", "max"], "boost"],
  ];
  for (const [what, allowedValues, expected] of strings) {
    const { s } = store();
    s.set("profile", "boost");
    s.redeclare([BASE[0]!, { ...BASE[1]!, allowedValues }]);
    assert.strictEqual(s.value("profile"), expected, what);
  }
  // A new type keeps the value it holds exactly (then of the new type), else the default.
  const temp = (type: ParameterConfig["type"], dflt: ParameterValue): ParameterConfig =>
    type === "double" || type === "int64"
      ? { ...BASE[0]!, type, default: dflt }
      : { name: "temp", type, default: dflt, allowedValues: [] };
  const types: [string, number, ParameterConfig, ParameterValue][] = [
    ["double 55 -> int64", 55, temp("int64", 30), 55],
    ["double 55.5 -> int64", 55.5, temp("int64", 30), 30],
    ["double 55 -> string", 55, temp("string", "hot"), "hot"],
    ["double 11 -> bool", 11, temp("bool", false), false],
  ];
  for (const [what, before, def, expected] of types) {
    const { s } = store();
    s.set("temp", before);
    s.redeclare([def, BASE[1]!]);
    assert.strictEqual(s.get("temp")?.type, def.type, what);
    assert.strictEqual(s.value("temp"), expected, what);
  }
  const words = store();
  words.s.redeclare([BASE[0]!, {
    name: "profile",
    type: "bool",
    default: true,
    allowedValues: [],
  }]);
  assert.strictEqual(words.s.value("profile"), true, "string 'eco' -> bool: the default");
});

Deno.test("ParameterStore.redeclare: first of duplicates wins, an invalid default is skipped, a removed one is gone, only a changed value is an event", () => {
  const { s, events } = store();
  s.set("temp", 55);
  events.length = 0;
  s.redeclare([
    { ...BASE[0]!, max: 50, default: 20 }, // 55 no longer allowed: reset to 20
    { ...BASE[0]!, default: 70 }, // duplicate: ignored
    { name: "bad", type: "double", default: 500, min: 0, max: 10, allowedValues: [] },
    { name: "fresh", type: "bool", default: true, allowedValues: [] },
  ]);
  assert.deepStrictEqual(s.list().map((p) => [p.name, p.value]), [["temp", 20], ["fresh", true]]);
  assert.strictEqual(s.value("profile"), undefined, "removed");
  assert.strictEqual(s.value("bad"), undefined, "an invalid default is not declared");
  // temp reset 55 -> 20; fresh added (old_value ""); profile removed (new_value "").
  assert.deepStrictEqual(
    events.map((e) =>
      e.kind === "parameter_change" ? [e.parameter_name, e.old_value, e.new_value] : e.kind
    ),
    [["temp", "55.000000", "20.000000"], ["fresh", "", "true"], ["profile", "eco", ""]],
  );
  // Declared again exactly as now: no event, value kept.
  s.set("temp", 42);
  events.length = 0;
  s.redeclare([{ ...BASE[0]!, max: 50, default: 20 }, {
    name: "fresh",
    type: "bool",
    default: true,
    allowedValues: [],
  }]);
  assert.strictEqual(s.value("temp"), 42);
  assert.deepStrictEqual(events.filter((e) => e.kind === "parameter_change"), []);
});

Deno.test("ParameterStore.redeclare records each reset of a value in the audit trail, as the reload's", () => {
  const { s, audit } = store();
  s.set("temp", 55);
  s.set("profile", "boost");
  audit.length = 0;
  s.redeclare([
    { ...BASE[0]!, max: 50, default: 20 }, // 55 refused: reset 55 -> 20
    { ...BASE[1]!, allowedValues: ["eco", "max"] }, // boost refused: reset boost -> eco
    { name: "fresh", type: "bool", default: true, allowedValues: [] }, // new: recorded
  ]);
  // Declared as before, or a value still accepted: nothing to record; removed (fresh): recorded.
  s.redeclare([{ ...BASE[0]!, max: 50, default: 20 }, { ...BASE[1]!, allowedValues: ["eco"] }]);
  assert.deepStrictEqual(audit, [
    {
      action: "parameter",
      origin: { kind: "reload" },
      outcome: "accepted",
      function: "temp",
      args: { value: 20, from: 55 },
      result: { value: 20 },
      latency_ms: 0,
    },
    {
      action: "parameter",
      origin: { kind: "reload" },
      outcome: "accepted",
      function: "profile",
      args: { value: "eco", from: "boost" },
      result: { value: "eco" },
      latency_ms: 0,
    },
    {
      action: "parameter",
      origin: { kind: "reload" },
      outcome: "accepted",
      function: "fresh",
      args: { value: true, from: null },
      result: { value: true },
      latency_ms: 0,
    },
    {
      action: "parameter",
      origin: { kind: "reload" },
      outcome: "accepted",
      function: "fresh",
      args: { value: null, from: true },
      result: { value: null },
      latency_ms: 0,
    },
  ]);
});

Deno.test("ParameterStore.set records every set in the audit trail: accepted with the result, refused with the reason", () => {
  const { s, audit } = store();
  s.set("temp", 55, { kind: "automation", node: "Root/Set" });
  s.set("profile", "boost"); // default origin: an HTTP client
  assert.throws(() => s.set("temp", 500));
  assert.throws(() => s.set("temp", { not: "a scalar" }));
  assert.throws(() => s.set("temp", ["a"]));
  assert.deepStrictEqual(audit, [
    {
      action: "parameter",
      origin: { kind: "automation", node: "Root/Set" },
      outcome: "accepted",
      function: "temp",
      args: { value: 55 },
      result: { value: 55 },
      latency_ms: 0,
    },
    {
      action: "parameter",
      origin: { kind: "http" },
      outcome: "accepted",
      function: "profile",
      args: { value: "boost" },
      result: { value: "boost" },
      latency_ms: 0,
    },
    {
      action: "parameter",
      origin: { kind: "http" },
      outcome: "refused",
      function: "temp",
      args: { value: 500 },
      reason: audit[2]!.reason,
      refused_by: "validation",
      latency_ms: 0,
    },
    {
      action: "parameter",
      origin: { kind: "http" },
      outcome: "refused",
      function: "temp",
      args: { value: { not: "a scalar" } },
      reason: audit[3]!.reason,
      refused_by: "validation",
      latency_ms: 0,
    },
    {
      action: "parameter",
      origin: { kind: "http" },
      outcome: "refused",
      function: "temp",
      args: { value: ["a"] },
      reason: audit[4]!.reason,
      refused_by: "validation",
      latency_ms: 0,
    },
  ]);
  assert.match(audit[2]!.reason ?? "", /^INVALID_ARGUMENT: .*500.*max 80/);
  assert.match(audit[3]!.reason ?? "", /^INVALID_ARGUMENT: /);
  // Values of every JSON kind are kept as given; what JSON cannot carry is kept as its text (a
  // number beyond any double as written).
  const odd = store();
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  for (const v of [undefined, cyclic, Infinity]) assert.throws(() => odd.s.set("temp", v));
  assert.throws(() => odd.s.set("temp", Infinity, undefined, "1e400"));
  assert.deepStrictEqual(odd.audit.map((d) => d.args), [
    { value: "undefined" },
    { value: "[object Object]" },
    { value: "Infinity" },
    { value: "1e400" },
  ]);
  const scalars = store([{ name: "any", type: "string", default: "", allowedValues: [] }]);
  for (const v of [null, true, 7, "x"]) assert.throws(() => scalars.s.set("nope", v));
  assert.deepStrictEqual(scalars.audit.map((d) => d.args), [
    { value: null },
    { value: true },
    { value: 7 },
    { value: "x" },
  ]);
});

Deno.test("ParameterStore.valueChanges: a type-only change (int64 -> double, same default) whose value stays is no value change", () => {
  const int: ParameterConfig = { name: "n", type: "int64", default: 30, allowedValues: [] };
  const { s, events, audit } = store([int]);
  const dbl: ParameterConfig = { ...int, type: "double" };
  assert.deepEqual(s.valueChanges([dbl]), [], "the value 30 stays 30");
  s.redeclare([dbl]);
  assert.equal(s.value("n"), 30);
  assert.equal(s.get("n")?.type, "double");
  assert.deepEqual([events.length, audit.length], [0, 0]);
  // A value the new type's default replaces is one.
  s.set("n", 41.5);
  assert.deepEqual(s.valueChanges([int]), ['"n" (its value 41.5 would go to the default 30)']);
});

Deno.test("ParameterStore.valueChanges names a string value quoted, a long one cut (a reload's refusal in AUTO is logged on one line)", () => {
  const label: ParameterConfig = { name: "label", type: "string", default: "", allowedValues: [] };
  const { s } = store([label]);
  // A client's text, of up to a request body, with a line break of its own.
  s.set("label", `${"x".repeat(60_000)}\nforged`);
  assert.deepEqual(s.valueChanges([{ ...label, allowedValues: ["a"], default: "a" }]), [
    `"label" (its value "${"x".repeat(64)}\u2026" would go to the default "a")`,
  ]);
});
