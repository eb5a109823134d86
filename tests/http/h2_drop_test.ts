/**
 * HTTPS negotiates HTTP/2 (ALPN h2, Deno's engine), and a browser then carries its event stream
 * and its other requests, POST /v0/estop among them, on one connection. Dropping the connection
 * of a stream whose client reads nothing (info.dropConnection) must not cut those other requests.
 */
import assert from "node:assert/strict";
import { HTTP2_DROP_FLUSH_MS } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { h2FetchClient, tlsServer } from "./_h2_client.ts";

Deno.test("over HTTP/2 a stream's connection drop waits for the other requests on that connection, then drops it", async () => {
  let drop: (() => void) | null = null;
  let slowArrived = false;
  let release = () => {};
  const released = new Promise<void>((r) => (release = r));
  const { server, caCert, remove } = await tlsServer({
    prefix: "http-h2-",
    handler: async (req, info) => {
      if (new URL(req.url).pathname === "/stream") {
        drop = info.dropConnection;
        return new Response(
          new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(": hi\n\n")) }),
          { headers: { "content-type": "text/event-stream" } },
        );
      }
      slowArrived = true; // an e-stop whose stop ladder is running
      await released;
      return new Response("stopped");
    },
  });
  const client = h2FetchClient(caCert);
  try {
    const stream = await fetch(`https://localhost:${server.port}/stream`, { client });
    const slow = fetch(`https://localhost:${server.port}/estop`, { method: "POST", client })
      .catch((err) => err as Error);
    await waitFor("both requests in flight", () => slowArrived && drop !== null, 5000);
    assert.equal(server.connectionStats().open, 1, "one HTTP/2 connection carries both");
    drop!(); // the stream's client is judged stalled
    assert.equal(server.connectionStats().open, 1, "kept while the e-stop on it is in flight");
    release();
    const res = await slow;
    assert.ok(res instanceof Response, `the e-stop sharing the connection was cut: ${res}`);
    assert.equal(await res.text(), "stopped");
    await waitFor(
      "the connection dropped once only the stream was left",
      () => server.connectionStats().open === 0,
      5000,
    );
    await stream.body?.cancel().catch(() => {});
  } finally {
    release();
    client.close();
    await server.shutdown();
    await remove();
  }
});

Deno.test("over HTTP/2 a request answered while a stream's connection drop is planned still gets HTTP2_DROP_FLUSH_MS for its answer to leave", async () => {
  let drop: (() => void) | null = null;
  let slowArrived = false;
  let release = () => {};
  const released = new Promise<void>((r) => (release = r));
  // The drop's bound on a manual clock: when the drop came is read off it, not off the wall.
  const clock = new ManualClock();
  let lastAnsweredAt = 0;
  const { server, caCert, remove } = await tlsServer({
    prefix: "http-h2-",
    clock,
    handler: async (req, info) => {
      const path = new URL(req.url).pathname;
      if (path === "/stream") {
        drop = info.dropConnection;
        return new Response(
          new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(": hi\n\n")) }),
          { headers: { "content-type": "text/event-stream" } },
        );
      }
      if (path === "/slow") {
        slowArrived = true;
        await released;
      }
      lastAnsweredAt = clock.monoMs(); // before its bytes are written
      return new Response(path);
    },
  });
  const client = h2FetchClient(caCert);
  try {
    const stream = await fetch(`https://localhost:${server.port}/stream`, { client });
    const slow = fetch(`https://localhost:${server.port}/slow`, { method: "POST", client });
    await waitFor("both requests in flight", () => slowArrived && drop !== null, 5000);
    drop!(); // the stream's client is judged stalled
    release();
    assert.equal(await (await slow).text(), "/slow"); // the drop is planned from here
    // An e-stop on the same connection, answered before the planned drop (half its bound on).
    clock.advance(HTTP2_DROP_FLUSH_MS / 2);
    const estop = await fetch(`https://localhost:${server.port}/estop`, {
      method: "POST",
      client,
    }).catch((err) => err as Error);
    assert.ok(estop instanceof Response, `the e-stop was cut: ${estop}`);
    await estop.body?.cancel();
    // The bounds pass on the manual clock, one timer at a time, until the drop.
    await waitFor(
      "the connection dropped",
      () => server.connectionStats().open === 0 || (clock.fireNext(), false),
      5000,
    );
    const after = clock.monoMs() - lastAnsweredAt;
    assert.ok(
      after >= HTTP2_DROP_FLUSH_MS,
      `the connection was dropped ${Math.round(after)} ms after the e-stop's answer was ` +
        `handed over, less than HTTP2_DROP_FLUSH_MS (${HTTP2_DROP_FLUSH_MS} ms)`,
    );
    await stream.body?.cancel().catch(() => {});
  } finally {
    release();
    client.close();
    await server.shutdown();
    await remove();
  }
});
