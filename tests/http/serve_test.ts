/** The Deno.serve wrapper (src/host/serve.ts): TLS, remote address, bind gate, errors. */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { loadConfig } from "../../src/config/mod.ts";
import {
  HTTP_KEEP_ALIVE_TIMEOUT_MS_DEFAULT,
  HTTP_MAX_CONNECTIONS_DEFAULT,
  HTTP_REQUEST_HEADER_TIMEOUT_MS_DEFAULT,
  type LineLogger,
  serveHttp,
  type ServeOptions,
} from "../../src/host/mod.ts";
import { runCli, withFiles } from "../helpers/cli.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { certWithDates, selfSignedCert } from "./_tls_certs.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

Deno.test("serveHttp serves HTTPS with the configured certificate and key", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-tls-" });
  const fx = await startHttpFixture({ start: false });
  try {
    const { cert, key } = await selfSignedCert(dir);
    const server = await fx.serve({ tlsCertPath: cert, tlsKeyPath: key });
    assert.equal(server.tls, true);
    const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(cert)] });
    try {
      const res = await apiFetch(`https://localhost:${server.port}/v0/runtime/status`, { client });
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.equal(body.status.code, "OK");
      assert.equal(body.version, "0.2.0");
      // Plain HTTP to the TLS port does not get an API answer.
      await assert.rejects(fetch(`http://127.0.0.1:${server.port}/v0/runtime/status`));
    } finally {
      client.close();
    }
  } finally {
    await fx.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("serveHttp passes the client address so loopback exemption applies over a socket", async () => {
  const token = "tok-123";
  const exempt = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authToken: token } },
    api: { apiToken: token },
  });
  const strict = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authToken: token, authExemptLoopback: false } },
    api: { apiToken: token },
  });
  try {
    const a = await exempt.serve();
    const r1 = await apiFetch(`http://127.0.0.1:${a.port}/v0/devices`);
    assert.equal(r1.status, 200);
    await r1.body?.cancel();
    const b = await strict.serve();
    const r2 = await apiFetch(`http://127.0.0.1:${b.port}/v0/devices`);
    assert.equal(r2.status, 401);
    assert.equal(r2.headers.get("www-authenticate"), "Bearer");
    await r2.body?.cancel();
    const r3 = await apiFetch(`http://127.0.0.1:${b.port}/v0/devices`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(r3.status, 200);
    await r3.body?.cancel();
  } finally {
    await exempt.close();
    await strict.close();
  }
});

Deno.test("serveHttp refuses a non-loopback bind without auth before binding", async () => {
  await assert.rejects(
    serveHttp({
      hostname: "0.0.0.0",
      port: 0,
      tlsCertPath: null,
      tlsKeyPath: null,
      authEnabled: false,
      allowInsecureBind: false,
      handler: () => Promise.resolve(new Response()),
      log: testLogger(),
    }),
    (err: RuntimeError) => {
      assert.equal(err.code, "FAILED_PRECONDITION");
      assert.match(err.message, /^http\.bind: '0\.0\.0\.0' is not a loopback address/);
      return true;
    },
  );
});

Deno.test("serveHttp reports an unreadable TLS file naming the key", async () => {
  await assert.rejects(
    serveHttp({
      hostname: "127.0.0.1",
      port: 0,
      tlsCertPath: "/nonexistent/cert.pem",
      tlsKeyPath: "/nonexistent/key.pem",
      authEnabled: false,
      allowInsecureBind: false,
      handler: () => Promise.resolve(new Response()),
      log: testLogger(),
    }),
    (err: RuntimeError) => {
      assert.equal(err.code, "FAILED_PRECONDITION");
      assert.match(err.message, /^http\.tls_cert_path: cannot read '\/nonexistent\/cert\.pem'/);
      return true;
    },
  );
});

