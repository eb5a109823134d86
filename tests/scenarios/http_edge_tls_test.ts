/**
 * The HTTP edge's protections together, end to end: the runtime command over HTTPS with bearer
 * auth (no loopback exemption), named tokens, a CORS grant and a small `http.max_connections`,
 * the simulated provider as its child. Event streams hold their half of the connections and
 * idle HTTPS connections the rest: a page's preflight and its POST /v0/estop still get in (an
 * idle connection is closed for each). A reload that rotates a stream's token ends that stream
 * over HTTP/2; resuming it with the new token and Last-Event-ID loses and repeats nothing.
 */
import assert from "node:assert/strict";
import { type SseBlock, SseReader } from "../helpers/sse_reader.ts";
import { type RuntimeChild, startRuntimeChildOnFreePort } from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { providerYaml, waitFor, writeRuntimeConfig } from "./process_helpers.ts";
import { selfSignedCert } from "../http/_tls_certs.ts";
import { closedWithin } from "../http/_raw_socket.ts";

const ADMIN = "admin-token-0011223344556677";
const VIEWER_OLD = "viewer-old-token-7a1b2c3d4e";
const VIEWER_NEW = "viewer-new-token-9f8e7d6c5b";
const PANEL = "http://panel.lab:3000";
/** The configured connection bound: event streams get half of it. */
const MAX_CONNECTIONS = 8;
const STREAMS = MAX_CONNECTIONS / 2;

interface Rig {
  readonly dir: string;
  readonly port: number;
  readonly caCert: string;
  readonly rt: RuntimeChild;
  /** Rewrites the configuration with `viewer` as the token of 'wall' (for a reload). */
  write(viewer: string): Promise<void>;
}

