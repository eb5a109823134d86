/** GET /v0/events over real sockets (docs/http-api.md, "Events (Server-Sent Events)"). */
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { SSE_KEEPALIVE_MS } from "../../src/http/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { ManualClock } from "../helpers/clock.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { SseReader } from "../helpers/sse_reader.ts";

const modeChange = (n: number): RuntimeEvent => ({
  kind: "mode_change",
  previous_mode: "IDLE",
  new_mode: "MANUAL",
  timestamp_ms: n,
});

Deno.test("GET /v0/events streams real state_update frames, filtered, with SSE headers", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 100 } });
  try {
    const server = await fx.serve();
    const res = await apiFetch(
      `http://127.0.0.1:${server.port}/v0/events?provider_id=sim0&device_id=analogsensor0&signal_id=voltage_ch1`,
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    assert.equal(res.headers.get("cache-control"), "no-cache");
    assert.equal(res.headers.get("x-accel-buffering"), "no");
    const sse = new SseReader(res.body!);
    try {
      let lastId = 0;
      for (let i = 0; i < 3; i++) {
        const b = await sse.nextEvent();
        assert.equal(b.event, "state_update");
        assert.ok(b.id! > lastId, "ids increase");
        lastId = b.id!;
        assert.deepEqual(Object.keys(b.data).sort(), [
          "device_id",
          "provider_id",
          "quality",
          "signal_id",
          "timestamp_ms",
          "value",
        ]);
        assert.equal(b.data.provider_id, "sim0");
        assert.equal(b.data.device_id, "analogsensor0");
        assert.equal(b.data.signal_id, "voltage_ch1");
        assert.equal(b.data.value.type, "double");
        assert.equal(b.data.quality, "OK");
      }
    } finally {
      await sse.cancel();
    }
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/events shares global ids across clients and always delivers unfiltered kinds", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const server = await fx.serve();
    const base = `http://127.0.0.1:${server.port}/v0/events`;
    const all = new SseReader((await apiFetch(base)).body!);
    const filtered = new SseReader(
      (await apiFetch(`${base}?device_id=tempctl0&signal_id=tc1_temp`)).body!,
    );
    try {
      const bus = fx.runtime.bus;
      const su = (device_id: string, signal_id: string): RuntimeEvent => ({
        kind: "state_update",
        provider_id: "sim0",
        device_id,
        signal_id,
        value: { type: "double", double: 1.5 },
        quality: "OK",
        timestamp_ms: 1,
      });
      const idOther = bus.publish(su("motorctl0", "motor1_speed"));
      const idWrongSignal = bus.publish(su("tempctl0", "tc2_temp"));
      const idMatch = bus.publish(su("tempctl0", "tc1_temp"));
      const idMode = bus.publish(modeChange(2));
      const idHealth = bus.publish({
        kind: "provider_health_change",
        provider_id: "sim9",
        state: "UNAVAILABLE",
        timestamp_ms: 3,
      });
      const seenAll = [];
      for (let i = 0; i < 5; i++) seenAll.push((await all.nextEvent()).id);
      assert.deepEqual(seenAll, [idOther, idWrongSignal, idMatch, idMode, idHealth]);
      const a = await filtered.nextEvent();
      assert.equal(a.id, idMatch);
      assert.deepEqual(a.data, {
        provider_id: "sim0",
        device_id: "tempctl0",
        signal_id: "tc1_temp",
        value: { type: "double", double: 1.5 },
        quality: "OK",
        timestamp_ms: 1,
      });
      const b = await filtered.nextEvent();
      assert.equal(b.event, "mode_change");
      assert.equal(b.id, idMode);
      assert.deepEqual(b.data, { previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 2 });
      assert.equal((await filtered.nextEvent()).event, "provider_health_change");
    } finally {
      await all.cancel();
      await filtered.cancel();
    }
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/events sends keep-alive comments while no events flow", async () => {
  // The API's timers run on a clock the test moves: each keep-alive is due SSE_KEEPALIVE_MS after
  // the stream last sent something.
  const clock = new ManualClock();
  const fx = await startHttpFixture({ start: false, apiClock: clock });
  try {
    const server = await fx.serve();
    const sse = new SseReader((await apiFetch(`http://127.0.0.1:${server.port}/v0/events`)).body!);
    const keepAliveDue = () => clock.pendingDueTimes()[0] === clock.mono + SSE_KEEPALIVE_MS;
    try {
      await waitFor("the stream waiting for an event", keepAliveDue);
      clock.advance(SSE_KEEPALIVE_MS);
      const first = await sse.next();
      assert.deepEqual(first, { comments: ["keepalive"] });
      await waitFor("the stream waiting again", keepAliveDue);
      clock.advance(SSE_KEEPALIVE_MS);
      const second = await sse.next();
      assert.deepEqual(second, { comments: ["keepalive"] });
    } finally {
      await sse.cancel();
    }
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/events: a client that never reads loses its oldest events, a fast one loses none", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const server = await fx.serve();
    // The slow client: a raw socket that sends its request and then reads nothing.
    const slow = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
    try {
      await slow.write(
        new TextEncoder().encode("GET /v0/events HTTP/1.1\r\nHost: localhost\r\n\r\n"),
      );
      await waitFor("slow stream open", () => fx.api.sseClientCount === 1);
      const fastRes = await apiFetch(`http://127.0.0.1:${server.port}/v0/events`);
      const fast = new SseReader(fastRes.body!);
      try {
        // 500 x 64 KiB = 32 MiB: far beyond socket buffers plus the 100-frame queue.
        const big = "x".repeat(64 * 1024);
        let lastId = 0;
        for (let i = 0; i < 500; i++) {
          lastId = fx.runtime.bus.publish({
            kind: "bt_error",
            node: `n${i}`,
            error: big,
            timestamp_ms: i,
          });
          const b = await fast.nextEvent();
          assert.equal(b.id, lastId, "the fast client gets every event, in order, without waiting");
        }
        // Now the slow client reads: it is told how many events it lost, then gets the newest.
        const found = await scanRaw(slow, lastId);
        assert.ok(found.dropped > 0, "the slow client was told about dropped events");
        assert.ok(found.sawLast, "the newest event still reaches the slow client");
      } finally {
        await fast.cancel();
      }
    } finally {
      slow.close();
    }
    await waitFor("streams released", () => fx.api.sseClientCount === 0);
  } finally {
    await fx.close();
  }
});

