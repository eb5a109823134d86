import { deepStrictEqual, ok, rejects, strictEqual as equal, throws } from "node:assert/strict";
import {
  MAX_FRAME_BYTES,
  PROVIDER_STATUS_MESSAGE_CHARS,
  StatusCode,
  WireCategory,
  WireQuality,
  WireValueType,
} from "../../src/adpp/mod.ts";
import { MAX_NAMED_IN_WARNING, PROVIDER_TEXT_CHARS } from "../../src/common/mod.ts";
import {
  argSpec,
  CallArgs,
  type DeviceDefinition,
  DeviceProvider,
  fromWireValue,
  functionSpec,
  ProviderError,
  signalSpec,
  toWireValue,
  wireBool,
  wireDouble,
  wireInt64,
  wireString,
} from "../../src/provider_sdk/mod.ts";
import { serveRequests } from "./_harness.ts";

/** A lamp: one dimmer level, one switch; `set_level` checks its bounds, `blink` needs power. */
function lampDevice(state = { on: false, level: 0.5 }): DeviceDefinition {
  return {
    deviceId: "lamp0",
    typeId: "test.lamp",
    typeVersion: "1.0",
    label: "Lamp",
    address: "test://lamp0",
    tags: { kind: "lamp" },
    signals: [
      {
        id: "on",
        name: "On",
        type: "bool",
        pollHintHz: 1,
        staleAfterMs: 2000,
        read: () => state.on,
      },
      {
        id: "level",
        name: "Level",
        type: "double",
        pollHintHz: 0,
        staleAfterMs: 0,
        inDefaultSet: false,
        read: () => state.level,
      },
    ],
    functions: [
      {
        id: 1,
        name: "switch",
        category: "ACTUATE",
        args: [{ name: "on", type: "bool" }],
        handler: (args) => void (state.on = args.bool("on")),
      },
      {
        id: 2,
        name: "set_level",
        category: "CONFIG",
        args: [{ name: "level", type: "double", min: 0, max: 1 }],
        handler: (args) => void (state.level = args.double("level")),
      },
      {
        id: 3,
        name: "blink",
        category: "ACTUATE",
        args: [{ name: "times", type: "int64", min: 1 }],
        precheckArgs: false,
        handler: (args) => {
          if (!state.on) throw ProviderError.failedPrecondition("blink: lamp is off");
          return { blinked: wireInt64(args.int64("times")) };
        },
      },
    ],
  };
}

function lampProvider(state?: { on: boolean; level: number }): DeviceProvider {
  return new DeviceProvider(
    {
      name: "lamp-provider",
      version: "9.9.9",
      metadata: { vendor: "test" },
      waitReady: () => ({ init_time_ms: "0" }),
      nowMs: () => 1_700_000_000_123,
    },
    [lampDevice(state)],
  );
}

Deno.test("toWireValue sets both Value.type and the oneof member", () => {
  deepStrictEqual(toWireValue("bool", false), { type: WireValueType.BOOL, bool_value: false });
  deepStrictEqual(wireInt64(-3), { type: WireValueType.INT64, int64_value: -3 });
  deepStrictEqual(wireDouble(0), { type: WireValueType.DOUBLE, double_value: 0 });
  deepStrictEqual(wireString(""), { type: WireValueType.STRING, string_value: "" });
  deepStrictEqual(toWireValue("uint64", 5), { type: WireValueType.UINT64, uint64_value: 5 });
});

Deno.test("toWireValue throws TypeError for a scalar that does not fit", () => {
  throws(() => toWireValue("int64", 1.5), TypeError);
  throws(() => toWireValue("uint64", -1), TypeError);
  throws(() => toWireValue("bool", 1), TypeError);
});

Deno.test("fromWireValue reads by Value.type and defaults an absent member", () => {
  deepStrictEqual(fromWireValue(wireBool(true)), { type: "bool", value: true });
  deepStrictEqual(fromWireValue({ type: WireValueType.DOUBLE }), { type: "double", value: 0 });
  equal(fromWireValue({ bool_value: true }), null);
});