async function withRig(body: (rig: Rig) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "http-edge-tls-" });
  try {
    const { cert, key } = await selfSignedCert(dir);
    const caCert = await Deno.readTextFile(cert);
    const providers = providerYaml("sim0", {
      command: Deno.execPath(),
      args: ["run", "--quiet", "--allow-read", "--allow-env", SIM_MAIN, "--config", SIM_INERT_YAML],
    });
    const writeOn = async (port: number, viewer: string) => {
      await writeRuntimeConfig(dir, {
        port,
        providers,
        http: `  auth_enabled: true
  auth_exempt_loopback: false
  auth_token: ${ADMIN}
  tls_cert_path: ${cert}
  tls_key_path: ${key}
  max_connections: ${MAX_CONNECTIONS}
  thread_pool_size: 2
  cors_allowed_origins: ${PANEL}
  tokens:
    - {name: wall, role: viewer, token: ${viewer}}
`,
      });
    };
    const rt = await startRuntimeChildOnFreePort(async (port) => {
      await writeOn(port, VIEWER_OLD);
      return { config: `${dir}/runtime.yaml`, port, token: ADMIN, caCert };
    });
    const write = (viewer: string) => writeOn(rt.port, viewer);
    try {
      await body({ dir, port: rt.port, caCert, rt, write });
    } finally {
      await rt.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A client of its own: a connection of its own (HTTP/1.1, so one request at a time on it). */
function ownConnection(caCert: string): Deno.HttpClient {
  return Deno.createHttpClient({ caCerts: [caCert], http2: false });
}

Deno.test("over HTTPS with auth, at http.max_connections held by event streams and idle connections, a page's preflight and its POST /v0/estop are answered", async () => {
  await withRig(async ({ port, caCert }) => {
    const url = (path: string) => `https://localhost:${port}${path}`;
    const clients: Deno.HttpClient[] = [];
    const streams: SseReader[] = [];
    const idle: Deno.TlsConn[] = [];
    const client = () => {
      const c = ownConnection(caCert);
      clients.push(c);
      return c;
    };
    const viewer = { authorization: `Bearer ${VIEWER_OLD}` };
    try {
      for (let i = 0; i < STREAMS; i++) {
        const res = await fetch(url("/v0/events"), { client: client(), headers: viewer });
        assert.equal(res.status, 200, await (res.ok ? "" : res.text()));
        const sse = new SseReader(res.body!);
        streams.push(sse);
        await sse.nextEvent(); // the stream is live
      }
      const refused = await fetch(url("/v0/events"), { client: client(), headers: viewer });
      assert.equal(refused.status, 503);
      assert.match(
        (await refused.json()).status.message,
        new RegExp(
          `^Too many event streams: at most ${STREAMS} may be open \\(streams get at most half ` +
            `of the server's ${MAX_CONNECTIONS} connections`,
        ),
      );
      // Every other connection: handshake done, no request (one of them is the refused
      // stream's, kept alive).
      while (idle.length < MAX_CONNECTIONS - STREAMS) {
        const c = await Deno.connectTls({
          hostname: "localhost",
          port,
          caCerts: [caCert],
          alpnProtocols: ["http/1.1"],
        });
        await c.handshake();
        idle.push(c);
      }
      // A page of the granted origin: its preflight, then its stop, each on a new connection.
      const preflight = await fetch(url("/v0/estop"), {
        client: client(),
        method: "OPTIONS",
        headers: {
          origin: PANEL,
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type",
        },
      });
      await preflight.body?.cancel();
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get("access-control-allow-origin"), PANEL);
      const stop = await fetch(url("/v0/estop"), {
        client: client(),
        method: "POST",
        headers: { ...viewer, origin: PANEL, "content-type": "application/json" },
        body: JSON.stringify({ reason: "stop at the connection limit" }),
      });
      const text = await stop.text();
      assert.equal(stop.status, 200, text);
      assert.equal(JSON.parse(text).latched, true);
      assert.equal(stop.headers.get("access-control-allow-origin"), PANEL);
      // The streams were not the price: each still gets events (the e-stop's, among others).
      for (const sse of streams) {
        const b = await sse.nextEvent();
        assert.ok(b.event !== undefined);
      }
      // The bound was reached: the oldest idle connections were closed to admit the page's.
      assert.notEqual(await closedWithin(idle.shift()!, 5000), null, "no connection was evicted");
    } finally {
      for (const s of streams) await s.cancel();
      for (const c of idle) {
        try {
          c.close();
        } catch { /* closed by the server */ }
      }
      for (const c of clients) c.close();
    }
  });
});

Deno.test("over HTTPS a reload that rotates a token ends its HTTP/2 event stream; resuming with the new token and Last-Event-ID loses and repeats nothing", async () => {
  await withRig(async ({ port, caCert, rt, write }) => {
    const client = Deno.createHttpClient({ caCerts: [caCert] });
    const open = (token: string, lastEventId?: string) =>
      fetch(`https://localhost:${port}/v0/events`, {
        client,
        headers: {
          authorization: `Bearer ${token}`,
          ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }),
        },
      });
    try {
      const res = await open(VIEWER_OLD);
      assert.equal(res.status, 200);
      const first = new SseReader(res.body!);
      const seen: SseBlock[] = [];
      while (seen.length < 3) seen.push(await first.nextEvent());
      await write(VIEWER_NEW);
      rt.signal("SIGHUP");
      // Read to the stream's end: the runtime ends it (nothing is cut unread).
      for (;;) {
        const b = await first.next();
        if (b === null) break;
        assert.ok(!b.comments.some((c) => c.startsWith("dropped")), `${b.comments}`);
        if (b.event !== undefined) seen.push(b);
      }
      await waitFor(
        "the end logged",
        () => /event stream of 'wall' ended: its token no longer admits it/.test(rt.stderr()),
        10_000,
      );
      const last = seen.at(-1)!;
      const old = await open(VIEWER_OLD, last.rawId);
      await old.body?.cancel();
      assert.equal(old.status, 401);
      const again = await open(VIEWER_NEW, last.rawId);
      assert.equal(again.status, 200);
      const second = new SseReader(again.body!);
      try {
        const next: SseBlock[] = [];
        // The reload's own event came after the stream ended: the resumed stream brings it.
        while (!next.some((b) => b.event === "config_reload")) {
          const b = await second.next();
          assert.notEqual(b, null, "the resumed stream ended");
          assert.ok(!b!.comments.some((c) => c.startsWith("dropped")), `${b!.comments}`);
          if (b!.event !== undefined) next.push(b!);
        }
        assert.notEqual(next[0]!.event, "resync");
        assert.equal(next[0]!.boot, last.boot);
        // Unfiltered: every id, in order, none twice.
        assert.deepEqual(
          next.map((b) => b.id),
          next.map((_, i) => last.id! + 1 + i),
        );
      } finally {
        await second.cancel();
      }
    } finally {
      client.close();
    }
  });
});
