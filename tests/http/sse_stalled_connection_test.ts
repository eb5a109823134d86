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
import { SSE_STALLED_CLIENT_MS } from "../../src/http/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { ManualClock } from "../helpers/clock.ts";
import { connect, getRequest, send } from "./_raw_socket.ts";

Deno.test("a stream ended because its client read nothing frees its connection too", async () => {
  const clock = new ManualClock();
  const fx = await startHttpFixture({ start: false, apiClock: clock });
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    handler: fx.api.handle,
    log: testLogger(),
    onShutdown: () => fx.api.close(),
  });
  const conn = await connect(server.port);
  try {
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
      const m = (await fx.request("GET", "/metrics")).text;
      return Number(/^runtime_sse_events_dropped_total (\d+)$/m.exec(m)?.[1] ?? 0) > 0;
    }, 20_000);
    clock.mono += SSE_STALLED_CLIENT_MS;
    fx.runtime.bus.publish({ kind: "bt_error", node: "n", error: "last", timestamp_ms: n++ });
    assert.equal(fx.api.sseClientCount, 0, "the stalled stream ended");
    await waitFor(
      "its connection closed",
      () => server.connectionStats().open === 0,
      5000,
    ).catch(() => {
      assert.fail(
        `the ended stream's connection is still open (${server.connectionStats().open} open)`,
      );
    });
  } finally {
    try {
      conn.close();
    } catch { /* closed by the server */ }
    await server.shutdown();
    await fx.close();
  }
});
