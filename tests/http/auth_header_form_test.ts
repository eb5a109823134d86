/**
 * A malformed Authorization header (sent twice, the scheme not written `Bearer`, more than one
 * space before the token) is refused 401 like a wrong token, and the answer says what is wrong
 * with the header's form (never whether a token is valid): a client whose e-stop is refused must
 * not be sent looking for a wrong token. Real sockets on loopback, the simulated provider as a
 * child process.
 */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { readResponse, send } from "./_raw_socket.ts";

const TOKEN = "form-test-token-0123456789";

async function estopWith(port: number, authLines: readonly string[]) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await send(
      conn,
      `POST /v0/estop HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n` +
        authLines.map((l) => `Authorization: ${l}\r\n`).join("") + "\r\n",
    );
    const res = await readResponse(conn);
    assert.ok(res !== null, "no answer");
    return { status: res.status, message: JSON.parse(res.body).status.message as string };
  } finally {
    conn.close();
  }
}

Deno.test("POST /v0/estop with a malformed Authorization header answers 401 naming what is wrong with it", async () => {
  const fx = await startHttpFixture({
    config: {
      pollingIntervalMs: 5000,
      http: { authEnabled: true, authToken: TOKEN, authExemptLoopback: false },
    },
    api: { apiToken: TOKEN },
  });
  const { port } = await fx.serve();
  try {
    const cases: Array<[string[], RegExp]> = [
      [[`Bearer ${TOKEN}`, `Bearer ${TOKEN}`], /Authorization header was sent more than once/],
      [[`bearer ${TOKEN}`], /scheme must be written 'Bearer'/],
      [[`Bearer  ${TOKEN}`], /exactly one space/],
      [[`Bearer\t${TOKEN}`], /exactly one space/],
      [[`Basic dXNlcjpwYXNz`], /not a bearer token/],
    ];
    for (const [lines, why] of cases) {
      const res = await estopWith(port, lines);
      assert.equal(res.status, 401, JSON.stringify(lines));
      assert.match(res.message, /^Missing or invalid bearer token: /);
      assert.match(res.message, why, JSON.stringify(lines));
      assert.ok(!res.message.includes(TOKEN), "the answer echoes the token");
    }
    // A wrong token in a well-formed header, or none: the message says no more than before.
    for (const lines of [["Bearer wrong-token"], []]) {
      const res = await estopWith(port, lines);
      assert.equal(res.status, 401);
      assert.equal(res.message, "Missing or invalid bearer token");
    }
    assert.equal(fx.runtime.estop.status().latched, false);
    const good = await estopWith(port, [`Bearer ${TOKEN}`]);
    assert.equal(good.status, 200, good.message);
    assert.equal(fx.runtime.estop.status().latched, true);
  } finally {
    await fx.close();
  }
});
