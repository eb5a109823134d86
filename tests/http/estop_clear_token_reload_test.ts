/**
 * POST /v0/estop/clear whose token a reload removes or lowers after the request was admitted but
 * before the clear acts (docs/http-api.md, "Roles"): a clear releases the latch, it is no stop, so
 * it is asked again under the tokens in force: answered 401 or 403 as the first check would have,
 * the latch holds, audited as a refused estop_clear with refused_by auth or role. A reload that
 * keeps the token lets it release. Through the handler (in-process), with a body the handler
 * discards: the body's cancellation is held while HttpApi.setTokens runs (the turn in which the
 * tokens change).
 */
import assert from "node:assert/strict";
import type { NamedToken } from "../../src/http/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

const REMOTE = "192.0.2.41";
const DEFAULT_TOKEN = "default-token-1a7c3e9b5d20f4";
const SHIFT: NamedToken = { name: "shift", role: "operator", token: "operator-token-6e0b2d8f4a17" };
const BOSS: NamedToken = { name: "boss", role: "admin", token: "admin-token-9f3a5c1e7b02" };

interface Entry {
  action: string;
  outcome: string;
  refused_by: string | null;
  reason: string | null;
}

/** A request body whose cancellation resolves only when the test says so. */
function heldBody(): {
  body: ReadableStream<Uint8Array>;
  cancelled: () => boolean;
  release: () => void;
} {
  let cancelled = false;
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  const body = new ReadableStream<Uint8Array>({
    pull: () => {},
    cancel: () => {
      cancelled = true;
      return held;
    },
  }, { highWaterMark: 0 });
  return { body, cancelled: () => cancelled, release };
}

/**
 * Latches the e-stop, sends a clear as 'shift', and replaces the tokens by `tokens` while the
 * clear's (discarded) body is being cancelled: what the clear was answered, whether the latch
 * holds, and the refused estop_clear entries of the audit trail.
 */
async function clearThroughReload(tokens: readonly NamedToken[]) {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authToken: DEFAULT_TOKEN, authExemptLoopback: false } },
    api: { apiToken: DEFAULT_TOKEN, tokens: [SHIFT, BOSS] },
  });
  try {
    const auth = (t: NamedToken) => ({ authorization: `Bearer ${t.token}` });
    const stop = await fx.api.handle(
      new Request("http://localhost/v0/estop", { method: "POST", headers: auth(BOSS) }),
      { remoteAddr: REMOTE },
    );
    assert.equal(stop.status, 200, await stop.text());
    assert.equal(fx.services.estop.status().latched, true);
    const held = heldBody();
    const answer = fx.api.handle(
      new Request("http://localhost/v0/estop/clear", {
        method: "POST",
        headers: { ...auth(SHIFT), "content-type": "application/json" },
        body: held.body,
      }),
      { remoteAddr: REMOTE },
    );
    // Admitted as operator 'shift' (its head passed every check): its body is being discarded.
    await waitFor("the clear discarding its body", held.cancelled);
    await fx.api.setTokens(fx.services.config.http, DEFAULT_TOKEN, tokens);
    held.release();
    const res = await answer;
    const text = await res.text();
    const audit = await fx.api.handle(
      new Request("http://localhost/v0/audit", { headers: auth(BOSS) }),
      { remoteAddr: REMOTE },
    );
    assert.equal(audit.status, 200);
    const entries: Entry[] = (await audit.json()).entries.filter((e: Entry) =>
      e.action === "estop_clear"
    );
    return {
      status: res.status,
      challenge: res.headers.get("www-authenticate"),
      text,
      latched: fx.services.estop.status().latched,
      refused: entries.filter((e) => e.outcome === "refused").map((e) => [e.refused_by, e.reason]),
      accepted: entries.filter((e) => e.outcome === "accepted").length,
    };
  } finally {
    await fx.close();
  }
}

const WHY = "the API tokens were replaced (configuration reload) while it waited to act " +
  "(its turn, or its hooks)";

Deno.test("POST /v0/estop/clear whose token a reload removes before it acts is answered 401, the latch holds, audited as refused by auth", async () => {
  const r = await clearThroughReload([BOSS]);
  assert.equal(r.status, 401, r.text);
  assert.equal(r.challenge, "Bearer");
  assert.equal(r.latched, true, "the latch holds");
  assert.deepEqual(r.refused, [[
    "auth",
    `UNAUTHENTICATED: token 'shift' no longer admits: ${WHY}`,
  ]]);
  assert.equal(r.accepted, 0);
});

Deno.test("POST /v0/estop/clear whose token a reload lowers to viewer before it acts is answered 403, the latch holds, audited as refused by role", async () => {
  const r = await clearThroughReload([{ ...SHIFT, role: "viewer" }, BOSS]);
  assert.equal(r.status, 403, r.text);
  assert.equal(
    JSON.parse(r.text).status.message,
    "POST /v0/estop/clear: role operator required (token 'shift' has role viewer)",
  );
  assert.equal(r.latched, true, "the latch holds");
  assert.deepEqual(r.refused, [[
    "role",
    `PERMISSION_DENIED: role operator required (shift has role viewer): ${WHY}`,
  ]]);
  assert.equal(r.accepted, 0);
});

Deno.test("POST /v0/estop/clear through a reload that keeps its token releases the latch", async () => {
  const night: NamedToken = { name: "night", role: "viewer", token: "night-token-2c8e4a0f6b13" };
  const r = await clearThroughReload([SHIFT, BOSS, night]);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.latched, false);
  assert.deepEqual(r.refused, []);
  assert.equal(r.accepted, 1);
});
