/**
 * A stream whose client has read nothing for SSE_STALLED_CLIENT_MS while its queue overflowed
 * ends: it would otherwise hold one of the 32 stream slots (and its subscription) for as long as
 * its connection lives, and a few frozen tablets would lock every console out of the event stream
 * (docs/http-api.md "Slow clients").
 */
import assert from "node:assert/strict";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { SSE_KEEPALIVE_MS, SseHub } from "../../src/http/sse_hub.ts";
import { ManualClock } from "../helpers/clock.ts";

const FILTER = { providerId: "", deviceId: "", signalId: "" };
/** The bound docs/http-api.md names. */
const STALLED_MS = 60_000;

/**
 * A hub of one stream slot on a ManualClock and a bus, its log lines (info and up) kept; every
 * stream is closed after `body`.
 */
async function withHub(
  o: { bootId?: string },
  body: (h: { bus: EventBus; clock: ManualClock; hub: SseHub; lines: string[] }) => Promise<void>,
): Promise<void> {
  const bus = new EventBus();
  const clock = new ManualClock();
  const lines: string[] = [];
  const hub = new SseHub({
    bus,
    log: capturingLogger({ level: "info", now: () => 0, lines }).log,
    clock,
    maxClients: 1,
    ...(o.bootId === undefined ? {} : { bootId: o.bootId }),
  });
  try {
    await body({ bus, clock, hub, lines });
  } finally {
    hub.closeAll();
  }
}

/** The line a stalled stream's end logs is among `lines`. */
function assertStalledLine(lines: string[]): void {
  assert.ok(
    lines.some((l) => /event stream ended: its client read nothing for 60000 ms/.test(l)),
    lines.join("\n"),
  );
}

/** Its slot is free: another stream opens (and is cancelled). */
async function assertSlotFree(hub: SseHub): Promise<void> {
  const next = hub.open(FILTER);
  await next.body!.cancel();
}

Deno.test("SseHub ends a stream whose client read nothing for 60 s while events were dropped, freeing its slot and counting its queued events dropped", async () => {
  await withHub({}, async ({ bus, clock, hub, lines }) => {
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
    const stalled = hub.open(FILTER); // never read
    publish(150); // the queue overflows at once: a slow moment, not yet a stalled client
    assert.equal(hub.clientCount, 1);
    clock.mono += STALLED_MS - 1;
    publish(1);
    assert.equal(hub.clientCount, 1, "not yet stalled");
    clock.mono += 1;
    publish(1);
    assert.equal(hub.clientCount, 0, "the stalled stream ended");
    assertStalledLine(lines);
    // Every event it never sent is counted dropped (runtime_sse_events_dropped_total): the 52 its
    // full queue lost and the 100 still queued when it ended.
    assert.equal(hub.droppedTotal, 152);
    assert.equal(hub.queuedFrames, 0);
    assert.ok(lines.some((l) => /, 100 queued events dropped$/.test(l)), lines.join("\n"));
    await assertSlotFree(hub);
    await stalled.body!.cancel();
  });
});

Deno.test("SseHub ends a resuming stream whose client stopped reading in the middle of its replay, after 60 s", async () => {
  await withHub({ bootId: "b00t" }, async ({ bus, clock, hub }) => {
    const publish = (n: number) => {
      for (let i = 0; i < n; i++) {
        bus.publish({ kind: "bt_error", node: "n", error: "x".repeat(200), timestamp_ms: i });
      }
    };
    publish(2000); // far more than one replay chunk (SSE_REPLAY_CHUNK_BYTES)
    const resumed = hub.open(FILTER, { text: "b00t-1", where: "Last-Event-ID header" });
    const reader = resumed.body!.getReader();
    assert.equal((await reader.read()).done, false); // one chunk of the replay, then nothing
    clock.mono += STALLED_MS;
    publish(1);
    assert.equal(hub.clientCount, 0, "the stream whose client stopped reading ended");
    await assertSlotFree(hub);
    await reader.cancel();
  });
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
  await withHub({}, async ({ bus, clock, hub, lines }) => {
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
    assertStalledLine(lines);
    await assertSlotFree(hub);
    await reader.cancel();
  });
});

Deno.test("SseHub keeps a filtered stream whose client reads, with only keep-alives for minutes", async () => {
  await withHub({}, async ({ bus, clock, hub }) => {
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
  });
});
