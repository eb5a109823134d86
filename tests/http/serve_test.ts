/** The Deno.serve wrapper (src/host/serve.ts): TLS, remote address, bind gate, errors. */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { isLoopbackBind, serveHttp } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

async function selfSignedCert(dir: string): Promise<{ cert: string; key: string }> {
  const cert = `${dir}/cert.pem`;
  const key = `${dir}/key.pem`;
  const out = await new Deno.Command("openssl", {
    args: [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      "/CN=localhost",
      "-days",
      "1",
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
      // rustls refuses a CA certificate as the server's own (CaUsedAsEndEntity).
      "-addext",
      "basicConstraints=critical,CA:FALSE",
      "-keyout",
      key,
      "-out",
      cert,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return { cert, key };
}

Deno.test("serveHttp serves HTTPS with the configured certificate and key", async () => {
  const dir = await Deno.makeTempDir({ prefix: "http-tls-" });
  const fx = await startHttpFixture({ start: false });
  try {
    const { cert, key } = await selfSignedCert(dir);
    const server = await fx.serve({ tlsCertPath: cert, tlsKeyPath: key });
    assert.equal(server.tls, true);
    const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(cert)] });
    try {
      const res = await fetch(`https://localhost:${server.port}/v0/runtime/status`, { client });
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
    const r1 = await fetch(`http://127.0.0.1:${a.port}/v0/devices`);
    assert.equal(r1.status, 200);
    await r1.body?.cancel();
    const b = await strict.serve();
    const r2 = await fetch(`http://127.0.0.1:${b.port}/v0/devices`);
    assert.equal(r2.status, 401);
    assert.equal(r2.headers.get("www-authenticate"), "Bearer");
    await r2.body?.cancel();
    const r3 = await fetch(`http://127.0.0.1:${b.port}/v0/devices`, {
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

Deno.test("isLoopbackBind accepts loopback names and addresses only", () => {
  for (const h of ["127.0.0.1", "127.1.1.1", "::1", "[::1]", "localhost"]) {
    assert.equal(isLoopbackBind(h), true, h);
  }
  for (const h of ["0.0.0.0", "::", "192.168.0.2", "example.com"]) {
    assert.equal(isLoopbackBind(h), false, h);
  }
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
