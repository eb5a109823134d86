/**
 * Shutdown with an HTTP/2 connection (HTTPS, ALPN h2: a browser's tabs share one) that carries a
 * call being answered and a stream whose client reads nothing (a large answer to a tab that
 * froze): the stalled stream keeps the connection from ever draining, so shutdown drops it at the
 * end of its bound. The call answered just before that end lost its answer: the connection was
 * dropped at once, before the answer's bytes had left, and the client could not tell whether the
 * call had acted. Its answer now gets HTTP_SHUTDOWN_FLUSH_MS to leave before the drop.
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
// One namespace: run against the code before the fix, the test reaches its assertion and fails
// there rather than at an import of HTTP_SHUTDOWN_FLUSH_MS, which that code does not have.
import * as host from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { selfSignedCert } from "./_tls_certs.ts";

/** What the client got for one request: its status and whole body, or how it failed. */
interface Outcome {
  status: number;
  body: string;
  error: string | null;
}

/** Sends a request on the session and collects its answer (the stream's end, or its error). */
function collect(stream: http2.ClientHttp2Stream): Promise<Outcome> {
  return new Promise((resolve) => {
    let status = 0;
    let body = "";
    stream.setEncoding("utf8");
    stream.on("response", (headers) => (status = Number(headers[":status"])));
    stream.on("data", (chunk: string) => (body += chunk));
    stream.on("end", () => resolve({ status, body, error: null }));
    stream.on("error", (err: Error) => resolve({ status, body, error: err.message }));
    stream.on("close", () => resolve({ status, body, error: "closed before its end" }));
  });
}

Deno.test("shutdown drops an HTTP/2 connection held by a stalled stream only HTTP_SHUTDOWN_FLUSH_MS after the call answered on it, so its client gets that answer", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-h2-flush-" });
  const { cert, key } = await selfSignedCert(dir);
  const clock = new ManualClock();
  let callArrived = false;
  let callAnswered: Promise<void> | null = null;
  let release = () => {};
  const released = new Promise<void>((r) => (release = r));
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  const server = await host.serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: cert,
    tlsKeyPath: key,
    authEnabled: false,
    allowInsecureBind: false,
    log: testLogger(),
    openFileLimit: null,
    clock,
    handler: async (req, info) => {
      if (new URL(req.url).pathname === "/big") {
        // An answer without end (a download): its client stops reading it.
        return new Response(new ReadableStream({ pull: (c) => c.enqueue(chunk) }));
      }
      callArrived = true; // a device call waiting for its provider
      callAnswered = info.answered;
      await released;
      return new Response("call done");
    },
  });
  const session = http2.connect(`https://localhost:${server.port}`, {
    ca: await Deno.readTextFile(cert),
  });
  session.on("error", () => {}); // the connection is dropped at the end
  let stalledHeaders = false;
  try {
    const stalled = session.request({ ":path": "/big" });
    stalled.on("response", () => (stalledHeaders = true));
    stalled.on("error", () => {});
    stalled.pause(); // its client reads nothing
    const call = collect(
      session.request({ ":path": "/call", ":method": "POST" }, { endStream: true }),
    );
    await waitFor(
      "the stalled stream answered and the call in flight",
      () => stalledHeaders && callArrived,
      10_000,
    );
    assert.equal(server.connectionStats().open, 1, "one HTTP/2 connection carries both");
    const stopped = server.shutdown();
    await waitFor(
      "the shutdown's drain under way",
      () => clock.pendingDelays().includes(host.HTTP_SHUTDOWN_DRAIN_MS),
      10_000,
    );
    clock.advance(host.HTTP_SHUTDOWN_DRAIN_MS - 1);
    release(); // the call is answered 1 ms before the drain bound ends
    await callAnswered!; // its answer is written: its bytes are on their way
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
    await Deno.remove(dir, { recursive: true });
  }
});
