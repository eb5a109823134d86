/**
 * What the generated ADPP encoder accepts (every shape callers pass: bigint or number for 64-bit
 * members, enum numbers, decoded objects with their `payload`/`kind` names) and what it refuses
 * with an error naming the field; canonical output; sub-messages of every length-prefix size;
 * the reused write buffer never leaking into a returned message.
 */
import assert from "node:assert/strict";
import {
  decodeRequest,
  decodeResponse,
  ENCODE_SLAB_BYTES,
  encodeRequest,
  encodeResponse,
  type WireRequest,
  type WireResponse,
  WireValueType,
} from "../../src/adpp/mod.ts";
import { hex } from "./_golden.ts";

const req = (o: Record<string, unknown>) => encodeRequest(o as WireRequest);
const resp = (o: Record<string, unknown>) => encodeResponse(o as WireResponse);

const REFUSED: Array<[string, () => unknown, ErrorConstructor, RegExp]> = [
  [
    "a non-object message",
    () => req(null as never),
    TypeError,
    /^Request: expected an object, got null/,
  ],
  [
    "a string where a string field is a number",
    () => req({ request_id: 1, describe_device: { device_id: 5 } }),
    TypeError,
    /DescribeDeviceRequest\.device_id: expected a string, got number 5/,
  ],
  [
    "a payload that is not an object",
    () => req({ request_id: 1, call: "x" }),
    TypeError,
    /Request\.call: expected an object, got string/,
  ],
  [
    "a repeated field that is not an array",
    () => req({ request_id: 1, read_signals: { signal_ids: "a" } }),
    TypeError,
    /ReadSignalsRequest\.signal_ids: expected an array, got string/,
  ],
  [
    "a repeated element of the wrong type",
    () => req({ request_id: 1, read_signals: { signal_ids: ["a", 1] } }),
    TypeError,
    /ReadSignalsRequest\.signal_ids\[\]: expected a string, got number 1/,
  ],
  [
    "a null repeated message",
    () => resp({ request_id: 1, read_signals: { values: [null] } }),
    TypeError,
    /ReadSignalsResponse\.values\[\]: expected an object, got null/,
  ],
  [
    "a map that is an array",
    () => resp({ request_id: 1, status: { details: ["x"] } }),
    TypeError,
    /Status\.details: expected an object \(map\), got an array/,
  ],
  [
    "a map value of the wrong type",
    () => resp({ request_id: 1, status: { details: { a: 1 } } }),
    TypeError,
    /Status\.details\{\}: expected a string, got number 1/,
  ],
  [
    "a null map message value",
    () => req({ request_id: 1, call: { args: { a: null } } }),
    TypeError,
    /CallRequest\.args\{\}: expected an object, got null/,
  ],
  [
    "a bool that is a number",
    () => req({ request_id: 1, list_devices: { include_health: 1 } }),
    TypeError,
    /ListDevicesRequest\.include_health: expected a boolean/,
  ],
  [
    "bytes that are an array",
    () => resp({ request_id: 1, read_signals: { values: [{ value: { bytes_value: [1] } }] } }),
    TypeError,
    /Value\.bytes_value: expected a Uint8Array, got an array/,
  ],
  [
    "an enum given by name",
    () => resp({ request_id: 1, status: { code: "CODE_OK" } }),
    TypeError,
    /Status\.code: expected a number, got string/,
  ],
  [
    "an int64 given as a decimal string",
    () => req({ request_id: 1, call: { args: { a: { int64_value: "12" } } } }),
    TypeError,
    /Value\.int64_value: expected a number or bigint, got string/,
  ],
  [
    "a uint64 below zero",
    () => req({ request_id: 1, call: { args: { a: { uint64_value: -1 } } } }),
    RangeError,
    /Value\.uint64_value: -1 is out of the uint64 range/,
  ],
  [
    "a uint64 of 2^64",
    () => req({ request_id: 1, call: { args: { a: { uint64_value: 2n ** 64n } } } }),
    RangeError,
    /out of the uint64 range/,
  ],
  [
    "an int64 above 2^63 (a number)",
    () => req({ request_id: 1, call: { args: { a: { int64_value: 2 ** 64 } } } }),
    RangeError,
    /Value\.int64_value: 18446744073709552000 is out of the int64 range/,
  ],
  [
    "an int64 below -2^63 (a bigint)",
    () => req({ request_id: 1, call: { args: { a: { int64_value: -(2n ** 63n) - 1n } } } }),
    RangeError,
    /out of the int64 range/,
  ],
  [
    "an int64 that is NaN",
    () => req({ request_id: 1, call: { args: { a: { int64_value: NaN } } } }),
    RangeError,
    /Value\.int64_value: NaN is not an integer/,
  ],
  [
    "a request_id below zero",
    () => req({ request_id: -1 }),
    RangeError,
    /Request\.request_id: -1 is out of the uint64 range/,
  ],
  [
    "a uint32 below zero",
    () => req({ request_id: 1, wait_ready: { max_wait_ms_hint: -1 } }),
    RangeError,
    /WaitReadyRequest\.max_wait_ms_hint: -1 is out of range \[0, 4294967295\]/,
  ],
  [
    "a uint32 of 2^32",
    () => req({ request_id: 1, wait_ready: { max_wait_ms_hint: 2 ** 32 } }),
    RangeError,
    /out of range \[0, 4294967295\]/,
  ],
  [
    "an int32 of 2^31",
    () => req({ request_id: 1, read_signals: { min_timestamp: { nanos: 2 ** 31 } } }),
    RangeError,
    /Timestamp\.nanos: 2147483648 is out of range \[-2147483648, 2147483647\]/,
  ],
  [
    "two payload members",
    () => req({ request_id: 1, hello: {}, get_health: {} }),
    TypeError,
    /Request: oneof payload has more than one member set: hello and get_health/,
  ],
  [
    "two Value members",
    () => req({ request_id: 1, call: { args: { a: { bool_value: true, double_value: 1 } } } }),
    TypeError,
    /Value: oneof kind has more than one member set: bool_value and double_value/,
  ],
];

