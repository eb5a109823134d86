/**
 * POST /v0/estop over a real socket: a request that declares no body (`Content-Length: 0`, what
 * fetch and most clients send for a POST without one) triggers with no reason, not with a reason
 * "still arriving" (Estop.onReasonArriving): under Deno.serve such a request still has a body
 * stream, of 0 bytes, so `req.body === null` alone never said "no body" there. A request with a
 * body still hands its reason over as it arrives. Likewise an HTTP/1.1 request with neither
 * Content-Length nor Transfer-Encoding (`curl -X POST` without `-d`; RFC 9112 section 6.3: no
 * body), written byte for byte on a raw socket, while chunked and HTTP/2 bodies without a length
 * are still read.
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

Deno.test("POST /v0/estop with Content-Length: 0 over a socket triggers with no reason arriving; one with a body hands its reason over", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 5000 } });
  const arriving: Promise<string | null>[] = [];
  fx.runtime.estop.onReasonArriving((reason) => arriving.push(reason));
  const { port } = await fx.serve();
  const url = `http://127.0.0.1:${port}/v0/estop`;
  try {
    const empty = await fetch(url, { method: "POST" });
    assert.equal(empty.status, 200);
    await empty.body?.cancel();
    assert.equal(fx.runtime.estop.status().latched, true);
    assert.equal(arriving.length, 0, "no body: no reason arriving");

    const withReason = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reason: "guard door" }),
    });
    assert.equal(withReason.status, 200);
    await withReason.body?.cancel();
    assert.equal(arriving.length, 1, "a body: its reason arriving");
    assert.equal(await arriving[0], "guard door");
  } finally {
    await fx.close();
  }
});

/** Writes `bytes` as they are on a fresh loopback connection; the answer's status line. */
async function rawStatusLine(port: number, bytes: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(bytes));
    let text = "";
    const buf = new Uint8Array(16 * 1024);
    while (true) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    return text.split("\r\n")[0]!;
  } finally {
    conn.close();
  }
}

Deno.test("POST /v0/estop over HTTP/1.1 with neither Content-Length nor Transfer-Encoding (curl -X POST) triggers with no reason arriving; chunked and HTTP/2 bodies without a length hand their reason over", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 5000 } });
  const arriving: Promise<string | null>[] = [];
  fx.runtime.estop.onReasonArriving((reason) => arriving.push(reason));
  const { port } = await fx.serve();
  try {
    // What `curl -X POST http://127.0.0.1:PORT/v0/estop` writes (no -d), plus Connection: close:
    // RFC 9112 section 6.3, a request with neither header has a body of length zero.
    const bare = await rawStatusLine(
      port,
      "POST /v0/estop HTTP/1.1\r\n" +
        `Host: 127.0.0.1:${port}\r\n` +
        "User-Agent: curl/8.5.0\r\n" +
        "Accept: */*\r\n" +
        "Connection: close\r\n\r\n",
    );
    assert.equal(bare, "HTTP/1.1 200 OK");
    assert.equal(fx.runtime.estop.status().latched, true);
    assert.equal(
      arriving.length,
      0,
      "HTTP/1.1 without Content-Length or Transfer-Encoding: no body",
    );

    // HTTP/1.1, chunked: a body without Content-Length, read as it arrives.
    const reason = JSON.stringify({ reason: "guard door" });
    const chunked = await rawStatusLine(
      port,
      "POST /v0/estop HTTP/1.1\r\n" +
        `Host: 127.0.0.1:${port}\r\n` +
        "Content-Type: application/json\r\n" +
        "Transfer-Encoding: chunked\r\n" +
        "Connection: close\r\n\r\n" +
        `${reason.length.toString(16)}\r\n${reason}\r\n0\r\n\r\n`,
    );
    assert.equal(chunked, "HTTP/1.1 200 OK");
    assert.equal(arriving.length, 1, "a chunked body: its reason arriving");
    assert.equal(await arriving[0], "guard door");

    // HTTP/2 (prior knowledge on the plain port): DATA frames, no content-length, no Host.
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", () => {});
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/v0/estop",
          "content-type": "application/json",
        });
        let code = 0;
        stream.on("response", (h) => (code = Number(h[":status"])));
        stream.on("error", reject);
        stream.on("close", () => resolve(code));
        stream.resume();
        stream.end(JSON.stringify({ reason: "light curtain" }));
      });
      assert.equal(status, 200);
    } finally {
      await new Promise<void>((r) => session.close(() => r()));
    }
    assert.equal(arriving.length, 2, "an HTTP/2 body without content-length: its reason arriving");
    assert.equal(await arriving[1], "light curtain");
  } finally {
    await fx.close();
  }
});
