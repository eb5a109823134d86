/**
 * The pure parts of declared calls (src/control/declared_calls.ts): labels, YAML scalar
 * conversion to ArgSpec types, target resolution, and the per-provider fan-out.
 */
import assert from "node:assert/strict";
import {
  type ArgSpec,
  type DeviceCapabilities,
  type FunctionSpec,
  PROVIDER_TEXT_CHARS,
  type TypedValue,
  type ValueType,
} from "../../src/common/mod.ts";
import type { CallArgValue, CallConfig } from "../../src/config/mod.ts";
import {
  declaredFunctionLabel,
  fanOutByProvider,
  findDeclaredTarget,
  toTypedArgs,
  validateArgs,
} from "../../src/control/mod.ts";
import { macrotask } from "../helpers/turns.ts";

function argSpec(name: string, type: ValueType | null): ArgSpec {
  return { name, type, unit: "", description: "", required: false, allowedValues: [] };
}

function fnSpec(functionId: number, name: string, args: ArgSpec[] = []): FunctionSpec {
  return { functionId, name, description: "", category: "ACTUATE", actuating: true, args };
}

function device(
  providerId: string,
  deviceId: string,
  functions: FunctionSpec[],
): DeviceCapabilities {
  return {
    device: {
      providerId,
      deviceId,
      providerName: providerId,
      typeId: "t",
      typeVersion: "1",
      label: deviceId,
      address: "",
      tags: {},
    },
    functions,
    signals: [],
  };
}

function declared(handle: string, functionId: number, functionName: string): CallConfig {
  return { deviceHandle: handle, functionId, functionName, args: {}, path: "test.calls[0]" };
}

Deno.test("declaredFunctionLabel names a call by function_name, else by its id as text", () => {
  assert.equal(declaredFunctionLabel(declared("p/d", 7, "set_x")), "set_x");
  assert.equal(declaredFunctionLabel(declared("p/d", 7, "")), "7");
});

/** One argument of each declared type, plus one the provider left untyped. */
const TYPED = fnSpec(1, "f", [
  argSpec("d", "double"),
  argSpec("i", "int64"),
  argSpec("u", "uint64"),
  argSpec("b", "bool"),
  argSpec("s", "string"),
  argSpec("x", null),
]);

const int = (v: number): CallArgValue => ({ type: "int64", int64: v });
const dbl = (v: number): CallArgValue => ({ type: "double", double: v });
const bool = (v: boolean): CallArgValue => ({ type: "bool", bool: v });
const str = (v: string): CallArgValue => ({ type: "string", string: v });

// [what, argument name, declared YAML scalar, typed value passed on]
const CONVERSIONS: Array<[string, string, CallArgValue, TypedValue]> = [
  ["an integer widens to a double", "d", int(3), { type: "double", double: 3 }],
  ["a negative integer widens to a double", "d", int(-2), { type: "double", double: -2 }],
  ["an integer widens to uint64", "u", int(7), { type: "uint64", uint64: 7 }],
  ["zero widens to uint64", "u", int(0), { type: "uint64", uint64: 0 }],
  ["a negative integer stays int64 for uint64", "u", int(-1), int(-1)],
  ["an integer for a string is its text", "s", int(120), { type: "string", string: "120" }],
  ["a double for a string is its text", "s", dbl(0.5), { type: "string", string: "0.5" }],
  ["true for a string is its text", "s", bool(true), { type: "string", string: "true" }],
  ["false for a string is its text", "s", bool(false), { type: "string", string: "false" }],
  ["a string for a string is kept", "s", str("closed"), str("closed")],
  ["a double for an int64 is left as written", "i", dbl(1.5), dbl(1.5)],
  ["a double for a uint64 is left as written", "u", dbl(2), dbl(2)],
  ["an integer for a bool is left as written", "b", int(1), int(1)],
  ["a string for a double is left as written", "d", str("fast"), str("fast")],
  ["a string for a bool is left as written", "b", str("true"), str("true")],
  ["a bool for an int64 is left as written", "i", bool(true), bool(true)],
  ["an integer for an untyped argument is left as written", "x", int(4), int(4)],
  ["an argument the function does not declare is left as written", "zzz", int(5), int(5)],
];

