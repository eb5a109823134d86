/**
 * ReadSignals answers decoded straight into reused slots, for the poll path: the generated
 * decoder (_codec.js) makes a SignalValue, a Value and a Timestamp object per sample and an array
 * and two objects per answer, all garbage once the cache has read them (~1.2 KB per device poll).
 * A SampleBatch is made once per polled device and refilled by every answer.
 *
 * The decoding mirrors the generated decoder's (the same ProtoReader calls in the same order, a
 * repeated singular field's last occurrence wins, a field of a known number with another wire
 * type is skipped as unknown, unknown fields are skipped), so what it accepts and how it reads it
 * are the generated decoder's; tests/adpp/read_signals_test.ts holds the two against each other on
 * random and hand-made answers. Anything else -- an answer with another payload member, two
 * read_signals members, a status other than OK, malformed bytes -- is left to the generated
 * decoder (`fastResponseId` answers -1), which gives the usual answer or error.
 */
import { ProtoReader } from "./_proto_reader.ts";
import {
  encodeRequest,
  type RequestPayloads,
  StatusCode,
  type WireSignalValue,
  WireValueType,
} from "./codec.ts";
import {
  boolValue,
  doubleValue,
  type ExactInteger,
  exactInteger,
  int64Value,
  stringValue,
  type TypedValue,
  uint64Value,
  type ValueType,
} from "../common/mod.ts";
import { bytesToBase64, valueTypeToWire } from "./convert.ts";
import { isOtherDeviceAnswer } from "./other_device_answer.ts";

/** What a sample's `value` holds (the member of the Value's `kind` oneof, numbered as its field). */
export const SampleValueKind = {
  /** No Value in the sample. */
  ABSENT: 0,
  /** A Value with no member set. */
  EMPTY: 1,
  BOOL: 2,
  INT64: 3,
  UINT64: 4,
  DOUBLE: 5,
  STRING: 6,
  BYTES: 7,
} as const;

/** Samples a batch has slots for before the first answer (grown by doubling past it). */
const MIN_SLOTS = 4;

/**
 * The samples of one ReadSignals answer, slot `i` for the answer's `values[i]`: its signal id,
 * quality, Value (member kind, `type`, and the member in `nums` (numbers, bools as 0/1, 64-bit
 * integers that are safe) or `refs` (strings, bytes, 64-bit integers beyond 2^53 as bigints)) and
 * Timestamp. Each sample's `metadata` is read past, not kept (the poll path does not use it); the
 * answer's `device_id` is compared with the device asked about and kept only when it names
 * another (`otherDeviceId`). Refilled in place by each answer: a reader must be done with one
 * answer's samples before the next is decoded into it.
 */
export class SampleBatch {
  /** Samples of the last answer. */
  count = 0;
  /**
   * The last answer's `device_id` when it names a device other than the one asked about (its
   * samples are then that device's, not the asked one's); null when it names the asked device or
   * none (an empty `device_id`, as discovery takes one, is the device asked about).
   */
  otherDeviceId: string | null = null;
  signalIds: string[];
  /** SignalValue.quality (the wire enum). */
  qualities: Int32Array;
  /** SampleValueKind of each sample's value. */
  kinds: Uint8Array;
  /** Value.type (the wire enum; 0 when unset). */
  valueTypes: Int32Array;
  nums: Float64Array;
  refs: (string | Uint8Array | bigint | undefined)[];
  /** 1 when the sample carries a Timestamp. */
  stamped: Uint8Array;
  seconds: Float64Array;
  nanos: Int32Array;

  /** `slots`: the samples an answer is expected to carry (more grow the batch). */
  constructor(slots = MIN_SLOTS) {
    const n = Math.max(1, slots);
    this.signalIds = new Array<string>(n).fill("");
    this.qualities = new Int32Array(n);
    this.kinds = new Uint8Array(n);
    this.valueTypes = new Int32Array(n);
    this.nums = new Float64Array(n);
    this.refs = new Array(n).fill(undefined);
    this.stamped = new Uint8Array(n);
    this.seconds = new Float64Array(n);
    this.nanos = new Int32Array(n);
  }