Deno.test("argSpec puts bounds in the fields of the argument's type, 0 included", () => {
  deepStrictEqual(argSpec({ name: "duty", type: "double", min: 0, max: 1 }), {
    name: "duty",
    type: WireValueType.DOUBLE,
    unit: "",
    description: "",
    required: true,
    min_double: 0,
    max_double: 1,
  });
  const i = argSpec({ name: "n", type: "int64", min: 1 });
  equal(i.min_int64, 1);
  equal("max_int64" in i, false);
  equal(argSpec({ name: "u", type: "uint64", max: 9 }).max_uint64, 9);
  equal("min_double" in argSpec({ name: "x", type: "double" }), false);
});

Deno.test("argSpec throws TypeError for bounds on a non-numeric argument", () => {
  throws(() => argSpec({ name: "s", type: "string", min: 0 }), TypeError);
  throws(() => argSpec({ name: "n", type: "int64", max: 1.5 }), TypeError);
});

Deno.test("functionSpec and signalSpec fill the wire fields", () => {
  const f = functionSpec({ id: 4, name: "go", category: "ACTUATE" });
  equal(f.policy?.category, WireCategory.ACTUATE);
  equal(f.policy?.requires_lease, false);
  deepStrictEqual(f.args, []);
  const s = signalSpec({
    id: "t",
    name: "T",
    type: "double",
    unit: "C",
    pollHintHz: 2,
    staleAfterMs: 1500,
  });
  deepStrictEqual(s, {
    signal_id: "t",
    name: "T",
    description: "",
    value_type: WireValueType.DOUBLE,
    unit: "C",
    poll_hint_hz: 2,
    stale_after_ms: 1500,
  });
});

Deno.test("CallArgs rejects missing, mistyped and out-of-bounds arguments by name", () => {
  const specs = [{ name: "level", type: "double" as const, min: 0, max: 1 }];
  const codeOf = (f: () => unknown) => {
    try {
      f();
    } catch (err) {
      ok(err instanceof ProviderError);
      ok(err.message.includes("'level'"), err.message);
      return err.code;
    }
    return StatusCode.OK;
  };
  equal(codeOf(() => new CallArgs("f", specs, {}).checkAll()), StatusCode.INVALID_ARGUMENT);
  equal(codeOf(() => new CallArgs("f", specs, { level: wireInt64(1) }).checkAll()), 10);
  equal(codeOf(() => new CallArgs("f", specs, { level: wireDouble(1.01) }).checkAll()), 10);
  equal(codeOf(() => new CallArgs("f", specs, { level: wireDouble(-0.1) }).checkAll()), 10);
  equal(codeOf(() => new CallArgs("f", specs, { level: wireDouble(NaN) }).checkAll()), 10);
  equal(
    new CallArgs("f", specs, { level: wireDouble(1), extra: wireBool(true) }).double("level"),
    1,
  );
});

Deno.test("CallArgs checks the type by Value.type, not by the oneof member", () => {
  const specs = [{ name: "on", type: "bool" as const }];
  // type says BOOL, member says double: the reference provider accepts (member default false).
  equal(
    new CallArgs("f", specs, { on: { type: WireValueType.BOOL, double_value: 1 } }).bool("on"),
    false,
  );
  throws(() => new CallArgs("f", specs, { on: { bool_value: true } }).bool("on"), ProviderError);
});

Deno.test("CallArgs enforces allowed values and skips absent optional arguments", () => {
  const specs = [
    { name: "mode", type: "string" as const, allowedValues: ["a", "b"] },
    { name: "opt", type: "int64" as const, required: false },
  ];
  new CallArgs("f", specs, { mode: wireString("a") }).checkAll();
  throws(() => new CallArgs("f", specs, { mode: wireString("c") }).checkAll(), ProviderError);
});

