/**
 * The connection layer's deadlines over real sockets (README, "How it behaves"): a connection that
 * sends nothing, a slowloris, an idle kept-alive connection and a half-finished TLS handshake are
 * closed; an event stream is not.
 */
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { type HttpServerHandle, serveHttp, type ServeOptions } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import {
  acceptedSockets,
  closedWithin,
  connect,
  getRequest,
  readResponse,
  send,
  sleep,
} from "./_raw_socket.ts";
import { selfSignedCert } from "./_tls_certs.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

/**
 * How long past a timeout a close may come and still count: the sweeper's period plus a loaded
 * machine's scheduling delay. Generous (a stalled process stalls the server too, and closes
 * late); it costs nothing when the close comes on time, the waits end at the close.
 */
const SLACK_MS = 10_000;
/** http.keep_alive_timeout_ms of the keep-alive test (on its manual clock). */
const KEEP_ALIVE_MS = 1000;

async function serve(
  fx: HttpFixture,
  o: Partial<ServeOptions> & { requestHeaderTimeoutMs: number; keepAliveTimeoutMs: number },
): Promise<HttpServerHandle> {
  return await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    handler: fx.api.handle,
    log: testLogger(),
    onShutdown: () => fx.api.close(),
    ...o,
  });
}

Deno.test("serveHttp closes a connection that sends no request once http.request_header_timeout_ms has passed", async () => {
  const fx = await startHttpFixture({ start: false });
  const server = await serve(fx, { requestHeaderTimeoutMs: 600, keepAliveTimeoutMs: 60_000 });
  try {
    // From before the connect: the server's timeout starts when it accepts.
    const since = performance.now();
    const waited = await closedWithin(await connect(server.port), 600 + SLACK_MS, since);
    assert.notEqual(waited, null, "a silent connection is still open");
    assert.ok(waited! >= 550, `closed after ${waited} ms, before the timeout`);
    assert.equal(server.connectionStats().headerTimeouts, 1);
    assert.equal(server.connectionStats().open, 0);
  } finally {
    await server.shutdown();
    await fx.close();
  }
});

Deno.test("serveHttp closes a slowloris connection sending a header byte every third of the timeout", async () => {
  const fx = await startHttpFixture({ start: false });
  const server = await serve(fx, { requestHeaderTimeoutMs: 600, keepAliveTimeoutMs: 60_000 });
  const since = performance.now();
  const conn = await connect(server.port);
  let writing = true;
  const drip = (async () => {
    const head = "GET /v0/runtime/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + "a".repeat(60);
    for (const ch of head) {
      if (!writing) return;
      try {
        await send(conn, ch);
      } catch {
        return; // closed by the server
      }
      await sleep(200);
    }
  })();
  try {
    const waited = await closedWithin(conn, 600 + SLACK_MS, since);
    assert.notEqual(waited, null, "a slowloris connection is still open");
    assert.ok(waited! >= 550, `closed after ${waited} ms, before the timeout`);
    assert.equal(server.connectionStats().headerTimeouts, 1);
  } finally {
    writing = false;
    await drip;
    await server.shutdown();
    await fx.close();
  }
});

Deno.test("serveHttp keeps a connection for requests within http.keep_alive_timeout_ms and closes it once idle that long", async () => {
  // The bounds on a manual clock: the connection is idle for the time the test moves, not for
  // what a loaded machine takes between its steps.
  const clock = new ManualClock();
  const fx = await startHttpFixture({ start: false });
  const server = await serve(fx, {
    requestHeaderTimeoutMs: 60_000,
    keepAliveTimeoutMs: KEEP_ALIVE_MS,
    clock,
  });
  const conn = await connect(server.port);
  try {
    await send(conn, getRequest("/v0/runtime/status"));
    assert.equal((await readResponse(conn))?.status, 200);
    // Idle for all but the last millisecond of the keep-alive timeout, the sweeper run meanwhile.
    clock.advance(KEEP_ALIVE_MS - 1);
    assert.equal(server.connectionStats().idleTimeouts, 0);
    // Within the keep-alive timeout the same connection serves the next request.
    const since = clock.monoMs(); // from before the request: idle from its answer on
    await send(conn, getRequest("/v0/runtime/status"));
    assert.equal((await readResponse(conn))?.status, 200);
    // The bounds pass on the manual clock, one timer at a time, until the idle close.
    await waitFor(
      "the idle connection closed",
      () => server.connectionStats().idleTimeouts === 1 || (clock.fireNext(), false),
    );
    const idle = clock.monoMs() - since;
    assert.ok(idle >= KEEP_ALIVE_MS, `closed after ${idle} ms of idleness, before the timeout`);
    assert.notEqual(await closedWithin(conn, SLACK_MS), null, "the connection is still open");
    assert.equal(server.connectionStats().idleTimeouts, 1);
    assert.equal(server.connectionStats().headerTimeouts, 0);
  } finally {
    await server.shutdown();
    await fx.close();
  }
});

