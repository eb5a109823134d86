/**
 * The generated ADPP codec against protobufjs (the library it replaced, loaded here only):
 * thousands of seeded random Requests and Responses covering every field and oneof member, edge
 * values of every type. Our bytes must equal protobufjs's, and protobufjs's bytes must decode to
 * what protobufjs's `toObject` (with the Value wrapper the runtime used) gives.
 */
import assert from "node:assert/strict";
import { ADPP_SCHEMA_JSON } from "../../src/adpp/_schema.ts";
import {
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  type WireRequest,
  type WireResponse,
} from "../../src/adpp/mod.ts";
import { normalize, ReferenceCodec, registerValueWrapper } from "./_reference_codec.ts";
import { RandomMessages } from "./_random_message.ts";
import { hex } from "./_golden.ts";

const PKG = "anolis.deviceprovider.v1";
registerValueWrapper(`${PKG}.Value`);
const ref = new ReferenceCodec(ADPP_SCHEMA_JSON);

const ROUNDS = 3000;

const CODECS = [
  {
    name: "Request",
    encode: (o: unknown) => encodeRequest(o as WireRequest),
    decode: decodeRequest,
  },
  {
    name: "Response",
    encode: (o: unknown) => encodeResponse(o as WireResponse),
    decode: decodeResponse,
  },
] as const;

/** Every field of every message reachable from `type`, as `.pkg.Type.field`. */
function allFields(typeName: string): Set<string> {
  const out = new Set<string>();
  const seen = new Set<string>();
  const walk = (t: ReturnType<ReferenceCodec["type"]>) => {
    if (seen.has(t.fullName)) return;
    seen.add(t.fullName);
    for (const f of t.fieldsArray) {
      f.resolve();
      out.add(`${t.fullName}.${f.name}`);
      const rt = f.resolvedType;
      if (rt && "fieldsArray" in rt) walk(rt as typeof t);
    }
  };
  walk(ref.type(typeName));
  return out;
}

for (const [i, c] of CODECS.entries()) {
  Deno.test(`encode${c.name} writes the bytes protobufjs writes, for ${ROUNDS} random messages covering every field`, () => {
    const full = `${PKG}.${c.name}`;
    const gen = new RandomMessages(0x5eed + i);
    for (let n = 0; n < ROUNDS; n++) {
      const obj = gen.message(ref.type(full));
      const ours = c.encode(obj);
      const theirs = ref.encode(full, obj);
      if (hex(ours) !== hex(theirs)) {
        assert.fail(
          `message ${n} encodes differently:\n${show(obj)}\nours   ${hex(ours)}\ntheirs ${
            hex(theirs)
          }`,
        );
      }
    }
    assert.deepStrictEqual([...allFields(full)].filter((f) => !gen.covered.has(f)), []);
  });

  Deno.test(`decode${c.name} of protobufjs bytes equals protobufjs toObject, for ${ROUNDS} random messages`, () => {
    const full = `${PKG}.${c.name}`;
    const gen = new RandomMessages(0xdec0de + i);
    for (let n = 0; n < ROUNDS; n++) {
      const obj = gen.message(ref.type(full));
      const bytes = ref.encode(full, obj);
      const expected = ref.decode(full, bytes);
      const got = c.decode(bytes);
      try {
        assert.deepStrictEqual(normalize(got), expected);
      } catch (err) {
        assert.fail(`message ${n} (${hex(bytes)}) decodes differently: ${(err as Error).message}`);
      }
      // and encoding the decoded object gives it back
      assert.deepStrictEqual(normalize(c.decode(c.encode(got))), expected);
    }
  });

  Deno.test(`decode${c.name} throws exactly where protobufjs throws on every truncation of random messages`, () => {
    const full = `${PKG}.${c.name}`;
    const gen = new RandomMessages(0x7a11 + i);
    let threw = 0;
    for (let n = 0; n < 200; n++) {
      const bytes = ref.encode(full, gen.message(ref.type(full)));
      const whole = hex(bytes); // once: per cut it cost O(length²) on long messages
      for (let cut = 0; cut < bytes.length; cut++) {
        const prefix = bytes.subarray(0, cut);
        let expected: unknown;
        try {
          expected = ref.decode(full, prefix);
        } catch {
          expected = "throws";
        }
        let got: unknown;
        try {
          got = normalize(c.decode(prefix));
        } catch (err) {
          assert.ok(err instanceof Error);
          got = "throws";
          threw++;
        }
        assert.deepStrictEqual(got, expected, `${whole} cut at ${cut}`);
      }
    }
    assert.ok(threw > 1000, `only ${threw} truncations threw`);
  });
}

Deno.test("encodeRequest and decodeRequest agree with protobufjs on a request of every payload kind", () => {
  // One fixed example per oneof member, so a failure names the kind.
  const kinds: Record<string, unknown> = {
    hello: { protocol_version: "v1", client_name: "runtime", client_version: "0.2.0" },
    list_devices: { include_health: true },
    describe_device: { device_id: "tempctl0" },
    read_signals: { device_id: "d", signal_ids: ["a", "b"], min_timestamp: { seconds: 5 } },
    call: { device_id: "d", function_id: 7, args: { x: { type: 4, double_value: -0 } } },
    get_health: {},
    wait_ready: { max_wait_ms_hint: 60000 },
  };
  for (const [kind, payload] of Object.entries(kinds)) {
    const msg = { request_id: 42, [kind]: payload };
    const bytes = encodeRequest(msg as WireRequest);
    assert.equal(hex(bytes), hex(ref.encode(`${PKG}.Request`, msg)), kind);
    const got = decodeRequest(bytes);
    assert.equal(got.payload, kind);
    assert.deepStrictEqual(normalize(got), ref.decode(`${PKG}.Request`, bytes), kind);
  }
});

function show(o: unknown): string {
  return Deno.inspect(o, { depth: 10, colors: false, breakLength: 200 });
}
