/**
 * Resuming GET /v0/events with Last-Event-ID (docs/http-api.md, "Resuming a stream"), over real
 * sockets against a runtime polling the simulated provider: a client that reconnects gets every
 * event it missed, in order, without a duplicate, then live ones; beyond the ring's reach, or
 * after a restart, one `resync` event.
 */
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { SSE_QUEUE_SIZE, SSE_REPLAY_MAX_BYTES, SSE_RESYNC_EVENT } from "../../src/http/mod.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { type SseBlock, SseReader } from "../helpers/sse_reader.ts";
import {
  mirrorOptions,
  type RuntimeChild,
  startRuntimeChild,
  startRuntimeInMirror,
  withCheckoutMirror,
} from "../helpers/runtime_process.ts";
import { REPO } from "../helpers/sim_config.ts";

const marker = (n: number): RuntimeEvent => ({
  kind: "bt_error",
  node: `marker-${n}`,
  error: "",
  timestamp_ms: n,
});

/** Reads events (comments skipped) until `until` holds for one; returns all read, that one last. */
async function readUntil(sse: SseReader, until: (b: SseBlock) => boolean): Promise<SseBlock[]> {
  const out: SseBlock[] = [];
  for (;;) {
    const b = await sse.next();
    if (b === null) throw new Error(`stream ended after ${out.length} events`);
    assert.ok(
      !b.comments.some((c) => c.startsWith("dropped")),
      `a reader lost events: ${b.comments}`,
    );
    if (b.event === undefined) continue;
    out.push(b);
    if (until(b)) return out;
  }
}

const isMarker = (n: number) => (b: SseBlock) =>
  b.event === "bt_error" && b.data?.node === `marker-${n}`;

/** What identifies a delivered event: its id and its whole frame. */
const frames = (bs: SseBlock[]) => bs.map((b) => `${b.rawId} ${b.event} ${JSON.stringify(b.data)}`);

