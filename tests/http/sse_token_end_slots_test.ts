/**
 * Streams a token change ended keep their connection until their client takes the end, or
 * SSE_END_FLUSH_MS (5 s) for a client that reads nothing. They no longer counted against the
 * streams' share of the connections (at most half) meanwhile: the consoles reconnecting with the
 * new token took the other half, every connection had a request in flight, and an e-stop POST
 * right after the token change was refused a connection.
 */
import assert from "node:assert/strict";
import { serveHttp } from "../../src/host/mod.ts";
import { SSE_END_FLUSH_MS } from "../../src/http/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { ManualClock } from "../helpers/clock.ts";
import { connect, readResponse, send } from "./_raw_socket.ts";

const MAX_CONNECTIONS = 4; // streams: at most 2

const streamRequest = (token: string) =>
  `GET /v0/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`;

Deno.test("an e-stop gets a connection right after a token change ended streams whose clients read nothing", async () => {
  const clock = new ManualClock();
  const fx = await startHttpFixture({
    start: false,
    apiClock: clock,
    config: { http: { authEnabled: true, authExemptLoopback: false } },
    api: { apiToken: "shift-token-0001" },
  });
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: true,
    allowInsecureBind: false,
    handler: fx.api.handle,
    log: testLogger(),
    onShutdown: () => fx.api.close(),
    maxConnections: MAX_CONNECTIONS,
  });
  fx.api.fitConnections(server.maxConnections);
  const conns: Deno.Conn[] = [];
  try {
    // Two frozen tablets: their streams take the streams' half, and they read nothing.
    for (let i = 0; i < 2; i++) {
      const c = await connect(server.port);
      conns.push(c);
      await send(c, streamRequest("shift-token-0001"));
    }
    await waitFor("both streams opened", () => fx.api.sseClientCount === 2, 5000);
    // Events until both clients' sockets are full (frames wait in both streams' queues: one
    // queue holds at most 16 of these, SSE_QUEUE_MAX_BYTES).
    const big = "x".repeat(64 * 1024);
    let n = 0;
    await waitFor("frames queued for both clients", async () => {
      for (let i = 0; i < 20; i++) {
        fx.runtime.bus.publish({ kind: "bt_error", node: "n", error: big, timestamp_ms: n++ });
      }
      await new Promise((r) => setTimeout(r, 5));
      const m = (await fx.request("GET", "/metrics", {
        headers: { authorization: "Bearer shift-token-0001" },
      })).text;
      return Number(/^runtime_sse_queued_events (\d+)$/m.exec(m)?.[1] ?? 0) > 16;
    }, 20_000);
    const { ended } = await fx.api.setTokens(fx.config.http, "next-token-0002", []);
    assert.equal(ended, 2, "both streams ended");
    // Consoles reconnect with the new token at once.
    const heads: string[] = [];
    for (let i = 0; i < 2; i++) {
      const c = await connect(server.port);
      conns.push(c);
      await send(c, streamRequest("next-token-0002"));
      heads.push((await readResponse(c, 5000))?.headers.split("\r\n")[0] ?? "closed");
    }
    // The e-stop, on a connection of its own.
    const estop = await connect(server.port);
    conns.push(estop);
    await send(
      estop,
      "POST /v0/estop HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer next-token-0002\r\n" +
        "content-length: 0\r\n\r\n",
    );
    const res = await readResponse(estop, 10_000);
    assert.ok(res !== null, "the e-stop's connection was closed unanswered");
    assert.doesNotMatch(
      res.body,
      /too many open connections/,
      `the e-stop was refused a connection (reconnected streams: ${heads.join(", ")})`,
    );
    assert.equal(res.status, 200, res.body);
    assert.ok(fx.runtime.estop.status().latched, "latched");
    // Once the ended streams' connections are dropped, they count no more.
    await clock.advanceAsync(SSE_END_FLUSH_MS);
    await waitFor("a new stream is admitted", async () => {
      const c = await connect(server.port);
      conns.push(c);
      await send(c, streamRequest("next-token-0002"));
      const head = (await readResponse(c, 5000))?.headers ?? "";
      return head.startsWith("HTTP/1.1 200");
    }, 5000);
  } finally {
    for (const c of conns) {
      try {
        c.close();
      } catch { /* closed by the server */ }
    }
    await server.shutdown();
    await fx.close();
  }
});

Deno.test("a stream a token change ended whose client took the end no longer counts against the streams' share", async () => {
  const clock = new ManualClock();
  const fx = await startHttpFixture({
    start: false,
    apiClock: clock,
    config: { http: { authEnabled: true, authExemptLoopback: false } },
    api: { apiToken: "shift-token-0001" },
  });
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: true,
    allowInsecureBind: false,
    handler: fx.api.handle,
    log: testLogger(),
    onShutdown: () => fx.api.close(),
    maxConnections: 2, // streams: at most 1
  });
  fx.api.fitConnections(server.maxConnections);
  const conns: Deno.Conn[] = [];
  try {
    const c = await connect(server.port);
    conns.push(c);
    await send(c, streamRequest("shift-token-0001"));
    await waitFor("the stream opened", () => fx.api.sseClientCount === 1, 5000);
    const { ended } = await fx.api.setTokens(fx.config.http, "next-token-0002", []);
    assert.equal(ended, 1);
    const dec = new TextDecoder();
    const buf = new Uint8Array(64 * 1024);
    let text = "";
    while (!text.endsWith("0\r\n\r\n")) {
      const n = await c.read(buf);
      assert.notEqual(n, null, `connection closed before the stream's end: ${text}`);
      text += dec.decode(buf.subarray(0, n!));
    }
    // No SSE_END_FLUSH_MS wait: the same connection opens the next stream.
    await waitFor("a new stream is admitted", async () => {
      await send(c, streamRequest("next-token-0002"));
      const head = (await readResponse(c, 5000))?.headers ?? "";
      return head.startsWith("HTTP/1.1 200");
    }, 5000);
  } finally {
    for (const c of conns) {
      try {
        c.close();
      } catch { /* closed by the server */ }
    }
    await server.shutdown();
    await fx.close();
  }
});
