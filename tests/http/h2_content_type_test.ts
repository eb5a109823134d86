/**
 * The JSON content type (docs/http-api.md, "Request policy", check 3) over HTTP/2, where a body
 * comes as DATA frames with no content-length: whether such a request has a body is known only
 * once it is read, so a non-empty body that is not declared JSON is refused 415 with the message
 * a declared body (HTTP/1.1 with Content-Length) gets, and nothing runs; an empty one needs no
 * type. The e-stop trigger still accepts any body.
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { collect, type Outcome } from "./_h2_client.ts";
import { browserLike, rawRequest } from "./raw_http.ts";

const MANUAL = '{"mode":"MANUAL"}';

/** One POST over an HTTP/2 session (prior knowledge on the plain port), no content-length. */
function h2Post(
  session: http2.ClientHttp2Session,
  path: string,
  contentType: string | undefined,
  body: string,
): Promise<Outcome> {
  const stream = session.request({
    ":method": "POST",
    ":path": path,
    ...(contentType === undefined ? {} : { "content-type": contentType }),
  });
  const outcome = collect(stream);
  stream.end(body);
  return outcome;
}

Deno.test("HTTP/2: a body without content-length that is not declared JSON is refused 415 as a declared one is; an empty one needs no type", async () => {
  const fx = await startHttpFixture({ start: false });
  const { port } = await fx.serve();
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on("error", () => {});
  try {
    for (const contentType of ["text/plain", undefined]) {
      const h2 = await h2Post(session, "/v0/mode", contentType, MANUAL);
      const h1 = await rawRequest(
        port,
        browserLike(port, "POST", "/v0/mode", { contentType, body: MANUAL }),
      );
      assert.equal(h1.status, 415, h1.body);
      assert.deepEqual({ status: h2.status, body: h2.body }, { status: 415, body: h1.body });
      assert.equal(fx.runtime.modes.current(), "IDLE", String(contentType));
    }

    const json = await h2Post(session, "/v0/mode", "application/json", MANUAL);
    assert.equal(json.status, 200, json.body);
    assert.equal(fx.runtime.modes.current(), "MANUAL");

    // The e-stop trigger takes any body; an empty body with no type (the clear) is accepted.
    const stop = await h2Post(session, "/v0/estop", "text/plain", "stop!");
    assert.equal(stop.status, 200, stop.body);
    assert.equal(fx.runtime.estop.status().latched, true);
    const texted = await h2Post(session, "/v0/estop/clear", "text/plain", "go");
    assert.equal(texted.status, 415, texted.body);
    assert.equal(fx.runtime.estop.status().latched, true);
    const clear = await h2Post(session, "/v0/estop/clear", undefined, "");
    assert.equal(clear.status, 200, clear.body);
    assert.equal(fx.runtime.estop.status().latched, false);
  } finally {
    await new Promise<void>((r) => session.close(() => r()));
    await fx.close();
  }
});

Deno.test("HTTP/2: the clear's undeclared body is read no longer than the e-stop reads its reason, and an e-stop meanwhile latches at once", async () => {
  // A body read time far beyond the e-stop's: the clear must not hold its priority slot that long.
  const fx = await startHttpFixture({ start: false, api: { bodyReadTimeoutMs: 60_000 } });
  const { port } = await fx.serve();
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on("error", () => {});
  try {
    // Headers only: the stream stays open, its body neither sent nor ended.
    const stalled = session.request({ ":method": "POST", ":path": "/v0/estop/clear" });
    const clear = collect(stalled);
    const stop = await h2Post(session, "/v0/estop", undefined, "");
    assert.equal(stop.status, 200, stop.body);
    assert.equal(fx.runtime.estop.status().latched, true);
    const refused = await clear;
    assert.equal(refused.status, 400, refused.body);
    assert.match(refused.body, /not received completely within 1000 ms/);
    assert.equal(fx.runtime.estop.status().latched, true, "the clear did not act");
    stalled.close();
  } finally {
    await new Promise<void>((r) => session.close(() => r()));
    await fx.close();
  }
});
