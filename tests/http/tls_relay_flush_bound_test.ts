/**
 * HTTPS runs behind our relay (src/host/_http_connections.ts): once the TLS side's server has
 * ended (an answer with `Connection: close`), the relay copies what that server wrote last to the
 * client and ends at its end of file, or TLS_RELAY_FLUSH_MS after the server ended, whichever
 * comes first (tls_relay_flush_test.ts shows the first). This is the second: a client that reads
 * nothing leaves the relay unable to copy, and the relay must close both ends at the bound rather
 * than hold the connection (and its descriptors) for as long as that client lives.
 *
 * The answer is sized to overflow what the kernel holds between the relay and the client (the
 * relay's send buffer, at most tcp_wmem's maximum, and the client's receive buffer, which does not
 * grow while the client reads nothing) while the rest still fits between the TLS server and the
 * relay, so that the server ends with the relay still holding bytes its client does not take.
 * Time runs on a manual clock: the bound is reached by advancing it, and seen armed in its timers.
 */
import assert from "node:assert/strict";
import { serveHttp, TLS_RELAY_FLUSH_MS } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { selfSignedCert } from "./_tls_certs.ts";

/** The three numbers of a /proc/sys/net/ipv4/tcp_[rw]mem file (min, default, max). */
async function tcpMem(
  name: "tcp_rmem" | "tcp_wmem",
): Promise<[number, number, number] | null> {
  try {
    const v = (await Deno.readTextFile(`/proc/sys/net/ipv4/${name}`)).trim().split(/\s+/);
    const [min, def, max] = v.map(Number);
    return v.length === 3 ? [min!, def!, max!] : null;
  } catch {
    return null;
  }
}

/** More than the relay-to-client path holds (see the header), with a margin. */
async function answerBytes(): Promise<number> {
  const wmem = await tcpMem("tcp_wmem");
  const rmem = await tcpMem("tcp_rmem");
  if (wmem === null || rmem === null) return 5 * 1024 * 1024;
  return wmem[2] + 2 * rmem[1] + 512 * 1024;
}

Deno.test("over HTTPS the relay closes a connection TLS_RELAY_FLUSH_MS after its server ended when its client reads nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-tls-flush-bound-" });
  const { cert, key } = await selfSignedCert(dir);
  const bytes = await answerBytes();
  const body = new Uint8Array(bytes).fill(0x61);
  const clock = new ManualClock();
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: cert,
    tlsKeyPath: key,
    authEnabled: false,
    allowInsecureBind: false,
    log: testLogger(),
    openFileLimit: null,
    clock,
    // The sweeper then runs every 500 ms: its timer is not taken for the relay's flush bound.
    keepAliveTimeoutMs: 2000,
    handler: () => Promise.resolve(new Response(body)),
  });
  const conn = await Deno.connectTls({
    hostname: "localhost",
    port: server.port,
    caCerts: [await Deno.readTextFile(cert)],
  });
  try {
    await conn.write(
      new TextEncoder().encode("GET /big HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
    );
    // The client reads nothing from here on.
    await waitFor(
      "the TLS side's server ended with the relay still copying (its flush bound armed)",
      () => clock.pendingDelays().includes(TLS_RELAY_FLUSH_MS),
      20_000,
    );
    assert.equal(
      server.connectionStats().open,
      1,
      `the relay ended before its bound: its client's buffers took the whole ${bytes}-byte answer`,
    );
    clock.advance(TLS_RELAY_FLUSH_MS - 1);
    assert.equal(server.connectionStats().open, 1, "closed before TLS_RELAY_FLUSH_MS");
    clock.advance(1);
    assert.equal(
      server.connectionStats().open,
      0,
      "still open TLS_RELAY_FLUSH_MS after its server ended, its client reading nothing",
    );
    // What the kernel held for the client arrives, then the connection's end: the rest of the
    // answer stayed in the relay when it closed.
    let got = 0;
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) break;
        got += n;
      }
    } catch {
      // The relay closed without TLS close_notify: the end of what it had copied.
    }
    assert.ok(got < bytes, `the client got ${got} bytes, the whole ${bytes}-byte answer or more`);
  } finally {
    try {
      conn.close();
    } catch { /* closed */ }
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
