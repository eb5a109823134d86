/**
 * An HTTP/2 request that writes a literal `host` header (RFC 9113 section 8.3.1 lets a client
 * send one beside `:authority`) and no content-length: Deno.serve does not say which HTTP version
 * a request came in on, and the Host header is what tells an HTTP/1.1 request (whose lack of
 * Content-Length and Transfer-Encoding means no body, RFC 9112 section 6.3). Such a request was
 * taken as bodiless: its DATA frames were discarded unread, so a body that is not JSON passed the
 * content-type check (no 415), a route with an optional body acted as if it had none (a run
 * opened without its label, a malformed body never checked), and a required one was "missing".
 * Its body is read and checked as any other; an HTTP/1.1 request with neither header still has
 * none (read at once, answered as before).
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import { withRunsFixture } from "../helpers/runtime_fixture.ts";
import { collect, type Outcome } from "./_h2_client.ts";
import { browserLike, rawRequest } from "./raw_http.ts";

/** Runs `fn` with a POST over one HTTP/2 session (prior knowledge) whose head carries `host`. */
async function withHostH2(
  fn: (
    post: (path: string, contentType: string, body: string) => Promise<Outcome>,
    o: { port: number; openRun: () => string | null; mode: () => string },
  ) => Promise<void>,
): Promise<void> {
  await withRunsFixture({ prefix: "http-h2-host-body-" }, async ({ fx, runs }) => {
    const { port } = await fx.serve();
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", () => {});
    try {
      await fn((path, contentType, body) => {
        const stream = session.request({
          ":method": "POST",
          ":path": path,
          host: `127.0.0.1:${port}`,
          "content-type": contentType,
        });
        const outcome = collect(stream);
        stream.end(body);
        return outcome;
      }, { port, openRun: () => runs.openRunId(), mode: () => fx.runtime.modes.current() });
    } finally {
      await new Promise<void>((r) => session.close(() => r()));
    }
  });
}

Deno.test("HTTP/2 with a literal host header: a body not declared JSON is refused 415 and the run is not opened", async () => {
  await withHostH2(async (post, o) => {
    const res = await post("/v0/runs", "text/plain", "{not json");
    assert.equal(res.status, 415, res.body);
    assert.equal(o.openRun(), null, "no run opened");
  });
});

Deno.test("HTTP/2 with a literal host header: a malformed JSON body is refused 400 and the run is not opened", async () => {
  await withHostH2(async (post, o) => {
    const res = await post("/v0/runs", "application/json", '{"experiment_label": 7}');
    assert.equal(res.status, 400, res.body);
    assert.match(res.body, /experiment_label/);
    assert.equal(o.openRun(), null, "no run opened");
  });
});

Deno.test("HTTP/2 with a literal host header: the body is read (the run gets its label, the mode switches)", async () => {
  await withHostH2(async (post, o) => {
    const run = await post("/v0/runs", "application/json", '{"experiment_label":"batch 7"}');
    assert.equal(run.status, 200, run.body);
    assert.equal(JSON.parse(run.body).run.experiment_label, "batch 7");
    const mode = await post("/v0/mode", "application/json", '{"mode":"MANUAL"}');
    assert.equal(mode.status, 200, mode.body);
    assert.equal(o.mode(), "MANUAL");
  });
});

Deno.test("HTTP/1.1 with neither Content-Length nor Transfer-Encoding still has no body: a non-JSON type is no 415", async () => {
  await withHostH2(async (_post, o) => {
    const res = await rawRequest(
      o.port,
      browserLike(o.port, "POST", "/v0/runs", { contentType: "text/plain" }),
    );
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.run.experiment_label, null);
    assert.notEqual(o.openRun(), null);
  });
});
