/**
 * The 504 "outcome unknown" a request gets at shutdown in place of an answer still being made (a
 * device call to a provider whose timeout_ms is longer than HTTP_SHUTDOWN_ANSWER_MS) is made by
 * the connection layer (src/host), which knows nothing of CORS: it had no CORS headers, so a
 * console served from another origin (a granted one, http.cors_allowed_origins) could not read it
 * and saw a network error instead of "outcome unknown". The composition root now hands the server
 * the HTTP layer's CORS headers for it (serve's standInHeaders), the same as the request's own
 * answer would have carried.
 */
import assert from "node:assert/strict";
import { serveHttp } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { connect, readResponse, send } from "./_raw_socket.ts";

const ORIGIN = "http://page.example";

Deno.test("the 504 made at shutdown for a device call still in flight carries the CORS headers its own answer would have", async () => {
  const clock = new ManualClock(); // the HTTP server's bounds only
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("sim0", { timeoutMs: 60_000 })],
      http: { corsAllowedOrigins: [ORIGIN] },
    }),
    { arm: true, host: { serve: (o) => serveHttp({ ...o, clock }) } },
  );
  let stopping: Promise<void> | null = null;
  const conn = await connect(rt.http!.port);
  try {
    const base = `http://127.0.0.1:${rt.http!.port}`;
    const normal = await fetch(`${base}/v0/runtime/status`, { headers: { origin: ORIGIN } });
    await normal.body?.cancel();
    assert.equal(normal.headers.get("access-control-allow-origin"), ORIGIN, "granted origin");
    // chaos_control inject_call_latency: every call to relayio0 waits 5 s first, longer than
    // this test takes to run the server's shutdown bounds on its manual clock (its polls too:
    // the runtime's stop waits for one in flight).
    const inject = await fetch(`${base}/v0/call`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        provider_id: "sim0",
        device_id: "chaos_control",
        function_id: 3,
        args: {
          device_id: { type: "string", string: "relayio0" },
          latency_ms: { type: "int64", int64: 5_000 },
        },
      }),
    });
    assert.equal(inject.status, 200, await inject.text());
    const call = JSON.stringify({
      provider_id: "sim0",
      device_id: "relayio0",
      function_id: 1,
      args: { enabled: { type: "bool", bool: true } },
    });
    await send(
      conn,
      `POST /v0/call HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: ${ORIGIN}\r\n` +
        `content-type: application/json\r\ncontent-length: ${call.length}\r\n\r\n${call}`,
    );
    await waitFor("the call in flight", () => rt.api.inFlight === 1, 10_000);
    stopping = rt.stop();
    let read = false;
    const answer = readResponse(conn, 20_000).finally(() => (read = true));
    // The shutdown's bounds pass on the server's manual clock, one timer at a time.
    await waitFor("the late answer", () => read || (clock.fireNext(), false), 20_000);
    const res = await answer;
    assert.ok(res !== null, "the connection was cut without an answer");
    assert.equal(res.status, 504, res.headers);
    assert.match(res.body, /outcome is unknown/);
    const header = (name: string) =>
      new RegExp(`^${name}: (.*)$`, "im").exec(res.headers)?.[1] ?? null;
    assert.equal(header("access-control-allow-origin"), ORIGIN, res.headers);
    assert.equal(header("vary"), normal.headers.get("vary"), res.headers);
    assert.equal(
      header("access-control-allow-methods"),
      normal.headers.get("access-control-allow-methods"),
    );
  } finally {
    try {
      conn.close();
    } catch { /* closed by the server */ }
    await (stopping ?? rt.stop());
  }
});
