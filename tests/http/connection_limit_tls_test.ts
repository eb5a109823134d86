/**
 * The connection bound over HTTPS, where a connection is the client's socket in front of a
 * loopback relay to the TLS engine (src/host/serve.ts): at http.max_connections, connections whose
 * TLS handshake never finishes (a TLS slowloris) and connections whose clients never read a large
 * answer (the relay must not take the answer off the engine's hands for them) are closed to admit
 * an e-stop, as they are over plain HTTP (connection_limits_test.ts,
 * connection_unread_answer_test.ts).
 */
import assert from "node:assert/strict";
import { HTTP_UNREAD_ANSWER_EVICT_MS, type ServeHandler, serveHttp } from "../../src/host/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { closedWithin, connect, send, sleep } from "./_raw_socket.ts";
import { selfSignedCert } from "./_tls_certs.ts";
import { serveHttps } from "./_tls_server.ts";

/** The bound of these servers. */
const MAX_CONNECTIONS = 4;
const CHUNK = new Uint8Array(64 * 1024);
/** Far more than the loopback socket buffers (and any relay buffer) take. */
const BIG_BYTES = 256 * 1024 * 1024;

/** An HTTPS server at MAX_CONNECTIONS; `body` runs with it and its CA certificate. */
async function withTlsServer(
  handler: ServeHandler,
  body: (server: Awaited<ReturnType<typeof serveHttp>>, caCert: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "http-limit-tls-" });
  try {
    const { cert, key } = await selfSignedCert(dir);
    const server = await serveHttps({ cert, key }, {
      maxConnections: MAX_CONNECTIONS,
      handler,
    });
    try {
      await body(server, await Deno.readTextFile(cert));
    } finally {
      await server.shutdown();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** POST /estop over HTTPS on a connection of its own; its answer's status and text. */
async function estop(port: number, caCert: string): Promise<{ status: number; text: string }> {
  const client = Deno.createHttpClient({ caCerts: [caCert], http2: false });
  try {
    const res = await fetch(`https://localhost:${port}/estop`, {
      method: "POST",
      client,
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, text: await res.text() };
  } finally {
    client.close();
  }
}

const stopped = () => Promise.resolve(new Response("stopped"));

Deno.test("serveHttp over TLS at http.max_connections closes the oldest unfinished handshake to admit an e-stop", async () => {
  await withTlsServer(stopped, async (server, caCert) => {
    const held: Deno.TcpConn[] = [];
    try {
      for (let i = 0; i < MAX_CONNECTIONS; i++) {
        const c = await connect(server.port);
        // Half a ClientHello: a TLS record header announcing 512 bytes, and 5 of them.
        await send(c, new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03]));
        held.push(c);
      }
      await waitFor(
        "every connection held",
        () => server.connectionStats().open === MAX_CONNECTIONS,
        5000,
      );
      assert.deepEqual(await estop(server.port, caCert), { status: 200, text: "stopped" });
      assert.equal(server.connectionStats().evicted, 1);
      assert.equal(server.connectionStats().refused, 0);
      assert.notEqual(await closedWithin(held.shift()!, 5000), null, "the oldest is still open");
    } finally {
      for (const c of held) await closedWithin(c, 0);
    }
  });
});

Deno.test("serveHttp over TLS at http.max_connections closes a connection whose client reads none of its answer to admit an e-stop", async () => {
  let bigStarted = 0;
  const handler: ServeHandler = (req) => {
    if (new URL(req.url).pathname !== "/big") return stopped();
    bigStarted++;
    let sent = 0;
    return Promise.resolve(
      new Response(
        new ReadableStream<Uint8Array>({
          pull: (c) => {
            if (sent >= BIG_BYTES) return c.close();
            sent += CHUNK.byteLength;
            c.enqueue(CHUNK);
          },
        }, { highWaterMark: 0 }),
        { headers: { "content-type": "text/csv" } },
      ),
    );
  };
  await withTlsServer(handler, async (server, caCert) => {
    const conns: Deno.TlsConn[] = [];
    try {
      for (let i = 0; i < MAX_CONNECTIONS; i++) {
        const c = await Deno.connectTls({
          hostname: "localhost",
          port: server.port,
          caCerts: [caCert],
          alpnProtocols: ["http/1.1"],
        });
        await c.handshake();
        conns.push(c);
        // And never read.
        await send(c, "GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n");
      }
      await waitFor("every answer handed over", () => bigStarted === MAX_CONNECTIONS, 5000);
      await sleep(HTTP_UNREAD_ANSWER_EVICT_MS + 200);
      assert.deepEqual(await estop(server.port, caCert), { status: 200, text: "stopped" });
      assert.equal(server.connectionStats().evicted, 1);
      assert.equal(server.connectionStats().unreadEvicted, 1);
      assert.equal(server.connectionStats().refused, 0);
    } finally {
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed by the server */ }
      }
    }
  });
});
