/**
 * Shutdown with an HTTP/2 connection held by a stream its client does not read: the connection is
 * dropped at the end of the drain bound, put off by HTTP_SHUTDOWN_FLUSH_MS after the last answer
 * written on it (h2_shutdown_flush_test.ts). That drop was planned once, from the answer written
 * last when it was planned: another answer on the connection written during the flush window
 * (a download whose last bytes were being made) got only what was left of that window, and its
 * connection was dropped under it. The drop is now planned anew from each answer written, still
 * within HTTP_SHUTDOWN_MAX_MS of shutdown's start.
 */
import assert from "node:assert/strict";
// One namespace, as h2_shutdown_flush_test.ts: run against older code, the test fails at its
// assertion rather than at an import.
import * as host from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  collect,
  endlessAnswer,
  h2Session,
  type Outcome,
  tlsServer,
  twoPartAnswer,
} from "./_h2_client.ts";

Deno.test("shutdown re-plans an HTTP/2 connection's drop from an answer written during the HTTP_SHUTDOWN_FLUSH_MS window, so that answer gets the whole window too", async () => {
  const clock = new ManualClock();
  let release = () => {};
  const released = new Promise<void>((r) => (release = r));
  let finishSlow = () => {};
  let callAnswered: Promise<void> | null = null;
  let slowAnswered: Promise<void> | null = null;
  const { server, caCert, remove } = await tlsServer({
    prefix: "http-h2-flush-replan-",
    clock,
    handler: async (req, info) => {
      const path = new URL(req.url).pathname;
      if (path === "/big") return endlessAnswer();
      if (path === "/slow") {
        // Its head and first part now, its end when the test says (after the drop is planned).
        slowAnswered = info.answered;
        const slow = twoPartAnswer();
        finishSlow = slow.finish;
        return slow.res;
      }
      callAnswered = info.answered; // a device call waiting for its provider
      await released;
      return new Response("call done");
    },
  });
  const session = h2Session(server.port, caCert);
  try {
    let stalledHeaders = false;
    const stalled = session.request({ ":path": "/big" });
    stalled.on("response", () => (stalledHeaders = true));
    stalled.on("error", () => {});
    stalled.pause(); // its client reads nothing: the connection never drains
    let slowFirstPart = false;
    const slowStream = session.request({ ":path": "/slow" });
    slowStream.once("data", () => (slowFirstPart = true));
    const slow: Promise<Outcome> = collect(slowStream);
    const call = collect(
      session.request({ ":path": "/call", ":method": "POST" }, { endStream: true }),
    );
    await waitFor(
      "the stalled stream answered, the slow answer's first part read and the call in flight",
      () => stalledHeaders && slowFirstPart && callAnswered !== null,
      10_000,
    );
    assert.equal(server.connectionStats().open, 1, "one HTTP/2 connection carries all three");

    const stopped = server.shutdown();
    await waitFor(
      "the shutdown's drain under way",
      () => clock.pendingDelays().includes(host.HTTP_SHUTDOWN_DRAIN_MS),
      10_000,
    );
    clock.advance(host.HTTP_SHUTDOWN_DRAIN_MS - 1);
    release(); // the call is answered 1 ms before the drain bound ends
    await callAnswered!;
    clock.advance(1); // the drain bound ends: the drop is planned HTTP_SHUTDOWN_FLUSH_MS - 1 on
    await waitFor(
      "the drop planned after the call's answer",
      () => clock.pendingDelays().includes(host.HTTP_SHUTDOWN_FLUSH_MS - 1),
      10_000,
    );
    assert.deepEqual(await call, { status: 200, body: "call done", error: null });

    const later = 500;
    clock.advance(later);
    finishSlow(); // the slow answer's end is written inside the flush window
    await slowAnswered!;
    // Its bytes leave while the connection is up (the clock stands still meanwhile).
    assert.deepEqual(await slow, { status: 200, body: "part one;part two", error: null });
    // The first plan's end (HTTP_SHUTDOWN_FLUSH_MS after the call's answer) passes: the slow
    // answer, written `later` ms into that window, is owed its own whole window.
    clock.advance(host.HTTP_SHUTDOWN_FLUSH_MS - 1 - later);
    assert.equal(
      server.connectionStats().open,
      1,
      "dropped less than HTTP_SHUTDOWN_FLUSH_MS after the last answer written on it",
    );
    clock.advance(later); // HTTP_SHUTDOWN_FLUSH_MS - 1 after the slow answer
    assert.equal(server.connectionStats().open, 1, "dropped before its re-planned end");
    clock.advance(1);
    assert.equal(server.connectionStats().open, 0, "dropped at its re-planned end");
    await stopped;
  } finally {
    release();
    try {
      finishSlow();
    } catch { /* its stream was cancelled: the connection is gone */ }
    session.destroy();
    await server.shutdown();
    await remove();
  }
});
