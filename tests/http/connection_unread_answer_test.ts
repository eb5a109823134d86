/**
 * A client that asks for a large answer and never reads it (a zero TCP window: a frozen tablet,
 * or on purpose) keeps its request in flight for as long as it lives: the connection layer never
 * evicted a connection with a request in flight, so a few such clients at http.max_connections
 * locked every new connection out, the e-stop's included. At the limit, a connection whose every
 * request in flight has had its answer handed over for HTTP_UNREAD_ANSWER_EVICT_MS without being
 * written is now evicted for the new one.
 */
import assert from "node:assert/strict";
import { HTTP_UNREAD_ANSWER_EVICT_MS, serveHttp } from "../../src/host/mod.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { connect, getRequest, readResponse, send } from "./_raw_socket.ts";

const CHUNK = new Uint8Array(64 * 1024);
/** Far more than the loopback socket buffers take. */
const BIG_BYTES = 256 * 1024 * 1024;

Deno.test("at the connection limit, connections whose answers their clients do not read make room for an e-stop", async () => {
  let bigStarted = 0;
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    log: testLogger(),
    openFileLimit: null,
    maxConnections: 2,
    handler: (req) => {
      if (new URL(req.url).pathname === "/big") {
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
      }
      return Promise.resolve(new Response("stopped"));
    },
  });
  const conns: Deno.Conn[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const c = await connect(server.port);
      conns.push(c);
      await send(c, getRequest("/big")); // and never read
    }
    await waitFor("both answers handed over", () => bigStarted === 2, 5000);
    await new Promise((r) => setTimeout(r, HTTP_UNREAD_ANSWER_EVICT_MS + 200));
    const estop = await connect(server.port);
    conns.push(estop);
    await send(estop, "POST /estop HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n");
    const res = await readResponse(estop, 10_000);
    assert.ok(res !== null, "the e-stop's connection was closed unanswered");
    assert.doesNotMatch(res.body, /too many open connections/, "the e-stop was refused");
    assert.equal(res.body, "stopped");
    assert.equal(server.connectionStats().evicted, 1);
    assert.equal(server.connectionStats().unreadEvicted, 1);
  } finally {
    for (const c of conns) {
      try {
        c.close();
      } catch { /* closed by the server */ }
    }
    await server.shutdown();
  }
});