Deno.test("GET /v0/events with Last-Event-ID: a reconnect loses and duplicates nothing, filtered or not", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 100 } });
  try {
    const server = await fx.serve();
    const url = `http://127.0.0.1:${server.port}/v0/events`;
    const bus = fx.runtime.bus;
    // The reference: a reader that stays connected throughout.
    const all = new SseReader((await apiFetch(url)).body!);
    // Two resuming readers: one unfiltered, one filtered to one device.
    const filter = "?provider_id=sim0&device_id=analogsensor0";
    const openB = (last?: string) =>
      apiFetch(url, { headers: last ? { "last-event-id": last } : {} });
    const openC = (last?: string) =>
      apiFetch(`${url}${filter}`, { headers: last ? { "last-event-id": last } : {} });
    let b = new SseReader((await openB()).body!);
    let c = new SseReader((await openC()).body!);
    try {
      bus.publish(marker(1));
      const bBefore = await readUntil(b, isMarker(1));
      const allBefore = await readUntil(all, isMarker(1));
      // C reads a few of the device's polled values (the sim's noisy voltages change each poll).
      const cBefore: SseBlock[] = [];
      while (cBefore.length < 5) cBefore.push(...await readUntil(c, () => true));
      // Both drop their connections mid-stream, while the runtime keeps polling and publishing:
      // more events than a client's queue holds, so a replay through that queue would lose some.
      await b.cancel();
      await c.cancel();
      // (In batches the reference reader keeps up with: its own queue holds SSE_QUEUE_SIZE.)
      const reference: SseBlock[] = [];
      for (let i = 0; i < 3 * SSE_QUEUE_SIZE; i++) {
        bus.publish(marker(1000 + i));
        if (i % 50 === 49) reference.push(...await readUntil(all, isMarker(1000 + i)));
      }
      // And polled values: wait for a few of the device's while B and C are away.
      let polled = 0;
      reference.push(
        ...await readUntil(all, (x) => x.data?.device_id === "analogsensor0" && ++polled === 5),
      );
      bus.publish(marker(2));
      reference.push(...await readUntil(all, isMarker(2)));
      // The readers reconnect with the id they saw last, then a live event follows.
      const bLast = bBefore.at(-1)!.rawId!;
      const cLast = cBefore.at(-1)!.rawId!;
      b = new SseReader((await openB(bLast)).body!);
      c = new SseReader((await openC(cLast)).body!);
      // (A live event right away: a stream that replayed nothing fails here rather than waits.)
      bus.publish(marker(3));
      const bResumed = await readUntil(b, isMarker(3));
      const cResumed = await readUntil(c, isMarker(3));
      reference.push(...await readUntil(all, isMarker(3)));

      // The reference from B's first event on, as B saw it before and after the reconnect.
      const allSeen = [...allBefore, ...reference];
      const bSeen = [...bBefore, ...bResumed];
      const from = bSeen[0]!.id!;
      const expected = allSeen.filter((x) => x.id! >= from);
      assert.deepEqual(frames(bSeen), frames(expected));
      assert.ok(bResumed.length > 3 * SSE_QUEUE_SIZE, `replayed ${bResumed.length}`);
      assert.equal(new Set(bSeen.map((x) => x.rawId)).size, bSeen.length, "no duplicate");

      // C: the same, through its filter (device events of analogsensor0 and every other kind).
      const cSeen = [...cBefore, ...cResumed];
      const cFrom = cSeen[0]!.id!;
      const cExpected = allSeen.filter((x) =>
        x.id! >= cFrom &&
        (x.event === "bt_error" || x.data?.device_id === undefined ||
          x.data.device_id === "analogsensor0")
      );
      assert.deepEqual(frames(cSeen), frames(cExpected));
      assert.ok(
        cResumed.some((x) => x.event === "state_update" && x.id! < cResumed.at(-1)!.id!),
        "polled values were among the events C missed",
      );
    } finally {
      await all.cancel();
      await b.cancel();
      await c.cancel();
    }
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/events with a Last-Event-ID the ring no longer reaches starts with one resync event", async () => {
  const fx = await startHttpFixture({ start: false, api: { sseReplayMaxEvents: 50 } });
  try {
    const server = await fx.serve();
    const url = `http://127.0.0.1:${server.port}/v0/events`;
    const bus = fx.runtime.bus;
    const first = new SseReader((await apiFetch(url)).body!);
    bus.publish(marker(1));
    const [seen] = await readUntil(first, isMarker(1));
    await first.cancel();
    // 60 more events: the ring keeps the newest 50, so the one after `seen` is gone.
    let lastId = 0;
    for (let i = 0; i < 60; i++) lastId = bus.publish(marker(100 + i));
    const again = new SseReader(
      (await apiFetch(url, { headers: { "last-event-id": seen!.rawId! } })).body!,
    );
    try {
      const gap = await again.nextEvent();
      assert.equal(gap.event, SSE_RESYNC_EVENT);
      assert.equal(gap.event, "resync");
      assert.equal(gap.data.reason, "too_old");
      assert.equal(gap.data.last_event_id, seen!.rawId);
      assert.equal(typeof gap.data.timestamp_ms, "number");
      // Its id is the newest event's: nothing older follows, the next live event does.
      assert.equal(gap.boot, seen!.boot);
      assert.equal(gap.id, lastId);
      bus.publish(marker(2));
      const next = await again.nextEvent();
      assert.ok(isMarker(2)(next), JSON.stringify(next));
      await again.cancel();
      // Resuming from the resync event's id gives exactly what followed it.
      bus.publish(marker(3));
      const third = new SseReader(
        (await apiFetch(url, { headers: { "last-event-id": gap.rawId! } })).body!,
      );
      try {
        assert.ok(isMarker(2)(await third.nextEvent()));
        assert.ok(isMarker(3)(await third.nextEvent()));
      } finally {
        await third.cancel();
      }
    } finally {
      await again.cancel();
    }
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/events: last_event_id in the query resumes too, the header wins unless empty, a foreign id gets resync, nonsense 400", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const server = await fx.serve();
    const url = `http://127.0.0.1:${server.port}/v0/events`;
    const bus = fx.runtime.bus;
    const first = new SseReader((await apiFetch(url)).body!);
    bus.publish(marker(1));
    bus.publish(marker(2));
    const [one, two] = await readUntil(first, isMarker(2));
    await first.cancel();
    bus.publish(marker(3));

    // The query parameter alone: resumes after marker 1.
    const q = new SseReader(
      (await apiFetch(`${url}?last_event_id=${encodeURIComponent(one!.rawId!)}`)).body!,
    );
    assert.ok(isMarker(2)(await q.nextEvent()));
    assert.ok(isMarker(3)(await q.nextEvent()));
    await q.cancel();
    // Both: the header (as EventSource sends on its reconnections) wins over a stale URL.
    const both = new SseReader(
      (await apiFetch(`${url}?last_event_id=${encodeURIComponent(one!.rawId!)}`, {
        headers: { "last-event-id": two!.rawId! },
      })).body!,
    );
    assert.ok(isMarker(3)(await both.nextEvent()));
    await both.cancel();

    // An id of another run (another boot prefix) or a plain number (anolis, or this runtime
    // before ids had a prefix): resync, reason restarted.
    for (const foreign of ["00000000-2", "57"]) {
      const r = new SseReader(
        (await apiFetch(url, { headers: { "last-event-id": foreign } })).body!,
      );
      const gap = await r.nextEvent();
      assert.equal(gap.event, "resync", foreign);
      assert.equal(gap.data.reason, "restarted");
      assert.equal(gap.data.last_event_id, foreign);
      await r.cancel();
    }
    // An id of this run that was never sent (ahead of the newest): resync, reason unknown.
    const ahead = new SseReader(
      (await apiFetch(url, { headers: { "last-event-id": `${one!.boot}-999999` } })).body!,
    );
    const unknown = await ahead.nextEvent();
    assert.equal(unknown.event, "resync");
    assert.equal(unknown.data.reason, "unknown");
    await ahead.cancel();

    // Text no runtime sends as an id: 400, naming where it came from.
    const bad = await apiFetch(url, { headers: { "last-event-id": "not an id" } });
    assert.equal(bad.status, 400);
    const body = await bad.json();
    assert.equal(body.status.code, "INVALID_ARGUMENT");
    assert.match(body.status.message, /^Last-Event-ID header: not an event id/);
    const badQuery = await apiFetch(`${url}?last_event_id=x_y`);
    assert.equal(badQuery.status, 400);
    assert.match((await badQuery.json()).status.message, /^query parameter last_event_id: /);
    // An empty header is no id: a plain live stream.
    const empty = new SseReader(
      (await apiFetch(url, { headers: { "last-event-id": "" } })).body!,
    );
    bus.publish(marker(4));
    assert.ok(isMarker(4)(await empty.nextEvent()));
    await empty.cancel();
    // An empty header counts as absent: the query parameter still resumes (marker 3 first, not
    // the live marker 5).
    const emptyHeader = new SseReader(
      (await apiFetch(`${url}?last_event_id=${encodeURIComponent(two!.rawId!)}`, {
        headers: { "last-event-id": "" },
      })).body!,
    );
    bus.publish(marker(5));
    const resumed = await emptyHeader.nextEvent();
    assert.ok(isMarker(3)(resumed), `first event: ${resumed.data?.node}`);
    await emptyHeader.cancel();
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/events after a runtime restart: the last id of the previous run gets resync, reason restarted", async () => {
  const demo = await Deno.readTextFile(`${REPO}examples/demo.yaml`);
  await withCheckoutMirror(demo, async (dir) => {
    let rt: RuntimeChild = await startRuntimeInMirror(dir);
    try {
      const before = new SseReader((await apiFetch(`${rt.base}/v0/events`)).body!);
      const [seen] = await readUntil(before, (b) => b.event === "state_update");
      await before.cancel();
      assert.equal(await rt.stop(), 0);
      rt = await startRuntimeChild(mirrorOptions(dir, rt.port)); // on the same port
      // The new run numbers its events from 1 again: without the prefix, `seen`'s number could
      // name one of its events, and the client would get the wrong ones.
      const after = new SseReader(
        (await apiFetch(`${rt.base}/v0/events`, { headers: { "last-event-id": seen!.rawId! } }))
          .body!,
      );
      try {
        const gap = await after.nextEvent();
        assert.equal(gap.event, "resync");
        assert.equal(gap.data.reason, "restarted");
        assert.equal(gap.data.last_event_id, seen!.rawId);
        assert.notEqual(gap.boot, seen!.boot);
        // Live events of the new run follow, with its prefix.
        const live = await after.nextEvent();
        assert.equal(live.boot, gap.boot);
        assert.ok(live.id! > gap.id!);
      } finally {
        await after.cancel();
      }
    } finally {
      await rt.stop();
    }
  });
});