for (const [what, encode, type, message] of REFUSED) {
  Deno.test(`encode refuses ${what}, naming the field`, () => {
    assert.throws(encode, (err: unknown) => {
      assert.ok(err instanceof type, `a ${type.name}, got ${err}`);
      assert.match((err as Error).message, message);
      return true;
    });
  });
}

Deno.test("encodeRequest takes a 64-bit value as a bigint or a number, with the same bytes", () => {
  const asNumber = req({
    request_id: 5,
    call: { args: { a: { int64_value: -3 }, b: { uint64_value: 2 ** 40 } } },
  });
  const asBigint = req({
    request_id: 5n,
    call: { args: { a: { int64_value: -3n }, b: { uint64_value: 2n ** 40n } } },
  });
  assert.equal(hex(asBigint), hex(asNumber));
});

Deno.test("encodeRequest truncates a fractional integer toward zero, as protobufjs did", () => {
  const frac = req({
    request_id: 7.9,
    read_signals: { min_timestamp: { seconds: -2.5, nanos: 1.9 } },
  });
  const whole = req({ request_id: 7, read_signals: { min_timestamp: { seconds: -2, nanos: 1 } } });
  assert.equal(hex(frac), hex(whole));
});

Deno.test("encodeRequest ignores `payload` and `kind`, so a decoded message encodes back to its bytes", () => {
  const msg = {
    request_id: 3,
    call: { device_id: "d", args: { x: { type: WireValueType.BOOL, bool_value: false } } },
  };
  const bytes = req(msg);
  const decoded = decodeRequest(bytes);
  assert.equal(decoded.payload, "call");
  assert.equal((decoded.call?.args?.x)!.kind, "bool_value");
  assert.equal(hex(encodeRequest(decoded)), hex(bytes));
});

Deno.test("encodeRequest treats null and undefined members as absent", () => {
  assert.equal(
    hex(
      req({
        request_id: 2,
        hello: null,
        read_signals: { device_id: undefined, signal_ids: null, min_timestamp: null },
      }),
    ),
    hex(req({ request_id: 2, read_signals: {} })),
  );
});

Deno.test("encodeResponse writes proto3 canonical bytes: no default-valued scalars, -0 and NaN kept", () => {
  const bytes = resp({
    request_id: 0,
    status: { code: 0, message: "", details: {} },
    describe_device: {
      capabilities: {
        signals: [{ signal_id: "", poll_hint_hz: 0, stale_after_ms: 0, value_type: 0 }, {
          poll_hint_hz: -0,
        }, { poll_hint_hz: NaN }],
      },
    },
  });
  // status {} ; describe_device { capabilities { signals {} signals { 31 -0 } signals { 31 NaN } } }
  assert.equal(
    hex(bytes),
    "1200" + "62" + "1a" + "12" + "18" + "1200" + "1209" + "310000000000000080" + "1209" +
      "31000000000000f87f",
  );
});

