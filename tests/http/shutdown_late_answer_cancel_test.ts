/**
 * Shutdown gives a request whose answer is still being made at the end of HTTP_SHUTDOWN_ANSWER_MS
 * a 504 in place of its own. The handler's own answer, made later, was thrown away with its body
 * stream left open: whatever that stream reads from (a file, a provider's data) was held for ever.
 * Its body is now cancelled.
 */
import assert from "node:assert/strict";
import { serveHttp } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { connect, readResponse, send } from "./_raw_socket.ts";

Deno.test("the answer a handler makes after the shutdown's 504 took its place has its body stream cancelled, not left open", async () => {
  const clock = new ManualClock();
  let started = 0;
  let release: () => void = () => {};
  const released = new Promise<void>((r) => (release = r));
  const cancelled: unknown[] = [];
  let handlerReturned = false;
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    clock,
    // A device call its provider answers after the bound, with a streamed body.
    handler: async () => {
      started++;
      await released;
      handlerReturned = true;
      return new Response(
        new ReadableStream({
          pull: () => new Promise(() => {}), // its source has nothing yet
          cancel: (reason) => void cancelled.push(reason ?? "cancelled"),
        }),
      );
    },
    log: testLogger(),
  });
  const conn = await connect(server.port);
  try {
    await send(conn, "POST /v0/call HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 2\r\n\r\n{}");
    await waitFor("the request is being answered", () => started === 1, 5000);
    const stopped = server.shutdown();
    let read = false;
    const answer = readResponse(conn, 10_000).finally(() => (read = true));
    // The shutdown's bounds pass on the manual clock, one timer at a time.
    await waitFor("the late answer", () => read || (clock.fireNext(), false), 10_000);
    const res = await answer;
    assert.ok(res !== null, "the connection was cut without an answer");
    assert.equal(res.status, 504, res.headers);
    release(); // the handler's own answer arrives now: too late to be sent
    await waitFor("the handler's answer", () => handlerReturned, 5000);
    await waitFor(
      "the late handler answer's body stream to be cancelled",
      () => cancelled.length > 0,
      5000,
    );
    assert.equal(cancelled.length, 1);
    await stopped;
  } finally {
    release();
    try {
      conn.close();
    } catch { /* closed by the server */ }
    await server.shutdown();
  }
});
