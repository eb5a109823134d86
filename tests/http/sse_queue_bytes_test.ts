/**
 * A stream whose client never reads holds a bounded number of BYTES, not only of events: a device
 * may publish string values up to an ADPP frame (1 MiB), and 100 such events queued for one stalled
 * client would pin 100 MiB (docs/http-api.md "Slow clients").
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { LineLogger, systemClock } from "../../src/host/mod.ts";
import { SseHub } from "../../src/http/sse_hub.ts";
import { SseReader } from "../helpers/sse_reader.ts";

/** What docs/http-api.md "Slow clients" says one stream may hold queued. */
const QUEUE_MAX_BYTES = 1024 * 1024;
const FILTER = { providerId: "", deviceId: "", signalId: "" };

Deno.test("SseHub: a client that never reads holds at most 1 MiB of large events queued, told how many it lost", async () => {
  const bus = new EventBus();
  const hub = new SseHub({
    bus,
    log: new LineLogger({ level: "warn", journald: false, now: () => 0, write: () => {} }),
    clock: systemClock,
    keepAliveMs: 60_000,
  });
  try {
    const res = hub.open(FILTER); // never read until every event is published
    const big = "x".repeat(256 * 1024);
    let lastId = 0;
    for (let i = 0; i < 40; i++) {
      lastId = bus.publish({
        kind: "state_update",
        provider_id: "sim0",
        device_id: "cam0",
        signal_id: "frame",
        value: { type: "string", string: big },
        quality: "OK",
        timestamp_ms: i,
      });
    }
    const frameBytes = big.length + 150; // the string plus the frame's lines and members
    assert.ok(
      hub.queuedFrames * frameBytes <= QUEUE_MAX_BYTES,
      `queued ${hub.queuedFrames} frames of ${frameBytes} bytes: over ${QUEUE_MAX_BYTES} bytes`,
    );
    assert.ok(hub.queuedFrames >= 1, "the newest event is kept");
    assert.equal(hub.droppedTotal, 40 - hub.queuedFrames, "every event not queued is counted");
    // The client reads at last: the drop notice, then the newest events, the last one included.
    const sse = new SseReader(res.body!);
    try {
      const dropped = 40 - hub.queuedFrames;
      const notice = await sse.next();
      assert.deepEqual(notice?.comments, [`dropped ${dropped} events`], "told of the drop first");
      let last = await sse.nextEvent();
      while (last.id !== lastId) last = await sse.nextEvent();
      assert.equal(last.data.value.string.length, big.length);
    } finally {
      await sse.cancel();
    }
  } finally {
    hub.closeAll();
  }
});

Deno.test("SseHub: a filtered stream that lost events gets a `dropped` event after the comment, which an EventSource page can see", async () => {
  const bus = new EventBus();
  const hub = new SseHub({
    bus,
    log: new LineLogger({ level: "warn", journald: false, now: () => 0, write: () => {} }),
    clock: systemClock,
    keepAliveMs: 60_000,
  });
  try {
    // Filtered to one device: its ids jump whether or not it lost any, so only a notice says so.
    const res = hub.open({ providerId: "sim0", deviceId: "cam0", signalId: "" });
    for (let i = 0; i < 150; i++) {
      bus.publish({
        kind: "state_update",
        provider_id: "sim0",
        device_id: "cam0",
        signal_id: "n",
        value: { type: "double", double: i },
        quality: "OK",
        timestamp_ms: i,
      });
    }
    const dropped = hub.droppedTotal;
    assert.ok(dropped > 0, "the queue overflowed");
    const sse = new SseReader(res.body!);
    try {
      const comment = await sse.next();
      assert.deepEqual(comment?.comments, [`dropped ${dropped} events`]);
      // An EventSource hands the page named events only (addEventListener("dropped", ...)).
      const event = await sse.nextEvent();
      assert.equal(event.event, "dropped");
      assert.equal(event.rawId, undefined, "no id: a resume goes on from the last event received");
      assert.equal(event.data.count, dropped);
      assert.equal(typeof event.data.timestamp_ms, "number");
      const next = await sse.nextEvent();
      assert.equal(next.event, "state_update");
    } finally {
      await sse.cancel();
    }
  } finally {
    hub.closeAll();
  }
});