Deno.test("DeviceProvider Hello advertises wait_ready, transport and frame size", async () => {
  const { responses } = await serveRequests(lampProvider(), [
    { request_id: 1, hello: { protocol_version: "v1", client_name: "x", client_version: "1" } },
  ]);
  deepStrictEqual(responses[0]!.hello, {
    protocol_version: "v1",
    provider_name: "lamp-provider",
    provider_version: "9.9.9",
    metadata: {
      transport: "stdio+uint32_le",
      max_frame_bytes: "1048576",
      supports_wait_ready: "true",
      vendor: "test",
    },
  });
});

Deno.test("DeviceProvider Hello refuses another protocol version with FAILED_PRECONDITION", async () => {
  const { responses } = await serveRequests(lampProvider(), [
    { request_id: 1, hello: { protocol_version: "1" } },
  ]);
  equal(responses[0]!.status?.code, StatusCode.FAILED_PRECONDITION);
  equal(responses[0]!.payload, undefined);
});

Deno.test("DeviceProvider Hello names a refused protocol version cut and quoted: 10 kB, a quote and control characters in it", async () => {
  const version = `1"\n\u001b[2J${"v".repeat(10_000)}`;
  const { responses } = await serveRequests(lampProvider(), [
    { request_id: 1, hello: { protocol_version: version } },
  ]);
  equal(responses[0]!.status?.code, StatusCode.FAILED_PRECONDITION);
  equal(
    responses[0]!.status?.message,
    `unsupported protocol_version ${
      JSON.stringify(`${version.slice(0, PROVIDER_TEXT_CHARS)}\u2026`)
    }, expected "v1"`,
  );
});

Deno.test("DeviceProvider without waitReady answers WaitReady UNIMPLEMENTED and does not advertise it", async () => {
  const p = new DeviceProvider({ name: "n", version: "1" }, [lampDevice()]);
  const { responses } = await serveRequests(p, [
    { request_id: 1, hello: { protocol_version: "v1" } },
    { request_id: 2, wait_ready: {} },
  ]);
  equal(responses[0]!.hello?.metadata?.supports_wait_ready, undefined);
  equal(responses[1]!.status?.code, StatusCode.UNIMPLEMENTED);
});

Deno.test("DeviceProvider ListDevices and DescribeDevice describe the declared device", async () => {
  const { responses } = await serveRequests(lampProvider(), [
    { request_id: 1, list_devices: { include_health: true } },
    { request_id: 2, describe_device: { device_id: "lamp0" } },
    { request_id: 3, describe_device: { device_id: "lamp9" } },
    { request_id: 4, describe_device: {} },
  ]);
  const device = {
    device_id: "lamp0",
    provider_name: "lamp-provider",
    type_id: "test.lamp",
    type_version: "1.0",
    label: "Lamp",
    address: "test://lamp0",
    tags: { kind: "lamp" },
  };
  deepStrictEqual(responses[0]!.list_devices?.devices, [device]);
  equal((responses[0]!.list_devices?.device_health?.[0])!.device_id, "lamp0");
  deepStrictEqual(responses[1]!.describe_device?.device, device);
  const caps = responses[1]!.describe_device?.capabilities;
  deepStrictEqual(caps?.signals?.map((s) => s.signal_id), ["on", "level"]);
  deepStrictEqual(caps?.functions?.map((f) => [f.function_id, f.name]), [
    [1, "switch"],
    [2, "set_level"],
    [3, "blink"],
  ]);
  equal(((caps?.functions?.[1])!.args?.[0])!.min_double, 0);
  equal(responses[2]!.status?.code, StatusCode.NOT_FOUND);
  equal(responses[3]!.status?.code, StatusCode.INVALID_ARGUMENT);
});

