/**
 * What can fail a start in the HTTP server -- the certificate's dates, the key not matching the
 * certificate, a port another process holds -- fails it before any provider is spawned (Kernel
 * #openFiles: checkServe on the bytes read there, the port probed), with the line serveHttp
 * would have given. Before, they were found when the API was served, after the providers were up
 * and primed: a start refused there had already spawned and polled (and maybe driven, through
 * hooks or the tree) the hardware before stopping it. In-process providers (their spawns
 * counted), real certificates (openssl), real sockets on loopback.
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { serveHttp } from "../../src/host/mod.ts";
import { certWithDates, selfSignedCert } from "../http/_tls_certs.ts";
import { newKernel, tempDir } from "../helpers/kernel.ts";
import { inProcessSpawn } from "../helpers/in_process_provider.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { TEST_PROGRAMS } from "../helpers/programs.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

type HttpOptions = NonNullable<Parameters<typeof testConfig>[0]>["http"];

/** A kernel with one in-process simulated provider, served by the real server. */
function servedKernel(http: HttpOptions) {
  const fakes = inProcessSpawn(TEST_PROGRAMS);
  const { log, lines } = capturingLogger({ level: "info" });
  /** How many lines were logged when the first provider was spawned. */
  let linesAtSpawn: number | null = null;
  const rt = newKernel(
    testConfig({ providers: [simProvider("sim0")], ...(http ? { http } : {}) }),
    {
      spawn: (o) => {
        linesAtSpawn ??= lines.length;
        return fakes.spawn(o);
      },
      serve: serveHttp,
      log,
    },
  );
  return { fakes, rt, lines, linesAtSpawn: () => linesAtSpawn };
}

/** start()'s rejection (fails the test when it starts). */
async function startFailure(rt: ReturnType<typeof newKernel>): Promise<RuntimeError> {
  const outcome = await rt.start().then(() => "started" as const, (err: unknown) => err);
  assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${String(outcome)}`);
  return outcome;
}

Deno.test("a start with an expired certificate (no http.tls_allow_expired_cert) fails before any provider is spawned", async () => {
  const dir = tempDir("runtime-expired-");
  const { cert, key } = await certWithDates(dir, "20200101000000Z", "20210101000000Z");
  const { fakes, rt } = servedKernel({ tlsCertPath: cert, tlsKeyPath: key });
  try {
    const err = await startFailure(rt);
    assert.equal(err.code, "FAILED_PRECONDITION");
    assert.match(err.message, /^http\.tls_cert_path: the certificate '.*cert\.pem' has expired/);
    assert.equal(fakes.processes.length, 0, "no provider was spawned");
  } finally {
    await rt.stop();
  }
});

Deno.test("a start whose key does not belong to its certificate fails before any provider is spawned", async () => {
  const mine = await selfSignedCert(tempDir("runtime-cert-a-"));
  const other = await selfSignedCert(tempDir("runtime-cert-b-"));
  const { fakes, rt } = servedKernel({ tlsCertPath: mine.cert, tlsKeyPath: other.key });
  try {
    const err = await startFailure(rt);
    assert.equal(err.code, "FAILED_PRECONDITION");
    assert.match(err.message, /^http\.tls_cert_path \/ http\.tls_key_path: cannot use the/);
    assert.equal(fakes.processes.length, 0, "no provider was spawned");
  } finally {
    await rt.stop();
  }
});

Deno.test("a start whose port is taken fails before any provider is spawned", async () => {
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (taken.addr as Deno.NetAddr).port;
  const { fakes, rt } = servedKernel({ port });
  try {
    const err = await startFailure(rt);
    assert.equal(err.code, "UNAVAILABLE");
    assert.match(err.message, new RegExp(`^http: cannot listen on 127\\.0\\.0\\.1:${port}: `));
    assert.equal(fakes.processes.length, 0, "no provider was spawned");
  } finally {
    await rt.stop();
  }
});

Deno.test("a start with a certificate that expires soon says so once, before any spawn, and serves HTTPS", async () => {
  const { cert, key } = await selfSignedCert(tempDir("runtime-cert-soon-"), 1);
  const { fakes, rt, lines, linesAtSpawn } = servedKernel({ tlsCertPath: cert, tlsKeyPath: key });
  try {
    await rt.start();
    const warned = lines.flatMap((l, i) => /expires in less than a day/.test(l) ? [i] : []);
    assert.equal(warned.length, 1, lines.join("\n"));
    assert.ok(warned[0]! < linesAtSpawn()!, "said before the provider was spawned");
    assert.equal(fakes.processes.length, 1);
    assert.equal(rt.http?.tls, true);
    assert.ok(lines.some((l) => l.includes("API listening on https://127.0.0.1:")));
  } finally {
    await rt.stop();
  }
});
