/**
 * A stop is never asked again (docs/safety.md section 9): "the e-stop, FAULT, IDLE and a run's
 * close act whatever a reload did to the token they came with". A POST /v0/mode into FAULT or
 * IDLE, or a POST /v0/runs/{run_id}/close, admitted on its head, whose token a reload removes or
 * lowers while its body is still arriving, still acts once its body is in. Arming (MANUAL, AUTO)
 * is asked again as before (tests/http/roles_test.ts). Through the handler (in-process), the body
 * held until the tokens are replaced. A body that cannot be read as a stop (malformed JSON, not as
 * the schema says) is no stop: asked again too, answered 401 (never 400: a client without a valid
 * token learns nothing from its body), over a real socket on loopback.
 */
import assert from "node:assert/strict";
import { BODY_READ_TIMEOUT_MS, type NamedToken } from "../../src/http/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { pendingBody } from "../helpers/pending_body.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import { readResponse, send as sendRaw } from "./_raw_socket.ts";

const REMOTE = "192.0.2.42";
const DEFAULT_TOKEN = "default-token-4b8e1d0c7a3f52";
const SHIFT: NamedToken = { name: "shift", role: "operator", token: "operator-token-2c9f7a1e0b64" };
const BOSS: NamedToken = { name: "boss", role: "admin", token: "admin-token-7d3b5e9a1c08" };

/** The tokens after the reload: 'shift' removed, or lowered to viewer. */
const REMOVED: readonly NamedToken[] = [BOSS];
const LOWERED: readonly NamedToken[] = [{ ...SHIFT, role: "viewer" }, BOSS];

async function fixture(): Promise<HttpFixture> {
  return await startHttpFixture({
    config: {
      http: { authEnabled: true, authToken: DEFAULT_TOKEN, authExemptLoopback: false },
    },
    api: { apiToken: DEFAULT_TOKEN, tokens: [SHIFT, BOSS] },
  });
}

async function send(fx: HttpFixture, path: string, token: NamedToken, body: unknown) {
  const res = await fx.api.handle(
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
    { remoteAddr: REMOTE },
  );
  const text = await res.text();
  return { status: res.status, text, json: JSON.parse(text) };
}

/**
 * POSTs `body` to `path` as 'shift', replacing the tokens by `tokens` while the body is still
 * arriving; the answer.
 */
