/**
 * The 503 a connection gets at http.max_connections (every connection has a request in flight)
 * carries the CORS headers its request's own answer would have: a page of a granted origin then
 * reads the 503 (and its Retry-After) instead of a network error. A page of an origin without a
 * grant gets none, and a client that sends nothing within REFUSAL_HEAD_WAIT_MS is still answered.
 * Real sockets on loopback; the HTTP layer's CorsPolicy gives the headers.
 */
import assert from "node:assert/strict";
import type { HttpConfig } from "../../src/config/mod.ts";
import { serveHttp } from "../../src/host/mod.ts";
import { CorsPolicy } from "../../src/http/mod.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { closedWithin, connect, getRequest, readResponse, send } from "./_raw_socket.ts";

const GRANTED = "http://console.example:3000";
const MAX_CONNECTIONS = 4;

/** `headers` (the raw head) as a map of lower-case names. */
function headerMap(head: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of head.split("\r\n").slice(1)) {
    const colon = line.indexOf(":");
    out.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return out;
}

function fromOrigin(origin: string): string {
  return `GET /v0/runtime/status HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: ${origin}\r\n\r\n`;
}

Deno.test("serveHttp's 503 at http.max_connections carries the CORS headers of a granted origin, none for another", async () => {
  const cors = new CorsPolicy(
    { corsAllowedOrigins: [GRANTED], corsAllowCredentials: false } as unknown as HttpConfig,
  );
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let blocked = 0;
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    handler: async () => {
      blocked++;
      await released;
      return Response.json({ ok: true });
    },
    standInHeaders: (req) => new Headers(cors.headersFor(req, false)),
    log: testLogger(),
    maxConnections: MAX_CONNECTIONS,
    openFileLimit: null,
  });
  const busy: Deno.TcpConn[] = [];
  try {
    for (let i = 0; i < MAX_CONNECTIONS; i++) {
      const c = await connect(server.port);
      await send(c, getRequest("/block"));
      busy.push(c);
    }
    await waitFor("every connection has a request in flight", () => blocked === MAX_CONNECTIONS);

    const granted = await connect(server.port);
    await send(granted, fromOrigin(GRANTED));
    const answer = await readResponse(granted);
    assert.equal(answer?.status, 503);
    assert.equal(JSON.parse(answer!.body).status.code, "UNAVAILABLE");
    const h = headerMap(answer!.headers);
    assert.equal(h.get("access-control-allow-origin"), GRANTED);
    assert.equal(h.get("vary"), "Origin");
    assert.match(h.get("access-control-expose-headers") ?? "", /Retry-After/);
    assert.equal(h.get("retry-after"), "1");
    assert.notEqual(await closedWithin(granted, 2000), null, "a refused connection is closed");

    const other = await connect(server.port);
    await send(other, fromOrigin("http://elsewhere.example"));
    const refused = await readResponse(other);
    assert.equal(refused?.status, 503);
    assert.equal(headerMap(refused!.headers).has("access-control-allow-origin"), false);
    await closedWithin(other, 2000);

    // A client that sends nothing is answered all the same, once REFUSAL_HEAD_WAIT_MS is over.
    const silent = await connect(server.port);
    const unasked = await readResponse(silent);
    assert.equal(unasked?.status, 503);
    assert.equal(headerMap(unasked!.headers).has("access-control-allow-origin"), false);
    await closedWithin(silent, 2000);
    assert.equal(server.connectionStats().refused, 3);
    release();
    for (const c of busy) assert.equal((await readResponse(c))?.status, 200);
  } finally {
    release();
    for (const c of busy) await closedWithin(c, 0);
    await server.shutdown();
  }
});
