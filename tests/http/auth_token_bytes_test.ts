/**
 * A presented bearer token that differs from a configured one in any single byte is refused:
 * every byte position of the token changed in turn, plus one byte left out or added at each
 * position, for the single token and for a named one, through the request handler from a
 * non-loopback client (401) and at BearerAuth itself (no principal, no token presented).
 */
import assert from "node:assert/strict";
import { BearerAuth } from "../../src/http/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { testConfig } from "../helpers/sim_config.ts";

const TOKEN = "Tk-0123456789abcdefghijklmnopqrstuvwxyz";
const NAMED = {
  name: "panel",
  role: "viewer" as const,
  token: "pnl-ZYXWVUTSRQPONMLKJIHGFEDCBA-98765",
};
const REMOTE = "192.0.2.44";

/** The token with byte `i` changed (another printable ASCII byte), left out, or one added. */
function nearMisses(token: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    const other = String.fromCharCode(c === 0x7e ? 0x21 : c + 1);
    out.push(token.slice(0, i) + other + token.slice(i + 1));
    out.push(token.slice(0, i) + token.slice(i + 1));
    out.push(token.slice(0, i) + "~" + token.slice(i));
  }
  out.push(token + "~");
  return out;
}

Deno.test("nearMisses changes each byte position once, and drops or adds one at each", () => {
  const misses = nearMisses("ab");
  assert.deepEqual(misses, ["bb", "b", "~ab", "ac", "a", "a~b", "ab~"]);
});

Deno.test("BearerAuth refuses a token that differs from a configured one in any single byte", async () => {
  const http = { ...testConfig({}).http, authEnabled: true, authExemptLoopback: false };
  const auth = new BearerAuth(http, TOKEN, [NAMED]);
  const req = (token: string) =>
    new Request("http://x/v0/devices", { headers: { authorization: `Bearer ${token}` } });
  assert.equal((await auth.identify(req(TOKEN), REMOTE))?.name, "default");
  assert.equal((await auth.identify(req(NAMED.token), REMOTE))?.name, "panel");
  for (const token of [TOKEN, NAMED.token]) {
    for (const miss of nearMisses(token)) {
      assert.equal(await auth.identify(req(miss), REMOTE), null, miss);
      assert.equal(await auth.presentsToken(req(miss)), false, miss);
    }
  }
});

Deno.test("HttpApi answers 401 to a non-loopback client whose token differs in any single byte", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authToken: TOKEN } },
    api: { apiToken: TOKEN },
  });
  try {
    const get = (token: string) =>
      fx.request("GET", "/v0/runtime/status", {
        remoteAddr: REMOTE,
        headers: { authorization: `Bearer ${token}` },
      });
    assert.equal((await get(TOKEN)).status, 200);
    for (const miss of nearMisses(TOKEN)) {
      const r = await get(miss);
      assert.equal(r.status, 401, miss);
      assert.equal(r.headers.get("www-authenticate"), "Bearer");
    }
  } finally {
    await fx.close();
  }
});
