/**
 * A stop is never asked again (docs/safety.md section 9): "the e-stop, FAULT, IDLE and a run's
 * close act whatever a reload did to the token they came with". A POST /v0/mode into FAULT or
 * IDLE, or a POST /v0/runs/{run_id}/close, admitted on its head, whose token a reload removes or
 * lowers while its body is still arriving, still acts once its body is in. Arming (MANUAL, AUTO)
 * is asked again as before (tests/http/roles_test.ts). Through the handler (in-process), the body
 * held until the tokens are replaced.
 */
import assert from "node:assert/strict";
import type { NamedToken } from "../../src/http/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { pendingBody } from "../helpers/pending_body.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";

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