for (const [what, name, given, want] of CONVERSIONS) {
  Deno.test(`toTypedArgs: ${what}`, () => {
    const out = toTypedArgs(TYPED, { [name]: given });
    assert.deepEqual(out, { [name]: want });
  });
}

Deno.test("toTypedArgs passes a value of the declared type on as written", () => {
  const args = { d: dbl(0.25), i: int(-3), b: bool(false), s: str("open") };
  const out = toTypedArgs(TYPED, args);
  assert.deepEqual(Object.keys(out).sort(), ["b", "d", "i", "s"]);
  for (const [name, value] of Object.entries(args)) assert.equal(out[name], value, name);
});

Deno.test("toTypedArgs converts every argument by its own name", () => {
  assert.deepEqual(toTypedArgs(TYPED, { d: int(1), s: int(2), u: int(3), i: int(4) }), {
    d: { type: "double", double: 1 },
    s: { type: "string", string: "2" },
    u: { type: "uint64", uint64: 3 },
    i: { type: "int64", int64: 4 },
  });
  assert.deepEqual(toTypedArgs(TYPED, {}), {});
});

Deno.test("A declared argument named twice by the provider: converted and checked by its first declaration", () => {
  // A hook's `x: 1` for a function declaring x as double first, then as int64.
  const fn = fnSpec(1, "f", [argSpec("x", "double"), argSpec("x", "int64")]);
  const typed = toTypedArgs(fn, { x: int(1) });
  assert.deepEqual(typed, { x: { type: "double", double: 1 } });
  assert.deepEqual(validateArgs(fn, typed), { x: { type: "double", double: 1 } });
  assert.throws(
    () => validateArgs(fn, { x: { type: "string", string: "1" } }),
    /args\.x: expected double, got string/,
  );
});

const DEVICES = [
  device("sim0", "relay", [fnSpec(1, "set_a"), fnSpec(2, "dup"), fnSpec(3, "dup")]),
  device("sim0", "motor", [fnSpec(1, "set_b")]),
  device("sim1", "other", [fnSpec(5, "set_c")]),
];

// [handle, function_id, function_name, the problem]
const UNRESOLVED: Array<[string, number, string, string]> = [
  ["relay", 1, "", 'device_handle "relay" is not provider/device'],
  ["/relay", 1, "", 'device_handle "/relay" is not provider/device'],
  ["sim0/", 1, "", 'device_handle "sim0/" is not provider/device'],
  ["sim0/ghost", 1, "", 'device not found: "sim0/ghost"'],
  ["sim1/relay", 1, "", 'device not found: "sim1/relay"'], // the device id exists, on sim0
  ["sim0/other", 5, "", 'device not found: "sim0/other"'], // the device id exists, on sim1
  ["sim0/relay", 99, "", 'function_id 99 not found on "sim0/relay"'],
  ["sim0/relay", 5, "set_c", 'function_id 5 not found on "sim0/relay"'],
  ["sim0/relay", 1, "dup", 'function_id 1 is "set_a", not "dup" on "sim0/relay"'],
  ["sim0/relay", 0, "set_b", 'function "set_b" not found on "sim0/relay"'],
  ["sim0/relay", 0, "", 'function "" not found on "sim0/relay"'],
];

for (const [handle, id, name, problem] of UNRESOLVED) {
  Deno.test(`findDeclaredTarget: ${handle} ${id} '${name}' -> ${problem}`, () => {
    assert.deepEqual(findDeclaredTarget(declared(handle, id, name), DEVICES), { problem });
  });
}

