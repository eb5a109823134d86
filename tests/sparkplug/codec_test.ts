/**
 * The Sparkplug B payload codec (src/sparkplug/_codec.js) is what scripts/gen_proto_module.ts
 * generates from Eclipse Tahu's sparkplug_b.proto, and it agrees byte for byte with protobufjs
 * (the reference here, never loaded by the runtime) on the payloads an edge node sends.
 */
import assert from "node:assert/strict";
import protobuf from "protobufjs";
import {
  parseSparkplugProto,
  SPARKPLUG_CODEC_MODULE,
  SPARKPLUG_CODEC_TYPES,
  sparkplugCodecSource,
  sparkplugCodecTypes,
} from "../../scripts/gen_proto_module.ts";
import { decodePayload, encodePayload } from "../../src/sparkplug/_codec.js";

const reference = protobuf.Root.fromJSON(
  (await parseSparkplugProto()) as protobuf.INamespace,
).lookupType("org.eclipse.tahu.protobuf.Payload");

Deno.test("src/sparkplug/_codec.js and .d.ts are generated from proto/sparkplug_b (deno task proto)", async () => {
  const json = await parseSparkplugProto();
  assert.ok(
    Deno.readTextFileSync(SPARKPLUG_CODEC_MODULE) === sparkplugCodecSource(json),
    "src/sparkplug/_codec.js is out of date: run `deno task proto`",
  );
  assert.ok(
    Deno.readTextFileSync(SPARKPLUG_CODEC_TYPES) === sparkplugCodecTypes(json),
    "src/sparkplug/_codec.d.ts is out of date: run `deno task proto`",
  );
});

Deno.test("the vendored proto keeps Tahu's EPL-2.0 licence header", () => {
  const text = Deno.readTextFileSync(
    new URL("../../proto/sparkplug_b/sparkplug_b.proto", import.meta.url),
  );
  assert.ok(text.startsWith("// * Copyright (c) 2015, 2018 Cirrus Link Solutions and others"));
  assert.ok(text.includes("SPDX-License-Identifier: EPL-2.0"));
});

/** A birth-like payload with every value kind the edge node writes, properties included. */
const BIRTH = {
  timestamp: 1_700_000_000_123,
  seq: 0,
  metrics: [
    { name: "bdSeq", timestamp: 1_700_000_000_123, datatype: 8, long_value: 3 },
    { name: "Node Control/Rebirth", alias: 1, datatype: 11, boolean_value: false },
    { name: "temp", alias: 2, datatype: 10, double_value: -12.5 },
    { name: "count", alias: 3, datatype: 3, int_value: 0xffffff85 }, // Int32 -123
    { name: "big", alias: 4, datatype: 4, long_value: 2n ** 63n + 5n },
    { name: "label", alias: 5, datatype: 12, string_value: "" },
    { name: "off", alias: 6, datatype: 11, is_null: true },
    {
      name: "valve",
      alias: 7,
      datatype: 11,
      boolean_value: true,
      properties: {
        keys: ["Quality", "engUnit"],
        values: [
          { type: 3, int_value: 192 },
          { type: 12, string_value: "degC" },
        ],
      },
    },
  ],
};

Deno.test("encodePayload writes the bytes protobufjs writes, and each decodes the other's", () => {
  const ours = encodePayload(BIRTH).slice();
  const theirs = reference.encode(reference.fromObject(BIRTH)).finish();
  assert.deepStrictEqual(ours, new Uint8Array(theirs));
  const back = decodePayload(theirs);
  assert.equal(back.timestamp, BIRTH.timestamp);
  assert.equal(back.seq, 0, "a proto2 optional set to 0 is kept (presence)");
  assert.equal(back.metrics[4].long_value, 2n ** 63n + 5n, "UInt64 values decode exactly");
  assert.equal(back.metrics[5].string_value, "", "an empty string value is kept");
  assert.equal(back.metrics[6].is_null, true);
  assert.equal(back.metrics[6].value, undefined);
  assert.deepStrictEqual(back.metrics[7].properties.keys, ["Quality", "engUnit"]);
  assert.equal(back.metrics[7].properties.values[1].string_value, "degC");
  const viaReference = reference.toObject(reference.decode(ours), { longs: String });
  assert.equal(viaReference.metrics[2].doubleValue ?? viaReference.metrics[2].double_value, -12.5);
});

Deno.test("decodePayload bounds the nesting of its recursive types and says where", () => {
  // PropertyValue.propertyset_value -> PropertySet.values -> PropertyValue ... 100 levels.
  let value: Record<string, unknown> = { type: 3, int_value: 1 };
  for (let i = 0; i < 100; i++) {
    value = { type: 20, propertyset_value: { keys: ["k"], values: [value] } };
  }
  const bytes = encodePayload({
    metrics: [{ name: "m", properties: { keys: ["k"], values: [value] } }],
  })
    .slice();
  assert.throws(() => decodePayload(bytes), /nested deeper than 64/);
  // The codec is usable again after the refusal.
  assert.equal(decodePayload(encodePayload({ seq: 7 }).slice()).seq, 7);
});

Deno.test("decodePayload refuses malformed bytes", () => {
  assert.throws(() => decodePayload(new Uint8Array([0x12, 0x05, 0x0a])));
});
