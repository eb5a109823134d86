/**
 * Protobuf wire-format writing for the generated codec (_codec.js). One writer per module writes
 * each message straight into a slab of ENCODE_SLAB_BYTES and hands out a view of it (as Node's
 * Buffer pool does): allocating an ArrayBuffer per message costs ~10x a view in Deno, and the
 * poll path encodes one request per device and cycle. Views never overlap and a slab is never
 * written again where a message was handed out, so a returned message is never changed by a later
 * encode. A sub-message reserves one length byte and is shifted in the rare case its length needs
 * more (`begin`/`end`), so nothing is measured twice.
 *
 * Input checks throw TypeError/RangeError naming the field: an unencodable object is a bug of the
 * code that built it, never something a peer sent.
 */

/**
 * Size of the slabs encoded messages are written into. A slab stays allocated while any message
 * written into it is referenced; a message that does not fit the rest of the slab starts a new
 * one, and a message larger than a slab gets a buffer of its own (never reused).
 */
export const ENCODE_SLAB_BYTES = 8192;

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

/** Encode buffer (the current slab) with the start of the message being written. */
export class ProtoWriter {
  buf = new Uint8Array(0);
  view = new DataView(this.buf.buffer);
  /** Where the message being written starts in `buf`. */
  start = 0;
  pos = 0;
  /** Halves of the last 64-bit integer checked by `split64` (two's complement). */
  lo = 0;
  hi = 0;

  /** Starts a new message (dropping what a refused one left). */
  reset(): void {
    this.pos = this.start;
  }

  /** The encoded message: a view of the slab, never written again. */
  finish(): Uint8Array {
    const out = this.buf.subarray(this.start, this.pos);
    if (this.buf.length > ENCODE_SLAB_BYTES) {
      // A buffer grown for one large message stays that message's alone.
      this.buf = new Uint8Array(0);
      this.view = new DataView(this.buf.buffer);
      this.pos = 0;
    }
    this.start = this.pos;
    return out;
  }

  /** Makes room for `n` more bytes, moving the message so far to a new slab if needed. */
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const used = this.pos - this.start;
    let size = ENCODE_SLAB_BYTES;
    while (size < used + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(this.start, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
    this.start = 0;
    this.pos = used;
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

  /**
   * Reserves one length byte for a sub-message; pass the result to `end`. (Positions are relative
   * to the message's start: `ensure` may move the message to another slab in between.)
   */
  begin(): number {
    this.ensure(1);
    return ++this.pos - this.start;
  }

  /** Writes the length of the sub-message begun at `rel`, moving it when the length needs more. */
  end(rel: number): void {
    const len = this.pos - this.start - rel;
    if (len < 0x80) {
      this.buf[this.start + rel - 1] = len;
      return;
    }
    const extra = len < 0x4000 ? 1 : len < 0x200000 ? 2 : len < 0x10000000 ? 3 : 4;
    this.ensure(extra);
    const at = this.start + rel;
    this.buf.copyWithin(at + extra, at, this.pos);
    const end = this.pos + extra;
    this.pos = at - 1;
    this.uint32(len); // fits: `extra` more bytes were ensured past the old end
    this.pos = end;
  }

  /**
   * Checks a 64-bit integer (a number or a bigint) and leaves its two's-complement halves in
   * `lo`/`hi`. A fractional number is truncated toward zero (as protobufjs did); the number
   * 2^63 (int64) or 2^64 (uint64) stands for the largest value, being the double it rounds to;
   * NaN, +/-Infinity and values out of range throw RangeError, other types TypeError.
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