  /** Empties it. */
  clear(): void {
    // Nothing of the last answer kept alive (a loop: Array.prototype.fill allocates here).
    const refs = this.refs;
    for (let i = 0; i < this.count; i++) refs[i] = undefined;
    this.count = 0;
    this.otherDeviceId = null;
  }

  /** Adds an empty sample (grown when full) and returns its slot. */
  add(): number {
    const i = this.count;
    if (i === this.kinds.length) this.#grow();
    this.count = i + 1;
    this.signalIds[i] = "";
    this.qualities[i] = 0;
    this.kinds[i] = SampleValueKind.ABSENT;
    this.valueTypes[i] = 0;
    this.nums[i] = 0;
    this.refs[i] = undefined;
    this.stamped[i] = 0;
    this.seconds[i] = 0;
    this.nanos[i] = 0;
    return i;
  }

  #grow(): void {
    const n = this.kinds.length * 2;
    this.signalIds.length = n;
    this.refs.length = n;
    this.qualities = grown(this.qualities, new Int32Array(n));
    this.kinds = grown(this.kinds, new Uint8Array(n));
    this.valueTypes = grown(this.valueTypes, new Int32Array(n));
    this.nums = grown(this.nums, new Float64Array(n));
    this.stamped = grown(this.stamped, new Uint8Array(n));
    this.seconds = grown(this.seconds, new Float64Array(n));
    this.nanos = grown(this.nanos, new Int32Array(n));
  }

  /**
   * Refills it from the generated decoder's answer (the answers the fast path leaves to it):
   * its `values`, and its `device_id` compared with `askedDeviceId` (otherDeviceId).
   */
  fillFrom(values: readonly WireSignalValue[], answeredDeviceId = "", askedDeviceId = ""): void {
    this.clear();
    if (isOtherDeviceAnswer(askedDeviceId, answeredDeviceId)) {
      this.otherDeviceId = answeredDeviceId;
    }
    for (const sv of values) {
      const i = this.add();
      this.signalIds[i] = sv.signal_id ?? "";
      this.qualities[i] = sv.quality ?? 0;
      const v = sv.value;
      if (v !== undefined) {
        this.kinds[i] = SampleValueKind.EMPTY;
        this.valueTypes[i] = v.type ?? 0;
        if (v.bool_value !== undefined) this.#setNum(i, SampleValueKind.BOOL, +v.bool_value);
        else if (v.int64_value !== undefined) this.#setInt(i, SampleValueKind.INT64, v.int64_value);
        else if (v.uint64_value !== undefined) {
          this.#setInt(i, SampleValueKind.UINT64, v.uint64_value);
        } else if (v.double_value !== undefined) {
          this.#setNum(i, SampleValueKind.DOUBLE, v.double_value);
        } else if (v.string_value !== undefined) {
          this.kinds[i] = SampleValueKind.STRING;
          this.refs[i] = v.string_value;
        } else if (v.bytes_value !== undefined) {
          this.kinds[i] = SampleValueKind.BYTES;
          this.refs[i] = v.bytes_value;
        }
      }
      const ts = sv.timestamp;
      if (ts !== undefined) {
        this.stamped[i] = 1;
        this.seconds[i] = ts.seconds ?? 0;
        this.nanos[i] = ts.nanos ?? 0;
      }
    }
  }

  #setNum(i: number, kind: number, x: number): void {
    this.kinds[i] = kind;
    this.nums[i] = x;
    this.refs[i] = undefined;
  }

  #setInt(i: number, kind: number, x: ExactInteger): void {
    this.kinds[i] = kind;
    if (typeof x === "bigint") {
      this.nums[i] = 0;
      this.refs[i] = x;
    } else {
      this.nums[i] = x;
      this.refs[i] = undefined;
    }
  }

  /** The exact 64-bit integer of an INT64 or UINT64 sample. */
  exactAt(i: number): ExactInteger {
    const ref = this.refs[i];
    return typeof ref === "bigint" ? ref : this.nums[i]!;
  }

  /** Sample `i`'s value as the runtime types it (typedValueFromWire); null without a member. */
  typedValue(i: number): TypedValue | null {
    switch (this.kinds[i]) {
      case SampleValueKind.DOUBLE:
        return doubleValue(this.nums[i]!);
      case SampleValueKind.INT64:
        return int64Value(this.exactAt(i));
      case SampleValueKind.UINT64:
        return uint64Value(this.exactAt(i));
      case SampleValueKind.BOOL:
        return boolValue(this.nums[i] !== 0);
      case SampleValueKind.STRING:
        return stringValue(this.refs[i] as string);
      case SampleValueKind.BYTES:
        return { type: "bytes", base64: bytesToBase64(this.refs[i] as Uint8Array) };
      default:
        return null;
    }
  }

  /**
   * Whether `typedValue(i)` would make a value equal to `t` (as sameValue compares): finite
   * doubles, bools and strings; anything else answers false (a new value is made). The tests hold
   * it to tests/adpp/_wire_reference.ts `wireRepeats`.
   */
  repeats(i: number, t: TypedValue | null | undefined): boolean {
    if (!t) return false;
    switch (t.type) {
      case "double":
        return this.kinds[i] === SampleValueKind.DOUBLE && t.non_finite === undefined &&
          Object.is(this.nums[i], t.double);
      case "bool":
        return this.kinds[i] === SampleValueKind.BOOL && (this.nums[i] !== 0) === t.bool;
      case "string":
        return this.kinds[i] === SampleValueKind.STRING && this.refs[i] === t.string;
      default:
        return false;
    }
  }

  /**
   * Whether the Value's own `type` agrees with its member's type `t`: an UNSPECIFIED `type` agrees
   * with any member (tests/adpp/_wire_reference.ts `wireTypeAgrees`).
   */
  typeAgrees(i: number, t: ValueType): boolean {
    return wireTypeAgrees(this.valueTypes[i]!, t);
  }

  /** The sample's Timestamp in epoch ms (timestampToMs), or null when it carries none. */
  timestampMs(i: number): number | null {
    if (this.stamped[i] === 0) return null;
    return this.seconds[i]! * 1000 + Math.floor(this.nanos[i]! / 1e6);
  }
}

