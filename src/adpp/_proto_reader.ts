/**
 * Protobuf wire-format reading for the generated codec (_codec.js): varints, fixed-width numbers,
 * length-delimited fields, unknown-field skipping. Every read is bounded by `end` (the end of the
 * message being decoded, not of the buffer), so a field can never read past its enclosing
 * message; anything malformed throws an Error that says what and at which byte. Nothing is
 * allocated from a length read off the wire before that length is checked against the input.
 */
import { type ExactInteger, exactInteger } from "../common/mod.ts";

const TWO_POW_32 = 4294967296;

/** One decoder for every string field; `ignoreBOM` keeps a leading U+FEFF as a character. */
const UTF8 = new TextDecoder("utf-8", { ignoreBOM: true });

/** Strings up to this many bytes are tried as ASCII in JS (faster than TextDecoder up to ~24). */
const ASCII_FAST_MAX = 24;

/**
 * Slots of the cache of short ASCII strings (a power of two; one string per slot, a collision
 * replaces it): at most 1024 strings of at most ASCII_FAST_MAX characters.
 */
export const INTERNED_STRING_SLOTS = 1024;
const INTERNED: Array<string | undefined> = new Array(INTERNED_STRING_SLOTS);

/**
 * The cache slot of the bytes `buf[start..end)` (FNV-1a, 32 bit, low bits), or -1 when one of them
 * is not ASCII (such strings are decoded as UTF-8, not cached).
 */
export function asciiSlot(buf: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) {
    const b = buf[i];
    if (b! >= 0x80) return -1;
    hash = Math.imul(hash ^ b!, 0x01000193);
  }
  return hash & (INTERNED_STRING_SLOTS - 1);
}

/** True when `s` (one-byte characters) equals the bytes of `buf` from `at` on. */
function sameAscii(s: string, buf: Uint8Array, at: number): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) !== buf[at + i]) return false;
  return true;
}

