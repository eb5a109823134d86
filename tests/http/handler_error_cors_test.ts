/**
 * A request whose handler fails (throws or rejects) is answered 500 INTERNAL by serve's onError.
 * That 500 carried no CORS headers, so a browser page granted by the API's CORS policy could not
 * read it (it saw a network error instead of "internal error"). It now carries the headers serve's
 * standInHeaders gives for its request, as the 504 made at shutdown does.
 */
import assert from "node:assert/strict";
import { serveHttp } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { connect, readResponse, send } from "./_raw_socket.ts";

for (const how of ["rejects", "throws"] as const) {
  Deno.test(`the 500 answered when the handler ${how} carries the headers serve's standInHeaders gives for its request (CORS)`, async () => {
    const asked: (string | null)[] = [];
    // What the HTTP layer's CORS policy gives a granted origin (HttpApi.standInHeaders). Spread
    // in: run against the code before the option existed, the test fails at its assertion.
    const standIn = {
      standInHeaders: (req: Request) => {
        asked.push(req.headers.get("origin"));
        return new Headers({
          "access-control-allow-origin": req.headers.get("origin") ?? "",
          "vary": "Origin",
        });
      },
    };
    const server = await serveHttp({
      hostname: "127.0.0.1",
      port: 0,
      tlsCertPath: null,
      tlsKeyPath: null,
      authEnabled: false,
      allowInsecureBind: false,
      handler: how === "rejects" ? () => Promise.reject(new Error("handler failed")) : () => {
        throw new Error("handler failed");
      },
      ...standIn,
      log: testLogger(),
    });
    const conn = await connect(server.port);
    try {
      await send(
        conn,
        "GET /v0/devices HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://page.example\r\n\r\n",
      );
      const res = await readResponse(conn, 10_000);
      assert.ok(res !== null, "the connection was cut without an answer");
      assert.equal(res.status, 500, res.headers);
      assert.match(res.headers, /^access-control-allow-origin: http:\/\/page\.example$/im);
      assert.match(res.headers, /^vary: Origin$/im);
      assert.match(res.headers, /^content-type: application\/json$/im);
      assert.equal(JSON.parse(res.body).status.code, "INTERNAL");
      assert.deepEqual(asked, ["http://page.example"]);
    } finally {
      try {
        conn.close();
      } catch { /* closed by the server */ }
      await server.shutdown();
    }
  });
}
