/**
 * `--check-config` and the TLS files' contents: what the start refuses in them (not a PEM
 * certificate, a key that does not belong to the certificate, an expired certificate) is an error
 * under `--strict` and a warning without it, at the key, on the key's line -- a file that passes
 * `--check-config --strict` is not refused by the start for what is in it (docs/deployment.md).
 */
import assert from "node:assert/strict";
import { runCli, withFiles } from "./helpers/cli.ts";
import { certWithDates, selfSignedCert } from "./http/_tls_certs.ts";

const CONFIG = `providers: [{id: p0, command: sh}]
http:
  tls_cert_path: tls/cert.pem
  tls_key_path: tls/key.pem
`;

/** The lines of `stdout` about the TLS keys. */
function tlsLines(stdout: string): string[] {
  return stdout.split("\n").filter((l) => l.includes("http.tls_"));
}

/** Runs `--check-config cfg.yaml` (with `--strict` when asked) in `dir`. */
function check(dir: string, strict: boolean) {
  return runCli(["--check-config", "cfg.yaml", ...(strict ? ["--strict"] : [])], { cwd: dir });
}

Deno.test("runtime --check-config --strict passes a certificate and its own key", async () => {
  await withFiles({ "cfg.yaml": CONFIG }, async (dir) => {
    await Deno.mkdir(`${dir}/tls`);
    await selfSignedCert(`${dir}/tls`, 30);
    const r = await check(dir, true);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(tlsLines(r.stdout), []);
  });
});

Deno.test("runtime --check-config refuses a key that does not belong to the certificate (an error under --strict, a warning without)", async () => {
  await withFiles({ "cfg.yaml": CONFIG }, async (dir) => {
    await Deno.mkdir(`${dir}/tls`);
    await Deno.mkdir(`${dir}/other`);
    await selfSignedCert(`${dir}/tls`, 30);
    const other = await selfSignedCert(`${dir}/other`, 30);
    await Deno.copyFile(other.key, `${dir}/tls/key.pem`);
    const strict = await check(dir, true);
    assert.equal(strict.code, 1, strict.stdout);
    const lines = tlsLines(strict.stdout);
    assert.equal(lines.length, 1, strict.stdout);
    assert.match(
      lines[0]!,
      /^cfg\.yaml:3:3: error: http\.tls_cert_path: cannot use the certificate and key: .*KeyMismatch.* \(a start refuses it\)$/,
    );
    const lax = await check(dir, false);
    assert.equal(lax.code, 0, lax.stdout);
    assert.match(tlsLines(lax.stdout)[0]!, /^cfg\.yaml:3:3: warning: http\.tls_cert_path: /);
  });
});

Deno.test("runtime --check-config --strict refuses a file that is not a PEM certificate, at its key", async () => {
  await withFiles({ "cfg.yaml": CONFIG, "tls/cert.pem": "x", "tls/key.pem": "x" }, async (dir) => {
    const r = await check(dir, true);
    assert.equal(r.code, 1, r.stdout);
    assert.match(
      tlsLines(r.stdout).join("\n"),
      /^cfg\.yaml:3:3: error: http\.tls_cert_path: '.*\/tls\/cert\.pem' is not a readable PEM certificate: /,
    );
  });
});

Deno.test("runtime --check-config --strict refuses an expired certificate unless http.tls_allow_expired_cert, and always warns of it", async () => {
  await withFiles({ "cfg.yaml": CONFIG }, async (dir) => {
    await Deno.mkdir(`${dir}/tls`);
    await certWithDates(`${dir}/tls`, "20200101000000Z", "20210101000000Z");
    const r = await check(dir, true);
    assert.equal(r.code, 1, r.stdout);
    assert.match(
      tlsLines(r.stdout).join("\n"),
      /^cfg\.yaml:3:3: error: http\.tls_cert_path: the certificate '.*cert\.pem' has expired \(valid from 2020-01-01T00:00:00\.000Z to 2021-01-01T00:00:00\.000Z\)/,
    );
    await Deno.writeTextFile(
      `${dir}/cfg.yaml`,
      CONFIG.replace("http:\n", "http:\n  tls_allow_expired_cert: true\n"),
    );
    const allowed = await check(dir, true);
    assert.equal(allowed.code, 0, allowed.stdout);
    const lines = tlsLines(allowed.stdout);
    assert.equal(lines.length, 1, allowed.stdout);
    assert.match(
      lines[0]!,
      /^cfg\.yaml:4:3: warning: http\.tls_cert_path: .*has expired.*serving it/,
    );
  });
});

Deno.test("runtime --check-config --strict judges no TLS file of a disabled HTTP server, as the start reads none", async () => {
  // A start with http.enabled false serves nothing and reads neither file (a reload turning the
  // server off neither reads nor judges them): nothing here may say "a start refuses it".
  const off = CONFIG.replace("http:\n", "http:\n  enabled: false\n");
  await withFiles({ "cfg.yaml": off, "tls/cert.pem": "x", "tls/key.pem": "x" }, async (dir) => {
    const notPem = await check(dir, true);
    assert.equal(notPem.code, 0, notPem.stdout);
    assert.deepEqual(tlsLines(notPem.stdout), []);
    await Deno.remove(`${dir}/tls`, { recursive: true });
    const missing = await check(dir, true);
    assert.equal(missing.code, 0, missing.stdout);
    assert.deepEqual(tlsLines(missing.stdout), []);
  });
});
