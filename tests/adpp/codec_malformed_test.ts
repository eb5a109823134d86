/**
 * The generated ADPP decoder on bytes no valid encoder writes: each class of malformed input
 * throws an Error that says what is wrong and where (never garbage, never a hang, never an
 * allocation sized by a length that the input does not hold), and the legal-but-unusual inputs
 * (unknown fields, repeated singular fields, explicit defaults, incomplete map entries) decode as
 * protobuf says they do.
 */
import assert from "node:assert/strict";
import { decodeRequest, decodeResponse, encodeResponse } from "../../src/adpp/mod.ts";
import { hex, unhex } from "./_golden.ts";
import { prng } from "./_random_message.ts";

/** Varint of a non-negative integer, as hex. */
function varint(n: number): string {
  let out = "";
  while (n > 0x7f) {
    out += ((n % 128) | 0x80).toString(16).padStart(2, "0");
    n = Math.floor(n / 128);
  }
  return out + n.toString(16).padStart(2, "0");
}

/** A length-delimited field: tag (hex) + length + inner bytes (hex). */
function ld(tag: string, inner: string): string {
  return tag + varint(inner.length / 2) + inner;
}

/** A Response whose read_signals holds one SignalValue whose Value has `valueHex` inside. */
function responseWithValue(valueHex: string): string {
  return "0801" + ld("6a", ld("12", ld("12", valueHex)));
}

const MALFORMED: Array<[string, "Request" | "Response", string, RegExp]> = [
  ["a varint cut off at the end", "Request", "08", /truncated varint/],
  ["a varint whose continuation bit runs off the end", "Request", "0880", /truncated varint/],
  ["a varint of 11 bytes", "Request", "08" + "80".repeat(10) + "00", /longer than 64 bits/],
  ["a 10-byte varint with bits beyond 64", "Request", "08" + "ff".repeat(9) + "02", /64 bits/],
  ["a length past the end of the input", "Request", "5205" + "0a01", /length 5 runs past/],
  [
    "a length past the end of its enclosing message (bytes follow)",
    "Request",
    "5202" + "0a05" + "6162636465",
    /length 5 runs past the end of its message \(0 bytes left\)/,
  ],
  ["a length of 2^32 - 1", "Request", "fa03" + "ffffffff0f", /length 4294967295 runs past/],
  ["a length beyond 32 bits", "Request", "fa03" + "ffffffffff01", /length over 2\^32 runs past/],
  ["wire type 6", "Request", "fe0300", /invalid wire type 6 \(field 63\)/],
  ["wire type 7", "Request", "ff0300", /invalid wire type 7 \(field 63\)/],
  ["a start-group tag", "Request", "fb03" + "fc03", /group \(wire type 3, field 63\)/],
  ["an end-group tag", "Response", "fc03", /group \(wire type 4, field 63\)/],
  ["field number 0", "Request", "0001", /field number 0/],
  ["a tag beyond 32 bits", "Request", "8080808080" + "01", /tag longer than 32 bits/],
  [
    "request_id with a group wire type",
    "Response",
    "0b",
    /group \(wire type 3, field 1\)/,
  ],
  [
    "a double cut short inside its message",
    "Response",
    responseWithValue("29000000"),
    /truncated: 8 bytes needed, 3 left/,
  ],
  ["a fixed32 cut short", "Request", "fd03" + "0000", /truncated: 4 bytes needed, 2 left/],
  [
    "a string whose length runs past its map entry",
    "Response",
    "0801" + ld("12", ld("1a", "0a05" + "78")) + "78787878",
    /length 5 runs past/,
  ],
];

for (const [what, type, bytes, message] of MALFORMED) {
  Deno.test(`decode${type} throws on ${what}`, () => {
    const decode = type === "Request" ? decodeRequest : decodeResponse;
    assert.throws(() => decode(unhex(bytes)), (err: unknown) => {
      assert.ok(err instanceof Error, "an Error");
      assert.match(err.message, /malformed protobuf at byte \d+/);
      assert.match(err.message, message);
      return true;
    });
  });
}

/**
 * A known field with another wire type than its own is an unknown field, skipped by its wire type:
 * what the C++ protobuf runtime (and so the C++ anolis runtime), Go since golang/protobuf#511 and
 * Python do. A provider those accept is not cut off here.
 */
const WRONG_WIRE_TYPE: [string, "Request" | "Response", string, unknown][] = [
  ["request_id as a length-delimited field", "Request", "0a00" + "0807", { request_id: 7 }],
  ["a payload message as a varint", "Request", "0801" + "5001", { request_id: 1 }],
  [
    "a nested Value.double_value as a varint",
    "Response",
    responseWithValue("2801"),
    decodeResponse(unhex(responseWithValue(""))),
  ],
  [
    "a map key as a varint (the entry keeps the default key)",
    "Response",
    "0801" + ld("12", ld("1a", "0801" + "1201" + "78")),
    { request_id: 1, status: { details: { "": "x" } } },
  ],
  [
    "a map value of the wrong wire type (the entry keeps the default value)",
    "Request",
    "0801" + ld("72", ld("22", "0a0178" + "1001")),
    { request_id: 1, payload: "call", call: { args: { x: {} } } },
  ],
];

for (const [what, type, bytes, expected] of WRONG_WIRE_TYPE) {
  Deno.test(`decode${type} skips ${what} as an unknown field`, () => {
    const decode = type === "Request" ? decodeRequest : decodeResponse;
    assert.deepStrictEqual(decode(unhex(bytes)), expected);
  });
}