Deno.test("DeviceProvider ReadSignals returns the default set, omits unknown ids, NOT_FOUND when none known", async () => {
  const { responses } = await serveRequests(lampProvider({ on: true, level: 0.25 }), [
    { request_id: 1, read_signals: { device_id: "lamp0" } },
    { request_id: 2, read_signals: { device_id: "lamp0", signal_ids: ["level", "nope"] } },
    { request_id: 3, read_signals: { device_id: "lamp0", signal_ids: ["nope"] } },
  ]);
  const [dflt, some, none] = responses;
  deepStrictEqual(dflt!.read_signals?.values?.map((v) => v.signal_id), ["on"]);
  const v = dflt!.read_signals?.values?.[0];
  equal(v?.value?.bool_value, true);
  equal(v?.value?.type, WireValueType.BOOL);
  equal(v?.quality, WireQuality.OK);
  deepStrictEqual(v?.timestamp, { seconds: 1_700_000_000, nanos: 123_000_000 });
  deepStrictEqual(some!.read_signals?.values?.map((x) => [x.signal_id, x.value?.double_value]), [
    ["level", 0.25],
  ]);
  equal(none!.status?.code, StatusCode.NOT_FOUND);
});

Deno.test("DeviceProvider Call applies the selector rules", async () => {
  const state = { on: false, level: 0.5 };
  const { responses } = await serveRequests(lampProvider(state), [
    { request_id: 1, call: { device_id: "lamp0", function_id: 1, args: { on: wireBool(true) } } },
    {
      request_id: 2,
      call: { device_id: "lamp0", function_name: "set_level", args: { level: wireDouble(1) } },
    },
    { request_id: 3, call: { device_id: "lamp0", function_id: 1, function_name: "set_level" } },
    { request_id: 4, call: { device_id: "lamp0", function_id: 99 } },
    { request_id: 5, call: { device_id: "lamp0", function_name: "nope" } },
    { request_id: 6, call: { device_id: "lamp0" } },
    { request_id: 7, call: { device_id: "nope", function_id: 1 } },
    { request_id: 8, call: { function_id: 1 } },
  ]);
  deepStrictEqual(responses.map((r) => r.status?.code), [
    StatusCode.OK,
    StatusCode.OK,
    StatusCode.INVALID_ARGUMENT,
    StatusCode.NOT_FOUND,
    StatusCode.NOT_FOUND,
    StatusCode.INVALID_ARGUMENT,
    StatusCode.NOT_FOUND,
    StatusCode.INVALID_ARGUMENT,
  ]);
  equal(responses[0]!.call?.device_id, "lamp0");
  deepStrictEqual(state, { on: true, level: 1 });
});

Deno.test("DeviceProvider Call checks arguments before the handler unless precheckArgs is false", async () => {
  const state = { on: false, level: 0.5 };
  const { responses } = await serveRequests(lampProvider(state), [
    { request_id: 1, call: { device_id: "lamp0", function_id: 2, args: { level: wireDouble(2) } } },
    { request_id: 2, call: { device_id: "lamp0", function_id: 3 } },
    { request_id: 3, call: { device_id: "lamp0", function_id: 1, args: { on: wireBool(true) } } },
    { request_id: 4, call: { device_id: "lamp0", function_id: 3, args: { times: wireInt64(0) } } },
    { request_id: 5, call: { device_id: "lamp0", function_id: 3, args: { times: wireInt64(2) } } },
  ]);
  deepStrictEqual(responses.map((r) => r.status?.code), [
    StatusCode.INVALID_ARGUMENT, // level above max 1, handler not run
    StatusCode.FAILED_PRECONDITION, // precondition before the missing argument
    StatusCode.OK,
    StatusCode.INVALID_ARGUMENT, // times below min 1
    StatusCode.OK,
  ]);
  equal(state.level, 0.5);
  deepStrictEqual(responses[4]!.call?.results?.blinked?.int64_value, 2);
});

Deno.test("DeviceProvider GetHealth reports the provider and each device OK", async () => {
  const { responses } = await serveRequests(lampProvider(), [{ request_id: 1, get_health: {} }]);
  equal(responses[0]!.get_health?.provider?.state, 1);
  deepStrictEqual(responses[0]!.get_health?.devices?.map((d) => [d.device_id, d.state]), [[
    "lamp0",
    1,
  ]]);
});

