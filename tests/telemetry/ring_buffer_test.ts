/** RingBuffer's two bounds: entries and, when given, bytes (the exact limit and one past it). */
import assert from "node:assert/strict";
import { RingBuffer } from "../../src/telemetry/_ring_buffer.ts";

const bytes = (maxBytes: number) => ({ maxBytes, sizeOf: (s: string) => s.length });

Deno.test("RingBuffer keeps entries up to exactly maxBytes and evicts the oldest ones past it", () => {
  const b = new RingBuffer<string>(100, bytes(10));
  assert.equal(b.pushAll(["aaaa", "bbb", "ccc"]), 0); // 10 bytes: exactly the bound
  assert.equal(b.bytes, 10);
  assert.equal(b.push("d"), 1); // 11 would pass it: the oldest goes
  assert.deepEqual(b.peek(10), ["bbb", "ccc", "d"]);
  assert.equal(b.bytes, 7);
  assert.equal(b.push("eeeeeeeee"), 2); // 16: bbb and ccc go, then d + 9 bytes is exactly 10
  assert.deepEqual(b.peek(10), ["d", "eeeeeeeee"]);
  assert.equal(b.bytes, 10);
});

Deno.test("RingBuffer refuses an entry larger than maxBytes alone and evicts nothing for it", () => {
  const b = new RingBuffer<string>(100, bytes(10));
  b.push("abc");
  assert.equal(b.push("x".repeat(11)), 1);
  assert.deepEqual(b.peek(10), ["abc"]);
  assert.equal(b.bytes, 3);
});

Deno.test("RingBuffer keeps its byte count through shift, dropFront and clear", () => {
  const b = new RingBuffer<string>(3, bytes(1000));
  b.pushAll(["a", "bb", "ccc", "dddd"]); // the count bound evicts "a"
  assert.equal(b.length, 3);
  assert.equal(b.bytes, 9);
  assert.equal(b.shift(), "bb");
  assert.equal(b.bytes, 7);
  b.dropFront(1);
  assert.equal(b.bytes, 4);
  assert.equal(b.clear(), 1);
  assert.equal(b.bytes, 0);
});

Deno.test("RingBuffer without a byte bound counts entries only", () => {
  const b = new RingBuffer<string>(2);
  assert.equal(b.pushAll(["x".repeat(1_000_000), "y".repeat(1_000_000)]), 0);
  assert.equal(b.bytes, 0);
  assert.equal(b.maxBytes, Infinity);
  assert.equal(b.push("z"), 1);
});