Deno.test("encodeResponse writes an ArgSpec optional bound at 0 (it has presence)", () => {
  const bytes = resp({
    request_id: 1,
    describe_device: {
      capabilities: { functions: [{ args: [{ min_int64: 0, max_uint64: 0n }] }] },
    },
  });
  const arg = (decodeResponse(bytes).describe_device?.capabilities?.functions?.[0])!.args?.[0];
  assert.deepStrictEqual(arg, { min_int64: 0, max_uint64: 0 });
});

Deno.test("encodeResponse writes a lone surrogate as U+FFFD (as TextEncoder does)", () => {
  const bytes = resp({ request_id: 1, status: { message: "a\ud800b" } });
  assert.equal(hex(bytes), "0801" + "1207" + "1205" + "61efbfbd62");
  assert.equal(decodeResponse(bytes).status?.message, "a\ufffdb");
});

for (const size of [127, 128, 16383, 16384, 2097151, 2097152]) {
  Deno.test(`encodeResponse and decodeResponse carry a ${size}-byte string inside nested messages`, () => {
    const text = "é".repeat(size >> 1) + "x".repeat(size & 1);
    const msg = {
      request_id: 9,
      read_signals: { values: [{ signal_id: "s", value: { type: 5, string_value: text } }] },
    };
    const got = (decodeResponse(resp(msg)).read_signals?.values?.[0])!.value?.string_value;
    assert.equal(got?.length, text.length);
    assert.ok(got === text);
  });
}

Deno.test("encodeResponse never changes a message it returned, across slabs and large messages", () => {
  const kept: Array<[Uint8Array, Uint8Array]> = [];
  for (let i = 0; i < 2000; i++) {
    // Mostly small messages (several slabs' worth), now and then one larger than a slab.
    const size = i % 97 === 0 ? ENCODE_SLAB_BYTES * 3 : i % 13;
    const bytes = resp({ request_id: i + 1, status: { message: "x".repeat(size) } });
    kept.push([bytes, bytes.slice()]);
  }
  for (const [bytes, copy] of kept) assert.deepStrictEqual(bytes, copy);
  for (const [i, [bytes]] of kept.entries()) assert.equal(decodeResponse(bytes).request_id, i + 1);
});

Deno.test("encodeRequest writes small messages into a shared slab, a large one into its own buffer", () => {
  const a = req({ request_id: 1, list_devices: {} });
  const b = req({ request_id: 2, list_devices: {} });
  const large = resp({ request_id: 3, status: { message: "m".repeat(ENCODE_SLAB_BYTES * 2) } });
  const c = req({ request_id: 4, list_devices: {} });
  // (unless a happened to fill its slab: then the next two share the next one)
  const shared = a.buffer === b.buffer ||
    req({ request_id: 5 }).buffer === req({ request_id: 6 }).buffer;
  assert.ok(shared, "consecutive small messages share a slab");
  assert.notEqual(c.buffer, large.buffer);
  assert.equal(hex(a), "08015a00");
  assert.equal(hex(c), "08045a00");
});

Deno.test("encodeRequest starts afresh after an input it refused", () => {
  assert.throws(() =>
    req({ request_id: 1, read_signals: { device_id: "half written", signal_ids: [1] } })
  );
  assert.equal(hex(req({ request_id: 1, list_devices: {} })), "08015a00");
});

Deno.test("encodeResponse takes the doubles 2^63 and 2^64 as the int64 and uint64 maxima (decoded ones re-encode)", () => {
  const max = {
    request_id: 1,
    describe_device: {
      capabilities: { functions: [{ args: [{ max_int64: 2 ** 63, max_uint64: 2 ** 64 }] }] },
    },
  };
  const exact = {
    request_id: 1,
    describe_device: {
      capabilities: {
        functions: [{ args: [{ max_int64: 2n ** 63n - 1n, max_uint64: 2n ** 64n - 1n }] }],
      },
    },
  };
  assert.equal(hex(resp(max)), hex(resp(exact)));
  // The maxima decode (as plain numbers) to the same doubles, and encode back to the same bytes.
  const decoded = decodeResponse(resp(exact));
  assert.deepStrictEqual((decoded.describe_device?.capabilities?.functions?.[0])!.args?.[0], {
    max_int64: 2 ** 63,
    max_uint64: 2 ** 64,
  });
  assert.equal(hex(encodeResponse(decoded)), hex(resp(exact)));
});
