/**
 * The HTTP/2 content-type read-ahead (docs/http-api.md, "Request policy", check 3) through a
 * reload of the API tokens: a POST with no content-length and a type that is not JSON is read
 * until its first bytes or its end to tell whether it has a body (415 when it has). A reload that
 * removes the caller's token while that read waits on the client must not let the request act,
 * nor tell it what its body was (401 as the first check answers, not 415 or 400); a reload that
 * keeps the token leaves the answer as it was. Real HTTP/2 over TLS on loopback; the API's read
 * timer runs on a manual clock, which also tells when the read has begun.
 */
import assert from "node:assert/strict";
import type * as http2 from "node:http2";
import { BODY_READ_TIMEOUT_MS, ESTOP_REASON_READ_TIMEOUT_MS } from "../../src/http/mod.ts";
import type { NamedToken } from "../../src/http/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import { collect, h2Session, type Outcome } from "./_h2_client.ts";
import { selfSignedCert } from "./_tls_certs.ts";

const SHIFT: NamedToken = { name: "shift", role: "operator", token: "operator-token-4b8d2f6a0c31" };
const BOSS: NamedToken = { name: "boss", role: "admin", token: "admin-token-7e1c5a9f3d68" };
const MANUAL = '{"mode":"MANUAL"}';

/** What the client does once the read has begun and the tokens are replaced. */
type Then = (stream: http2.ClientHttp2Stream, clock: ManualClock) => void;

/**
 * Opens a POST to `path` as 'shift' with `contentType` and no content-length, its body not yet
 * sent; once the API's read of its first bytes is under way (its read timer armed), replaces the
 * tokens by `tokens`, then does `then` (send a body, end it empty, or let the read time out).
 * `before` runs first on the same connection (as 'boss'). Resolves with the answer and the fixture.
 */
async function readAheadThroughReload(
  o: {
    path: string;
    contentType: string;
    tokens: readonly NamedToken[];
    then: Then;
    before?: (post: (path: string) => Promise<Outcome>) => Promise<void>;
  },
  check: (answer: Outcome, fx: HttpFixture) => void,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "http-h2-type-reload-" });
  const clock = new ManualClock();
  const fx = await startHttpFixture({
    start: false,
    apiClock: clock,
    config: { http: { authEnabled: true, authExemptLoopback: false } },
    api: { apiToken: "", tokens: [SHIFT, BOSS] },
  });
  try {
    const { cert, key } = await selfSignedCert(dir);
    const server = await fx.serve({ tlsCertPath: cert, tlsKeyPath: key });
    const session = h2Session(server.port, await Deno.readTextFile(cert));
    try {
      await o.before?.((path) => {
        const s = session.request({
          ":method": "POST",
          ":path": path,
          authorization: `Bearer ${BOSS.token}`,
        });
        const outcome = collect(s);
        s.end();
        return outcome;
      });
      const stream = session.request({
        ":method": "POST",
        ":path": o.path,
        "content-type": o.contentType,
        authorization: `Bearer ${SHIFT.token}`,
      });
      const answer = collect(stream);
      const limit = o.path === "/v0/estop/clear"
        ? ESTOP_REASON_READ_TIMEOUT_MS
        : BODY_READ_TIMEOUT_MS;
      // Admitted as 'shift': the content-type check waits for its body's first bytes.
      await waitFor("the read-ahead under way", () => clock.pendingDelays().includes(limit));
      await fx.api.setTokens(fx.services.config.http, "", o.tokens);
      o.then(stream, clock);
      check(await answer, fx);
    } finally {
      session.destroy();
    }
  } finally {
    await fx.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const sendManual: Then = (stream) => stream.end(MANUAL);

/** readAheadThroughReload's check of a mode request: answered `status`, the mode still IDLE. */
const answeredStillIdle = (status: number) => (answer: Outcome, fx: HttpFixture): void => {
  assert.equal(answer.status, status, answer.body);
  assert.equal(fx.runtime.modes.current(), "IDLE");
};

Deno.test("HTTP/2 read-ahead: a token removed while a non-JSON body is awaited is answered 401, not 415, and the mode is not switched", async () => {
  await readAheadThroughReload(
    { path: "/v0/mode", contentType: "text/plain", tokens: [BOSS], then: sendManual },
    (answer, fx) => {
      assert.equal(answer.status, 401, answer.body);
      assert.match(answer.body, /UNAUTHENTICATED/);
      assert.equal(fx.runtime.modes.current(), "IDLE");
    },
  );
});

Deno.test("HTTP/2 read-ahead: a reload that keeps the token leaves the non-JSON body's answer 415", async () => {
  const night: NamedToken = { name: "night", role: "viewer", token: "night-token-3a9e1c7b5f02" };
  await readAheadThroughReload(
    { path: "/v0/mode", contentType: "text/plain", tokens: [SHIFT, BOSS, night], then: sendManual },
    answeredStillIdle(415),
  );
});

Deno.test("HTTP/2 read-ahead: a token lowered to viewer while the body is awaited is answered 403, not 415", async () => {
  await readAheadThroughReload(
    {
      path: "/v0/mode",
      contentType: "text/plain",
      tokens: [{ ...SHIFT, role: "viewer" }, BOSS],
      then: sendManual,
    },
    answeredStillIdle(403),
  );
});

Deno.test("HTTP/2 read-ahead: a token removed while the body is awaited is answered 401, not the 400 of its read timing out", async () => {
  await readAheadThroughReload(
    {
      path: "/v0/mode",
      contentType: "text/plain",
      tokens: [BOSS],
      then: (_stream, clock) => assert.ok(clock.fireNext(), "the read timer fires"),
    },
    answeredStillIdle(401),
  );
});

Deno.test("HTTP/2 read-ahead: a token removed before the body ends empty is answered 401 by the route, and the mode is not switched", async () => {
  await readAheadThroughReload(
    { path: "/v0/mode", contentType: "text/plain", tokens: [BOSS], then: (s) => s.end() },
    answeredStillIdle(401),
  );
});

Deno.test("HTTP/2 read-ahead: a clear whose token is removed before its empty body ends is answered 401 and the latch holds", async () => {
  await readAheadThroughReload(
    {
      path: "/v0/estop/clear",
      contentType: "text/plain",
      tokens: [BOSS],
      then: (s) => s.end(),
      before: async (post) => {
        const stop = await post("/v0/estop");
        assert.equal(stop.status, 200, stop.body);
      },
    },
    (answer, fx) => {
      assert.equal(answer.status, 401, answer.body);
      assert.equal(fx.runtime.estop.status().latched, true, "the latch holds");
    },
  );
});
