/**
 * A stream whose client has read nothing for SSE_STALLED_CLIENT_MS while its queue overflowed
 * ends: it would otherwise hold one of the 32 stream slots (and its subscription) for as long as
 * its connection lives, and a few frozen tablets would lock every console out of the event stream
 * (docs/http-api.md "Slow clients").
 */
import assert from "node:assert/strict";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { SSE_KEEPALIVE_MS, SseHub } from "../../src/http/sse_hub.ts";
import { ManualClock } from "../helpers/clock.ts";

const FILTER = { providerId: "", deviceId: "", signalId: "" };
/** The bound docs/http-api.md names. */
const STALLED_MS = 60_000;

Deno.test("SseHub ends a stream whose client read nothing for 60 s while events were dropped, freeing its slot", async () => {
  const bus = new EventBus();
  const clock = new ManualClock();
  const lines: string[] = [];
  const hub = new SseHub({
    bus,
    log: new LineLogger({
      level: "info",
      journald: false,
      now: () => 0,
      write: (l) => lines.push(l),
    }),
    clock,
    maxClients: 1,
  });
  const publish = (n: number) => {
    for (let i = 0; i < n; i++) {
      bus.publish({
        kind: "mode_change",
        previous_mode: "IDLE",
        new_mode: "MANUAL",
        timestamp_ms: i,
      });
    }
  };
  try {
    const stalled = hub.open(FILTER); // never read
    publish(150); // the queue overflows at once: a slow moment, not yet a stalled client
    assert.equal(hub.clientCount, 1);
    clock.mono += STALLED_MS - 1;
    publish(1);
    assert.equal(hub.clientCount, 1, "not yet stalled");
    clock.mono += 1;
    publish(1);
    assert.equal(hub.clientCount, 0, "the stalled stream ended");
    assert.ok(
      lines.some((l) => /event stream ended: its client read nothing for 60000 ms/.test(l)),
      lines.join("\n"),
    );
    const next = hub.open(FILTER); // its slot is free
    await next.body!.cancel();
    await stalled.body!.cancel();
  } finally {
    hub.closeAll();
  }
});

Deno.test("SseHub ends a resuming stream whose client stopped reading in the middle of its replay, after 60 s", async () => {
  const bus = new EventBus();
  const clock = new ManualClock();
  const hub = new SseHub({
    bus,
    log: new LineLogger({ level: "error", journald: false, now: () => 0, write: () => {} }),
    clock,
    maxClients: 1,
    bootId: "b00t",
  });
  const publish = (n: number) => {
    for (let i = 0; i < n; i++) {
      bus.publish({ kind: "bt_error", node: "n", error: "x".repeat(200), timestamp_ms: i });
    }
  };
  try {
    publish(2000); // far more than one replay chunk (SSE_REPLAY_CHUNK_BYTES)
    const resumed = hub.open(FILTER, { text: "b00t-1", where: "Last-Event-ID header" });
    const reader = resumed.body!.getReader();
    assert.equal((await reader.read()).done, false); // one chunk of the replay, then nothing
    clock.mono += STALLED_MS;
    publish(1);
    assert.equal(hub.clientCount, 0, "the stream whose client stopped reading ended");
    const next = hub.open(FILTER); // its slot is free
    await next.body!.cancel();
    await reader.cancel();
  } finally {
    hub.closeAll();
  }
});

/** A state update of provider `p` (a string value of `size` characters). */
function update(p: string, size = 10): RuntimeEvent {
  return {
    kind: "state_update",
    provider_id: p,
    device_id: "d",
    signal_id: "s",
    value: { type: "string", string: "x".repeat(size) },
    quality: "OK",
    timestamp_ms: 0,
  };
}

Deno.test("SseHub ends a filtered stream whose client stopped reading after 60 s, though no event reaches it then", async () => {
  const bus = new EventBus();
  const clock = new ManualClock();
  const lines: string[] = [];
  const hub = new SseHub({
    bus,
    log: new LineLogger({
      level: "info",
      journald: false,
      now: () => 0,
      write: (l) => lines.push(l),
    }),
    clock,
    maxClients: 1,
  });
  try {
    const rare = hub.open({ providerId: "rare", deviceId: "", signalId: "" });
    const reader = rare.body!.getReader();
    bus.publish(update("rare"));
    assert.equal((await reader.read()).done, false); // the one event; then the client froze
    bus.publish(update("rare")); // waits in its queue: the server could not write the last
    await clock.advanceAsync(STALLED_MS - 1);
    for (let i = 0; i < 50; i++) bus.publish(update("busy")); // events of other providers only
    assert.equal(hub.clientCount, 1, "not yet stalled");
    await clock.advanceAsync(1);
    assert.equal(hub.clientCount, 0, "the stalled filtered stream ended");
    assert.ok(
      lines.some((l) => /event stream ended: its client read nothing for 60000 ms/.test(l)),
      lines.join("\n"),
    );
    const next = hub.open(FILTER); // its slot is free
    await next.body!.cancel();
    await reader.cancel();
  } finally {
    hub.closeAll();
  }
});

Deno.test("SseHub keeps a filtered stream whose client reads, with only keep-alives for minutes", async () => {
  const bus = new EventBus();
  const clock = new ManualClock();
  const hub = new SseHub({
    bus,
    log: new LineLogger({ level: "error", journald: false, now: () => 0, write: () => {} }),
    clock,
    maxClients: 1,
  });
  try {
    const rare = hub.open({ providerId: "rare", deviceId: "", signalId: "" });
    const reader = rare.body!.getReader();
    const dec = new TextDecoder();
    bus.publish(update("rare"));
    assert.match(dec.decode((await reader.read()).value), /event: state_update/);
    for (let s = 0; s < 3 * STALLED_MS; s += SSE_KEEPALIVE_MS) {
      const read = reader.read(); // the client reads: a read waits for data
      await clock.advanceAsync(SSE_KEEPALIVE_MS);
      assert.equal(dec.decode((await read).value), ": keepalive\n\n");
      for (let i = 0; i < 10; i++) bus.publish(update("busy"));
    }
    assert.equal(hub.clientCount, 1, "a reading client's stream stays open");
    await reader.cancel();
  } finally {
    hub.closeAll();
  }
});
