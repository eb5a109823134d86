/**
 * protobufjs as the reference codec for the differential tests (test-only: the runtime loads no
 * protobufjs). Built from a JSON descriptor such as src/adpp/_schema.ts; decodes with the
 * conversion the ADPP codec used to run on, `toObject({longs: Number, enums: Number, oneofs:
 * true})`, plus exactness for the named 64-bit fields (read through Long's decimal text, so the
 * reference shares no bit arithmetic with the code under test).
 */
import protobuf from "protobufjs";
import { type ExactInteger, exactInteger } from "../../src/common/mod.ts";

export const TO_OBJECT: protobuf.IConversionOptions = {
  longs: Number,
  enums: Number,
  oneofs: true,
};

/** An exact integer from whatever protobufjs decoded (a Long or a number). */
export function exactOf(v: unknown): ExactInteger {
  return exactInteger(BigInt(String(v)));
}

/**
 * Registers the ADPP Value wrapper the protobufjs codec ran with: 64-bit members exact, `kind`
 * names the set member, `type` omitted at its default. Must run before the root is built.
 */
export function registerValueWrapper(fullName: string): void {
  (protobuf.wrappers as Record<string, unknown>)[`.${fullName}`] = {
    fromObject(this: { fromObject(o: unknown): unknown }, object: unknown) {
      return this.fromObject(object);
    },
    toObject(message: Record<string, unknown>) {
      const d: Record<string, unknown> = {};
      const own = (k: string) => Object.hasOwn(message, k) && message[k] != null;
      if (own("type") && message.type !== 0) d.type = message.type;
      for (const k of ["bool_value", "int64_value", "uint64_value", "double_value"]) {
        if (!own(k)) continue;
        d[k] = k.endsWith("64_value") ? exactOf(message[k]) : message[k];
        d.kind = k;
      }
      if (own("string_value")) d.string_value = message.string_value, d.kind = "string_value";
      if (own("bytes_value")) d.bytes_value = message.bytes_value, d.kind = "bytes_value";
      return d;
    },
  };
}

/** protobufjs encode/decode of one message type of a descriptor. */
export class ReferenceCodec {
  readonly root: protobuf.Root;

  constructor(schemaJson: unknown) {
    this.root = protobuf.Root.fromJSON(schemaJson as protobuf.INamespace);
    this.root.resolveAll();
  }

  type(fullName: string): protobuf.Type {
    return this.root.lookupType(fullName);
  }

  encode(fullName: string, obj: unknown): Uint8Array {
    const t = this.type(fullName);
    return t.encode(t.fromObject(obj as Record<string, unknown>)).finish();
  }

  decode(fullName: string, bytes: Uint8Array, opts = TO_OBJECT): Record<string, unknown> {
    const t = this.type(fullName);
    return normalize(t.toObject(t.decode(bytes), opts)) as Record<string, unknown>;
  }
}

/**
 * A decoded object in comparable form: Buffer (protobufjs's bytes) and Uint8Array both become
 * plain Uint8Array copies; map objects keep their own keys, `__proto__` included.
 */
export function normalize(v: unknown): unknown {
  if (v instanceof Uint8Array) return Uint8Array.from(v);
  if (Array.isArray(v)) return v.map(normalize);
  if (v === null || typeof v !== "object") return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    Object.defineProperty(out, k, {
      value: normalize((v as Record<string, unknown>)[k]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}
