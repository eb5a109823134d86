/**
 * Bearer auth (loopback exempt / not exempt / remote clients), CORS and preflight, and the
 * concurrency bound, through the request handler with injected remote addresses.
 */
import assert from "node:assert/strict";
import {
  BearerAuth,
  HttpApi,
  MAX_LOGGED_UNGRANTED_ORIGINS,
  ungrantedOriginMessage,
} from "../../src/http/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { type FixtureResponse, startHttpFixture } from "../helpers/runtime_fixture.ts";
import { testConfig } from "../helpers/sim_config.ts";

const TOKEN = "s3cret-token";
const AUTH = { authEnabled: true, authToken: TOKEN };

function assert401(r: FixtureResponse) {
  assert.equal(r.status, 401, r.text);
  assert.equal(r.headers.get("www-authenticate"), "Bearer");
  assert.equal(r.json.error, "unauthorized");
  assert.equal(r.json.status.code, "UNAUTHENTICATED");
  assert.match(r.json.status.message, /bearer token/);
  assert.equal(r.text.includes(TOKEN), false);
}

Deno.test("BearerAuth exempts loopback clients and requires the token from others", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: AUTH },
    api: { apiToken: TOKEN },
  });
  try {
    for (const loop of ["127.0.0.1", "127.9.8.7", "::1", "::ffff:127.0.0.1"]) {
      assert.equal(
        (await fx.request("GET", "/v0/runtime/status", { remoteAddr: loop })).status,
        200,
        loop,
      );
    }
    const remote = "192.0.2.10";
    assert401(await fx.request("GET", "/v0/runtime/status", { remoteAddr: remote }));
    assert401(
      await fx.request("GET", "/v0/runtime/status", {
        remoteAddr: remote,
        headers: { authorization: "Bearer wrong" },
      }),
    );
    assert401(
      await fx.request("GET", "/v0/runtime/status", {
        remoteAddr: remote,
        headers: { authorization: `bearer ${TOKEN}` }, // prefix is case-sensitive
      }),
    );
    assert401(
      await fx.request("GET", "/v0/runtime/status", {
        remoteAddr: remote,
        headers: { authorization: `Bearer  ${TOKEN}` }, // exactly one space
      }),
    );
    assert401(
      await fx.request("GET", "/v0/runtime/status", {
        remoteAddr: remote,
        headers: { authorization: `Bearer ${TOKEN}x` },
      }),
    );
    const ok = await fx.request("GET", "/v0/runtime/status", {
      remoteAddr: remote,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(ok.status, 200);
    // Auth runs before routing: unknown routes and the event stream are covered too.
    assert401(await fx.request("GET", "/v0/nope", { remoteAddr: remote }));
    assert401(await fx.request("GET", "/v0/events", { remoteAddr: remote }));
    assert401(await fx.request("POST", "/v0/call", { remoteAddr: remote, body: "{" }));
    assert.equal(fx.api.sseClientCount, 0);
  } finally {
    await fx.close();
  }
});

Deno.test("BearerAuth does not exempt loopback when auth_exempt_loopback is false", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { ...AUTH, authExemptLoopback: false } },
    api: { apiToken: TOKEN },
  });
  try {
    assert401(await fx.request("GET", "/v0/devices", { remoteAddr: "127.0.0.1" }));
    const ok = await fx.request("GET", "/v0/devices", {
      remoteAddr: "127.0.0.1",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(ok.status, 200);
  } finally {
    await fx.close();
  }
});

Deno.test("BearerAuth lets every client through when auth_enabled is false", async () => {
  const fx = await startHttpFixture({ start: false, api: { apiToken: TOKEN } });
  try {
    for (const remoteAddr of ["127.0.0.1", "192.0.2.10"]) {
      const r = await fx.request("GET", "/v0/devices", { remoteAddr });
      assert.equal(r.status, 200, remoteAddr);
    }
  } finally {
    await fx.close();
  }
});

