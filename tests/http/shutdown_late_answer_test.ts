/**
 * Shutdown while a request's answer is still being made past HTTP_SHUTDOWN_ANSWER_MS (a device
 * call to a provider whose timeout_ms is longer than 5 s): its connection was dropped, so the
 * client saw a cut connection and could not tell whether the call had been carried out. It now
 * gets an answer that says so: 504 DEADLINE_EXCEEDED, "outcome is unknown".
 */
import assert from "node:assert/strict";
import { HTTP_SHUTDOWN_ANSWER_MS, serveHttp } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { connect, readResponse, send } from "./_raw_socket.ts";

Deno.test("a request still being answered when the shutdown's answer bound ends gets a 504 that says its outcome is unknown, not a cut connection", async () => {
  // The bounds on a manual clock: when the 504 was made is read off it (standInHeaders is asked
  // as the 504 is made), not off the wall clock after a real 5 s wait.
  const clock = new ManualClock();
  let madeAt: number | null = null;
  let started = 0;
  let release: () => void = () => {};
  const never = new Promise<void>((r) => (release = r));
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    clock,
    standInHeaders: () => {
      madeAt ??= clock.monoMs();
      return new Headers();
    },
    // A device call its provider answers after the bound (or never).
    handler: async () => {
      started++;
      await never;
      return new Response('{"status":{"code":"OK","message":"ok"}}');
    },
    log: testLogger(),
  });
  const conn = await connect(server.port);
  try {
    await send(
      conn,
      "POST /v0/call HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 2\r\n\r\n{}",
    );
    await waitFor("the request is being answered", () => started === 1, 5000);
    const t0 = clock.monoMs();
    const stopped = server.shutdown();
    let read = false;
    const answer = readResponse(conn, 10_000).finally(() => (read = true));
    // The shutdown's bounds pass on the manual clock, one timer at a time.
    await waitFor("the late answer", () => read || (clock.fireNext(), false), 10_000);
    const res = await answer;
    assert.ok(res !== null, "the connection was cut without an answer");
    assert.ok(madeAt !== null, "the 504 was made by the shutdown (its headers were asked for)");
    assert.ok(
      madeAt - t0 >= HTTP_SHUTDOWN_ANSWER_MS,
      `the answer was awaited for the whole bound first (made ${madeAt - t0} ms in)`,
    );
    assert.equal(res.status, 504, res.headers);
    const body = JSON.parse(res.body);
    assert.equal(body.status.code, "DEADLINE_EXCEEDED");
    assert.match(body.status.message, /outcome is unknown/);
    await stopped;
  } finally {
    release();
    try {
      conn.close();
    } catch { /* closed by the server */ }
    await server.shutdown();
  }
});

Deno.test("the 504 made at shutdown in place of an answer carries the headers serve's standInHeaders gives for its request (CORS: a browser page can read it)", async () => {
  const clock = new ManualClock();
  let started = 0;
  let release: () => void = () => {};
  const never = new Promise<void>((r) => (release = r));
  const asked: (string | null)[] = [];
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    clock,
    handler: async () => {
      started++;
      await never;
      return new Response('{"status":{"code":"OK","message":"ok"}}');
    },
    // What the HTTP layer's CORS policy gives a granted origin (HttpApi.standInHeaders).
    standInHeaders: (req) => {
      asked.push(req.headers.get("origin"));
      return new Headers({
        "access-control-allow-origin": req.headers.get("origin") ?? "",
        "vary": "Origin",
      });
    },
    log: testLogger(),
  });
  const conn = await connect(server.port);
  try {
    await send(
      conn,
      "POST /v0/call HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://page.example\r\n" +
        "content-length: 2\r\n\r\n{}",
    );
    await waitFor("the request is being answered", () => started === 1, 5000);
    const stopped = server.shutdown();
    let read = false;
    const answer = readResponse(conn, 10_000).finally(() => (read = true));
    // The shutdown's bounds pass on the manual clock, one timer at a time.
    await waitFor("the late answer", () => read || (clock.fireNext(), false), 10_000);
    const res = await answer;
    assert.ok(res !== null, "the connection was cut without an answer");
    assert.equal(res.status, 504, res.headers);
    assert.match(res.headers, /^access-control-allow-origin: http:\/\/page\.example$/im);
    assert.match(res.headers, /^vary: Origin$/im);
    assert.match(res.headers, /^content-type: application\/json$/im);
    assert.deepEqual(asked, ["http://page.example"]);
    await stopped;
  } finally {
    release();
    try {
      conn.close();
    } catch { /* closed by the server */ }
    await server.shutdown();
  }
});
