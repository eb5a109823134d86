/**
 * Server shutdown with an event stream whose client stopped reading (a tablet that froze, a
 * half-open connection after a network drop): the stream's last bytes can never be written, and
 * the server's graceful shutdown waited for them forever, so the runtime's stop (which shuts the
 * server down first) never reached the providers, the audit journal or the runs.
 */
import assert from "node:assert/strict";
import { HTTP_SHUTDOWN_ANSWER_MS, HTTP_SHUTDOWN_DRAIN_MS, serveHttp } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { connect, getRequest, send } from "./_raw_socket.ts";

/** Far above the drain bound (1 s): a shutdown that waits for the stalled client never ends. */
const SHUTDOWN_MUST_END_MS = 15_000;

Deno.test("server shutdown ends although an event-stream client stopped reading", async () => {
  const fx = await startHttpFixture({ start: false });
  const server = await fx.serve();
  const conn = await connect(server.port);
  try {
    await send(conn, getRequest("/v0/events")); // and never read
    await waitFor("the stream opened", () => fx.api.sseClientCount === 1, 5000);
    // Events trickle in (as polls publish them) until the socket's buffers are full: frames then
    // wait in the stream's queue, and its oldest are dropped.
    const big = "x".repeat(64 * 1024);
    let n = 0;
    await waitFor("the client's socket full (frames queued, some dropped)", async () => {
      for (let i = 0; i < 20; i++) {
        fx.runtime.bus.publish({ kind: "bt_error", node: "n", error: big, timestamp_ms: n++ });
        await new Promise((r) => setTimeout(r, 2));
      }
      const metrics = (await fx.request("GET", "/metrics")).text;
      const metric = (name: string) =>
        Number(new RegExp(`^${name} (\\d+)$`, "m").exec(metrics)?.[1] ?? 0);
      return metric("runtime_sse_events_dropped_total") > 0 &&
        metric("runtime_sse_queued_events") > 0;
    }, 20_000);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      server.shutdown().then(() => "ended"),
      new Promise((r) => (timer = setTimeout(() => r("still waiting"), SHUTDOWN_MUST_END_MS))),
    ]).finally(() => clearTimeout(timer));
    assert.equal(outcome, "ended", "server.shutdown() with a client that does not read");
  } finally {
    try {
      conn.close();
    } catch { /* closed by the server */ }
    await fx.close();
  }
});

Deno.test("server shutdown still lets a request in flight finish its answer", async () => {
  let entered: () => void = () => {};
  const inHandler = new Promise<void>((r) => (entered = r));
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    handler: async () => {
      entered();
      await new Promise((r) => setTimeout(r, 200));
      return new Response("answered");
    },
    log: testLogger(),
  });
  const answer = fetch(`http://127.0.0.1:${server.port}/slow`).then((r) => r.text());
  await inHandler;
  const stopped = server.shutdown();
  assert.equal(await answer, "answered");
  await stopped;
});

Deno.test("server shutdown waits past the drain bound for an answer still being made (a slow device call)", async () => {
  // The bounds on a manual clock: the answer is made once the drain bound has passed on it.
  const clock = new ManualClock();
  let entered: () => void = () => {};
  const inHandler = new Promise<void>((r) => (entered = r));
  let finish: () => void = () => {};
  const slowCall = new Promise<void>((r) => (finish = r));
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    clock,
    handler: async () => {
      entered();
      await slowCall;
      return new Response("answered");
    },
    log: testLogger(),
  });
  const answer = fetch(`http://127.0.0.1:${server.port}/slow`).then(
    (r) => r.text(),
    (e) => `no answer: ${e}`,
  );
  await inHandler;
  const stopped = server.shutdown();
  // The drain bound passes on the manual clock; shutdown then waits for the answer being made
  // (its bound armed, counted from the same start): what it did at the drain bound is done.
  await waitFor("the drain bound armed", () => clock.pendingDueTimes().length > 0, 5000);
  const started = clock.pendingDueTimes()[0]! - HTTP_SHUTDOWN_DRAIN_MS;
  clock.fireNext();
  await waitFor(
    "the answer bound armed",
    () => clock.pendingDueTimes().includes(started + HTTP_SHUTDOWN_ANSWER_MS),
    5000,
  );
  finish();
  assert.equal(await answer, "answered");
  await stopped;
});
