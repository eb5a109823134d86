/**
 * HTTPS runs behind a relay: each client connection gets a loopback connection to an internal TLS
 * listener, and the listener's side is matched to its relay by the relay's local address. It was
 * matched by port only: a local process connecting to the internal listener from another loopback
 * address (127.0.0.2) with the same port as a relay took that relay's place, and the client's
 * connection was never served.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { selfSignedCert } from "./_tls_certs.ts";
import { serveHttps } from "./_tls_server.ts";

Deno.test("a local connection to the internal TLS listener from 127.0.0.2 with a relay's port does not take that relay's place", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-tls-relay-" });
  const { cert, key } = await selfSignedCert(dir);
  const server = await serveHttps({ cert, key }, {
    requestHeaderTimeoutMs: 2000,
    handler: () => Promise.resolve(new Response("served")),
  });
  const strays: net.Socket[] = [];
  const connect = Deno.connect;
  // The relay's connection to the internal listener: once it is made, and before the relay
  // looks for its TLS side, a stray connects from 127.0.0.2 with the relay's port, and both are
  // accepted (the relay finds them waiting).
  (Deno as { connect: typeof Deno.connect }).connect = (async (o: Deno.ConnectOptions) => {
    const inner = await connect(o);
    const localPort = (inner.localAddr as Deno.NetAddr).port;
    await new Promise<void>((resolve, reject) => {
      const s = net.connect({
        host: o.hostname,
        port: o.port,
        localAddress: "127.0.0.2",
        localPort,
      });
      strays.push(s);
      s.on("connect", () => resolve());
      s.on("error", reject);
    });
    await new Promise((r) => setTimeout(r, 200)); // both accepted by the internal listener
    return inner;
  }) as typeof Deno.connect;
  const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(cert)] });
  try {
    const res = await fetch(`https://localhost:${server.port}/`, { client })
      .catch((err) => err as Error);
    assert.ok(res instanceof Response, `the client was not served: ${res}`);
    assert.equal(await res.text(), "served");
    assert.equal(strays.length, 1, "a stray connected");
  } finally {
    (Deno as { connect: typeof Deno.connect }).connect = connect;
    for (const s of strays) s.destroy();
    client.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
