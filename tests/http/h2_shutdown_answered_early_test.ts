/**
 * Shutdown with an HTTP/2 connection (HTTPS, ALPN h2: a browser's tabs share one) that carries a
 * call being answered past HTTP_SHUTDOWN_DRAIN_MS and a stream whose client reads nothing: shutdown
 * waited for the connection to have no request in flight, which the stalled stream never lets
 * happen, so it waited the whole HTTP_SHUTDOWN_ANSWER_MS although the call it was waiting for was
 * answered long before. It now waits for the answers being made, and ends once they are written
 * (their connection dropped HTTP_SHUTDOWN_FLUSH_MS later, so the answer's bytes leave first).
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
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

/** Collects a request's answer (the stream's end, or its error). */
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

Deno.test("shutdown stops waiting for an HTTP/2 connection with a stalled stream once the call it waited for is answered, not at the end of HTTP_SHUTDOWN_ANSWER_MS", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-h2-answered-" });
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
  let stoppedAt: number | null = null;
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
    await callAnswered!; // its answer is written
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
    await Deno.remove(dir, { recursive: true });
  }
});
