/**
 * Over HTTPS a browser carries its tabs' event streams on one HTTP/2 connection. A stream a token
 * change ended whose client does not take the end counts against the streams' bound until
 * SSE_END_FLUSH_MS, when its connection is to be dropped; over HTTP/2 that drop waits for the
 * other requests on the connection (HTTP2_DROP_FLUSH_MS), and another tab's event stream never
 * ends. The ended stream kept counting for as long as that other stream lived: one stream slot
 * lost for good per such stream, and the 503 said it was "still closing its connection".
 */
import assert from "node:assert/strict";
import { SSE_END_FLUSH_MS } from "../../src/http/mod.ts";
import type { NamedToken } from "../../src/http/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { waitFor } from "../helpers/kernel.ts";
import { ManualClock } from "../helpers/clock.ts";
import { selfSignedCert } from "./_tls_certs.ts";
import { h2Session } from "./_h2_client.ts";

const REMOVED = "token-removed-1111111111";
const KEPT = "token-kept-222222222222222";
const TOKENS: NamedToken[] = [
  { name: "old", role: "viewer", token: REMOVED },
  { name: "wall", role: "viewer", token: KEPT },
];
/** Event bytes far beyond an HTTP/2 stream's initial flow-control window (64 KiB). */
const BIG_TEXT = "x".repeat(50_000);
const BIG_EVENTS = 8;

Deno.test("over HTTP/2 a stream a token change ended, unread beside another tab's stream on its connection, stops counting against the streams' bound after SSE_END_FLUSH_MS", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-sse-h2-end-" });
  const clock = new ManualClock();
  const fx = await startHttpFixture({
    start: false,
    apiClock: clock,
    config: { http: { authEnabled: true, authExemptLoopback: false } },
    api: { apiToken: "", tokens: TOKENS, maxSseClients: 2 },
  });
  try {
    const { cert, key } = await selfSignedCert(dir);
    const server = await fx.serve({ tlsCertPath: cert, tlsKeyPath: key });
    const session = h2Session(server.port, await Deno.readTextFile(cert));
    try {
      // Tab 1: its page reads nothing (its stream's window fills); tab 2 reads its stream.
      const unread = session.request({ ":path": "/v0/events", authorization: `Bearer ${REMOVED}` });
      let unreadStatus = 0;
      let unreadEnded = false;
      unread.on("response", (h) => (unreadStatus = Number(h[":status"])));
      unread.on("end", () => (unreadEnded = true));
      unread.on("close", () => (unreadEnded = true));
      unread.on("error", () => {});
      unread.pause();
      const read = session.request({ ":path": "/v0/events", authorization: `Bearer ${KEPT}` });
      let readBytes = 0;
      read.on("data", (d: Uint8Array) => (readBytes += d.byteLength));
      read.on("error", () => {});
      await waitFor("both streams open", () => unreadStatus === 200 && readBytes >= 0, 5000);
      await waitFor("two streams counted", () => fx.api.sseClientCount === 2, 5000);
      for (let i = 0; i < BIG_EVENTS; i++) {
        fx.runtime.bus.publish({
          kind: "bt_error",
          node: `n${i}`,
          error: BIG_TEXT,
          timestamp_ms: i,
        });
      }
      await waitFor(
        "the read stream got them",
        () => readBytes > BIG_EVENTS * BIG_TEXT.length,
        10_000,
      );

      const { ended } = await fx.api.setTokens(fx.services.config.http, "", [TOKENS[1]!]);
      assert.equal(ended, 1);
      // Its end waits behind what its page did not read: the drop is asked for at SSE_END_FLUSH_MS,
      // and deferred over HTTP/2 while tab 2's stream is in flight on the connection.
      await clock.advanceAsync(SSE_END_FLUSH_MS);
      assert.equal(unreadEnded, false, "the test needs a client that does not take the end");
      assert.equal(server.connectionStats().open, 1, "the shared connection is kept for tab 2");

      // A third tab reconnecting: one stream open (tab 2), one slot free.
      const third = session.request({ ":path": "/v0/events", authorization: `Bearer ${KEPT}` });
      const answer = await new Promise<string>((resolve) => {
        let status = 0;
        let body = "";
        third.on("response", (h) => {
          status = Number(h[":status"]);
          if (status === 200) resolve("200");
        });
        third.on("data", (d: Uint8Array) => (body += new TextDecoder().decode(d)));
        third.on("end", () => resolve(`${status} ${body}`));
        third.on("error", (e) => resolve(`error ${e}`));
      });
      third.close();
      assert.equal(answer, "200", "the ended stream still counts against the bound");
    } finally {
      session.destroy();
    }
  } finally {
    await fx.close();
    await Deno.remove(dir, { recursive: true });
  }
});