Deno.test("decodeRequest says at which byte the input is malformed", () => {
  // 08 01 (request_id 1), then field 63 with wire type 6 at byte 2.
  assert.throws(() => decodeRequest(unhex("0801fe03")), /at byte 2: invalid wire type 6/);
});

Deno.test("decodeRequest skips unknown fields of every wire type, at the top and nested", () => {
  const unknown = "f80301" + "f9030102030405060708" + ld("fa03", "0a0b0c") + "fd0301020304";
  const plain = decodeRequest(unhex("0807" + ld("6a", "0a0164" + "120173")));
  const padded = decodeRequest(
    unhex(unknown + "0807" + unknown + ld("6a", unknown + "0a0164" + unknown + "120173" + unknown)),
  );
  assert.deepStrictEqual(padded, plain);
  assert.deepStrictEqual(plain, {
    request_id: 7,
    read_signals: { device_id: "d", signal_ids: ["s"] },
    payload: "read_signals",
  });
});

Deno.test("decodeRequest keeps the last oneof member on the wire, and only that one", () => {
  const got = decodeRequest(unhex("0801" + "5200" + ld("62", "0a0164")));
  assert.deepStrictEqual(got, {
    request_id: 1,
    describe_device: { device_id: "d" },
    payload: "describe_device",
  });
});

Deno.test("decodeRequest keeps the last value of a repeated singular field, omitted when default", () => {
  assert.deepStrictEqual(decodeRequest(unhex("0805" + "0809")), { request_id: 9 });
  assert.deepStrictEqual(decodeRequest(unhex("0805" + "0800")), {});
});

Deno.test("decodeRequest omits fields sent explicitly at their default, keeps empty sub-messages", () => {
  // read_signals { device_id: "", min_timestamp: { seconds: 0 } }
  const got = decodeRequest(unhex("0801" + ld("6a", "0a00" + ld("1a", "0800"))));
  assert.deepStrictEqual(got, {
    request_id: 1,
    read_signals: { min_timestamp: {} },
    payload: "read_signals",
  });
});

Deno.test("decodeRequest keeps a Value member sent at its default (oneof members have presence)", () => {
  const got = decodeRequest(
    unhex("0801" + ld("72", ld("22", "0a0178" + ld("12", "0800" + "1800")))),
  );
  assert.deepStrictEqual(got.call?.args, { x: { int64_value: 0, kind: "int64_value" } });
});

Deno.test("decodeResponse fills an incomplete map entry with the defaults of key and value", () => {
  // Status.details: an entry with a value only, then one with a key only.
  const got = decodeResponse(unhex("0801" + ld("12", ld("1a", "120176") + ld("1a", "0a016b"))));
  assert.deepStrictEqual(got.status?.details, { "": "v", k: "" });
  // CallRequest.args: an entry without its Value decodes to an empty Value.
  const req = decodeRequest(unhex("0801" + ld("72", ld("22", "0a0178"))));
  assert.deepStrictEqual(req.call?.args, { x: {} });
});

Deno.test("decodeResponse stores a map key __proto__ as an own property, never as the prototype", () => {
  const key = hex(new TextEncoder().encode("__proto__"));
  const got = decodeResponse(unhex("0801" + ld("12", ld("1a", ld("0a", key) + "120178"))));
  const details = got.status!.details!;
  assert.equal(Object.getPrototypeOf(details), Object.prototype);
  assert.deepStrictEqual(Object.keys(details), ["__proto__"]);
  assert.equal(Object.getOwnPropertyDescriptor(details, "__proto__")?.value, "x");
  // and it goes back on the wire as a key like any other
  assert.equal(hex(encodeResponse(got)), "0801" + ld("12", ld("1a", ld("0a", key) + "120178")));
});

Deno.test("decodeResponse returns bytes that do not alias the input buffer", () => {
  const bytes = unhex(responseWithValue(ld("3a", "010203")));
  const got = decodeResponse(bytes);
  bytes.fill(0xee);
  assert.deepStrictEqual(
    (got.read_signals?.values?.[0])!.value?.bytes_value,
    Uint8Array.of(1, 2, 3),
  );
});

Deno.test("decodeResponse on 20000 random corruptions of a valid message throws an Error or returns an object", () => {
  const valid = encodeResponse({
    request_id: 77,
    status: { code: 1, message: "ok", details: { a: "b" } },
    read_signals: {
      device_id: "tempctl0",
      values: [
        {
          signal_id: "t",
          value: { type: 4, double_value: 21.5 },
          timestamp: { seconds: 1, nanos: 2 },
          quality: 1,
        },
        { signal_id: "n", value: { type: 3, uint64_value: 2n ** 64n - 1n }, metadata: { u: "v" } },
      ],
    },
  });
  const rnd = prng(12);
  let threw = 0;
  for (let n = 0; n < 20000; n++) {
    const bytes = valid.slice();
    for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
      bytes[Math.floor(rnd() * bytes.length)] = Math.floor(rnd() * 256);
    }
    try {
      const got = decodeResponse(bytes);
      assert.equal(typeof got, "object");
    } catch (err) {
      assert.ok(err instanceof Error, `corruption ${n} threw a non-Error`);
      threw++;
    }
  }
  assert.ok(threw > 1000, `only ${threw} corruptions were refused`);
});