/** Whether a Value's own `type` (UNSPECIFIED: not said) agrees with the kind its value holds. */
export function wireTypeAgrees(wire: number, t: ValueType): boolean {
  return wire === WireValueType.UNSPECIFIED || wire === valueTypeToWire(t);
}

function grown<T extends Int32Array | Uint8Array | Float64Array>(old: T, into: T): T {
  into.set(old);
  return into;
}

/**
 * A ReadSignals request encoded once, for a request sent again and again (a device's polls):
 * AdppClient.sendRead writes its request_id and these bytes, with no message object and no
 * encoding per request. The payload must not change once prepared.
 */
export class PreparedRead {
  readonly payload: RequestPayloads["read_signals"];
  /** The Request's bytes but its request_id (the read_signals member); empty when `error`. */
  readonly body: Uint8Array;
  /** Why the payload cannot be encoded (what sending it answers), or null. */
  readonly error: Error | null;
  /** The UTF-8 bytes of the payload's `device_id`: what an answer's `device_id` must be. */
  readonly deviceIdBytes: Uint8Array;

  constructor(payload: RequestPayloads["read_signals"]) {
    this.payload = payload;
    this.deviceIdBytes = new TextEncoder().encode(payload.device_id ?? "");
    let body = new Uint8Array(0);
    let error: Error | null = null;
    try {
      // request_id 0 is not written: what is left is what follows field 1 in a Request.
      body = encodeRequest({ request_id: 0, read_signals: payload }).slice();
    } catch (err) {
      error = err as Error;
    }
    this.body = body;
    this.error = error;
  }

  /** Bytes of the Request with request_id `id` (a safe integer > 0): its field 1 and the body. */
  requestLength(id: number): number {
    let n = 1;
    for (let v = id; v >= 0x80; v = Math.floor(v / 0x80)) n++;
    return 1 + n + this.body.length;
  }