Deno.test("serveHttp reports a port that is already taken", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const first = await fx.serve();
    await assert.rejects(
      serveHttp({
        hostname: "127.0.0.1",
        port: first.port,
        tlsCertPath: null,
        tlsKeyPath: null,
        authEnabled: false,
        allowInsecureBind: false,
        handler: fx.api.handle,
        log: testLogger(),
      }),
      (err: RuntimeError) => {
        assert.equal(err.code, "UNAVAILABLE");
        assert.match(err.message, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${first.port}`));
        return true;
      },
    );
  } finally {
    await fx.close();
  }
});

function tlsOptions(
  cert: string,
  key: string,
  log: LineLogger,
  extra: Partial<ServeOptions> = {},
): ServeOptions {
  return {
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: cert,
    tlsKeyPath: key,
    authEnabled: false,
    allowInsecureBind: false,
    handler: () => Promise.resolve(Response.json({ ok: true })),
    log,
    ...extra,
  };
}

/** Runs `fn` with a temp folder, removed afterwards. */
async function inTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "http-cert-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("serveHttp refuses to start with an expired certificate, naming its dates", async () => {
  await inTempDir(async (dir) => {
    const { cert, key } = await certWithDates(dir, "20200101000000Z", "20210101000000Z");
    const { log } = capturingLogger();
    await assert.rejects(serveHttp(tlsOptions(cert, key, log)), (err: RuntimeError) => {
      assert.equal(err.code, "FAILED_PRECONDITION");
      assert.match(err.message, /^http\.tls_cert_path: the certificate '.*cert\.pem' has expired/);
      assert.match(
        err.message,
        /valid from 2020-01-01T00:00:00\.000Z to 2021-01-01T00:00:00\.000Z/,
      );
      assert.match(err.message, /http\.tls_allow_expired_cert: true/);
      return true;
    });
  });
});

Deno.test("serveHttp refuses to start with a certificate that is not valid yet", async () => {
  await inTempDir(async (dir) => {
    const { cert, key } = await certWithDates(dir, "20990101000000Z", "21000101000000Z");
    const { log } = capturingLogger();
    await assert.rejects(serveHttp(tlsOptions(cert, key, log)), (err: RuntimeError) => {
      assert.equal(err.code, "FAILED_PRECONDITION");
      assert.match(err.message, /is not valid yet \(valid from 2099-01-01T00:00:00\.000Z/);
      return true;
    });
  });
});

Deno.test("serveHttp serves an expired certificate with a warning when http.tls_allow_expired_cert is true", async () => {
  await inTempDir(async (dir) => {
    const { cert, key } = await certWithDates(dir, "20200101000000Z", "20210101000000Z");
    const { log, lines } = capturingLogger();
    const server = await serveHttp(tlsOptions(cert, key, log, { tlsAllowExpiredCert: true }));
    try {
      assert.equal(server.tls, true);
      const warnings = lines.filter((l) => l.startsWith("WARN"));
      assert.equal(warnings.length, 1, lines.join("\n"));
      assert.match(warnings[0]!, /has expired .*serving it because http\.tls_allow_expired_cert/);
    } finally {
      await server.shutdown();
    }
  });
});

Deno.test("serveHttp warns at start-up about a certificate expiring within 14 days, and not about one expiring later", async () => {
  await inTempDir(async (dir) => {
    const soon = await selfSignedCert(dir, 3);
    const { log, lines } = capturingLogger();
    const server = await serveHttp(tlsOptions(soon.cert, soon.key, log));
    await server.shutdown();
    const warnings = lines.filter((l) => l.startsWith("WARN"));
    assert.equal(warnings.length, 1, lines.join("\n"));
    assert.match(warnings[0]!, /http\.tls_cert_path: the certificate '.*' expires in 2 day\(s\)/);
    // 15 days left: past the 14-day threshold, no warning.
    const later = await selfSignedCert(dir, 16);
    const quiet = capturingLogger();
    const server2 = await serveHttp(tlsOptions(later.cert, later.key, quiet.log));
    await server2.shutdown();
    assert.deepEqual(quiet.lines.filter((l) => l.startsWith("WARN")), []);
  });
});

Deno.test("serveHttp checks the served certificate's dates again while it runs: a runtime up for weeks warns before, and says when, it expires", async () => {
  await inTempDir(async (dir) => {
    const cert = await selfSignedCert(dir, 16);
    const { log, lines } = capturingLogger();
    let nowMs = Date.now();
    const server = await serveHttp(
      tlsOptions(cert.cert, cert.key, log, { now: () => nowMs, certificateRecheckMs: 20 }),
    );
    try {
      const problems = () => lines.filter((l) => /^(WARN|ERROR) .*tls_cert_path/.test(l));
      assert.deepEqual(problems(), [], "15 days left at start: nothing to say");
      nowMs += 10 * 86_400_000; // ten days on, no restart
      const soon = await waitFor("the expiry warning", () => problems()[0], 2000);
      assert.match(soon, /^WARN .*http\.tls_cert_path: the certificate '.*' expires in 5 day\(s\)/);
      nowMs += 6 * 86_400_000;
      const expired = await waitFor(
        "the expired line",
        () => problems().find((l) => l.startsWith("ERROR")),
        2000,
      );
      assert.match(
        expired,
        /^ERROR .*http\.tls_cert_path: the certificate '.*' has expired \(valid from .* to .*\); clients refuse it: renew it and restart the runtime/,
      );
    } finally {
      await server.shutdown();
    }
  });
});

Deno.test("serveHttp reports a TLS path that exists but is not a regular file as such", async () => {
  await inTempDir(async (dir) => {
    const { key } = await selfSignedCert(dir);
    await Deno.mkdir(`${dir}/cert.d`);
    await assert.rejects(
      serveHttp(tlsOptions(`${dir}/cert.d`, key, testLogger())),
      (err: RuntimeError) => {
        assert.equal(err.code, "FAILED_PRECONDITION");
        assert.match(
          err.message,
          /^http\.tls_cert_path: '.*cert\.d' is not a regular file \(a directory\)$/,
        );
        return true;
      },
    );
  });
});

Deno.test("--check-config reports a TLS path that is a directory as not a regular file, not as missing", async () => {
  await withFiles({ "certs/key.pem": "k" }, async (dir) => {
    await Deno.mkdir(`${dir}/certs/cert.pem`);
    await Deno.writeTextFile(
      `${dir}/runtime.yaml`,
      "providers: [{id: p0, command: deno}]\n" +
        "http: {tls_cert_path: certs/cert.pem, tls_key_path: certs/key.pem}\n",
    );
    const out = await runCli(["--check-config", `${dir}/runtime.yaml`]);
    assert.match(
      out.stdout,
      /http\.tls_cert_path: is not a regular file: .*certs\/cert\.pem is a directory/,
    );
    assert.doesNotMatch(out.stdout, /file not found/);
  });
});

Deno.test("the http connection keys default to serveHttp's documented defaults", () => {
  const { config } = loadConfig("providers: [{id: p0, command: prov}]\n", {
    path: "/cfg/runtime.yaml",
    mode: "check",
    env: {},
    fileExists: () => true,
    commandExists: () => true,
    cwd: "/",
  });
  assert.equal(config?.http.maxConnections, HTTP_MAX_CONNECTIONS_DEFAULT);
  assert.equal(config?.http.requestHeaderTimeoutMs, HTTP_REQUEST_HEADER_TIMEOUT_MS_DEFAULT);
  assert.equal(config?.http.keepAliveTimeoutMs, HTTP_KEEP_ALIVE_TIMEOUT_MS_DEFAULT);
  assert.equal(config?.http.tlsAllowExpiredCert, false);
});

/** Whether this machine has the IPv6 loopback (the relay's own side is always 127.0.0.1). */
function hasIpv6Loopback(): boolean {
  try {
    Deno.listen({ hostname: "::1", port: 0 }).close();
    return true;
  } catch {
    return false;
  }
}

Deno.test({
  name: "serveHttp over TLS gives the handler the client's address, not the relay's",
  ignore: !hasIpv6Loopback(),
  fn: async () => {
    await inTempDir(async (dir) => {
      const { cert, key } = await selfSignedCert(dir);
      const seen: string[] = [];
      const server = await serveHttp({
        ...tlsOptions(cert, key, testLogger()),
        hostname: "::1",
        handler: (_req, info) => {
          seen.push(info.remoteAddr);
          return Promise.resolve(Response.json({ ok: true }));
        },
      });
      const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(cert)] });
      try {
        const res = await fetch(`https://[::1]:${server.port}/v0/runtime/status`, { client });
        assert.equal(res.status, 200);
        await res.body?.cancel();
        // The TLS engine sees the relay (127.0.0.1); the loopback auth exemption must see "::1",
        // and a remote client's own address, never the relay's.
        assert.deepEqual(seen, ["::1"]);
      } finally {
        client.close();
        await server.shutdown();
      }
    });
  },
});