/** Reads a raw HTTP stream until `id: lastId` was seen; reports the drop notice. */
async function scanRaw(
  conn: Deno.Conn,
  lastId: number,
): Promise<{ dropped: number; sawLast: boolean }> {
  const decoder = new TextDecoder();
  const buf = new Uint8Array(256 * 1024);
  let tail = "";
  let dropped = 0;
  for (;;) {
    const n = await conn.read(buf);
    if (n === null) return { dropped, sawLast: false };
    const text = tail + decoder.decode(buf.subarray(0, n), { stream: true });
    const m = /: dropped (\d+) events\n/.exec(text);
    if (m) dropped = Math.max(dropped, Number(m[1]));
    if (text.includes(`-${lastId}\ndata: `)) return { dropped, sawLast: true };
    tail = text.slice(-64);
  }
}

Deno.test("GET /v0/events refuses the 33rd concurrent stream with 503 JSON", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const server = await fx.serve();
    const url = `http://127.0.0.1:${server.port}/v0/events`;
    const open: Response[] = [];
    try {
      for (let i = 0; i < 32; i++) {
        const r = await apiFetch(url);
        assert.equal(r.status, 200);
        open.push(r);
      }
      assert.equal(fx.api.sseClientCount, 32);
      const refused = await apiFetch(url);
      assert.equal(refused.status, 503);
      assert.equal(refused.headers.get("content-type"), "application/json");
      const body = await refused.json();
      assert.equal(body.status.code, "UNAVAILABLE");
      // Closing one stream frees its place.
      await open.pop()!.body!.cancel();
      await waitFor("slot freed", () => fx.api.sseClientCount === 31);
      const again = await apiFetch(url);
      assert.equal(again.status, 200);
      open.push(again);
    } finally {
      await Promise.all(open.map((r) => r.body?.cancel()));
    }
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/events: a client abort frees its bus subscription", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const server = await fx.serve();
    const before = fx.runtime.bus.subscriberCount;
    const ctl = new AbortController();
    const res = await apiFetch(`http://127.0.0.1:${server.port}/v0/events`, { signal: ctl.signal });
    assert.equal(res.status, 200);
    assert.equal(fx.runtime.bus.subscriberCount, before + 1);
    ctl.abort();
    await res.body?.cancel().catch(() => {});
    await waitFor("subscription released", () => fx.runtime.bus.subscriberCount === before);
    assert.equal(fx.api.sseClientCount, 0);
    // Publishing afterwards reaches nobody and costs nothing.
    fx.runtime.bus.publish(modeChange(1));
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/events streams end when the server shuts down", async () => {
  const fx = await startHttpFixture({ start: false });
  const server = await fx.serve();
  const sse = new SseReader((await apiFetch(`http://127.0.0.1:${server.port}/v0/events`)).body!);
  const id = fx.runtime.bus.publish(modeChange(1));
  assert.equal((await sse.nextEvent()).id, id);
  await server.shutdown();
  assert.equal(await sse.next(), null);
  assert.equal(fx.api.sseClientCount, 0);
  // Refused after close: no new streams during shutdown.
  const late = await fx.request("GET", "/v0/events");
  assert.equal(late.status, 503);
  await fx.close();
});
