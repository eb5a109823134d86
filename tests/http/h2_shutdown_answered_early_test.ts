/**
 * Shutdown with an HTTP/2 connection (HTTPS, ALPN h2: a browser's tabs share one) that carries a
 * call being answered past HTTP_SHUTDOWN_DRAIN_MS and a stream whose client reads nothing: shutdown
 * waited for the connection to have no request in flight, which the stalled stream never lets
 * happen, so it waited the whole HTTP_SHUTDOWN_ANSWER_MS although the call it was waiting for was
 * answered long before. It now waits for the answers being made, and ends once they are written
 * (their connection dropped HTTP_SHUTDOWN_FLUSH_MS later, so the answer's bytes leave first).
 */
import assert from "node:assert/strict";
import * as host from "../../src/host/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { stalledStreamAndCall } from "./_h2_client.ts";

Deno.test("shutdown stops waiting for an HTTP/2 connection with a stalled stream once the call it waited for is answered, not at the end of HTTP_SHUTDOWN_ANSWER_MS", async () => {
  const r = await stalledStreamAndCall("http-h2-answered-");
  const { clock, server, session, release } = r;
  let stoppedAt: number | null = null;
  try {
    const { call } = await r.start();
    const started = clock.monoMs();
    const stopped = server.shutdown().then(() => (stoppedAt = clock.monoMs()));
    await waitFor(
      "the shutdown's drain under way",
      () => clock.pendingDelays().includes(host.HTTP_SHUTDOWN_DRAIN_MS),
      10_000,
    );
    clock.advance(host.HTTP_SHUTDOWN_DRAIN_MS); // the call is still being made: waited for
    await waitFor(
      "the shutdown waiting for the call (the rest of HTTP_SHUTDOWN_ANSWER_MS)",
      () =>
        clock.pendingDelays().includes(
          host.HTTP_SHUTDOWN_ANSWER_MS - host.HTTP_SHUTDOWN_DRAIN_MS,
        ),
      10_000,
    );
    release(); // the call is answered 1 s into the answer bound
    await r.callAnswered()!; // its answer is written
    const got = await call;
    assert.deepEqual(got, { status: 200, body: "call done", error: null });
    // Shutdown no longer waits for the answer bound: it drops the connection
    // HTTP_SHUTDOWN_FLUSH_MS after that answer (the stalled stream never ends by itself).
    await waitFor(
      "the connection's drop planned HTTP_SHUTDOWN_FLUSH_MS after the call's answer",
      () => clock.pendingDelays().includes(host.HTTP_SHUTDOWN_FLUSH_MS),
      10_000,
    );
    clock.advance(host.HTTP_SHUTDOWN_FLUSH_MS);
    await stopped;
    const took = stoppedAt! - started;
    assert.equal(took, host.HTTP_SHUTDOWN_DRAIN_MS + host.HTTP_SHUTDOWN_FLUSH_MS);
    assert.ok(took < host.HTTP_SHUTDOWN_ANSWER_MS, `shutdown took ${took} ms`);
    assert.equal(server.connectionStats().open, 0);
  } finally {
    release();
    session.destroy();
    // The manual clock runs out whatever bounds are left (the code before the fix waits).
    while (stoppedAt === null && clock.fireNext()) await Promise.resolve();
    await server.shutdown();
    await r.remove();
  }
});