// [handle, function_id, function_name, index in DEVICES, function id found]
const RESOLVED: Array<[string, number, string, number, number]> = [
  ["sim0/relay", 1, "", 0, 1],
  ["sim0/relay", 1, "set_a", 0, 1], // id and name agree
  ["sim0/relay", 2, "", 0, 2],
  ["sim0/relay", 0, "set_a", 0, 1],
  ["sim0/relay", 0, "dup", 0, 3], // duplicate names collapse to the last declared (as the router)
  ["sim0/motor", 1, "", 1, 1],
  ["sim0/motor", 0, "set_b", 1, 1],
  ["sim1/other", 5, "set_c", 2, 5],
];

for (const [handle, id, name, deviceIndex, fnId] of RESOLVED) {
  Deno.test(`findDeclaredTarget: ${handle} ${id} '${name}' resolves to function ${fnId}`, () => {
    const target = findDeclaredTarget(declared(handle, id, name), DEVICES);
    assert.ok("fn" in target, JSON.stringify(target));
    assert.equal(target.device, DEVICES[deviceIndex]);
    assert.equal(target.fn, DEVICES[deviceIndex]!.functions.find((f) => f.functionId === fnId));
  });
}

Deno.test("findDeclaredTarget: a function_name of 10 kB or with a line break that disagrees with the function_id is cut to PROVIDER_TEXT_CHARS and quoted, as is the provider's name", () => {
  const problemOf = (functionName: string, devices = DEVICES) => {
    const target = findDeclaredTarget(declared("sim0/relay", 1, functionName), devices);
    assert.ok("problem" in target, JSON.stringify(target).slice(0, 200));
    return target.problem;
  };
  const fits = "x".repeat(PROVIDER_TEXT_CHARS);
  assert.equal(
    problemOf("x".repeat(10_000)),
    `function_id 1 is "set_a", not "${fits}\u2026" on "sim0/relay"`,
  );
  // Exactly the bound: whole; one past it: cut, with an ellipsis.
  assert.equal(problemOf(fits), `function_id 1 is "set_a", not "${fits}" on "sim0/relay"`);
  assert.equal(
    problemOf(`${fits}y`),
    `function_id 1 is "set_a", not "${fits}\u2026" on "sim0/relay"`,
  );
  // A line break, an escape and a quote cannot end the line nor forge the rest of it.
  assert.equal(
    problemOf("a\nINFO forged\u001b[31m'\"\u2028"),
    `function_id 1 is "set_a", not "a\\nINFO forged\\u001b[31m'\\"\\u2028" on "sim0/relay"`,
  );
  // The provider's name is quoted the same way.
  const long = [device("sim0", "relay", [fnSpec(1, `set\n${"a".repeat(200)}`)])];
  assert.equal(
    problemOf("set_a", long),
    `function_id 1 is "set\\n${
      "a".repeat(PROVIDER_TEXT_CHARS - 4)
    }\u2026", not "set_a" on "sim0/relay"`,
  );
});

Deno.test("findDeclaredTarget: a device_handle or function_name of 10 kB makes a bounded problem, cut to PROVIDER_TEXT_CHARS and quoted", () => {
  const problemOf = (handle: string, id: number, name: string) => {
    const target = findDeclaredTarget(declared(handle, id, name), DEVICES);
    assert.ok("problem" in target, JSON.stringify(target).slice(0, 200));
    return target.problem;
  };
  const huge = "x".repeat(10_000);
  const cut = (text: string) => `"${text.slice(0, PROVIDER_TEXT_CHARS)}\u2026"`;
  // Not provider/device, a device not found, a function id or name not found on it.
  assert.equal(problemOf(huge, 1, ""), `device_handle ${cut(huge)} is not provider/device`);
  assert.equal(problemOf(`sim0/${huge}`, 1, ""), `device not found: ${cut(`sim0/${huge}`)}`);
  assert.equal(problemOf(`${huge}/relay`, 1, ""), `device not found: ${cut(`${huge}/relay`)}`);
  assert.equal(problemOf("sim0/relay", 0, huge), `function ${cut(huge)} not found on "sim0/relay"`);
  // A line break in the name cannot end the line.
  assert.equal(
    problemOf("sim0/relay", 0, "a\nINFO forged"),
    'function "a\\nINFO forged" not found on "sim0/relay"',
  );
  for (
    const [handle, id, name] of [[huge, 1, ""], [`sim0/${huge}`, 1, ""], ["sim0/relay", 0, huge]]
  ) {
    const problem = problemOf(handle as string, id as number, name as string);
    assert.ok(
      problem.length < 2 * PROVIDER_TEXT_CHARS,
      `${problem.length}: ${problem.slice(0, 300)}`,
    );
  }
});

