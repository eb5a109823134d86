/**
 * A stream the hub ends while its client reads nothing (SSE_STALLED_CLIENT_MS): ending it must
 * also free its connection. The stream's last bytes can never be written to a client that does
 * not read, so a gracefully closed stream kept its request in flight for ever: the connection
 * layer never closes a connection with a request in flight, and frozen tablets whose streams were
 * ended still held connections of http.max_connections, up to locking out every request, the
 * e-stop included.
 */
import assert from "node:assert/strict";
import { serveHttp } from "../../src/host/mod.ts";
import { SSE_END_FLUSH_MS, SSE_STALLED_CLIENT_MS } from "../../src/http/mod.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { ManualClock } from "../helpers/clock.ts";
import { connect, getRequest, readResponse, send } from "./_raw_socket.ts";

const TOKEN = "shift-token-0001";
const NEXT_TOKEN = "next-token-0002";

interface Rig {
  readonly clock: ManualClock;
  readonly fx: HttpFixture;
  readonly server: Awaited<ReturnType<typeof serveHttp>>;
  /** One raw connection to the server. */
  readonly conn: Deno.TcpConn;
  /** A metric's value from GET /metrics (0 when absent). */
  metric(name: string): Promise<number>;
}

/**
 * The API on a ManualClock, served on loopback (with TOKEN when `auth`), and one raw connection
 * to it; everything closed after `body`.
 */
async function withRawStream(auth: boolean, body: (rig: Rig) => Promise<void>): Promise<void> {
  const clock = new ManualClock();
  const fx = await startHttpFixture({
    start: false,
    apiClock: clock,
    ...(auth
      ? {
        config: { http: { authEnabled: true, authExemptLoopback: false } },
        api: { apiToken: TOKEN },
      }
      : {}),
  });
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: auth,
    allowInsecureBind: false,
    handler: fx.api.handle,
    log: testLogger(),
    onShutdown: () => fx.api.close(),
  });
  const conn = await connect(server.port);
  const metric = async (name: string) => {
    const headers = auth ? { authorization: `Bearer ${TOKEN}` } : {};
    const m = (await fx.request("GET", "/metrics", { headers })).text;
    return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(m)?.[1] ?? 0);
  };
  try {
    await body({ clock, fx, server, conn, metric });
  } finally {
    try {
      conn.close();
    } catch { /* closed by the server */ }
    await server.shutdown();
    await fx.close();
  }
}

/** GET /v0/events with TOKEN. */
const EVENTS_WITH_TOKEN = "GET /v0/events HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
  `Authorization: Bearer ${TOKEN}\r\n\r\n`;

/** Waits until the server has no connection open (fails naming how many are). */
async function connectionClosed(rig: Rig): Promise<void> {
  await waitFor(
    "its connection closed",
    () => rig.server.connectionStats().open === 0,
    5000,
  ).catch(() => {
    assert.fail(
      `the ended stream's connection is still open (${rig.server.connectionStats().open} open)`,
    );
  });
}

Deno.test("a stream ended because its client read nothing frees its connection too", async () => {
  await withRawStream(false, async (rig) => {
    const { fx, server, conn, clock } = rig;
    await send(conn, getRequest("/v0/events")); // and never read
    await waitFor("the stream opened", () => fx.api.sseClientCount === 1, 5000);
    assert.equal(server.connectionStats().open, 1);
    // Events until the client's socket is full and the stream's queue overflows.
    const big = "x".repeat(64 * 1024);
    let n = 0;
    await waitFor("frames dropped for the client", async () => {
      for (let i = 0; i < 20; i++) {
        fx.runtime.bus.publish({ kind: "bt_error", node: "n", error: big, timestamp_ms: n++ });
        await new Promise((r) => setTimeout(r, 2));
      }
      return await rig.metric("runtime_sse_events_dropped_total") > 0;
    }, 20_000);
    clock.mono += SSE_STALLED_CLIENT_MS;
    fx.runtime.bus.publish({ kind: "bt_error", node: "n", error: "last", timestamp_ms: n++ });
    assert.equal(fx.api.sseClientCount, 0, "the stalled stream ended");
    await connectionClosed(rig);
  });
});