/** The served API of a runtime that is not started (events published by the test), closed after. */
async function withServedBus(
  body: (url: string, bus: HttpFixture["runtime"]["bus"]) => Promise<void>,
): Promise<void> {
  const fx = await startHttpFixture({ start: false });
  try {
    const server = await fx.serve();
    await body(`http://127.0.0.1:${server.port}/v0/events`, fx.runtime.bus);
  } finally {
    await fx.close();
  }
}

/** The raw id of marker 1, read by a stream opened before it and closed since. */
async function marker1Id(url: string, bus: HttpFixture["runtime"]["bus"]): Promise<string> {
  const first = new SseReader((await apiFetch(url)).body!);
  bus.publish(marker(1));
  const [seen] = await readUntil(first, isMarker(1));
  await first.cancel();
  return seen!.rawId!;
}

/** A string signal's value whose frame is estimated beyond the ring's 2 MiB (6 bytes a unit). */
const HUGE = "x".repeat(Math.ceil(SSE_REPLAY_MAX_BYTES / 6) + 1);

/** sim0's `label` of `device` with the HUGE value. */
function hugeUpdate(device: string): RuntimeEvent {
  return {
    kind: "state_update",
    provider_id: "sim0",
    device_id: device,
    signal_id: "label",
    value: { type: "string", string: HUGE },
    quality: "OK",
    timestamp_ms: 1,
  };
}

