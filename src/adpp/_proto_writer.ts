/**
 * Protobuf wire-format writing for the generated codec (_codec.ts). One writer per module encodes
 * into a reused buffer; a sub-message reserves one length byte and is shifted in the rare case
 * its length needs more (`begin`/`end`), so nothing is measured twice. `finish` copies the bytes
 * out, so a returned message never aliases the reused buffer.
 *
 * Input checks throw TypeError/RangeError naming the field: an unencodable object is a bug of the
 * code that built it, never something a peer sent.
 */

/** Initial size of the reused encode buffer. */
export const ENCODE_BUFFER_INITIAL_BYTES = 4096;

/**
 * The encode buffer grows to the largest message encoded; beyond this size it is dropped after
 * the message (the next encode starts again at ENCODE_BUFFER_INITIAL_BYTES), so a rare large
 * message does not pin its memory.
 */
export const ENCODE_BUFFER_RETAINED_BYTES = 65_536;

const TWO_POW_32 = 4294967296;
const TWO_POW_63 = 9223372036854775808; // exact as a double
const TWO_POW_64 = 18446744073709551616;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** One encoder for every string field. */
const UTF8 = new TextEncoder();

/** Short description of a value for error messages (never its full text). */
function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "number" || typeof v === "bigint" || typeof v === "boolean") {
    return `${typeof v} ${String(v)}`;
  }
  return typeof v;
}

/** TypeError for a field whose value has the wrong JS type. */
export function badType(field: string, expected: string, v: unknown): TypeError {
  return new TypeError(`${field}: expected ${expected}, got ${describe(v)}`);
}

/** Reused encode buffer with a write position. */
export class ProtoWriter {
  buf = new Uint8Array(ENCODE_BUFFER_INITIAL_BYTES);
  view = new DataView(this.buf.buffer);
  pos = 0;
  /** Halves of the last 64-bit integer checked by `split64` (two's complement). */
  lo = 0;
  hi = 0;

  /** Starts a new message. */
  reset(): void {
    this.pos = 0;
  }

