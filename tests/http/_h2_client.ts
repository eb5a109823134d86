/**
 * The shared set-up of the HTTP/2 tests (h2_shutdown_*_test.ts, h2_drop_test.ts): a TLS server on
 * loopback with a self-signed certificate (HTTPS negotiates h2 by ALPN), a node:http2 session or a
 * fetch client that speaks only HTTP/2, and the answer a client stops reading.
 */
import * as http2 from "node:http2";
import type { Clock, Logger } from "../../src/common/mod.ts";
import * as host from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { selfSignedCert } from "./_tls_certs.ts";

/** What the client got for one request: its status and whole body, or how it failed. */
export interface Outcome {
  status: number;
  body: string;
  error: string | null;
}

/** Collects a request's answer (the stream's end, or its error). */
export function collect(stream: http2.ClientHttp2Stream): Promise<Outcome> {
  return new Promise((resolve) => {
    let status = 0;
    let body = "";
    stream.setEncoding("utf8");
    stream.on("response", (headers) => (status = Number(headers[":status"])));
    stream.on("data", (chunk: string) => (body += chunk));
    stream.on("end", () => resolve({ status, body, error: null }));
    stream.on("error", (err: Error) => resolve({ status, body, error: err.message }));
    stream.on("close", () => resolve({ status, body, error: "closed before its end" }));
  });
}

/**
 * A TLS server on 127.0.0.1 (port 0, no auth) with a self-signed localhost certificate in a
 * temporary directory named `prefix`; `caCert` trusts it, `remove()` deletes the directory.
 * `log`: the server's logger (default testLogger()).
 */
export async function tlsServer(
  o: { prefix: string; handler: host.ServeHandler; clock?: Clock; log?: Logger },
) {
  const dir = await Deno.makeTempDir({ prefix: o.prefix });
  const { cert, key } = await selfSignedCert(dir);
  const server = await host.serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: cert,
    tlsKeyPath: key,
    authEnabled: false,
    allowInsecureBind: false,
    log: o.log ?? testLogger(),
    openFileLimit: null,
    ...(o.clock === undefined ? {} : { clock: o.clock }),
    handler: o.handler,
  });
  return {
    server,
    caCert: await Deno.readTextFile(cert),
    remove: () => Deno.remove(dir, { recursive: true }),
  };
}

const CHUNK = new Uint8Array(64 * 1024).fill(0x61);

/** An answer without end (a download) in 64 KiB chunks: its client stops reading it. */
export function endlessAnswer(): Response {
  return new Response(new ReadableStream({ pull: (c) => c.enqueue(CHUNK) }));
}

/** A node:http2 session to the server; its error at the connection's drop is ignored. */
/** An answer whose first part is written now and whose end when `finish()` is called. */
export function twoPartAnswer(): { res: Response; finish: () => void } {
  const enc = new TextEncoder();
  let finish = () => {};
  const res = new Response(
    new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(enc.encode("part one;"));
        finish = () => {
          finish = () => {};
          c.enqueue(enc.encode("part two"));
          c.close();
        };
      },
    }),
  );
  return { res, finish: () => finish() };
}

export function h2Session(port: number, caCert: string): http2.ClientHttp2Session {
  const session = http2.connect(`https://localhost:${port}`, { ca: caCert });
  session.on("error", () => {}); // the connection is dropped at the end
  return session;
}

/** A fetch client that speaks HTTP/2 only and trusts the test certificate. */
export function h2FetchClient(caCert: string): Deno.HttpClient {
  return Deno.createHttpClient({ caCerts: [caCert], http1: false, http2: true });
}

/**
 * A TLS server on a manual clock answering GET /big without end and any other path (a device
 * call) once `release()` is called, and a node:http2 session to it. `start()` opens, on that one
 * connection, the /big stream whose client reads nothing and the call, and resolves once the
 * stalled stream is answered and the call is in flight; `callAnswered()` is the call's
 * `info.answered` (its answer written).
 */
export async function stalledStreamAndCall(prefix: string) {
  const clock = new ManualClock();
  let callArrived = false;
  let callAnswered: Promise<void> | null = null;
  let release = () => {};
  const released = new Promise<void>((r) => (release = r));
  const { server, caCert, remove } = await tlsServer({
    prefix,
    clock,
    handler: async (req, info) => {
      if (new URL(req.url).pathname === "/big") return endlessAnswer();
      callArrived = true; // a device call waiting for its provider
      callAnswered = info.answered;
      await released;
      return new Response("call done");
    },
  });
  const session = h2Session(server.port, caCert);
  return {
    clock,
    server,
    session,
    remove,
    release: () => release(),
    callAnswered: () => callAnswered,
    async start(): Promise<{ call: Promise<Outcome> }> {
      let stalledHeaders = false;
      const stalled = session.request({ ":path": "/big" });
      stalled.on("response", () => (stalledHeaders = true));
      stalled.on("error", () => {});
      stalled.pause(); // its client reads nothing
      const call = collect(
        session.request({ ":path": "/call", ":method": "POST" }, { endStream: true }),
      );
      await waitFor(
        "the stalled stream answered and the call in flight",
        () => stalledHeaders && callArrived,
        10_000,
      );
      return { call };
    },
  };
}
