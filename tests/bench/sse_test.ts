import assert from "node:assert/strict";
import { frameId, parseSseFrame, SseFrameSplitter } from "../../bench/lib/sse.ts";

Deno.test("SseFrameSplitter joins frames split across chunks and normalizes CRLF", () => {
  const s = new SseFrameSplitter();
  assert.deepEqual(s.push("event: a\nid: 1\nda"), []);
  assert.deepEqual(s.push("ta: {}\n\n: keepalive\n\nevent: b\r\n"), [
    "event: a\nid: 1\ndata: {}",
    ": keepalive",
  ]);
  assert.deepEqual(s.push("id: 2\r\ndata: x\r\n\r\n"), ["event: b\nid: 2\ndata: x"]);
});

Deno.test("SseFrameSplitter bounds an unterminated frame", () => {
  const s = new SseFrameSplitter(10);
  assert.throws(() => s.push("data: 0123456789"), /longer than 10/);
});

Deno.test("parseSseFrame reads event, id and data, and skips comment-only frames", () => {
  assert.deepEqual(parseSseFrame('event: state_update\nid: 57\ndata: {"a":1}'), {
    event: "state_update",
    id: "57",
    data: '{"a":1}',
  });
  assert.deepEqual(parseSseFrame("data: one\ndata: two"), {
    event: "message",
    id: null,
    data: "one\ntwo",
  });
  assert.equal(parseSseFrame(": keepalive"), null);
});

Deno.test("frameId finds the id line without a full parse", () => {
  assert.equal(frameId("event: x\nid: 123\ndata: {}"), 123);
  assert.equal(frameId("id: 9\ndata: {}"), 9);
  // This runtime's ids carry the run's prefix: the number is what follows the last dash.
  assert.equal(frameId("event: x\nid: 3f9a0c12-123\ndata: {}"), 123);
  assert.equal(frameId("id: ab-7\ndata: {}"), 7);
  assert.equal(frameId(": keepalive"), null);
  assert.equal(frameId("event: x\ndata: {}"), null);
});