Deno.test("BearerAuth never authorizes with an empty configured token", async () => {
  const fx = await startHttpFixture({ start: false, config: { http: { authEnabled: true } } });
  try {
    for (const authorization of ["Bearer ", "Bearer", "Bearer anything"]) {
      assert401(
        await fx.request("GET", "/v0/devices", {
          remoteAddr: "10.0.0.1",
          headers: { authorization },
        }),
      );
    }
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi adds CORS headers for a matching origin on every response, errors included", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: {
      http: {
        ...AUTH,
        corsAllowedOrigins: ["http://localhost:*", "https://ops.example.com"],
        corsAllowCredentials: true,
      },
    },
    api: { apiToken: TOKEN },
  });
  try {
    const origin = "http://localhost:5173";
    const ok = await fx.request("GET", "/v0/devices", { headers: { origin } });
    assert.equal(ok.headers.get("access-control-allow-origin"), origin);
    assert.equal(ok.headers.get("vary"), "Origin");
    assert.equal(ok.headers.get("access-control-allow-methods"), "GET, POST, OPTIONS");
    assert.equal(
      ok.headers.get("access-control-allow-headers"),
      "Content-Type, Authorization, Last-Event-ID",
    );
    assert.equal(ok.headers.get("access-control-allow-credentials"), "true");
    const nf = await fx.request("GET", "/v0/nope", { headers: { origin } });
    assert.equal(nf.status, 404);
    assert.equal(nf.headers.get("access-control-allow-origin"), origin);
    const denied = await fx.request("GET", "/v0/devices", {
      headers: { origin },
      remoteAddr: "10.1.1.1",
    });
    assert401(denied);
    assert.equal(denied.headers.get("access-control-allow-origin"), origin);
    // A non-matching origin and a request without Origin get no CORS headers, but Vary: Origin
    // all the same: a shared cache must not hand their answer to a granted origin, or a granted
    // origin's answer to them. (Before: no Vary on these answers.)
    const other = await fx.request("GET", "/v0/devices", {
      headers: { origin: "http://evil.test" },
    });
    const plain = await fx.request("GET", "/v0/devices");
    for (const r of [other, plain]) {
      for (const h of ["allow-origin", "allow-methods", "allow-headers", "allow-credentials"]) {
        assert.equal(r.headers.get(`access-control-${h}`), null, h);
      }
      assert.equal(r.headers.get("vary"), "Origin");
    }
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi answers * for the wildcard origin entry without Vary", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const r = await fx.request("GET", "/v0/devices", { headers: { origin: "http://anything" } });
    assert.equal(r.headers.get("access-control-allow-origin"), "*");
    assert.equal(r.headers.get("vary"), null);
    assert.equal(r.headers.get("access-control-allow-credentials"), null);
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi answers a CORS preflight with 204 before auth", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { ...AUTH, corsAllowedOrigins: ["http://localhost:*"] } },
    api: { apiToken: TOKEN },
  });
  try {
    const pre = await fx.request("OPTIONS", "/v0/call", {
      remoteAddr: "10.1.1.1",
      headers: {
        origin: "http://localhost:3000",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.text, "");
    assert.equal(pre.headers.get("access-control-allow-origin"), "http://localhost:3000");
    assert.equal(
      pre.headers.get("access-control-allow-headers"),
      "Content-Type, Authorization, Last-Event-ID",
    );
    assert.equal(pre.headers.get("access-control-allow-methods"), "GET, POST, OPTIONS");
    // Allow-Methods/Headers are always set on a preflight, even for an origin that does not match;
    // that one is refused, naming the key that would grant it.
    const foreign = await fx.request("OPTIONS", "/v0/state", {
      headers: { origin: "http://evil.test" },
    });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.json.status.code, "PERMISSION_DENIED");
    assert.match(foreign.json.status.message, /'http:\/\/evil\.test' .*http\.cors_allowed_origins/);
    assert.equal(foreign.headers.get("access-control-allow-origin"), null);
    assert.equal(foreign.headers.get("access-control-allow-methods"), "GET, POST, OPTIONS");
    // A preflight without Origin (not from a browser) is still 204.
    assert.equal((await fx.request("OPTIONS", "/v0/state")).status, 204);
    // OPTIONS outside /v0 is just an unknown route.
    assert.equal((await fx.request("OPTIONS", "/other")).status, 404);
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi without a CORS grant (the default) sends no CORS headers, answers a preflight 403 naming http.cors_allowed_origins, and logs each origin once", async () => {
  const fx = await startHttpFixture({ start: false, config: { http: { corsAllowedOrigins: [] } } });
  const logged: string[] = [];
  const log = capturingLogger({ now: () => 0, lines: logged }).log;
  const api = new HttpApi({ ...fx.services, host: { ...fx.services.host, log } }, {
    apiToken: "",
  });
  const send = async (method: string, headers: Record<string, string>, path = "/v0/devices") => {
    const r = await api.handle(new Request(`http://localhost:8080${path}`, { method, headers }), {
      remoteAddr: "127.0.0.1",
    });
    return { status: r.status, headers: r.headers, text: await r.text() };
  };
  const warned = () => logged.filter((l) => l.includes("CORS"));
  try {
    const workbench = "http://localhost:3000";
    const read = await send("GET", { origin: workbench });
    assert.equal(read.status, 200);
    assert.equal(read.headers.get("access-control-allow-origin"), null, "the page cannot read it");
    const pre = await send("OPTIONS", {
      origin: workbench,
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type",
    }, "/v0/mode");
    assert.equal(pre.status, 403);
    assert.equal(pre.headers.get("access-control-allow-origin"), null);
    const message = JSON.parse(pre.text).status.message;
    assert.equal(message, ungrantedOriginMessage(workbench));
    assert.match(
      message,
      /^Origin 'http:\/\/localhost:3000' has no CORS grant.*http\.cors_allowed_origins/,
    );
    // One line for that origin, however many requests; the API's own origin (the console) none.
    await send("GET", { origin: workbench });
    await send("GET", { origin: "http://localhost:8080" });
    assert.equal(warned().length, 1, logged.join("\n"));
    assert.match(warned()[0]!, /^WARN .*\[http\] .*'http:\/\/localhost:3000' has no CORS grant/);
    // Bounded: MAX_LOGGED_UNGRANTED_ORIGINS origins, then one line saying the rest are not.
    for (let i = 1; i <= MAX_LOGGED_UNGRANTED_ORIGINS + 5; i++) {
      await send("GET", { origin: `http://page${i}.example` });
    }
    const lines = warned();
    assert.equal(lines.length, MAX_LOGGED_UNGRANTED_ORIGINS + 1, lines.join("\n"));
    assert.match(lines[MAX_LOGGED_UNGRANTED_ORIGINS - 1]!, /page31\.example/);
    assert.match(lines[MAX_LOGGED_UNGRANTED_ORIGINS]!, /more origins without a CORS grant/);
    // A control character in an Origin (a raw client could send one) cannot break a log line.
    assert.ok(!ungrantedOriginMessage("http://a.example\nWARN forged").includes("\n"));
  } finally {
    api.close();
    await fx.close();
  }
});