// Scratch for fixed-width floats (no DataView per decoded message).
const F64 = new Float64Array(1);
const F64_BYTES = new Uint8Array(F64.buffer);
const F32 = new Float32Array(1);
const F32_BYTES = new Uint8Array(F32.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Wire types (protobuf encoding spec). */
export const WIRE_VARINT = 0;
export const WIRE_I64 = 1;
export const WIRE_LEN = 2;
export const WIRE_I32 = 5;

/** Cursor over one input buffer. The generated decoders use one instance per module. */
export class ProtoReader {
  buf: Uint8Array = new Uint8Array(0);
  pos = 0;
  /** End of the message being decoded (exclusive). */
  end = 0;
  /** High 32 bits of the last 64-bit value read (`varint`, `fixed64`). */
  hi = 0;
  /** Where the last tag started (errors about a field point at its tag). */
  tagAt = 0;

  /** Starts reading `bytes` from its first byte. */
  reset(bytes: Uint8Array): void {
    this.buf = bytes;
    this.pos = 0;
    this.end = bytes.length;
    this.hi = 0;
    this.tagAt = 0;
  }

  /** The error for malformed input at the current position. */
  malformed(what: string, at = this.pos): Error {
    return new Error(`malformed protobuf at byte ${at}: ${what}`);
  }

  /**
   * Reads a varint of up to 10 bytes: returns its low 32 bits (as an int32) and leaves the high
   * 32 bits in `hi`. Throws on a truncated varint or one longer than 64 bits.
   */
  varint(): number {
    const buf = this.buf;
    const end = this.end;
    let pos = this.pos;
    if (pos < end && buf[pos]! < 0x80) {
      this.hi = 0;
      this.pos = pos + 1;
      return buf[pos]!;
    }
    const start = pos;
    let lo = 0;
    let hi = 0;
    let b = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      if (pos >= end) throw this.malformed("truncated varint", start);
      b = buf[pos++]!;
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.pos = pos;
        this.hi = 0;
        return lo;
      }
    }
    if (pos >= end) throw this.malformed("truncated varint", start);
    b = buf[pos++]!; // 5th byte: bits 28..34
    lo |= (b & 0x0f) << 28;
    hi = (b & 0x7f) >> 4;
    if (b >= 0x80) {
      for (let shift = 3; shift < 31; shift += 7) {
        if (pos >= end) throw this.malformed("truncated varint", start);
        b = buf[pos++]!;
        hi |= (b & 0x7f) << shift;
        if (b < 0x80) break;
      }
      if (b >= 0x80) { // 10th byte: bit 63 only
        if (pos >= end) throw this.malformed("truncated varint", start);
        b = buf[pos++]!;
        if (b > 1) throw this.malformed("varint longer than 64 bits", start);
        hi |= b << 31;
      }
    }
    this.pos = pos;
    this.hi = hi;
    return lo;
  }

  /** A field tag (field number << 3 | wire type); throws on field number 0 or a tag past 32 bits. */
  tag(): number {
    const at = this.tagAt = this.pos;
    const t = this.varint() >>> 0;
    if (this.hi !== 0) throw this.malformed("tag longer than 32 bits", at);
    if (t < 8) throw this.malformed(`field number 0 (tag ${t})`, at);
    return t;
  }

  /** The length of a length-delimited field, checked against the bytes left in the message. */
  len(): number {
    const at = this.pos;
    const n = this.varint();
    if (this.hi !== 0 || n < 0 || n > this.end - this.pos) {
      const v = this.hi !== 0 ? "over 2^32" : String(n >>> 0);
      throw this.malformed(
        `length ${v} runs past the end of its message (${this.end - this.pos} bytes left)`,
        at,
      );
    }
    return n;
  }

  int32(): number {
    return this.varint() | 0;
  }

  uint32(): number {
    return this.varint() >>> 0;
  }

  sint32(): number {
    const n = this.varint();
    return (n >>> 1) ^ -(n & 1);
  }

  bool(): boolean {
    return (this.varint() | this.hi) !== 0;
  }

  /** int64 as a number (rounded beyond +/-2^53, like protobufjs with `longs: Number`). */
  int64(): number {
    const lo = this.varint() >>> 0;
    return (this.hi | 0) * TWO_POW_32 + lo;
  }

  /** uint64 as a number (rounded beyond 2^53). */
  uint64(): number {
    const lo = this.varint() >>> 0;
    return (this.hi >>> 0) * TWO_POW_32 + lo;
  }

  /** sint64 (zigzag) as a number. */
  sint64(): number {
    const lo = this.varint();
    const hi = this.hi;
    const mask = -(lo & 1);
    const l = (((lo >>> 1) | (hi << 31)) ^ mask) >>> 0;
    const h = ((hi >>> 1) ^ mask) | 0;
    return h * TWO_POW_32 + l;
  }

  /** int64 exactly: a number when safe, else a bigint. */
  int64Exact(): ExactInteger {
    return exact(this.varint() >>> 0, this.hi, false);
  }

  /** uint64 exactly: a number when safe, else a bigint. */
  uint64Exact(): ExactInteger {
    return exact(this.varint() >>> 0, this.hi, true);
  }

  /** sint64 (zigzag) exactly. */
  sint64Exact(): ExactInteger {
    const lo = this.varint();
    const hi = this.hi;
    const mask = -(lo & 1);
    return exact((((lo >>> 1) | (hi << 31)) ^ mask) >>> 0, (hi >>> 1) ^ mask, false);
  }

  /** 4 little-endian bytes as a uint32. */
  fixed32(): number {
    const p = this.#advance(4);
    const b = this.buf;
    return (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
  }

  sfixed32(): number {
    return this.fixed32() | 0;
  }

  /** fixed64 as a number (rounded beyond 2^53). */
  fixed64(): number {
    const lo = this.fixed32();
    return this.fixed32() * TWO_POW_32 + lo;
  }

  sfixed64(): number {
    const lo = this.fixed32();
    return (this.fixed32() | 0) * TWO_POW_32 + lo;
  }

  fixed64Exact(): ExactInteger {
    const lo = this.fixed32();
    return exact(lo, this.fixed32(), true);
  }

  sfixed64Exact(): ExactInteger {
    const lo = this.fixed32();
    return exact(lo, this.fixed32(), false);
  }

  float(): number {
    const p = this.#advance(4);
    const b = this.buf;
    if (LITTLE_ENDIAN) {
      F32_BYTES[0] = b[p]!,
        F32_BYTES[1] = b[p + 1]!,
        F32_BYTES[2] = b[p + 2]!,
        F32_BYTES[3] = b[p + 3]!;
    } else {
      F32_BYTES[3] = b[p]!,
        F32_BYTES[2] = b[p + 1]!,
        F32_BYTES[1] = b[p + 2]!,
        F32_BYTES[0] = b[p + 3]!;
    }
    return F32[0]!;
  }

  double(): number {
    const p = this.#advance(8);
    const b = this.buf;
    if (LITTLE_ENDIAN) {
      for (let i = 0; i < 8; i++) F64_BYTES[i] = b[p + i]!;
    } else {
      for (let i = 0; i < 8; i++) F64_BYTES[7 - i] = b[p + i]!;
    }
    return F64[0]!;
  }

  /** A length-delimited UTF-8 string (malformed sequences become U+FFFD, as TextDecoder does). */
  string(): string {
    const n = this.len();
    const p = this.pos;
    const end = p + n;
    this.pos = end;
    if (n === 0) return "";
    const buf = this.buf;
    if (n <= ASCII_FAST_MAX) {
      // Short ASCII (ids, units, "ok"): looked up among the strings decoded before, so the ids
      // every poll repeats are not allocated again.
      const slot = asciiSlot(buf, p, end);
      if (slot >= 0) {
        const known = INTERNED[slot];
        if (known !== undefined && known.length === n && sameAscii(known, buf, p)) return known;
        // One-byte characters, no TextDecoder round trip.
        let s = "";
        for (let i = p; i < end; i++) s += String.fromCharCode(buf[i]!);
        INTERNED[slot] = s;
        return s;
      }
    }
    return UTF8.decode(buf.subarray(p, end));
  }

  /** A length-delimited byte string, copied (the result never aliases the input buffer). */
  bytes(): Uint8Array {
    const n = this.len();
    const p = this.pos;
    this.pos = p + n;
    return this.buf.slice(p, p + n);
  }

  /** Skips the value of an unknown field; throws on group and invalid wire types. */
  skip(tag: number): void {
    switch (tag & 7) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_I64:
        this.#advance(8);
        return;
      case WIRE_LEN: {
        const n = this.len(); // (not `this.pos += this.len()`: len() moves pos first)
        this.pos += n;
        return;
      }
      case WIRE_I32:
        this.#advance(4);
        return;
      case 3:
      case 4:
        throw this.malformed(
          `group (wire type ${tag & 7}, field ${tag >>> 3}) not supported`,
          this.tagAt,
        );
      default:
        throw this.malformed(`invalid wire type ${tag & 7} (field ${tag >>> 3})`, this.tagAt);
    }
  }

  /** Moves past `n` bytes of the message; returns where they start. */
  #advance(n: number): number {
    const p = this.pos;
    if (n > this.end - p) {
      throw this.malformed(`truncated: ${n} bytes needed, ${this.end - p} left`, p);
    }
    this.pos = p + n;
    return p;
  }
}

/**
 * A 64-bit integer from its halves, exactly: a number when it is a safe integer, else a bigint.
 * The float sum is exact whenever the true value is safe and lands outside the safe range
 * whenever it is not, so the common case needs no bigint.
 */
function exact(lo: number, hi: number, unsigned: boolean): ExactInteger {
  const approx = (unsigned ? hi >>> 0 : hi | 0) * TWO_POW_32 + lo;
  if (Number.isSafeInteger(approx)) return approx;
  const bits = (BigInt(hi >>> 0) << 32n) | BigInt(lo);
  return exactInteger(unsigned ? bits : BigInt.asIntN(64, bits));
}
