/**
 * HTTPS runs behind our relay (src/host/_http_connections.ts): once the TLS side's server has
 * ended (an answer with `Connection: close`), the relay copies what that server wrote last to the
 * client and ends at its end of file, or TLS_RELAY_FLUSH_MS after the server ended, whichever
 * comes first (tls_relay_flush_test.ts shows the first). This is the second: a client that reads
 * nothing leaves the relay unable to copy, and the relay must close both ends at the bound rather
 * than hold the connection (and its descriptors) for as long as that client lives.
 *
 * The answer must overflow what the kernel holds between the relay and the client (the relay's
 * send buffer and the client's receive buffer) while the rest still fits between the TLS server
 * and the relay, so that the server ends with the relay still holding bytes its client does not
 * take. It was sized from /proc/sys/net/ipv4/tcp_{w,r}mem alone (tcp_wmem's maximum plus twice
 * tcp_rmem's default), which holds only while those are alike: a client whose receive buffer
 * starts above tcp_rmem's default (some kernels size a loopback socket's from its segment size, up
 * to tcp_rmem's maximum) took the whole answer, and twice a large tcp_rmem default next to a small
 * tcp_wmem left more than fits between the server and the relay (the server never ended). It is
 * now sized from bounds, each named (answerBytes): the relay's send buffer is at most tcp_wmem's
 * maximum (the relay sets no SO_SNDBUF); the client's receive buffer is read from its socket (ss),
 * and does not grow while the client reads nothing (Linux grows it as its reader copies).
 * Time runs on a manual clock: the bound is reached by advancing it, and seen armed in its timers.
 */
import assert from "node:assert/strict";
import { TLS_RELAY_BUFFER_BYTES, TLS_RELAY_FLUSH_MS } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { selfSignedCert } from "./_tls_certs.ts";
import { serveHttps } from "./_tls_server.ts";

/**
 * What a send queue may take past its buffer (it takes a write while below it: one loopback
 * segment, 64 KiB), twice: the answer's margin over the relay-to-client path. The server has to
 * write this much more (and the TLS records' overhead) into the TLS-to-relay path, which holds at
 * least the relay's initial receive buffer (tcp_rmem's default) and more once it has read.
 */
const ANSWER_MARGIN_BYTES = 2 * 64 * 1024;

/** tcp_wmem's maximum (/proc/sys/net/ipv4/tcp_wmem: min, default, max). */
async function sendBufferMax(): Promise<number> {
  const v = (await Deno.readTextFile("/proc/sys/net/ipv4/tcp_wmem")).trim().split(/\s+/);
  const max = Number(v[2]);
  assert.ok(v.length === 3 && max > 0, `unreadable tcp_wmem: ${v.join(" ")}`);
  return max;
}

/** The receive buffer (bytes) of `conn`'s socket, as `ss -m` shows it (skmem rb). */
async function receiveBuffer(conn: Deno.Conn): Promise<number> {
  const local = conn.localAddr as Deno.NetAddr;
  const remote = conn.remoteAddr as Deno.NetAddr;
  const out = await new Deno.Command("ss", {
    args: [
      "-tmnH",
      "src",
      `${local.hostname}:${local.port}`,
      "dst",
      `${remote.hostname}:${remote.port}`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const rb = /\brb(\d+)\b/.exec(text);
  assert.ok(
    out.code === 0 && rb !== null,
    `ss (iproute2) shows no receive buffer for the client's socket: ${text}` +
      new TextDecoder().decode(out.stderr),
  );
  return Number(rb[1]);
}

/**
 * More than the relay-to-client path can hold: the relay's send buffer (at most tcp_wmem's
 * maximum), the client's receive buffer, the relay's copy buffer (TLS_RELAY_BUFFER_BYTES), and
 * the margin.
 */
async function answerBytes(client: Deno.Conn): Promise<number> {
  return await sendBufferMax() + await receiveBuffer(client) + TLS_RELAY_BUFFER_BYTES +
    ANSWER_MARGIN_BYTES;
}

Deno.test("over HTTPS the relay closes a connection TLS_RELAY_FLUSH_MS after its server ended when its client reads nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-tls-flush-bound-" });
  const { cert, key } = await selfSignedCert(dir);
  let body = new Uint8Array(0); // sized once the client's socket is there
  const clock = new ManualClock();
  const server = await serveHttps({ cert, key }, {
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
    const bytes = await answerBytes(conn);
    body = new Uint8Array(bytes).fill(0x61);
    await conn.write(
      new TextEncoder().encode("GET /big HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
    );
    // The client reads nothing from here on.
    await waitFor(
      `the TLS side's server ended with the relay still copying (its flush bound armed): ` +
        `the ${bytes}-byte answer written`,
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
