/**
 * Shutdown with an HTTP/2 connection (HTTPS, ALPN h2: a browser's tabs share one) that carries a
 * call being answered and a stream whose client reads nothing (a large answer to a tab that
 * froze): the stalled stream keeps the connection from ever draining, so shutdown drops it at the
 * end of its bound. The call answered just before that end lost its answer: the connection was
 * dropped at once, before the answer's bytes had left, and the client could not tell whether the
 * call had acted. Its answer now gets HTTP_SHUTDOWN_FLUSH_MS to leave before the drop.
 */
import assert from "node:assert/strict";
// One namespace: run against the code before the fix, the test reaches its assertion and fails
// there rather than at an import of HTTP_SHUTDOWN_FLUSH_MS, which that code does not have.
import * as host from "../../src/host/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { stalledStreamAndCall } from "./_h2_client.ts";

Deno.test("shutdown drops an HTTP/2 connection held by a stalled stream only HTTP_SHUTDOWN_FLUSH_MS after the call answered on it, so its client gets that answer", async () => {
  const r = await stalledStreamAndCall("http-h2-flush-");
  const { clock, server, session, release } = r;
  try {
    const { call } = await r.start();
    assert.equal(server.connectionStats().open, 1, "one HTTP/2 connection carries both");
    const stopped = server.shutdown();
    await waitFor(
      "the shutdown's drain under way",
      () => clock.pendingDelays().includes(host.HTTP_SHUTDOWN_DRAIN_MS),
      10_000,
    );
    clock.advance(host.HTTP_SHUTDOWN_DRAIN_MS - 1);
    release(); // the call is answered 1 ms before the drain bound ends
    await r.callAnswered()!; // its answer is written: its bytes are on their way
    clock.advance(1); // the drain bound ends: the connection is dropped
    const got = await call;
    assert.deepEqual(got, { status: 200, body: "call done", error: null });
    // Dropped HTTP_SHUTDOWN_FLUSH_MS after the answer was written, not before.
    clock.advance(host.HTTP_SHUTDOWN_FLUSH_MS - 2);
    assert.equal(server.connectionStats().open, 1, "dropped before HTTP_SHUTDOWN_FLUSH_MS");
    clock.advance(1);
    await stopped;
    assert.equal(server.connectionStats().open, 0);
  } finally {
    release();
    session.destroy();
    await server.shutdown();
    await r.remove();
  }
});
