/** EventRing (src/http/event_ring.ts): the bounded memory a resuming event stream replays from. */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { estimateFrameBytes, EventRing, formatSseFrame } from "../../src/http/mod.ts";

const su = (id: number, value = 1.5): PublishedEvent => ({
  id,
  event: {
    kind: "state_update",
    provider_id: "sim0",
    device_id: "analogsensor0",
    signal_id: "voltage_ch1",
    value: { type: "double", double: value },
    quality: "OK",
    timestamp_ms: 1_795_292_498_270,
  },
});
const bt = (id: number, error: string): PublishedEvent => ({
  id,
  event: { kind: "bt_error", node: "n", error, timestamp_ms: 1 },
});

Deno.test("EventRing keeps the newest events within its count bound and says how far back it reaches", () => {
  const ring = new EventRing({ maxEvents: 4, maxBytes: 1 << 20 });
  assert.deepEqual(ring.resumeFrom(0), { ok: true }); // nothing published yet: nothing missed
  for (let id = 1; id <= 6; id++) ring.push(su(id));
  assert.equal(ring.count, 4);
  assert.equal(ring.firstId, 3);
  assert.equal(ring.lastId, 6);
  assert.deepEqual([2, 3, 4, 5, 6, 7].map((id) => ring.get(id)?.id), [
    undefined,
    3,
    4,
    5,
    6,
    undefined,
  ]);
  // A client that saw 2 missed 3..6: all kept. One that saw 1 missed 2: gone.
  assert.deepEqual(ring.resumeFrom(2), { ok: true });
  assert.deepEqual(ring.resumeFrom(6), { ok: true });
  assert.deepEqual(ring.resumeFrom(1), { ok: false, reason: "too_old" });
  assert.deepEqual(ring.resumeFrom(7), { ok: false, reason: "unknown" });
});

Deno.test("EventRing keeps within its byte bound, and an event larger than it is kept as its place only", () => {
  const one = estimateFrameBytes(su(1).event);
  const ring = new EventRing({ maxEvents: 100, maxBytes: 3 * one });
  for (let id = 1; id <= 5; id++) ring.push(su(id));
  assert.equal(ring.count, 3);
  assert.equal(ring.bytes, 3 * one);
  assert.equal(ring.firstId, 3);
  ring.push(bt(6, "x".repeat(4 * one)));
  // Before: the ring emptied, and every resume from before it answered too_old.
  assert.equal(ring.omittedTotal, 1);
  assert.ok(ring.bytes <= 3 * one, `${ring.bytes}`);
  assert.equal(ring.get(6), undefined);
  assert.deepEqual(ring.omitted(6), { kind: "bt_error" });
  assert.equal(ring.omitted(5), undefined);
  assert.deepEqual(ring.resumeFrom(5), { ok: true });
  assert.equal(ring.get(5)?.id, 5);
  ring.push(su(7));
  assert.equal(ring.get(7)?.id, 7);
  assert.deepEqual(ring.resumeFrom(6), { ok: true });
  // A state_update keeps its ids, for a stream's filter.
  ring.push({
    id: 8,
    event: { ...su(8).event, value: { type: "string", string: "y".repeat(3 * one) } },
  } as PublishedEvent);
  assert.deepEqual(ring.omitted(8), {
    kind: "state_update",
    provider_id: "sim0",
    device_id: "analogsensor0",
    signal_id: "voltage_ch1",
  });
  assert.equal(ring.get(7)?.id, 7);
});

Deno.test("EventRing started after events it never saw does not offer them", () => {
  const ring = new EventRing({ maxEvents: 10 });
  ring.startAfter(41);
  assert.deepEqual(ring.resumeFrom(41), { ok: true });
  assert.deepEqual(ring.resumeFrom(40), { ok: false, reason: "too_old" });
  ring.push(su(42));
  assert.equal(ring.get(42)?.id, 42);
});

Deno.test("estimateFrameBytes is at least the frame's UTF-8 size for every kind of text", () => {
  const enc = new TextEncoder();
  const samples: PublishedEvent[] = [
    su(1, -1.2345678901234567e-300),
    {
      id: 2,
      event: { ...su(2).event, value: { type: "string", string: "température °C ✓" } },
    } as PublishedEvent,
    {
      id: 3,
      event: { ...su(3).event, value: { type: "bytes", base64: "AQIDBA==" } },
    } as PublishedEvent,
    bt(4, 'line\nwith "quotes" and ünïcödé'),
    {
      id: 5,
      event: {
        kind: "quality_change",
        provider_id: "sim0",
        device_id: "tempctl0",
        signal_id: "tc1_temp",
        old_quality: "OK",
        new_quality: "UNAVAILABLE",
        timestamp_ms: 1_795_292_498_270,
      },
    },
    {
      id: 6,
      event: {
        kind: "config_reload",
        result: "failed",
        summary: "config reload failed",
        providers_added: [],
        providers_removed: [],
        providers_restarted: [],
        providers_retried: [],
        providers_updated: [],
        providers_unchanged: ["sim0"],
        providers_failed: [],
        refused: [],
        needs_restart: [],
        errors: ["config.yaml:3:1: unknown key"],
        timestamp_ms: 1,
      },
    },
  ];
  for (const p of samples) {
    const frame = enc.encode(formatSseFrame(p, "5c0e91a7")).byteLength;
    assert.ok(estimateFrameBytes(p.event) >= frame, `${p.event.kind}: ${frame}`);
  }
});

Deno.test("EventRing gives back every kept event as the same frame, whatever its value or quality", () => {
  const values = [
    { type: "double", double: 23.406614217226764 },
    { type: "double", double: -0 },
    { type: "double", double: null, non_finite: "NaN" },
    { type: "bool", bool: true },
    { type: "bool", bool: false },
    { type: "int64", int64: -42 },
    { type: "int64", int64: -(2n ** 63n) },
    { type: "uint64", uint64: 7 },
    { type: "uint64", uint64: 2n ** 64n - 1n },
    { type: "string", string: "GOOD" },
    { type: "bytes", base64: "AQID" },
  ];
  const qualities = ["OK", "STALE", "UNAVAILABLE", "FAULT"] as const;
  const published: PublishedEvent[] = values.map((value, i) => ({
    id: i + 1,
    event: { ...su(i + 1).event, value, quality: qualities[i % 4]! } as PublishedEvent["event"],
  }));
  published.push(bt(published.length + 1, "a tree error"));
  const ring = new EventRing({ maxEvents: 64 });
  for (const p of published) ring.push(p);
  for (const p of published) {
    const back = ring.get(p.id);
    assert.ok(back !== undefined, `${p.id}`);
    assert.equal(formatSseFrame(back, "b"), formatSseFrame(p, "b"));
  }
});
