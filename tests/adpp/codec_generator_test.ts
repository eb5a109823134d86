/**
 * The codec generator (scripts/gen_proto_module.ts) on a test schema with what ADPP does not use
 * yet: every scalar type, packed and unpacked repeated numbers, maps of every value kind, oneofs
 * of scalars and messages, proto3 optional, exact 64-bit fields, the largest field number. The
 * generated module is written to a temporary file, imported, and checked against protobufjs.
 */
import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { codecModuleSource } from "../../scripts/gen_proto_module.ts";
import { exactOf, normalize, ReferenceCodec, TO_OBJECT } from "./_reference_codec.ts";
import { RandomMessages } from "./_random_message.ts";
import { hex } from "./_golden.ts";

const TEST_PROTO = `
syntax = "proto3";
package codectest.v1;
enum Color { COLOR_UNSPECIFIED = 0; COLOR_RED = 1; COLOR_GREEN = 2; }
message Scalars {
  double d = 1; float f = 2; int32 i32 = 3; int64 i64 = 4; uint32 u32 = 5; uint64 u64 = 6;
  sint32 s32 = 7; sint64 s64 = 8; fixed32 fx32 = 9; fixed64 fx64 = 10; sfixed32 sfx32 = 11;
  sfixed64 sfx64 = 12; bool b = 13; string s = 14; bytes by = 15; Color color = 16;
}
message Repeated {
  repeated double d = 1; repeated float f = 2; repeated int32 i32 = 3; repeated int64 i64 = 4;
  repeated uint32 u32 = 5; repeated uint64 u64 = 6; repeated sint32 s32 = 7; repeated sint64 s64 = 8;
  repeated fixed32 fx32 = 9; repeated fixed64 fx64 = 10; repeated sfixed32 sfx32 = 11;
  repeated sfixed64 sfx64 = 12; repeated bool b = 13; repeated string s = 14; repeated bytes by = 15;
  repeated Color color = 16; repeated Scalars msgs = 17;
  repeated int32 unpacked_i32 = 18 [packed = false]; repeated double unpacked_d = 19 [packed = false];
}
message RepeatedUnpacked {
  repeated double d = 1 [packed = false]; repeated float f = 2 [packed = false];
  repeated int32 i32 = 3 [packed = false]; repeated int64 i64 = 4 [packed = false];
  repeated uint32 u32 = 5 [packed = false]; repeated uint64 u64 = 6 [packed = false];
  repeated sint32 s32 = 7 [packed = false]; repeated sint64 s64 = 8 [packed = false];
  repeated fixed32 fx32 = 9 [packed = false]; repeated fixed64 fx64 = 10 [packed = false];
  repeated sfixed32 sfx32 = 11 [packed = false]; repeated sfixed64 sfx64 = 12 [packed = false];
  repeated bool b = 13 [packed = false]; repeated string s = 14; repeated bytes by = 15;
  repeated Color color = 16 [packed = false]; repeated Scalars msgs = 17;
  repeated int32 unpacked_i32 = 18; repeated double unpacked_d = 19;
}
message Optionals {
  optional int32 i32 = 1; optional string s = 2; optional Color color = 3; optional uint64 u64 = 4;
  optional bytes by = 5; optional bool b = 6; optional double d = 7; optional sint64 s64 = 8;
}
message Maps {
  map<string, int32> i32 = 1; map<string, Scalars> msgs = 2; map<string, bytes> by = 3;
  map<string, Color> color = 4; map<string, sint64> s64 = 5; map<string, double> d = 6;
  map<string, bool> b = 7; map<string, fixed64> fx64 = 8;
}
message Choice {
  oneof pick { int32 a = 1; string b = 2; Scalars c = 3; bytes d = 4; Color e = 5; sint64 f = 6; }
  uint32 after = 100;
}
message Empty {}
message Top {
  Scalars scalars = 1; Repeated repeated = 2; Optionals optionals = 3; Maps maps = 4;
  Choice choice = 5; repeated Choice choices = 6;
  int64 exact = 7; uint64 exact_u = 8; sfixed64 exact_sf = 9; sint64 exact_s = 10;
  fixed64 exact_f = 11; Empty empty = 12;
  uint32 last_field = 536870911;
}
`;

const EXACT = ["exact", "exact_u", "exact_sf", "exact_s", "exact_f"];
const PKG = "codectest.v1";

function parse(source: string): unknown {
  const root = new protobuf.Root();
  protobuf.parse(source, root, { keepCase: true });
  root.resolveAll();
  return root.toJSON();
}

const SCHEMA = parse(TEST_PROTO);
const ref = new ReferenceCodec(SCHEMA);

type Codec = Record<string, (x: unknown) => Record<string, unknown> & Uint8Array>;

/** Generates the codec for `roots`, imports it from a temporary file. */
async function generated(roots: string[], exact64: string[] = []): Promise<Codec> {
  const source = codecModuleSource(SCHEMA, {
    roots: roots.map((r) => `${PKG}.${r}`),
    exact64: exact64.map((f) => `${PKG}.${f}`),
    runtimeDir: new URL("../../src/adpp/", import.meta.url).href,
    title: "codec test schema",
    source: "tests/adpp/codec_generator_test.ts",
  });
  const path = await Deno.makeTempFile({ prefix: "codec_", suffix: ".js" });
  try {
    await Deno.writeTextFile(path, source);
    return await import(`file://${path}`);
  } finally {
    await Deno.remove(path);
  }
}

