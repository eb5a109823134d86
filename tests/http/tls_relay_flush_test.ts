/**
 * HTTPS runs behind our relay (src/host/_http_connections.ts): the client's TCP connection is
 * copied to a loopback TLS listener and back. When the TLS side's server ended (an answer with
 * `Connection: close`; a graceful shutdown), both ends of the relay were closed at once, while it
 * still held the last bytes that server had written: a 4 MiB answer lost its last ~270 KiB and
 * the client saw "peer closed connection without sending TLS close_notify". The relay now ends
 * once it has copied them, within TLS_RELAY_FLUSH_MS.
 */
import assert from "node:assert/strict";
import { selfSignedCert } from "./_tls_certs.ts";
import { serveHttps } from "./_tls_server.ts";

const ANSWER_BYTES = 4 * 1024 * 1024;

Deno.test("over HTTPS an answer with Connection: close reaches its client whole, with TLS close_notify, before the relay closes the connection", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-tls-flush-" });
  const { cert, key } = await selfSignedCert(dir);
  const body = new Uint8Array(ANSWER_BYTES).fill(0x61);
  const server = await serveHttps({ cert, key }, {
    handler: () => Promise.resolve(new Response(body)),
  });
  const conn = await Deno.connectTls({
    hostname: "localhost",
    port: server.port,
    caCerts: [await Deno.readTextFile(cert)],
  });
  try {
    await conn.write(
      new TextEncoder().encode(
        "GET /big HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
      ),
    );
    const chunks: Uint8Array[] = [];
    let error: string | null = null;
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) break;
        chunks.push(buf.slice(0, n));
      }
    } catch (err) {
      error = String(err);
    }
    const all = new Uint8Array(chunks.reduce((sum, c) => sum + c.length, 0));
    let off = 0;
    for (const c of chunks) {
      all.set(c, off);
      off += c.length;
    }
    const text = new TextDecoder().decode(all.subarray(0, 1024));
    const headEnd = text.indexOf("\r\n\r\n");
    assert.ok(headEnd > 0, `no answer head: ${JSON.stringify(text.slice(0, 200))}`);
    assert.match(text.slice(0, headEnd), /^HTTP\/1\.1 200 /);
    assert.match(text.slice(0, headEnd), new RegExp(`^content-length: ${ANSWER_BYTES}$`, "im"));
    const bodyBytes = all.length - (headEnd + 4);
    assert.deepEqual({ bodyBytes, error }, { bodyBytes: ANSWER_BYTES, error: null });
  } finally {
    try {
      conn.close();
    } catch { /* closed by the server */ }
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
