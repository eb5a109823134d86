/**
 * An event stream whose client stops reading while the e-stop latches (docs/http-api.md, "Slow
 * clients"): the latch's `estop_change` either reaches the client or the stream says it dropped
 * it. Every event published while the client did not read is accounted for: the ids it received
 * and the counts of its `: dropped N events` notices cover every id, none skipped silently. Real
 * HTTP on loopback (a raw socket that reads nothing, then everything), the simulated provider as a
 * child process, the e-stop by `POST /v0/estop`.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { parseBlock, type SseBlock } from "../helpers/sse_reader.ts";

/** Reads an HTTP/1.1 chunked response off a raw socket, as SSE blocks. */
class RawSse {
  readonly #conn: Deno.Conn;
  readonly #decoder = new TextDecoder();
  #raw = new Uint8Array(0);
  #text = "";
  #headersDone = false;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  async #fill(): Promise<boolean> {
    const buf = new Uint8Array(256 * 1024);
    const n = await this.#conn.read(buf);
    if (n === null) return false;
    const next = new Uint8Array(this.#raw.length + n);
    next.set(this.#raw);
    next.set(buf.subarray(0, n), this.#raw.length);
    this.#raw = next;
    this.#decode();
    return true;
  }

  /** Moves complete chunks (after the headers) from #raw to #text. */
  #decode(): void {
    const ascii = (b: Uint8Array) => String.fromCharCode(...b);
    if (!this.#headersDone) {
      const at = ascii(this.#raw.subarray(0, Math.min(this.#raw.length, 4096))).indexOf(
        "\r\n\r\n",
      );
      if (at < 0) return;
      const head = ascii(this.#raw.subarray(0, at));
      assert.match(head, /^HTTP\/1\.1 200/);
      assert.match(head, /transfer-encoding: chunked/i);
      this.#raw = this.#raw.subarray(at + 4);
      this.#headersDone = true;
    }
    for (;;) {
      const lineEnd = ascii(this.#raw.subarray(0, Math.min(this.#raw.length, 32))).indexOf("\r\n");
      if (lineEnd < 0) return;
      const size = parseInt(ascii(this.#raw.subarray(0, lineEnd)), 16);
      if (this.#raw.length < lineEnd + 2 + size + 2) return;
      this.#text += this.#decoder.decode(
        this.#raw.subarray(lineEnd + 2, lineEnd + 2 + size),
        { stream: true },
      );
      this.#raw = this.#raw.subarray(lineEnd + 2 + size + 2);
    }
  }

  /** The next block, or null when the connection ended. */
  async next(): Promise<SseBlock | null> {
    for (;;) {
      const end = this.#text.indexOf("\n\n");
      if (end >= 0) {
        const raw = this.#text.slice(0, end);
        this.#text = this.#text.slice(end + 2);
        return parseBlock(raw);
      }
      if (!await this.#fill()) return null;
    }
  }
}

Deno.test("GET /v0/events: a client that stops reading while the e-stop latches gets the latch's event or a dropped notice that counts it", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 100 } });
  try {
    const server = await fx.serve();
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
    try {
      await conn.write(
        new TextEncoder().encode("GET /v0/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
      );
      const slow = new RawSse(conn);
      // It reads one event (the stream is live), then nothing while the e-stop latches and a
      // flood follows it: far beyond the socket buffers plus the 100-frame queue.
      let first: SseBlock | null;
      do first = await slow.next(); while (first !== null && first.id === undefined);
      assert.ok(first?.id !== undefined, "the stream is live");
      let estopId = -1;
      const unsubscribe = fx.runtime.bus.subscribe((p) => {
        if (p.event.kind === "estop_change" && p.event.latched && estopId < 0) estopId = p.id;
      });
      try {
        const res = await fetch(`http://127.0.0.1:${server.port}/v0/estop`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ reason: "slow client pair" }),
        });
        assert.equal(res.status, 200, await res.text());
        await waitFor("the latch's event published", () => estopId > 0);
        const big = "x".repeat(64 * 1024);
        let lastId = 0;
        for (let n = 0; n < 400; n++) {
          lastId = fx.runtime.bus.publish({
            kind: "bt_error",
            node: `n${n}`,
            error: big,
            timestamp_ms: n,
          });
        }
        // Now it reads everything up to the flood's last event.
        let prev = first!.id!;
        let pendingDrop = 0;
        let droppedTotal = 0;
        let sawEstop = false;
        for (;;) {
          const b = await slow.next();
          assert.ok(b !== null, "the stream stays open");
          const notice = b.comments.map((c) => /^dropped (\d+) events$/.exec(c)).find((m) => m);
          if (notice) pendingDrop += Number(notice[1]);
          if (b.event === "dropped") {
            assert.equal(b.id, undefined, "the dropped event has no id");
            assert.equal(b.data.count, pendingDrop, "the event says what the comment says");
            continue;
          }
          if (b.id === undefined) continue;
          assert.equal(
            b.id - prev - 1,
            pendingDrop,
            `events ${prev + 1}..${b.id - 1} were not received: the notice must count them`,
          );
          droppedTotal += pendingDrop;
          pendingDrop = 0;
          if (b.id === estopId) {
            assert.equal(b.event, "estop_change");
            sawEstop = true;
          }
          prev = b.id;
          if (b.id === lastId) break;
        }
        assert.ok(droppedTotal > 0, "the flood overflowed the slow client's queue");
        assert.ok(
          sawEstop || estopId < prev,
          "the latch's event was received, or counted among the dropped",
        );
        // Whatever the stream lost, the latch stands for a client that re-reads the status.
        const status = await fetch(`http://127.0.0.1:${server.port}/v0/runtime/status`);
        assert.equal((await status.json()).estop.latched, true);
      } finally {
        unsubscribe();
      }
    } finally {
      conn.close();
    }
    await waitFor("stream released", () => fx.api.sseClientCount === 0);
  } finally {
    await fx.close();
  }
});