Deno.test("DeviceProvider refuses duplicate device, signal and function declarations", () => {
  const p = lampProvider();
  throws(() => p.addDevice(lampDevice()), TypeError);
  const d = lampDevice();
  throws(
    () => p.addDevice({ ...d, deviceId: "x", signals: [...d.signals, d.signals[0]!] }),
    TypeError,
  );
  throws(
    () => p.addDevice({ ...d, deviceId: "y", functions: [...d.functions, d.functions[0]!] }),
    TypeError,
  );
});

Deno.test("DeviceProvider applySafeState applies every declared device safe state, hidden devices included", async () => {
  const lamps = [{ on: true, level: 0.9 }, { on: true, level: 0.9 }];
  const safe = (s: { on: boolean }) => () => void (s.on = false);
  class HidingProvider extends DeviceProvider {
    protected override findDevice() {
      return undefined; // every device hidden (e.g. an injected unavailability)
    }
    protected override listedDevices() {
      return [];
    }
  }
  const p = new HidingProvider({ name: "p", version: "1" }, [
    { ...lampDevice(lamps[0]), deviceId: "lamp0", applySafeState: safe(lamps[0]!) },
    { ...lampDevice(lamps[1]), deviceId: "lamp1", applySafeState: safe(lamps[1]!) },
    { ...lampDevice(), deviceId: "sensor0" }, // declares nothing
  ]);
  deepStrictEqual(await p.applySafeState("lease_expired"), { devices: ["lamp0", "lamp1"] });
  deepStrictEqual(lamps.map((l) => l.on), [false, false]);
});

Deno.test("DeviceProvider applySafeState attempts every device when one fails and names it", async () => {
  const order: string[] = [];
  const p = new DeviceProvider({ name: "p", version: "1" }, [
    {
      ...lampDevice(),
      deviceId: "a",
      applySafeState: () => {
        order.push("a");
        throw new Error("bus down");
      },
    },
    { ...lampDevice(), deviceId: "b", applySafeState: () => void order.push("b") },
  ]);
  await rejects(p.applySafeState("stdin_eof"), /safe state failed for a: bus down/);
  deepStrictEqual(order, ["a", "b"]);
});

Deno.test("DeviceProvider applySafeState names the first MAX_NAMED_IN_WARNING failed devices, each cut, and counts the rest", async () => {
  const n = MAX_NAMED_IN_WARNING + 5;
  const huge = "e".repeat(MAX_FRAME_BYTES + 1);
  const attempted: string[] = [];
  const p = new DeviceProvider(
    { name: "p", version: "1" },
    Array.from({ length: n }, (_, i) => ({
      ...lampDevice(),
      deviceId: i === 0 ? "i".repeat(MAX_FRAME_BYTES + 1) : `d${i}`,
      applySafeState: () => {
        attempted.push(`d${i}`);
        throw new Error(i === 1 ? huge : "bus down");
      },
    })),
  );
  const err = await p.applySafeState("stdin_eof").then(
    () => null,
    (e: unknown) => e as Error,
  );
  equal(attempted.length, n, "every device attempted");
  const bound = (MAX_NAMED_IN_WARNING + 1) * (2 * PROVIDER_STATUS_MESSAGE_CHARS + 10);
  ok(
    (err?.message.length ?? 0) <= bound,
    `message of ${err?.message.length} chars, bound ${bound}`,
  );
  const cut = (t: string) => t.slice(0, PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026";
  const named = [
    `${cut("i".repeat(MAX_FRAME_BYTES + 1))}: bus down`,
    `d1: ${cut(huge)}`,
    ...Array.from({ length: MAX_NAMED_IN_WARNING - 2 }, (_, i) => `d${i + 2}: bus down`),
  ];
  equal(err?.message, `safe state failed for ${named.join("; ")}; and 5 more (${n} in all)`);
});