async function throughReload(
  fx: HttpFixture,
  path: string,
  body: unknown,
  tokens: readonly NamedToken[],
): Promise<{ status: number; text: string }> {
  const pending = pendingBody();
  const answer = fx.api.handle(
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${SHIFT.token}`, "content-type": "application/json" },
      body: pending.body,
    }),
    { remoteAddr: REMOTE },
  );
  // Admitted as operator 'shift' on its head: its body is being read.
  await waitFor("the POST reading its body", pending.reading);
  await fx.api.setTokens(fx.services.config.http, DEFAULT_TOKEN, tokens);
  pending.send(JSON.stringify(body));
  const res = await answer;
  return { status: res.status, text: await res.text() };
}

for (const [what, tokens] of [["removes", REMOVED], ["lowers", LOWERED]] as const) {
  Deno.test(`POST /v0/mode FAULT whose token a reload ${what} while its body arrives still enters FAULT`, async () => {
    const fx = await fixture();
    try {
      assert.equal(fx.services.modes.current(), "IDLE");
      const res = await throughReload(fx, "/v0/mode", { mode: "FAULT" }, tokens);
      assert.equal(res.status, 200, res.text);
      assert.equal(fx.services.modes.current(), "FAULT");
    } finally {
      await fx.close();
    }
  });

  Deno.test(`POST /v0/mode IDLE whose token a reload ${what} while its body arrives still enters IDLE`, async () => {
    const fx = await fixture();
    try {
      const manual = await send(fx, "/v0/mode", BOSS, { mode: "MANUAL" });
      assert.equal(manual.status, 200, manual.text);
      const res = await throughReload(fx, "/v0/mode", { mode: "IDLE" }, tokens);
      assert.equal(res.status, 200, res.text);
      assert.equal(fx.services.modes.current(), "IDLE");
    } finally {
      await fx.close();
    }
  });

  Deno.test(`POST /v0/runs/{run_id}/close whose token a reload ${what} while its body arrives still closes the run`, async () => {
    const fx = await fixture();
    try {
      const open = await send(fx, "/v0/runs", BOSS, {});
      assert.equal(open.status, 200, open.text);
      const runId: string = open.json.run.run_id;
      const res = await throughReload(fx, `/v0/runs/${runId}/close`, {}, tokens);
      assert.equal(res.status, 200, res.text);
      const got = await fx.request("GET", `/v0/runs/${runId}`, {
        headers: { authorization: `Bearer ${BOSS.token}` },
      });
      assert.equal(got.json.run.state, "closed", got.text);
    } finally {
      await fx.close();
    }
  });
}

Deno.test("POST /v0/mode MANUAL whose token a reload removes while its body arrives is still refused 401", async () => {
  const fx = await fixture();
  try {
    const res = await throughReload(fx, "/v0/mode", { mode: "MANUAL" }, REMOVED);
    assert.equal(res.status, 401, res.text);
    assert.equal(fx.services.modes.current(), "IDLE");
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/mode with a malformed body, over a socket, is 401 (not 400) when a reload removed its token while the body arrived, or when it has none", async () => {
  // The API's clock is manual: its body-read timer being set says the request passed every check
  // made on its head (authentication included) and its body is being read.
  const clock = new ManualClock();
  const fx = await startHttpFixture({
    config: {
      http: { authEnabled: true, authToken: DEFAULT_TOKEN, authExemptLoopback: false },
    },
    api: { apiToken: DEFAULT_TOKEN, tokens: [SHIFT, BOSS] },
    apiClock: clock,
  });
  const { port } = await fx.serve();
  /** POSTs `body` to /v0/mode; with `token`, the tokens are replaced by REMOVED once its head is admitted. */
  const post = async (body: string, token: NamedToken | null) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      await sendRaw(
        conn,
        `POST /v0/mode HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n` +
          (token === null ? "" : `Authorization: Bearer ${token.token}\r\n`) +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n` +
          (token === null ? body : body.slice(0, 3)),
      );
      if (token !== null) {
        await waitFor(
          "the POST reading its body",
          () => clock.pendingDelays().includes(BODY_READ_TIMEOUT_MS),
        );
        await fx.api.setTokens(fx.services.config.http, DEFAULT_TOKEN, REMOVED);
        await sendRaw(conn, body.slice(3));
      }
      const res = await readResponse(conn);
      assert.ok(res !== null, "no answer");
      return res;
    } finally {
      conn.close();
    }
  };
  try {
    for (const body of ['{"mode": FAULT}', '{"mode":"FAULT"', '{"mode":"FAULTY"}']) {
      await fx.api.setTokens(fx.services.config.http, DEFAULT_TOKEN, [SHIFT, BOSS]);
      for (const token of [SHIFT, null]) {
        const res = await post(body, token);
        const what = `${body} ${token === null ? "without a token" : "token removed"}`;
        assert.equal(res.status, 401, `${what}: ${res.body}`);
        assert.match(res.headers, /^www-authenticate: Bearer$/im, what);
        assert.equal(JSON.parse(res.body).status.code, "UNAUTHENTICATED", what);
      }
    }
    assert.equal(fx.services.modes.current(), "IDLE");
    // Control: a token the tokens in force still admit is told what is wrong with its body.
    const res = await post('{"mode": FAULT}', BOSS);
    assert.equal(res.status, 400, res.body);
    assert.match(JSON.parse(res.body).status.message, /^Invalid JSON: /);
  } finally {
    await fx.close();
  }
});