Deno.test("HttpApi answers 503 at once past http.thread_pool_size concurrent requests", async () => {
  const fx = await startHttpFixture({ start: false, config: { http: { threadPoolSize: 1 } } });
  try {
    // The first request holds its slot while its body trickles in.
    let body!: ReadableStreamDefaultController<Uint8Array>;
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        body = c;
        c.enqueue(new TextEncoder().encode('{"mode":'));
      },
    });
    const first = fx.api.handle(
      // Typed JSON: a body no length declares is read ahead when it is not (the 415 check).
      new Request("http://localhost/v0/mode", {
        method: "POST",
        body: stream,
        headers: { "content-type": "application/json" },
      }),
      { remoteAddr: "127.0.0.1" },
    );
    assert.equal(fx.api.inFlight, 1);
    const busy = await fx.request("GET", "/v0/devices");
    assert.equal(busy.status, 503);
    assert.equal(busy.json.status.code, "UNAVAILABLE");
    assert.match(busy.json.status.message, /http\.thread_pool_size/);
    body.enqueue(new TextEncoder().encode('"MANUAL"}'));
    body.close();
    const res = await first;
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.equal(fx.api.inFlight, 0);
    assert.equal((await fx.request("GET", "/v0/devices")).status, 200);
  } finally {
    await fx.close();
  }
});

Deno.test("BearerAuth.identify names who a request acts as: default, local, anonymous (all admin) or nobody", async () => {
  const base = testConfig({}).http;
  const req = (authorization?: string) =>
    new Request("http://x/v0/devices", {
      headers: authorization === undefined ? {} : { authorization },
    });
  const on = new BearerAuth({ ...base, authEnabled: true, authExemptLoopback: true }, TOKEN);
  assert.deepStrictEqual(await on.identify(req(`Bearer ${TOKEN}`), "192.0.2.1"), {
    name: "default",
    address: "192.0.2.1",
    role: "admin",
  });
  // A loopback client that presents the token acts under the token's name, not as "local".
  assert.deepStrictEqual(await on.identify(req(`Bearer ${TOKEN}`), "127.0.0.1"), {
    name: "default",
    address: "127.0.0.1",
    role: "admin",
  });
  assert.deepStrictEqual(await on.identify(req("Bearer wrong"), "::1"), {
    name: "local",
    address: "::1",
    role: "admin",
  });
  assert.strictEqual(await on.identify(req("Bearer wrong"), "192.0.2.1"), null);
  const off = new BearerAuth({ ...base, authEnabled: false }, TOKEN);
  assert.deepStrictEqual(await off.identify(req(), "192.0.2.1"), {
    name: "anonymous",
    address: "192.0.2.1",
    role: "admin",
  });
});

Deno.test("HttpApi answers the CORS preflight of GET /metrics, so a granted page can scrape it with the token", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { ...AUTH, corsAllowedOrigins: ["http://localhost:*"] } },
    api: { apiToken: TOKEN },
  });
  try {
    const origin = "http://localhost:3000";
    // What a browser sends before a GET /metrics carrying Authorization.
    const pre = await fx.request("OPTIONS", "/metrics", {
      remoteAddr: "10.1.1.1",
      headers: {
        origin,
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });
    assert.equal(pre.status, 204, pre.text);
    assert.equal(pre.headers.get("access-control-allow-origin"), origin);
    assert.match(pre.headers.get("access-control-allow-headers") ?? "", /Authorization/);
    const scrape = await fx.request("GET", "/metrics", {
      remoteAddr: "10.1.1.1",
      headers: { origin, authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(scrape.status, 200);
    assert.equal(scrape.headers.get("access-control-allow-origin"), origin);
    // An origin without a grant is refused as under /v0.
    const foreign = await fx.request("OPTIONS", "/metrics", {
      headers: { origin: "http://evil.test", "access-control-request-method": "GET" },
    });
    assert.equal(foreign.status, 403);
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi with http.metrics_enabled false leaves OPTIONS /metrics an unknown route", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { corsAllowedOrigins: ["http://localhost:*"], metricsEnabled: false } },
  });
  try {
    const pre = await fx.request("OPTIONS", "/metrics", {
      headers: { origin: "http://localhost:3000", "access-control-request-method": "GET" },
    });
    assert.equal(pre.status, 404);
  } finally {
    await fx.close();
  }
});