/**
 * A `run` for fanOutByProvider whose calls the test settles one by one: each records when it
 * starts and when it finishes, and waits until the test resolves or rejects it.
 */
function steppedRun() {
  const log: string[] = [];
  const pending = new Map<string, PromiseWithResolvers<void>>();
  const run = (item: string): Promise<void> => {
    log.push(`start ${item}`);
    const step = Promise.withResolvers<void>();
    pending.set(item, step);
    return step.promise.then(() => void log.push(`end ${item}`));
  };
  const take = (item: string) => {
    const step = pending.get(item);
    assert.ok(step, `${item} has not started`);
    pending.delete(item);
    return step;
  };
  return {
    log,
    run,
    finish: (item: string) => take(item).resolve(),
    fail: (item: string) => take(item).reject(new Error(`${item} failed`)),
    started: () => [...pending.keys()],
  };
}

Deno.test("fanOutByProvider runs providers concurrently, each provider's items in order", async () => {
  const r = steppedRun();
  let done = false;
  const all = fanOutByProvider(
    ["a/x", "b/x", "a/y", "c1", "b/y", "a/z", "c2"],
    (item) => item,
    r.run,
  ).then(() => done = true);
  await macrotask();
  // The first item of every provider has started; a handle without a slash is its own provider.
  assert.deepEqual(r.started(), ["a/x", "b/x", "c1", "c2"]);
  r.finish("b/x");
  await macrotask();
  assert.deepEqual(r.started(), ["a/x", "c1", "c2", "b/y"], "b goes on while a is busy");
  r.finish("a/x");
  await macrotask();
  assert.deepEqual(r.started(), ["c1", "c2", "b/y", "a/y"]);
  r.finish("c2");
  r.finish("a/y");
  r.finish("b/y");
  await macrotask();
  assert.deepEqual(r.started(), ["c1", "a/z"]);
  r.finish("a/z");
  await macrotask();
  assert.equal(done, false, "resolves only when every item is done");
  r.finish("c1");
  await all;
  assert.equal(done, true);
  assert.deepEqual(r.log.filter((l) => l.includes("a/")), [
    "start a/x",
    "end a/x",
    "start a/y",
    "end a/y",
    "start a/z",
    "end a/z",
  ]);
});

Deno.test("fanOutByProvider attempts every item when some reject, and still resolves", async () => {
  const r = steppedRun();
  const items = [
    { id: 1, handle: "p/d1" },
    { id: 2, handle: "p/d2" },
    { id: 3, handle: "q/d1" },
    { id: 4, handle: "p/d1" },
  ];
  const all = fanOutByProvider(items, (item) => item.handle, (item) => r.run(`#${item.id}`));
  await macrotask();
  assert.deepEqual(r.started(), ["#1", "#3"]);
  r.fail("#1");
  await macrotask();
  assert.deepEqual(r.started(), ["#3", "#2"], "a rejection does not stop its provider's group");
  r.fail("#3");
  r.fail("#2");
  await macrotask();
  assert.deepEqual(r.started(), ["#4"]);
  r.finish("#4");
  await all; // resolves: a rejection of `run` never rejects the fan-out
  assert.deepEqual(r.log, ["start #1", "start #3", "start #2", "start #4", "end #4"]);
});

Deno.test("fanOutByProvider with no items resolves without running anything", async () => {
  let runs = 0;
  await fanOutByProvider([], () => "p/d", () => {
    runs++;
    return Promise.resolve();
  });
  assert.equal(runs, 0);
});
