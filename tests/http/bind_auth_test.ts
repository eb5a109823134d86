/**
 * The bind/auth gate without a browser: who may connect and who a request acts as, over real
 * HTTP on loopback. serveHttp refuses a non-loopback bind without auth before binding, and binds
 * one with auth (or with http.allow_insecure_bind); the config check says the same at load; the
 * loopback rule they share (src/common/loopback.ts, isLoopbackHost) at its edges. A client that
 * is not loopback is refused without the token (auth_cors_test.ts injects such addresses; this
 * machine's other addresses are never used).
 */
import assert from "node:assert/strict";
import { isLoopbackHost, type RuntimeError } from "../../src/common/mod.ts";
import { loadConfig } from "../../src/config/mod.ts";
import { serveHttp } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

const TOKEN = "bind-gate-token-5c1e";

async function status(url: string, token?: string): Promise<number> {
  const res = await fetch(url, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  await res.body?.cancel();
  return res.status;
}

Deno.test("serveHttp binds all addresses with auth on, and a client without the token gets 401", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authToken: TOKEN, authExemptLoopback: false } },
    api: { apiToken: TOKEN },
  });
  try {
    const server = await fx.serve({ hostname: "0.0.0.0" });
    const url = `http://127.0.0.1:${server.port}/v0/devices`;
    assert.equal(await status(url), 401);
    assert.equal(await status(url, `${TOKEN}x`), 401);
    assert.equal(await status(url, TOKEN), 200);
  } finally {
    await fx.close();
  }
});

Deno.test("serveHttp binds all addresses without auth only with http.allow_insecure_bind", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: false, allowInsecureBind: true } },
  });
  try {
    const server = await fx.serve({ hostname: "0.0.0.0" });
    assert.equal(await status(`http://127.0.0.1:${server.port}/v0/devices`), 200);
  } finally {
    await fx.close();
  }
});

Deno.test("serveHttp binds a loopback address without auth and without allow_insecure_bind", async () => {
  const fx = await startHttpFixture({ start: false, config: { http: { authEnabled: false } } });
  try {
    for (const hostname of ["127.0.0.1", "localhost"]) {
      const server = await fx.serve({ hostname });
      assert.equal(await status(`http://127.0.0.1:${server.port}/v0/devices`), 200, hostname);
    }
  } finally {
    await fx.close();
  }
});

Deno.test("serveHttp refuses every non-loopback bind without auth, naming the address, before binding", async () => {
  for (const hostname of ["0.0.0.0", "::", "192.0.2.7", "127.0.0.1.example", "::ffff:192.0.2.7"]) {
    await assert.rejects(
      serveHttp({
        hostname,
        port: 0,
        tlsCertPath: null,
        tlsKeyPath: null,
        authEnabled: false,
        allowInsecureBind: false,
        handler: () => Promise.resolve(new Response()),
        log: testLogger(),
      }),
      (err: RuntimeError) => {
        assert.equal(err.code, "FAILED_PRECONDITION", hostname);
        assert.equal(
          err.message,
          `http.bind: '${hostname}' is not a loopback address and http.auth_enabled is false; ` +
            "refusing to serve (set http.auth_enabled: true, or http.allow_insecure_bind: true)",
        );
        return true;
      },
    );
  }
});

Deno.test("isLoopbackHost (the bind gate's, the config check's and the client rule) at its edges", () => {
  for (
    const h of [
      "127.0.0.1",
      "127.12.34.56",
      "127.255.255.255",
      "127.0.0.0",
      " 127.0.0.1 ",
      "LOCALHOST",
      " Localhost ",
      "::1",
      "[::1]",
      "0:0:0:0:0:0:0:1",
      "::ffff:127.0.0.1",
      "[::ffff:127.1.2.3]",
    ]
  ) {
    assert.equal(isLoopbackHost(h), true, h);
  }
  for (
    const h of [
      "0.0.0.0",
      "127.0.0",
      "127.0.0.1.5",
      "1127.0.0.1",
      "127.0.0.1:80",
      "127.0.0.1x",
      "x127.0.0.1",
      "127.0.0.1234",
      "127.256.0.1",
      "127.0.256.1",
      "127.0.0.256",
      "128.0.0.1",
      "126.0.0.1",
      "::ffff:10.0.0.1",
      // The IPv4-mapped prefix only at the start; brackets around a whole address only.
      "12::ffff:7.0.0.1",
      "::ffff:[127.0.0.1]",
      "127.0.[0.1]",
      "[127.0.0].1",
      "[::]",
      "::",
      "localhost.example",
      "",
    ]
  ) {
    assert.equal(isLoopbackHost(h), false, h);
  }
});

function check(http: string): Array<{ severity: string; path: string; message: string }> {
  const r = loadConfig(`http:\n${http}\nproviders: [{id: p0, command: prov}]\n`, {
    path: "/etc/rig/runtime.yaml",
    mode: "check",
    env: {},
    fileExists: () => false,
    commandExists: () => true,
    cwd: "/",
  });
  return r.diagnostics.filter((d) => d.path.startsWith("http")).map((d) => ({
    severity: d.severity,
    path: d.path,
    message: d.message,
  }));
}

Deno.test("the config check refuses a non-loopback bind without auth unless allow_insecure_bind, and warns about plaintext tokens", () => {
  assert.deepEqual(check("  bind: 0.0.0.0").filter((d) => d.severity === "error"), [{
    severity: "error",
    path: "http.bind",
    message: '"0.0.0.0" is not a loopback address and auth_enabled is false: anyone on the ' +
      "network could operate the machine (enable auth, or set allow_insecure_bind: true)",
  }]);
  assert.deepEqual(check("  bind: 0.0.0.0\n  allow_insecure_bind: true"), []);
  assert.deepEqual(check("  bind: 127.0.0.1"), []);
  const withAuth = check(`  bind: 0.0.0.0\n  auth_enabled: true\n  auth_token: ${TOKEN}`);
  assert.deepEqual(withAuth.map((d) => [d.severity, d.path]), [["warning", "http.bind"]]);
  assert.match(withAuth[0]!.message, /TLS is off: the bearer token travels in plaintext/);
});
