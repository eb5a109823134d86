import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import {
  decodeRequest,
  decodeResponse,
  encodeFrame,
  encodeRequest,
  encodeResponse,
  StatusCode,
  WireValueType,
} from "../../src/adpp/mod.ts";
import { frameHex, GOLDEN, hex, unhex } from "./_golden.ts";

const HELLO_REQ = {
  request_id: 1,
  hello: { protocol_version: "v1", client_name: "anolis-runtime", client_version: "0.1.0" },
};
const WAIT_READY_REQ = { request_id: 2, wait_ready: { max_wait_ms_hint: 60000 } };
const LIST_REQ = { request_id: 3, list_devices: {} };
const HEALTH_REQ = { request_id: 7, get_health: {} };
const READ_REQ = {
  request_id: 4,
  read_signals: { device_id: "motorctl0", signal_ids: ["motor1_speed"] },
};
const CALL_REQ = {
  request_id: 9,
  call: {
    device_id: "tempctl0",
    function_id: 3,
    function_name: "set_relay",
    args: { state: { type: WireValueType.BOOL, bool_value: false } },
  },
};
const HELLO_RESP = {
  request_id: 1,
  status: { code: StatusCode.OK, message: "ok" },
  hello: {
    protocol_version: "v1",
    provider_name: "p",
    provider_version: "1",
    metadata: { supports_wait_ready: "true" },
  },
};
const NOT_FOUND_RESP = { request_id: 5, status: { code: StatusCode.NOT_FOUND, message: "x" } };
const DUTY_ARG = {
  name: "duty",
  type: WireValueType.DOUBLE,
  required: true,
  min_double: 0,
  max_double: 1,
};

const REQUESTS = [
  ["Hello", HELLO_REQ, GOLDEN.helloRequest, "hello"],
  ["WaitReady", WAIT_READY_REQ, GOLDEN.waitReadyRequest, "wait_ready"],
  ["ListDevices", LIST_REQ, GOLDEN.listDevicesRequest, "list_devices"],
  ["GetHealth", HEALTH_REQ, GOLDEN.getHealthRequest, "get_health"],
  ["ReadSignals", READ_REQ, GOLDEN.readSignalsRequest, "read_signals"],
  ["Call", CALL_REQ, GOLDEN.callRequest, "call"],
] as const;

for (const [name, msg, golden] of REQUESTS) {
  Deno.test(`encodeRequest writes the ${name} golden vector byte for byte`, () => {
    equal(hex(encodeRequest(msg)), golden);
  });
  Deno.test(`encodeFrame prefixes the ${name} golden vector with its LE length`, () => {
    equal(hex(encodeFrame(encodeRequest(msg))), frameHex(golden));
  });
}

for (const [name, msg, golden, kind] of REQUESTS) {
  Deno.test(`decodeRequest reads the ${name} golden vector`, () => {
    const got = decodeRequest(unhex(golden));
    equal(got.request_id, msg.request_id);
    equal(got.payload, kind);
    deepStrictEqual(stripKind(got[kind]), (msg as Record<string, unknown>)[kind]);
  });
}

Deno.test("encodeFrame of the Hello request starts with 1f 00 00 00", () => {
  equal(hex(encodeFrame(encodeRequest(HELLO_REQ))).slice(0, 8), "1f000000");
});

Deno.test("encodeRequest keeps a false bool oneof member (08 01 10 00)", () => {
  const bytes = hex(encodeRequest(CALL_REQ));
  equal(bytes.endsWith("120408011000"), true);
});

Deno.test("decodeRequest keeps a false bool oneof member and its type", () => {
  const got = decodeRequest(unhex(GOLDEN.callRequest));
  const v = got.call?.args?.state;
  equal(v?.type, WireValueType.BOOL);
  equal(v?.bool_value, false);
});

Deno.test("encodeResponse writes the Hello response golden vector byte for byte", () => {
  equal(hex(encodeResponse(HELLO_RESP)), GOLDEN.helloResponse);
  equal(hex(encodeFrame(encodeResponse(HELLO_RESP))), frameHex(GOLDEN.helloResponse));
});

Deno.test("encodeResponse writes the NOT_FOUND response golden vector byte for byte", () => {
  equal(hex(encodeResponse(NOT_FOUND_RESP)), GOLDEN.notFoundResponse);
  equal(hex(encodeFrame(encodeResponse(NOT_FOUND_RESP))), frameHex(GOLDEN.notFoundResponse));
});

Deno.test("decodeResponse reads the Hello response golden vector", () => {
  const got = decodeResponse(unhex(GOLDEN.helloResponse));
  equal(got.request_id, 1);
  deepStrictEqual(got.status, { code: StatusCode.OK, message: "ok" });
  equal(got.payload, "hello");
  deepStrictEqual(got.hello, HELLO_RESP.hello);
});

Deno.test("decodeResponse reads the NOT_FOUND golden vector with no payload", () => {
  const got = decodeResponse(unhex(GOLDEN.notFoundResponse));
  equal(got.request_id, 5);
  deepStrictEqual(got.status, { code: StatusCode.NOT_FOUND, message: "x" });
  equal(got.payload, undefined);
});