const codec = await generated(["Top", "Repeated"], EXACT.map((f) => `Top.${f}`));

/** protobufjs's decode of a Top, with the exact fields read exactly. */
function referenceTop(bytes: Uint8Array): Record<string, unknown> {
  const expected = ref.decode(`${PKG}.Top`, bytes);
  const strings = ref.decode(`${PKG}.Top`, bytes, { ...TO_OBJECT, longs: String });
  for (const f of EXACT) if (f in strings) expected[f] = exactOf(strings[f]);
  return expected;
}

Deno.test("generated codec of the test schema encodes what protobufjs encodes, every field covered", () => {
  const gen = new RandomMessages(0xc0dec);
  for (let n = 0; n < 1500; n++) {
    const obj = gen.message(ref.type(`${PKG}.Top`));
    const ours = codec.encodeTop!(obj);
    const theirs = ref.encode(`${PKG}.Top`, obj);
    if (hex(ours) !== hex(theirs)) {
      assert.fail(`message ${n} encodes differently:\nours   ${hex(ours)}\ntheirs ${hex(theirs)}`);
    }
  }
  const missing: string[] = [];
  for (const name of ["Scalars", "Repeated", "Optionals", "Maps", "Choice", "Top"]) {
    for (const f of ref.type(`${PKG}.${name}`).fieldsArray) {
      if (!gen.covered.has(`.${PKG}.${name}.${f.name}`)) missing.push(`${name}.${f.name}`);
    }
  }
  assert.deepStrictEqual(missing, []);
});

Deno.test("generated codec of the test schema decodes protobufjs bytes as protobufjs does", () => {
  const gen = new RandomMessages(0xbeef);
  let bigints = 0;
  for (let n = 0; n < 1500; n++) {
    const bytes = ref.encode(`${PKG}.Top`, gen.message(ref.type(`${PKG}.Top`)));
    const got = codec.decodeTop!(bytes);
    for (const f of EXACT) if (typeof got[f] === "bigint") bigints++;
    try {
      assert.deepStrictEqual(normalize(got), referenceTop(bytes));
    } catch (err) {
      assert.fail(`message ${n} (${hex(bytes)}) decodes differently: ${(err as Error).message}`);
    }
    // Encoding a decoded object gives it back (not always the same bytes: 64-bit fields that are
    // not exact decode rounded beyond 2^53).
    assert.deepStrictEqual(normalize(codec.decodeTop!(codec.encodeTop!(got))), normalize(got));
  }
  assert.ok(bigints > 100, `only ${bigints} exact fields decoded as bigint`);
});

Deno.test("generated decoder accepts packed and unpacked repeated numbers, even mixed in one message", () => {
  const gen = new RandomMessages(0xfacade);
  let unpackedSeen = 0;
  for (let n = 0; n < 1000; n++) {
    const a = gen.message(ref.type(`${PKG}.Repeated`));
    const b = gen.message(ref.type(`${PKG}.Repeated`));
    const packed = ref.encode(`${PKG}.Repeated`, a);
    const unpacked = ref.encode(`${PKG}.RepeatedUnpacked`, b);
    if (hex(unpacked) !== hex(ref.encode(`${PKG}.Repeated`, b))) unpackedSeen++;
    for (const bytes of [unpacked, concat(packed, unpacked), concat(unpacked, packed)]) {
      assert.deepStrictEqual(
        normalize(codec.decodeRepeated!(bytes)),
        ref.decode(`${PKG}.Repeated`, bytes),
        hex(bytes),
      );
    }
  }
  assert.ok(unpackedSeen > 500, `only ${unpackedSeen} unpacked encodings differed from packed`);
});

Deno.test("generated encoder packs repeated numbers unless [packed = false]", () => {
  const bytes = codec.encodeRepeated!({ i32: [1, 2], unpacked_i32: [1, 2], s: ["a"] });
  // 1a 02 01 02 (packed field 3) | 72 01 61 (field 14) | 90 01 01 90 01 02 (field 18, a tag each)
  assert.equal(hex(bytes), "1a020102" + "720161" + "900101900102");
  assert.deepStrictEqual(codec.encodeRepeated!({ i32: [] }), new Uint8Array(0));
});

Deno.test("codecModuleSource refuses map keys other than string", () => {
  const schema = parse(`syntax = "proto3"; package t; message M { map<int32, string> m = 1; }`);
  assert.throws(
    () => codecModuleSource(schema, { roots: ["t.M"], title: "t", source: "t" }),
    /M\.m: map keys of type int32 are not supported/,
  );
});

Deno.test("codecModuleSource refuses recursive message types", () => {
  const schema = parse(
    `syntax = "proto3"; package t; message A { B b = 1; } message B { repeated A a = 1; }`,
  );
  assert.throws(
    () => codecModuleSource(schema, { roots: ["t.A"], title: "t", source: "t" }),
    /recursive message types are not supported: \.t\.A -> \.t\.B -> \.t\.A/,
  );
});

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