  /**
   * Writes the Request with request_id `id` (a safe integer > 0) into `out` at `at` (room for
   * requestLength(id) bytes there), byte for byte as encodeRequest encodes it (field 1 first);
   * returns where it ends.
   */
  writeRequest(out: Uint8Array, at: number, id: number): number {
    out[at++] = 8; // field 1, varint
    let v = id;
    while (v >= 0x80) {
      out[at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    out[at++] = v;
    out.set(this.body, at);
    return at + this.body.length;
  }
}

const r = new ProtoReader();
const TWO_POW_32 = 4294967296;
const EMPTY_BYTES = new Uint8Array(0);

/** Where the last `fastResponseId` found the read_signals member (its bytes' start and end). */
let bodyStart = 0;
let bodyEnd = 0;

/**
 * The request_id of a Response (`bytes[start..end)`, the whole of `bytes` by default) the fast
 * path takes (a status OK, one read_signals member and no other payload member; fields it does
 * not know skipped), or -1 for any other (malformed ones too): those are for the generated
 * decoder. 0 for a taken answer without a request_id.
 */
export function fastResponseId(bytes: Uint8Array, start = 0, end = bytes.length): number {
  r.reset(bytes);
  r.pos = start;
  r.end = end;
  try {
    let id = 0;
    let code = -1; // no status
    let bodies = 0;
    while (r.pos < r.end) {
      const t = r.tag();
      switch (t) {
        case 8:
          id = r.uint64();
          break;
        case 18: {
          const n = r.len();
          const e = r.end;
          r.end = r.pos + n;
          code = statusCode();
          r.end = e;
          break;
        }
        case 106: {
          const n = r.len();
          bodyStart = r.pos;
          bodyEnd = r.pos + n;
          r.pos = bodyEnd;
          bodies++;
          break;
        }
        case 82:
        case 90:
        case 98:
        case 114:
        case 122:
        case 130:
          return -1; // another payload member
        default:
          r.skip(t);
      }
    }
    return code === StatusCode.OK && bodies === 1 ? id : -1;
  } catch {
    return -1;
  } finally {
    r.reset(EMPTY_BYTES);
  }
}

/** A Status's code, read as d_Status reads the message (its message and details read past). */
function statusCode(): number {
  let code = 0;
  while (r.pos < r.end) {
    const t = r.tag();
    switch (t) {
      case 8:
        code = r.int32();
        break;
      case 18:
        skipLen(); // a string: its UTF-8 decoding never fails
        break;
      case 26:
        mapEntry();
        break;
      default:
        r.skip(t);
    }
  }
  return code;
}

/** Whether `bytes[at..at+n)` are the bytes of `want`. */
function sameBytes(bytes: Uint8Array, at: number, n: number, want: Uint8Array): boolean {
  if (n !== want.length) return false;
  for (let i = 0; i < n; i++) if (bytes[at + i] !== want[i]) return false;
  return true;
}

/** Reads past a length-delimited field (not `r.pos += r.len()`: len() moves pos first). */
function skipLen(): void {
  const n = r.len();
  r.pos += n;
}

/** Reads past a map<string, string> entry as the generated decoder reads one. */
function mapEntry(): void {
  const n = r.len();
  const e = r.end;
  r.end = r.pos + n;
  while (r.pos < r.end) {
    const t = r.tag();
    if (t === 10 || t === 18) skipLen();
    else r.skip(t);
  }
  r.end = e;
}

/**
 * Decodes the read_signals member `fastResponseId` found last in `bytes` (the same buffer, just
 * before) into `into`, its `device_id` compared with `askedDeviceId` (UTF-8 bytes; sets
 * `into.otherDeviceId` when it names another device). False when those bytes are malformed
 * (`into` then holds a part: the generated decoder says what is wrong with them).
 */
export function decodeReadSignalsInto(
  bytes: Uint8Array,
  into: SampleBatch,
  askedDeviceId: Uint8Array = EMPTY_BYTES,
): boolean {
  r.reset(bytes);
  r.pos = bodyStart;
  r.end = bodyEnd;
  into.clear();
  try {
    while (r.pos < r.end) {
      const t = r.tag();
      switch (t) {
        case 10: {
          // device_id: compared in place (a string is made only when it names another device);
          // a later occurrence replaces an earlier one, as in the generated decoder.
          const field = r.pos;
          const n = r.len();
          if (n === 0 || sameBytes(bytes, r.pos, n, askedDeviceId)) {
            into.otherDeviceId = null;
            r.pos += n;
          } else {
            r.pos = field;
            into.otherDeviceId = r.string();
          }
          break;
        }
        case 18: {
          const n = r.len();
          const e = r.end;
          r.end = r.pos + n;
          signalValue(into, into.add());
          r.end = e;
          break;
        }
        default:
          r.skip(t);
      }
    }
    return true;
  } catch {
    return false;
  } finally {
    r.reset(EMPTY_BYTES);
  }
}

function signalValue(b: SampleBatch, i: number): void {
  while (r.pos < r.end) {
    const t = r.tag();
    switch (t) {
      case 10:
        b.signalIds[i] = r.string();
        break;
      case 18: {
        const n = r.len();
        const e = r.end;
        r.end = r.pos + n;
        value(b, i);
        r.end = e;
        break;
      }
      case 26: {
        const n = r.len();
        const e = r.end;
        r.end = r.pos + n;
        timestamp(b, i);
        r.end = e;
        break;
      }
      case 32:
        b.qualities[i] = r.int32();
        break;
      case 42:
        mapEntry(); // metadata: not kept
        break;
      default:
        r.skip(t);
    }
  }
}

/** A Value (a later one in the same sample replaces an earlier one whole, as in d_SignalValue). */
function value(b: SampleBatch, i: number): void {
  let kind: number = SampleValueKind.EMPTY;
  let type = 0;
  let num = 0;
  let ref: string | Uint8Array | bigint | undefined = undefined;
  while (r.pos < r.end) {
    const t = r.tag();
    switch (t) {
      case 8:
        type = r.int32();
        break;
      case 16:
        kind = SampleValueKind.BOOL;
        num = r.bool() ? 1 : 0;
        ref = undefined;
        break;
      case 24:
      case 32: {
        // r.int64Exact() / r.uint64Exact() unrolled: a number they returned would be a heap
        // number per sample beyond 2^30; here a safe one goes straight to the slot.
        const unsigned = t === 32;
        kind = unsigned ? SampleValueKind.UINT64 : SampleValueKind.INT64;
        const lo = r.varint() >>> 0;
        const hi = r.hi;
        const approx = (unsigned ? hi >>> 0 : hi | 0) * TWO_POW_32 + lo;
        if (Number.isSafeInteger(approx)) {
          num = approx;
          ref = undefined;
        } else {
          const x = exactBeyondSafe(lo, hi, unsigned); // a bigint (ExactInteger's rule)
          num = typeof x === "bigint" ? 0 : x;
          ref = typeof x === "bigint" ? x : undefined;
        }
        break;
      }
      case 41:
        kind = SampleValueKind.DOUBLE;
        num = r.double();
        ref = undefined;
        break;
      case 50:
        kind = SampleValueKind.STRING;
        num = 0;
        ref = r.string();
        break;
      case 58:
        kind = SampleValueKind.BYTES;
        num = 0;
        ref = r.bytes();
        break;
      default:
        r.skip(t);
    }
  }
  b.kinds[i] = kind;
  b.valueTypes[i] = type;
  b.nums[i] = num;
  b.refs[i] = ref;
}

/** A 64-bit integer beyond the safe range from its halves, as ProtoReader's exact() makes it. */
function exactBeyondSafe(lo: number, hi: number, unsigned: boolean): ExactInteger {
  const bits = (BigInt(hi >>> 0) << 32n) | BigInt(lo);
  return exactInteger(unsigned ? bits : BigInt.asIntN(64, bits));
}

/** A Timestamp (a later one replaces an earlier one whole). */
function timestamp(b: SampleBatch, i: number): void {
  let seconds = 0;
  let nanos = 0;
  while (r.pos < r.end) {
    const t = r.tag();
    switch (t) {
      case 8:
        seconds = r.int64();
        break;
      case 16:
        nanos = r.int32();
        break;
      default:
        r.skip(t);
    }
  }
  b.stamped[i] = 1;
  b.seconds[i] = seconds;
  b.nanos[i] = nanos;
}