Deno.test("a stream its token no longer admits (a reload) frees its connection too when its client reads nothing", async () => {
  await withRawStream(true, async (rig) => {
    const { fx, conn, clock } = rig;
    await send(conn, EVENTS_WITH_TOKEN); // and never read
    await waitFor("the stream opened", () => fx.api.sseClientCount === 1, 5000);
    // Events until the client's socket is full (frames wait in the stream's queue).
    const big = "x".repeat(64 * 1024);
    let n = 0;
    await waitFor("frames queued for the client", async () => {
      for (let i = 0; i < 20; i++) {
        fx.runtime.bus.publish({ kind: "bt_error", node: "n", error: big, timestamp_ms: n++ });
      }
      await new Promise((r) => setTimeout(r, 5));
      return await rig.metric("runtime_sse_queued_events") > 0;
    }, 20_000);
    const { ended } = await fx.api.setTokens(fx.config.http, NEXT_TOKEN, []);
    assert.equal(ended, 1, "the stream ended");
    await clock.advanceAsync(SSE_END_FLUSH_MS);
    await connectionClosed(rig);
  });
});

Deno.test("a stream its token no longer admits ends cleanly for a client that reads, and its kept-alive connection serves the next request", async () => {
  await withRawStream(true, async ({ fx, conn, clock }) => {
    await send(conn, EVENTS_WITH_TOKEN);
    await waitFor("the stream opened", () => fx.api.sseClientCount === 1, 5000);
    const { ended } = await fx.api.setTokens(fx.config.http, NEXT_TOKEN, []);
    assert.equal(ended, 1);
    // The chunked stream's end, read to its last chunk.
    const dec = new TextDecoder();
    const buf = new Uint8Array(64 * 1024);
    let text = "";
    while (!text.endsWith("0\r\n\r\n")) {
      const n = await conn.read(buf);
      assert.notEqual(n, null, `connection closed before the stream's end: ${text}`);
      text += dec.decode(buf.subarray(0, n!));
    }
    await clock.advanceAsync(SSE_END_FLUSH_MS);
    await send(
      conn,
      `GET /v0/mode HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${NEXT_TOKEN}\r\n\r\n`,
    );
    const next = await readResponse(conn);
    assert.equal(next?.status, 200, "the kept-alive connection still serves");
  });
});

Deno.test("a filtered stream whose client stopped reading frees its connection after 60 s, though no event reaches it then", async () => {
  await withRawStream(false, async (rig) => {
    const { fx, conn, clock } = rig;
    const update = (p: string, value: string, n: number) =>
      fx.runtime.bus.publish({
        kind: "state_update",
        provider_id: p,
        device_id: "d",
        signal_id: "s",
        value: { type: "string", string: value },
        quality: "OK",
        timestamp_ms: n,
      });
    await send(conn, getRequest("/v0/events?provider_id=rare")); // and never read
    await waitFor("the stream opened", () => fx.api.sseClientCount === 1, 5000);
    // Its provider's events until the client's socket is full (frames wait in its queue), but
    // never so many that its queue overflows: then the events stop (a provider that is quiet).
    const big = "x".repeat(64 * 1024);
    let n = 0;
    await waitFor("frames queued for the client", async () => {
      update("rare", big, n++);
      await new Promise((r) => setTimeout(r, 2));
      return await rig.metric("runtime_sse_queued_events") > 0;
    }, 20_000);
    const m = (await fx.request("GET", "/metrics")).text;
    assert.match(m, /^runtime_sse_events_dropped_total 0$/m, "nothing dropped");
    await clock.advanceAsync(SSE_STALLED_CLIENT_MS);
    for (let i = 0; i < 100; i++) update("busy", "1", n++); // other providers' events only
    assert.equal(fx.api.sseClientCount, 0, "the stalled filtered stream ended");
    await connectionClosed(rig);
  });
});
