// The reader's cache of short ASCII strings: a hit returns the string decoded before only when
// every byte matches; a collision in a slot replaces the cached string, never returns it.
import assert from "node:assert/strict";
import { asciiSlot, INTERNED_STRING_SLOTS, ProtoReader } from "../../src/adpp/_proto_reader.ts";

const ENC = new TextEncoder();

/** The bytes of a length-delimited string field's value: its length varint, then the bytes. */
function lengthDelimited(s: string): Uint8Array {
  const bytes = ENC.encode(s);
  assert.ok(bytes.length < 128, "one-byte length");
  return Uint8Array.of(bytes.length, ...bytes);
}

function decodeString(s: string): string {
  const r = new ProtoReader();
  r.reset(lengthDelimited(s));
  const out = r.string();
  assert.strictEqual(r.pos, r.end, "the whole field is consumed");
  return out;
}

/** The cache slot the reader uses for ASCII `s` (its own function, so collisions are real). */
function slotOf(s: string): number {
  const bytes = ENC.encode(s);
  return asciiSlot(bytes, 0, bytes.length);
}

/** Two different ASCII strings of `len` characters that share a cache slot. */
function collidingPair(len: number): [string, string] {
  const bySlot = new Map<number, string>();
  for (let i = 0;; i++) {
    const s = `s${i}`.padStart(len, "x");
    const other = bySlot.get(slotOf(s));
    if (other !== undefined && other !== s) return [other, s];
    bySlot.set(slotOf(s), s);
  }
}

Deno.test("ProtoReader.string decodes a repeated short id to the same text every time", () => {
  for (let i = 0; i < 3; i++) assert.strictEqual(decodeString("tempctl0"), "tempctl0");
});

Deno.test("ProtoReader.string: strings of equal length in one cache slot do not mix", () => {
  const [a, b] = collidingPair(6);
  assert.strictEqual(slotOf(a), slotOf(b));
  assert.strictEqual(decodeString(a), a);
  assert.strictEqual(decodeString(b), b); // same slot, same length, other bytes: not `a`
  assert.strictEqual(decodeString(a), a);
});

/** A string and a longer one that starts with it, both in one cache slot. */
function collidingPrefix(): [string, string] {
  for (let i = 0;; i++) {
    const short = `p${i}`;
    const long = `${short}z`;
    if (slotOf(short) === slotOf(long)) return [short, long];
  }
}

Deno.test("ProtoReader.string: a cached string is not returned for a longer one it starts", () => {
  const [short, long] = collidingPrefix();
  assert.strictEqual(decodeString(short), short);
  assert.strictEqual(decodeString(long), long); // the cached `short` matches its first bytes
  assert.strictEqual(decodeString(short), short); // and the other way round
});

Deno.test("ProtoReader.string keeps decoding correctly past the cache's slot count", () => {
  const n = INTERNED_STRING_SLOTS * 3;
  for (let i = 0; i < n; i++) assert.strictEqual(decodeString(`id-${i}`), `id-${i}`);
  for (let i = n - 1; i >= 0; i -= 7) assert.strictEqual(decodeString(`id-${i}`), `id-${i}`);
});

Deno.test("asciiSlot is -1 for bytes that are not ASCII, a slot in range otherwise", () => {
  const deg = ENC.encode("\u00b0C");
  assert.strictEqual(asciiSlot(deg, 0, deg.length), -1);
  const slot = slotOf("tempctl0");
  assert.ok(slot >= 0 && slot < INTERNED_STRING_SLOTS);
});

Deno.test("ProtoReader.string: non-ASCII and long strings bypass the cache and decode as UTF-8", () => {
  const long = "x".repeat(40);
  assert.strictEqual(decodeString(long), long);
  assert.strictEqual(decodeString("\u00b0C"), "\u00b0C");
  assert.strictEqual(decodeString("\u00b0C"), "\u00b0C");
});