Deno.test("the http connection keys are range-checked with their position, and a bound not above thread_pool_size is warned about", () => {
  const load = (http: string) =>
    loadConfig(`providers: [{id: p0, command: prov}]\nhttp:\n${http}`, {
      path: "/cfg/runtime.yaml",
      mode: "check",
      env: {},
      fileExists: () => true,
      commandExists: () => true,
      cwd: "/",
    });
  const bad = load(
    "  max_connections: 7\n  request_header_timeout_ms: 999\n  keep_alive_timeout_ms: 600001\n" +
      "  tls_allow_expired_cert: yes please\n",
  );
  assert.equal(bad.config, null);
  const errors = bad.diagnostics.filter((d) => d.severity === "error");
  assert.deepEqual(
    errors.map((d) => [d.path, d.line, d.column]),
    [
      ["http.max_connections", 3, 3],
      ["http.request_header_timeout_ms", 4, 3],
      ["http.keep_alive_timeout_ms", 5, 3],
      ["http.tls_allow_expired_cert", 6, 3],
    ],
  );
  // The boundaries themselves are accepted (73: 32 for event streams at most, 41 for requests).
  const edge = load(
    "  max_connections: 73\n  thread_pool_size: 40\n  request_header_timeout_ms: 1000\n" +
      "  keep_alive_timeout_ms: 600000\n",
  );
  assert.deepEqual(edge.diagnostics, []);
  const tight = load("  max_connections: 40\n  thread_pool_size: 40\n");
  assert.deepEqual(
    tight.diagnostics.map((d) => [d.severity, d.path]),
    [["warning", "http.max_connections"]],
  );
  assert.match(tight.diagnostics[0]!.message, /an e-stop too\) is refused/);
});
