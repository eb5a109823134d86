/** Server certificates for the TLS tests, made with the openssl command line. */
import assert from "node:assert/strict";

async function openssl(args: string[], cwd?: string): Promise<void> {
  const out = await new Deno.Command("openssl", {
    args,
    ...(cwd === undefined ? {} : { cwd }),
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, `openssl ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
}

// rustls refuses a CA certificate as the server's own (CaUsedAsEndEntity): CA:FALSE.
const EXTENSIONS = [
  "basicConstraints=critical,CA:FALSE",
  "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1",
];

/** A self-signed localhost certificate valid from now for `days` days. */
export async function selfSignedCert(
  dir: string,
  days = 1,
): Promise<{ cert: string; key: string }> {
  const cert = `${dir}/cert.pem`;
  const key = `${dir}/key.pem`;
  await openssl([
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=localhost",
    "-days",
    String(days),
    ...EXTENSIONS.flatMap((e) => ["-addext", e]),
    "-keyout",
    key,
    "-out",
    cert,
  ]);
  return { cert, key };
}

/**
 * A self-signed localhost certificate with explicit validity dates (`YYYYMMDDHHMMSSZ`), in the
 * past or the future. OpenSSL 3.0's `req -x509` cannot set them (`-not_before` came in 3.4), so
 * this signs a request with `openssl ca -selfsign`, which takes `-startdate`/`-enddate`.
 */
export async function certWithDates(
  dir: string,
  notBefore: string,
  notAfter: string,
): Promise<{ cert: string; key: string }> {
  const ca = `${dir}/ca`;
  await Deno.mkdir(ca, { recursive: true });
  await Deno.writeTextFile(`${ca}/index.txt`, "");
  await Deno.writeTextFile(`${ca}/serial`, "01\n");
  await Deno.writeTextFile(
    `${ca}/ca.cnf`,
    [
      "[ ca ]",
      "default_ca = ca_default",
      "[ ca_default ]",
      "database = index.txt",
      "new_certs_dir = .",
      "serial = serial",
      "default_md = sha256",
      "policy = policy_any",
      "unique_subject = no",
      "[ policy_any ]",
      "commonName = supplied",
      "[ ext ]",
      ...EXTENSIONS.map((e) => e.replace("=", " = ")),
      "",
    ].join("\n"),
  );
  const key = `${dir}/key.pem`;
  const cert = `${dir}/cert.pem`;
  await openssl([
    "req",
    "-new",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=localhost",
    "-keyout",
    key,
    "-out",
    `${ca}/req.pem`,
  ]);
  await openssl([
    "ca",
    "-batch",
    "-notext",
    "-config",
    "ca.cnf",
    "-selfsign",
    "-keyfile",
    key,
    "-in",
    "req.pem",
    "-out",
    cert,
    "-startdate",
    notBefore,
    "-enddate",
    notAfter,
    "-extensions",
    "ext",
  ], ca);
  return { cert, key };
}
