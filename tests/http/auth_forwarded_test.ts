/**
 * The loopback exemption (http.auth_exempt_loopback) is for clients on this host: a request that a
 * reverse proxy on this host relayed for another client (it says so in Forwarded, X-Forwarded-For,
 * X-Real-IP or Via) arrives from a loopback address too, and must still present the token.
 */
import assert from "node:assert/strict";
import { BearerAuth } from "../../src/http/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { testConfig } from "../helpers/sim_config.ts";

const TOKEN = "s3cret-token-0123456789";

/** What common reverse proxies add to a request they relay (nginx recipes, Caddy, Apache, RFC). */
const RELAYED: ReadonlyArray<Record<string, string>> = [
  { "x-forwarded-for": "203.0.113.7" },
  { "x-real-ip": "203.0.113.7" },
  { forwarded: "for=203.0.113.7;proto=https" },
  { via: "1.1 proxy.lab" },
];

Deno.test("HttpApi asks a request a proxy on this host relayed for another client for the token, though it comes from loopback", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authToken: TOKEN } },
    api: { apiToken: TOKEN },
  });
  try {
    // The operator on this host is still exempt.
    assert.equal((await fx.request("GET", "/v0/devices", { remoteAddr: "127.0.0.1" })).status, 200);
    for (const headers of RELAYED) {
      const read = await fx.request("GET", "/v0/devices", { remoteAddr: "127.0.0.1", headers });
      assert.equal(read.status, 401, JSON.stringify(headers));
      assert.equal(read.headers.get("www-authenticate"), "Bearer");
      const arm = await fx.request("POST", "/v0/mode", {
        remoteAddr: "::1",
        headers,
        body: { mode: "MANUAL" },
      });
      assert.equal(arm.status, 401, JSON.stringify(headers));
      const withToken = await fx.request("GET", "/v0/devices", {
        remoteAddr: "127.0.0.1",
        headers: { ...headers, authorization: `Bearer ${TOKEN}` },
      });
      assert.equal(withToken.status, 200, JSON.stringify(headers));
    }
    assert.equal((await fx.request("GET", "/v0/mode")).json.mode, "IDLE");
  } finally {
    await fx.close();
  }
});

Deno.test("BearerAuth.identify gives a relayed request from loopback no 'local' principal, and auth off still admits it", async () => {
  const base = testConfig({}).http;
  const relayed = new Request("http://localhost/v0/devices", {
    headers: { "x-forwarded-for": "203.0.113.7" },
  });
  const on = new BearerAuth({ ...base, authEnabled: true, authExemptLoopback: true }, TOKEN);
  assert.equal(await on.identify(relayed, "127.0.0.1"), null);
  const off = new BearerAuth({ ...base, authEnabled: false }, TOKEN);
  assert.equal((await off.identify(relayed, "127.0.0.1"))?.name, "anonymous");
});
