/**
 * Shutdown with an HTTP/2 connection whose last call is answered during the drain: the connection
 * is then ended gracefully (GOAWAY), and from then on it could not be dropped any more. A stream
 * its client opened just before that end (after the GOAWAY, before answering its PING: the
 * server still accepts it) with an answer the client never reads kept the connection open, and
 * shutdown's final wait had no bound: the process ran out its shutdown budget (exit 4). Shutdown
 * now ends within HTTP_SHUTDOWN_MAX_MS of its start, cutting what is still open then.
 */
import assert from "node:assert/strict";
import * as host from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { endlessAnswer, tlsServer } from "./_h2_client.ts";
import { RawH2Client } from "./_h2_raw.ts";

Deno.test("shutdown cuts an HTTP/2 connection held by a stream opened as its graceful end began, whose client never reads, within HTTP_SHUTDOWN_MAX_MS", async () => {
  const clock = new ManualClock();
  let callArrived = false;
  let bigArrived = false;
  let release = () => {};
  const released = new Promise<void>((r) => (release = r));
  const { server, caCert, remove } = await tlsServer({
    prefix: "http-h2-late-stream-",
    clock,
    handler: async (req) => {
      if (new URL(req.url).pathname === "/big") {
        bigArrived = true;
        return endlessAnswer(); // its client never reads it
      }
      callArrived = true;
      await released;
      return new Response("call done");
    },
  });
  const client = await RawH2Client.connect(server.port, caCert);
  let stoppedAt: number | null = null;
  // HTTP_SHUTDOWN_MAX_MS, the HTTP part of the process's shutdown budget (src/app/process.ts),
  // spelled out: the code before the fix, which the test must fail against, has no such name.
  const bound = host.HTTP_SHUTDOWN_ANSWER_MS + host.HTTP_SHUTDOWN_DRAIN_MS +
    host.HTTP_SHUTDOWN_FLUSH_MS;
  try {
    await client.request(1, "POST", "/call");
    await waitFor("the call in flight", () => callArrived, 10_000);
    const started = clock.monoMs();
    const stopped = server.shutdown().then(() => (stoppedAt = clock.monoMs()));
    await waitFor(
      "the shutdown's drain under way",
      () => clock.pendingDelays().includes(host.HTTP_SHUTDOWN_DRAIN_MS),
      10_000,
    );
    release(); // the call is answered within the drain: its connection's graceful end begins
    await waitFor(
      "the call's answer and the server's graceful GOAWAY",
      () => client.ended.has(1) && client.goaways.length > 0,
      10_000,
    );
    assert.equal(client.goaways[0], 0x7fffffff, "the graceful GOAWAY still accepts streams");
    await client.request(3, "GET", "/big"); // opened before the PING is answered
    await waitFor("the late stream's answer", () => bigArrived && client.headers.has(3), 10_000);
    await client.ackPings();
    // Only the manual clock's timers can end it now: they are run out one at a time.
    await waitFor(
      "the shutdown to end",
      () => stoppedAt !== null || (clock.fireNext(), false),
      10_000,
    );
    await stopped;
    // Cut at the bound, not before: the late stream had until then to be read.
    assert.equal(stoppedAt! - started, bound, "shutdown's time on the clock");
    assert.equal(client.ended.has(3), false, "the late stream was never read to its end");
    await waitFor("the connection cut", () => client.closed, 10_000);
    assert.equal(server.connectionStats().open, 0);
  } finally {
    release();
    client.close();
    await client.done;
    // The code before the fix never ends its shutdown: nothing more to wait for then.
    if (stoppedAt !== null) await server.shutdown();
    await remove();
  }
});