// ArgSpec is not a top-level message of the codec: it is checked embedded in a DescribeDevice
// response, where its bytes must appear verbatim (length-delimited field 5 of FunctionSpec).
Deno.test("encodeResponse embeds the ArgSpec golden vector with min_double 0 present", () => {
  const resp = {
    request_id: 1,
    describe_device: { capabilities: { functions: [{ args: [DUTY_ARG] }] } },
  };
  const bytes = hex(encodeResponse(resp));
  const argLen = GOLDEN.argSpec.length / 2;
  equal(bytes.includes(`2a${argLen.toString(16).padStart(2, "0")}${GOLDEN.argSpec}`), true);
});

Deno.test("decodeResponse reads the ArgSpec golden vector with bound presence", () => {
  const argLen = GOLDEN.argSpec.length / 2; // 28 bytes
  const fn = `2a${argLen.toString(16)}${GOLDEN.argSpec}`; // FunctionSpec.args (field 5)
  const caps = `0a${(fn.length / 2).toString(16)}${fn}`; // CapabilitySet.functions (field 1)
  const describe = `12${(caps.length / 2).toString(16)}${caps}`; // DescribeDeviceResponse.capabilities
  const resp = `080162${(describe.length / 2).toString(16)}${describe}`; // id 1, describe_device
  const got = decodeResponse(unhex(resp));
  const arg = got.describe_device?.capabilities?.functions?.[0]?.args?.[0];
  deepStrictEqual(arg, DUTY_ARG);
  equal(Object.hasOwn(arg!, "min_double"), true);
  equal(Object.hasOwn(arg!, "min_int64"), false);
});

Deno.test("decodeResponse marks absent ArgSpec bounds as absent", () => {
  const resp = {
    request_id: 1,
    describe_device: {
      capabilities: { functions: [{ args: [{ name: "n", type: WireValueType.INT64 }] }] },
    },
  };
  const arg = decodeResponse(encodeResponse(resp)).describe_device?.capabilities?.functions?.[0]
    ?.args?.[0];
  for (const f of ["min_double", "max_double", "min_int64", "max_int64", "min_uint64"]) {
    equal(Object.hasOwn(arg!, f), false, f);
  }
});

Deno.test("encodeRequest writes int64 -1 as a 10-byte varint", () => {
  const req = {
    request_id: 1,
    call: { args: { x: { type: WireValueType.INT64, int64_value: -1 } } },
  };
  equal(hex(encodeRequest(req)).includes("18ffffffffffffffffff01"), true);
});

Deno.test("decodeRequest skips unknown fields", () => {
  // 0x1f8 = field 63 varint 0, then list_devices.
  const got = decodeRequest(unhex("0803f801005a00"));
  equal(got.request_id, 3);
  equal(got.payload, "list_devices");
});

Deno.test("decodeRequest throws on bytes that are not a Request", () => {
  throws(() => decodeRequest(unhex("ffffff")));
});

Deno.test("decodeResponse throws on a truncated message", () => {
  // Cut inside the hello payload: its length says 0x27 bytes, none follow.
  throws(() => decodeResponse(unhex(GOLDEN.helloResponse.slice(0, 24))));
});

function stripKind(v: unknown): unknown {
  // The decoder names the set member of Value's oneof (`kind: "bool_value"`); inputs do not.
  if (Array.isArray(v)) return v.map(stripKind);
  if (v === null || typeof v !== "object" || v instanceof Uint8Array) return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k, x]) => !(k === "kind" && typeof x === "string" && x.endsWith("_value")))
      .map(([k, x]) => [k, stripKind(x)]),
  );
}

const EXACT_CASES: Array<[string, "int64" | "uint64", number | bigint]> = [
  ["int64 2^53-1 (a number)", "int64", 9007199254740991],
  ["int64 2^53 (a bigint)", "int64", 9007199254740992n],
  ["int64 2^53+1", "int64", 9007199254740993n],
  ["int64 -(2^53-1) (a number)", "int64", -9007199254740991],
  ["int64 -(2^53)", "int64", -9007199254740992n],
  ["int64 -1", "int64", -1],
  ["int64 min", "int64", -9223372036854775808n],
  ["int64 max", "int64", 9223372036854775807n],
  ["uint64 2^32", "uint64", 4294967296],
  ["uint64 2^63", "uint64", 9223372036854775808n],
  ["uint64 max", "uint64", 18446744073709551615n],
];

for (const [name, type, value] of EXACT_CASES) {
  Deno.test(`decodeResponse reads Value ${name} exactly, a bigint only beyond 2^53-1`, () => {
    const member = type === "int64" ? "int64_value" : "uint64_value";
    const wireType = type === "int64" ? WireValueType.INT64 : WireValueType.UINT64;
    const bytes = encodeResponse({
      request_id: 9,
      status: { code: StatusCode.OK },
      read_signals: {
        device_id: "d",
        values: [{ signal_id: "s", value: { type: wireType, [member]: value } }],
      },
    });
    const v = (decodeResponse(bytes).read_signals?.values?.[0])!.value;
    deepStrictEqual(v, { type: wireType, [member]: value, kind: member });
    equal(typeof v?.[member], typeof value);
  });
}

Deno.test("decodeRequest reads exact 64-bit call arguments (the provider side decodes them too)", () => {
  const msg = {
    request_id: 4,
    call: {
      device_id: "d",
      function_id: 1,
      args: { n: { type: WireValueType.UINT64, uint64_value: 18446744073709551615n } },
    },
  };
  deepStrictEqual(decodeRequest(encodeRequest(msg)).call?.args, {
    n: { ...msg.call.args.n, kind: "uint64_value" },
  });
});
