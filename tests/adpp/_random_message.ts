/**
 * Seeded random plain objects for any message type of a protobufjs root, for the differential
 * codec tests: every field and oneof member reachable, edge values of every scalar type, maps,
 * repeated fields (empty ones too), explicit defaults, null/undefined members, sub-messages that
 * are empty. `covered` collects what was generated so a test can prove it reached everything.
 */
import protobuf from "protobufjs";
import { prng } from "../helpers/prng.ts";

/** The seeded generator the codec tests import from here (tests/helpers/prng.ts). */
export { prng };

const P31 = 2 ** 31;
const P32 = 2 ** 32;
const P53 = 2 ** 53;

const DOUBLES = [
  0,
  -0,
  1,
  -1,
  0.1,
  -2.5,
  1e308,
  -1.7976931348623157e308,
  5e-324,
  -5e-324,
  P53 + 2,
  NaN,
  Infinity,
  -Infinity,
  Math.PI,
];
const FLOATS = [0, -0, 1.5, -2, 0.1, 3.4e38, -3.4e38, 1e-45, NaN, Infinity, -Infinity, 65504];
const INT32S = [0, 1, -1, 127, 128, -128, P31 - 1, -P31, 300, -300, 1.5, -2.7];
const UINT32S = [0, 1, 127, 128, 16383, 16384, P31, P32 - 1, 2.9];
const INT64S: Array<number | bigint> = [
  0,
  1,
  -1,
  P31,
  -P31,
  P31 - 1,
  -P31 - 1,
  P32,
  P53 - 1,
  -(P53 - 1),
  2 ** 60, // unsafe but exact as a double
  -(2 ** 62),
  0n,
  9007199254740992n,
  9007199254740993n,
  -9007199254740993n,
  -9223372036854775808n,
  9223372036854775807n,
  -1n,
  1.5,
  -7.9,
];
const UINT64S: Array<number | bigint> = [
  0,
  1,
  P32,
  P53 - 1,
  2 ** 63, // exact as a double
  9007199254740992n,
  9007199254740993n,
  9223372036854775808n,
  18446744073709551615n,
  18446744073709551614n,
  0n,
  3.7,
];
const STRINGS = [
  "",
  "a",
  "motor1_speed",
  "é",
  "naïve café",
  "日本語",
  "😀",
  "a😀b",
  "\uFEFFbom first",
  "\u0000nul",
  "x".repeat(127),
  "y".repeat(128),
  "ü".repeat(70),
  "z".repeat(300),
];

/** Random generation of objects for a schema. */
export class RandomMessages {
  readonly covered = new Set<string>();
  readonly #rnd: () => number;

  constructor(seed: number) {
    this.#rnd = prng(seed);
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.#rnd() * n);
  }

  chance(p: number): boolean {
    return this.#rnd() < p;
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }

  /** A random object of `type`; `depth` bounds nesting. */
  message(type: protobuf.Type, depth = 0): Record<string, unknown> {
    const obj: Record<string, unknown> = {};
    const oneofDone = new Set<string>();
    for (const f of type.fieldsArray) {
      f.resolve();
      const oneof = f.partOf && !f.partOf.isProto3Optional ? f.partOf : null;
      if (oneof) {
        if (oneofDone.has(oneof.name)) continue;
        oneofDone.add(oneof.name);
        const members = oneof.fieldsArray;
        const i = this.int(members.length + 1);
        if (i === members.length) continue; // none set
        const m = members[i];
        m!.resolve();
        this.covered.add(`${type.fullName}.${m!.name}`);
        obj[m!.name] = this.single(m!, depth, true);
        continue;
      }
      if (this.chance(0.25)) continue;
      if (this.chance(0.03)) {
        obj[f.name] = this.chance(0.5) ? null : undefined; // absent either way
        continue;
      }
      this.covered.add(`${type.fullName}.${f.name}`);
      if (f.map) {
        const map: Record<string, unknown> = {};
        for (let n = this.int(4); n > 0; n--) map[this.string()] = this.single(f, depth, true);
        obj[f.name] = map;
      } else if (f.repeated) {
        const n = this.int(4);
        obj[f.name] = Array.from({ length: n }, () => this.single(f, depth, true));
      } else {
        obj[f.name] = this.single(f, depth, f.hasPresence === true || !!f.partOf);
      }
    }
    return obj;
  }

  /** One value of a field (an element for repeated fields, a value for maps). */
  single(f: protobuf.Field, depth: number, presence: boolean): unknown {
    const t = f.resolvedType;
    if (t instanceof protobuf.Type) {
      if (depth >= 4 || this.chance(0.15)) return {};
      return this.message(t, depth + 1);
    }
    if (t instanceof protobuf.Enum) {
      const known = Object.values(t.values);
      return this.chance(0.85) ? this.pick(known) : this.pick([99, -1, 1000, P31 - 1]);
    }
    const v = this.scalar(f.type);
    // Implicit-presence fields often carry their default explicitly (encoders must skip them).
    if (!presence && this.chance(0.1)) return this.zero(f.type);
    return v;
  }

  scalar(type: string): unknown {
    const r = this.#rnd;
    switch (type) {
      case "double":
        return this.chance(0.6) ? this.pick(DOUBLES) : (r() - 0.5) * 10 ** this.int(20);
      case "float":
        return this.chance(0.6) ? this.pick(FLOATS) : Math.fround((r() - 0.5) * 1000);
      case "int32":
      case "sint32":
      case "sfixed32":
        return this.chance(0.6) ? this.pick(INT32S) : this.int(P32) - P31;
      case "uint32":
      case "fixed32":
        return this.chance(0.6) ? this.pick(UINT32S) : this.int(P32);
      case "int64":
      case "sint64":
      case "sfixed64":
        return this.chance(0.6) ? this.pick(INT64S) : this.int(P53) - P53 / 2;
      case "uint64":
      case "fixed64":
        return this.chance(0.6) ? this.pick(UINT64S) : this.int(P53);
      case "bool":
        return this.chance(0.5);
      case "string":
        return this.string();
      case "bytes": {
        const n = this.chance(0.2) ? 0 : this.chance(0.9) ? this.int(20) : 200 + this.int(200);
        return Uint8Array.from({ length: n }, () => this.int(256));
      }
    }
    throw new Error(`no generator for ${type}`);
  }

  zero(type: string): unknown {
    switch (type) {
      case "string":
        return "";
      case "bytes":
        return new Uint8Array(0);
      case "bool":
        return false;
      default:
        return this.chance(0.5) && type.endsWith("64") ? 0n : 0;
    }
  }

  /** Well-formed text (no lone surrogates): edge strings or random code points of every width. */
  string(): string {
    if (this.chance(0.5)) return this.pick(STRINGS);
    const n = this.int(this.chance(0.9) ? 16 : 400);
    let s = "";
    for (let i = 0; i < n; i++) {
      const width = this.int(4);
      const cp = width === 0
        ? 0x20 + this.int(0x5f)
        : width === 1
        ? 0x80 + this.int(0x780)
        : width === 2
        ? 0xe000 + this.int(0x1ff0) // BMP above the surrogates
        : 0x10000 + this.int(0x100000);
      s += String.fromCodePoint(cp);
    }
    return s;
  }
}