Deno.test("serveHttp never closes an event stream for idleness, though its client sends nothing", async () => {
  const fx = await startHttpFixture({ start: false });
  const server = await serve(fx, { requestHeaderTimeoutMs: 300, keepAliveTimeoutMs: 300 });
  const res = await apiFetch(`http://127.0.0.1:${server.port}/v0/events`);
  const reader = res.body!.getReader();
  try {
    assert.equal(res.status, 200);
    // Five times both timeouts, with no byte in either direction.
    await sleep(1500);
    assert.equal(server.connectionStats().open, 1);
    const event: RuntimeEvent = {
      kind: "mode_change",
      previous_mode: "IDLE",
      new_mode: "MANUAL",
      timestamp_ms: 1,
    };
    const id = fx.runtime.bus.publish(event);
    let text = "";
    // Bounded: a stream that stays open without the event is cancelled, so the read ends.
    const deadline = setTimeout(() => reader.cancel("no event within 10 s"), 10_000);
    try {
      while (!text.includes(`-${id}\ndata: `)) { // its id line, `id: <boot>-<n>`
        const { done, value } = await reader.read();
        assert.equal(done, false, "the event stream was closed, or the event never came");
        text += new TextDecoder().decode(value);
      }
    } finally {
      clearTimeout(deadline);
    }
    assert.equal(server.connectionStats().idleTimeouts, 0);
    assert.equal(server.connectionStats().headerTimeouts, 0);
  } finally {
    await reader.cancel();
    await server.shutdown();
    await fx.close();
  }
});

Deno.test("serveHttp over TLS closes connections that never finish the handshake, and frees their sockets", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-tls-hs-" });
  const fx = await startHttpFixture({ start: false });
  try {
    const { cert, key } = await selfSignedCert(dir);
    const server = await serve(fx, {
      tlsCertPath: cert,
      tlsKeyPath: key,
      requestHeaderTimeoutMs: 800,
      keepAliveTimeoutMs: 60_000,
    });
    try {
      // Each from before its connect: the server's timeout starts when it accepts.
      const silentSince = performance.now();
      const silent = await Promise.all([1, 2, 3].map(() => connect(server.port)));
      // Half a ClientHello: a TLS record header announcing 512 bytes, and 5 of them.
      const halfSince = performance.now();
      const half = await connect(server.port);
      await send(
        half,
        new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03]),
      );
      const closing = Promise.all(
        [...silent, half].map((c) =>
          closedWithin(c, 800 + SLACK_MS, c === half ? halfSince : silentSince)
        ),
      );
      const waited = await closing;
      for (const w of waited) {
        assert.notEqual(w, null, "an unfinished TLS handshake is still open");
        assert.ok(w! >= 750, `closed after ${w} ms, before the timeout`);
      }
      assert.equal(server.connectionStats().headerTimeouts, 4);
      // Deno alone keeps a pending handshake's socket open until the peer leaves; the relay must
      // not: every socket accepted for these connections is closed (the clients' stay open).
      await waitFor("accepted sockets closed", () => acceptedSockets(server.port) === 0, 5000);
      // And the server still completes a real handshake.
      const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(cert)] });
      try {
        const res = await apiFetch(`https://localhost:${server.port}/v0/runtime/status`, {
          client,
        });
        assert.equal(res.status, 200);
        await res.text();
        // The check above could fail: it sees a socket the server accepted and holds (this one,
        // kept alive). Not looked at while the four were open: the server closes them 800 ms
        // after accepting, and a loaded machine can let that pass before the test looks.
        assert.ok(acceptedSockets(server.port) >= 1, "the kept-alive socket is not seen");
      } finally {
        client.close();
      }
    } finally {
      await server.shutdown();
    }
  } finally {
    await fx.close();
    await Deno.remove(dir, { recursive: true });
  }
});
