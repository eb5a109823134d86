/**
 * The TLS files a start reads -- http.tls_cert_path / http.tls_key_path, sparkplug.tls.* -- are
 * read before any provider is spawned, off the event loop's thread and within
 * runtime.startup_timeout_ms: a hung mount there (a read that never returns) fails the start
 * naming the key, the path and the call that hung, and a file that cannot be read fails it naming
 * the key and the path, with no provider ever spawned (a start that cannot serve its API must not
 * leave hardware driven). Before, the HTTP server read its files after the providers were up and
 * polled, unbounded: a hung mount left them running with no API, and no line, for ever.
 * In-process providers, real files but for the hung path (HungReads), the clock moved by hand.
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { serveHttp, type ServeOptions, TLS_FILE_MAX_BYTES } from "../../src/host/mod.ts";
import { HungReads } from "../helpers/journal_files.ts";
import { newKernel, tempDir, waitFor } from "../helpers/kernel.ts";
import { ManualClock, runDueUntil, runToSettle, settleOn } from "../helpers/clock.ts";
import { inProcessSpawn } from "../helpers/in_process_provider.ts";
import { TEST_PROGRAMS } from "../helpers/programs.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

/** The start-up budget of these tests (virtual time: none of it is waited for). */
const BUDGET_MS = 5000;

/** The TLS files of both links, each its own (not necessarily valid PEM: never served here). */
function tlsPaths() {
  const dir = tempDir("runtime-tls-");
  const paths = {
    httpCert: `${dir}/http-cert.pem`,
    httpKey: `${dir}/http-key.pem`,
    mqttCa: `${dir}/mqtt-ca.pem`,
    mqttCert: `${dir}/mqtt-cert.pem`,
    mqttKey: `${dir}/mqtt-key.pem`,
  };
  for (const p of Object.values(paths)) Deno.writeTextFileSync(p, `PEM of ${p}\n`);
  return paths;
}

/**
 * A kernel with one in-process provider, HTTPS and a Sparkplug link over mqtts, whose reads go
 * through `reads`; its server (the host's) reads the TLS files through the same reads when it is
 * not handed them, as serveHttp does.
 */
function tlsKernel(reads: HungReads, paths: ReturnType<typeof tlsPaths>) {
  const clock = new ManualClock();
  const fakes = inProcessSpawn(TEST_PROGRAMS, { clock });
  let served = 0;
  const serve = async (o: ServeOptions) => {
    served++;
    if (!("tlsFiles" in o) && o.tlsCertPath !== null && o.tlsKeyPath !== null) {
      await reads.read(o.tlsCertPath, TLS_FILE_MAX_BYTES);
      await reads.read(o.tlsKeyPath, TLS_FILE_MAX_BYTES);
    }
    return await serveHttp(o);
  };
  const rt = newKernel(
    testConfig({
      providers: [simProvider("sim0")],
      runtime: { startupTimeoutMs: BUDGET_MS },
      http: { tlsCertPath: paths.httpCert, tlsKeyPath: paths.httpKey },
      sparkplug: {
        enabled: true,
        brokerUrl: "mqtts://127.0.0.1:1",
        groupId: "lab",
        tls: { caPath: paths.mqttCa, certPath: paths.mqttCert, keyPath: paths.mqttKey },
      },
    }),
    { clock, spawn: fakes.spawn, readRegularFile: reads.read, serve },
  );
  return { clock, fakes, rt, served: () => served };
}

const HUNG = [
  { key: "http.tls_cert_path", path: "httpCert" },
  { key: "http.tls_key_path", path: "httpKey" },
  { key: "sparkplug.tls.ca_file", path: "mqttCa" },
  { key: "sparkplug.tls.cert_file", path: "mqttCert" },
  { key: "sparkplug.tls.key_file", path: "mqttKey" },
] as const;

for (const { key, path: which } of HUNG) {
  Deno.test(`Kernel.start fails within runtime.startup_timeout_ms, naming the key and the path, when reading ${key} hangs, and spawns no provider`, async () => {
    const paths = tlsPaths();
    const path = paths[which];
    const reads = new HungReads(path);
    const { clock, fakes, rt, served } = tlsKernel(reads, paths);
    const starting = rt.start().then(() => "started" as const, (err: unknown) => err);
    // Due timers fired, time not moved: whatever start-up does before the read, it does.
    await runDueUntil(clock, `the read of ${path} made`, () => reads.hung > 0);
    assert.equal(fakes.processes.length, 0, "no provider is spawned before the TLS files are read");
    const outcome = await runToSettle(clock, starting, "the start to end");
    assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${String(outcome)}`);
    assert.equal(outcome.code, "DEADLINE_EXCEEDED");
    assert.equal(
      outcome.message,
      `start-up did not finish within runtime.startup_timeout_ms (${BUDGET_MS} ms): reading ` +
        `${key}: read ${path} never returned (a hung mount or a failing disk?); start-up stopped`,
    );
    assert.equal(fakes.processes.length, 0, "no provider was ever spawned");
    assert.equal(served(), 0, "the API was not served");
    assert.equal(rt.sparkplug, null, "no edge node was made");
    // The stop after it ends too, the hung read still waiting.
    await runToSettle(clock, rt.stop(), "the stop after the failed start");
  });
}

Deno.test("Kernel.stop while reading http.tls_cert_path hangs ends the start at once", async () => {
  const paths = tlsPaths();
  const reads = new HungReads(paths.httpCert);
  const { clock, fakes, rt } = tlsKernel(reads, paths);
  const starting = rt.start().then(() => "started" as const, (err: unknown) => err);
  await runDueUntil(clock, "the certificate's read made", () => reads.hung > 0);
  // No time moves: only the stop can end the start here.
  const stopping = rt.stop();
  const outcome = await settleOn(clock, starting, "the start to end on stop()");
  assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${String(outcome)}`);
  assert.equal(outcome.message, "start-up aborted: the runtime is stopping");
  await settleOn(clock, stopping, "the stop");
  assert.equal(fakes.processes.length, 0);
});

for (const { key, path: which } of [HUNG[1], HUNG[2]]) {
  Deno.test(`a ${key} start-up cannot read fails the start, naming the key and the path, before any provider is spawned`, async () => {
    const paths = tlsPaths();
    const path = paths[which];
    Deno.removeSync(path);
    const { clock, fakes, rt, served } = tlsKernel(new HungReads(), paths);
    const starting = rt.start().then(() => "started" as const, (err: unknown) => err);
    const outcome = await settleOn(clock, starting, "the start to end");
    assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${String(outcome)}`);
    assert.equal(fakes.processes.length, 0, "no provider is spawned by a start that cannot serve");
    assert.equal(served(), 0);
    assert.equal(outcome.code, "FAILED_PRECONDITION");
    assert.equal(outcome.message, `${key}: cannot read '${path}': no such file`);
    await settleOn(clock, rt.stop(), "the stop after the failed start");
    await waitFor("nothing running", () => fakes.running().length === 0);
  });
}