  /** The encoded message, copied out; drops an oversized buffer. */
  finish(): Uint8Array {
    const out = this.buf.slice(0, this.pos);
    if (this.buf.length > ENCODE_BUFFER_RETAINED_BYTES) {
      this.buf = new Uint8Array(ENCODE_BUFFER_INITIAL_BYTES);
      this.view = new DataView(this.buf.buffer);
    }
    this.pos = 0;
    return out;
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  /** Writes a varint below 2^32 (tags, lengths, uint32). */
  uint32(v: number): void {
    this.ensure(5);
    const buf = this.buf;
    let pos = this.pos;
    while (v > 0x7f) {
      buf[pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[pos++] = v;
    this.pos = pos;
  }

  /** Writes an int32 (a negative one as its 10-byte sign extension). */
  int32(v: number): void {
    if (v >= 0) this.uint32(v);
    else this.varint64(v >>> 0, 0xffffffff);
  }

  sint32(v: number): void {
    this.uint32(((v << 1) ^ (v >> 31)) >>> 0);
  }

  /** Writes a 64-bit varint from its unsigned halves. */
  varint64(lo: number, hi: number): void {
    this.ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    while (hi !== 0) {
      buf[pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    while (lo > 0x7f) {
      buf[pos++] = (lo & 0x7f) | 0x80;
      lo >>>= 7;
    }
    buf[pos++] = lo;
    this.pos = pos;
  }

  /** Writes the halves left by `split64` as a varint. */
  int64(): void {
    this.varint64(this.lo, this.hi);
  }

  /** Writes the halves left by `split64` zigzag-encoded. */
  sint64(): void {
    const lo = this.lo;
    const hi = this.hi;
    const mask = hi >> 31;
    this.varint64(((lo << 1) ^ mask) >>> 0, (((hi << 1) | (lo >>> 31)) ^ mask) >>> 0);
  }

  /** Writes the halves left by `split64` as 8 little-endian bytes. */
  fixed64(): void {
    this.fixed32(this.lo);
    this.fixed32(this.hi);
  }

  fixed32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v >>> 0, true);
    this.pos += 4;
  }

  float(v: number): void {
    this.ensure(4);
    this.view.setFloat32(this.pos, v, true);
    this.pos += 4;
  }

  double(v: number): void {
    this.ensure(8);
    this.view.setFloat64(this.pos, v, true);
    this.pos += 8;
  }

  bool(v: boolean): void {
    this.ensure(1);
    this.buf[this.pos++] = v ? 1 : 0;
  }

  /** Writes a length-prefixed UTF-8 string (a lone surrogate becomes U+FFFD, as TextEncoder does). */
  string(s: string): void {
    const n = s.length;
    if (n < 0x80) {
      // Short ASCII: length byte + one byte per character, no TextEncoder round trip.
      this.ensure(1 + n);
      const buf = this.buf;
      const start = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[start + i] = c;
      }
      if (i === n) {
        buf[this.pos] = n;
        this.pos = start + n;
        return;
      }
    }
    const len = utf8Length(s);
    this.uint32(len);
    this.ensure(len);
    UTF8.encodeInto(s, this.buf.subarray(this.pos, this.pos + len));
    this.pos += len;
  }

  /** Writes a length-prefixed byte string. */
  bytes(b: Uint8Array): void {
    this.uint32(b.length);
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** Reserves one length byte for a sub-message; pass the result to `end`. */
  begin(): number {
    this.ensure(1);
    return ++this.pos;
  }

  /** Writes the length of the sub-message started at `start`, moving it when it needs more. */
  end(start: number): void {
    const len = this.pos - start;
    if (len < 0x80) {
      this.buf[start - 1] = len;
      return;
    }
    const extra = len < 0x4000 ? 1 : len < 0x200000 ? 2 : len < 0x10000000 ? 3 : 4;
    this.ensure(extra);
    this.buf.copyWithin(start + extra, start, this.pos);
    const end = this.pos + extra;
    this.pos = start - 1;
    this.uint32(len);
    this.pos = end;
  }

  /**
   * Checks a 64-bit integer (a number or a bigint) and leaves its two's-complement halves in
   * `lo`/`hi`. A fractional number is truncated toward zero (as protobufjs did); the number
   * 2^63 (int64) or 2^64 (uint64) stands for the largest value, being the double it rounds to;
   * NaN, ±Infinity and values out of range throw RangeError, other types TypeError.
   */
  split64(v: unknown, unsigned: boolean, field: string): void {
    if (typeof v === "number") {
      if (!Number.isFinite(v)) throw new RangeError(`${field}: ${v} is not an integer`);
      const t = Math.trunc(v);
      if (t === (unsigned ? TWO_POW_64 : TWO_POW_63)) {
        // The double nearest to the largest value (what decoding it as a number gives).
        this.lo = 0xffffffff;
        this.hi = unsigned ? 0xffffffff : 0x7fffffff;
        return;
      }
      if (unsigned ? t < 0 || t > TWO_POW_64 : t < -TWO_POW_63 || t > TWO_POW_63) {
        throw new RangeError(`${field}: ${v} is out of the ${unsigned ? "uint64" : "int64"} range`);
      }
      this.lo = t >>> 0;
      this.hi = Math.floor(t / TWO_POW_32) >>> 0;
      return;
    }
    if (typeof v === "bigint") {
      if (unsigned ? v < 0n || v > UINT64_MAX : v < INT64_MIN || v > INT64_MAX) {
        throw new RangeError(`${field}: ${v} is out of the ${unsigned ? "uint64" : "int64"} range`);
      }
      this.lo = Number(BigInt.asUintN(32, v));
      this.hi = Number(BigInt.asUintN(32, v >> 32n));
      return;
    }
    throw badType(field, "a number or bigint", v);
  }
}

/**
 * Checks a 32-bit integer field's value: a number, truncated toward zero when fractional (as
 * protobufjs did), within [min, max]. Returns the integer.
 */
export function int32Of(v: unknown, min: number, max: number, field: string): number {
  if (typeof v !== "number") throw badType(field, "a number", v);
  const t = Math.trunc(v);
  if (!(t >= min && t <= max)) {
    throw new RangeError(`${field}: ${v} is out of range [${min}, ${max}]`);
  }
  return t;
}

/** UTF-8 length of a string as TextEncoder writes it (a lone surrogate takes 3 bytes). */
export function utf8Length(s: string): number {
  let len = 0;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) len += 1;
    else if (c < 0x800) len += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        len += 4;
        i++;
      } else len += 3;
    } else len += 3;
  }
  return len;
}