/**
 * The first `n` things a resumed stream (`url` from `lastId`) says, as `: comment` or `event node`
 * (or its reason, or count); the stream is cancelled after.
 */
async function resumedSays(url: string, lastId: string, n: number): Promise<string[]> {
  const again = new SseReader(
    (await apiFetch(url, { headers: { "last-event-id": lastId } })).body!,
  );
  try {
    const got: string[] = [];
    while (got.length < n) {
      const b = await again.next();
      assert.notEqual(b, null, `stream ended after ${got}`);
      for (const c of b!.comments) got.push(`: ${c}`);
      if (b!.event !== undefined) {
        got.push(`${b!.event} ${b!.data?.node ?? b!.data?.reason ?? b!.data?.count}`);
      }
    }
    return got;
  } finally {
    await again.cancel();
  }
}

Deno.test("GET /v0/events with Last-Event-ID across a state_update larger than the resume ring resumes, saying that one was dropped", async () => {
  await withServedBus(async (url, bus) => {
    const seen = await marker1Id(url, bus);
    bus.publish(marker(2));
    bus.publish(hugeUpdate("analogsensor0"));
    bus.publish(marker(3));
    assert.deepEqual(await resumedSays(url, seen, 4), [
      "bt_error marker-2",
      ": dropped 1 events",
      "dropped 1",
      "bt_error marker-3",
    ]);
    // A stream filtered to another device is not told of it.
    const other = new SseReader(
      (await apiFetch(`${url}?device_id=tempctl0`, { headers: { "last-event-id": seen } })).body!,
    );
    try {
      const b = await other.next();
      assert.deepEqual([b?.event, b?.data?.node, b?.comments], ["bt_error", "marker-2", []]);
      const c = await other.next();
      assert.deepEqual([c?.event, c?.data?.node, c?.comments], ["bt_error", "marker-3", []]);
    } finally {
      await other.cancel();
    }
  });
});

Deno.test("GET /v0/events with Last-Event-ID across several state_updates too large for the resume ring in a row gets one notice counting them", async () => {
  await withServedBus(async (url, bus) => {
    const seen = await marker1Id(url, bus);
    bus.publish(marker(2));
    bus.publish(hugeUpdate("analogsensor0"));
    bus.publish(hugeUpdate("analogsensor0"));
    // One the stream's filter would not pass anyway, between two it would: still one run.
    bus.publish(hugeUpdate("tempctl0"));
    bus.publish(hugeUpdate("analogsensor0"));
    bus.publish(marker(3));
    bus.publish(hugeUpdate("analogsensor0"));
    bus.publish(marker(4));
    assert.deepEqual(await resumedSays(`${url}?device_id=analogsensor0`, seen, 7), [
      "bt_error marker-2",
      ": dropped 3 events",
      "dropped 3",
      "bt_error marker-3",
      ": dropped 1 events",
      "dropped 1",
      "bt_error marker-4",
    ]);
  });
});
