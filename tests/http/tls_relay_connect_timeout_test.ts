/**
 * HTTPS runs behind our relay (src/host/_http_connections.ts): each client connection gets a
 * loopback connection to the internal TLS listener. That connect had no bound of its own: one that
 * does not settle (the listener's accept backlog full while its accept loop backs off after
 * EMFILE: the kernel retries the SYN for minutes) held the client's connection until the
 * request-header timeout, and the relay, which shutdown waits for, for as long as the connect
 * took. It now gets TLS_RELAY_CONNECT_TIMEOUT_MS, then the client's connection is closed in one
 * WARN line; the connection made later, if any, is closed and not reported again.
 *
 * The relay's connect is the test's (Deno.connect replaced for the internal listener's port, as
 * tls_relay_match_test.ts does); time runs on a manual clock.
 */
import assert from "node:assert/strict";
import { TLS_RELAY_CONNECT_TIMEOUT_MS } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";
import { selfSignedCert } from "./_tls_certs.ts";
import { serveHttps } from "./_tls_server.ts";

Deno.test("over HTTPS the relay closes a client's connection TLS_RELAY_CONNECT_TIMEOUT_MS after its connect to the TLS listener began and did not settle, in one WARN line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-tls-relay-connect-" });
  // Valid long enough that its expiry is not warned about: the one line is the relay's.
  const { cert, key } = await selfSignedCert(dir, 30);
  const clock = new ManualClock();
  const { log, lines } = capturingLogger({ level: "warn", now: () => clock.nowMs() });
  const server = await serveHttps({ cert, key }, {
    log,
    clock,
    // Default header timeout (10 s): it is not what closes the connection below.
    handler: () => Promise.resolve(new Response("served")),
  });
  const connect = Deno.connect;
  const called = Promise.withResolvers<Deno.ConnectOptions>();
  const hung = Promise.withResolvers<Deno.TcpConn>();
  hung.promise.catch(() => {}); // rejected at the end, whether the relay still waits or not
  (Deno as { connect: typeof Deno.connect }).connect = ((o: Deno.ConnectOptions) => {
    if (o.port === server.port) return connect(o); // the test's client
    called.resolve(o);
    return hung.promise; // the relay's connect to the internal TLS listener: does not settle
  }) as typeof Deno.connect;
  let client: Deno.TcpConn | null = null;
  try {
    client = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
    const target = await called.promise;
    assert.equal(server.connectionStats().open, 1, "the client's connection is held");
    clock.advance(TLS_RELAY_CONNECT_TIMEOUT_MS - 1);
    assert.equal(server.connectionStats().open, 1, "closed before TLS_RELAY_CONNECT_TIMEOUT_MS");
    await clock.advanceAsync(1); // the relay goes on from its timer's promise
    assert.equal(
      server.connectionStats().open,
      0,
      "still open TLS_RELAY_CONNECT_TIMEOUT_MS after its relay's connect began, that connect " +
        "not settled",
    );
    const end = await client.read(new Uint8Array(64)).catch(() => null);
    assert.equal(end, null, "the client's connection was not ended");

    // The connect settles late: the connection it made is nobody's and is closed, unreported.
    const late = await connect(target);
    const lateClosed = Promise.withResolvers<void>();
    const close = late.close.bind(late);
    late.close = () => {
      lateClosed.resolve();
      close();
    };
    hung.resolve(late);
    await lateClosed.promise;
    assert.equal(lines.length, 1, `one line, not:\n${lines.join("\n")}`);
    assert.match(
      lines[0]!,
      new RegExp(`^WARN .*TLS listener.* ${TLS_RELAY_CONNECT_TIMEOUT_MS} ms`),
    );
  } finally {
    // Unfixed, the relay waited on for ever, and shutdown (on the manual clock) with it.
    hung.reject(new Error("the test is over"));
    (Deno as { connect: typeof Deno.connect }).connect = connect;
    try {
      client?.close();
    } catch { /* closed */ }
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
