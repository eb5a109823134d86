/**
 * A reload reads the TLS files again to say whether they changed (a renewal in place needs a
 * restart). It read them synchronously, on the event loop's thread: a hung mount there froze the
 * whole runtime, its API and e-stop included, while the providers ran on. They are read off that
 * thread, each within RELOAD_FILE_READ_TIMEOUT_MS: the e-stop latches meanwhile, and the reload
 * ends saying the file could not be read. Real files and a real HTTPS server but for the hung
 * path (HungReads), the clock moved by hand.
 */
import assert from "node:assert/strict";
import { RELOAD_FILE_READ_TIMEOUT_MS } from "../../src/app/kernel.ts";
import type { Config } from "../../src/config/mod.ts";
import { READ_FILE_MAX_BYTES, readRegularFile, serveHttp } from "../../src/host/mod.ts";
import { HungReads } from "../helpers/journal_files.ts";
import { newKernel, tempDir, waitFor } from "../helpers/kernel.ts";
import { ManualClock, runDueUntil, settleOn } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { certWithDates, selfSignedCert } from "../http/_tls_certs.ts";

Deno.test("a reload whose re-read of http.tls_cert_path hangs leaves the e-stop working and ends saying the file is unreadable", async () => {
  const { cert, key } = await selfSignedCert(tempDir("runtime-tls-"));
  const clock = new ManualClock();
  const reads = new HungReads();
  const rt = newKernel(
    testConfig({ providers: [], http: { tlsCertPath: cert, tlsKeyPath: key } }),
    { clock, readRegularFile: reads.read, serve: serveHttp },
  );
  await settleOn(clock, rt.start(), "the start");
  try {
    assert.equal(rt.http?.tls, true, "served over HTTPS");
    // The mount under the certificate hangs from now on.
    reads.pathPart = cert;
    const doneBefore = reads.done;
    const reloading = rt.reload(rt.config);
    await runDueUntil(clock, "the certificate read again", () => reads.hung > 0);
    // The key's read is real I/O: finished before virtual time moves past its 2 s bound (on a
    // loaded machine it took longer than the timers settleOn fires below).
    await waitFor("the key read again", () => reads.done > doneBefore);
    await settleOn(clock, rt.estop.trigger("door opened"), "the e-stop");
    assert.equal(rt.estop.latched, true, "the e-stop latches while the read hangs");
    clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
    const report = await settleOn(clock, reloading, "the reload");
    assert.deepEqual(report.needsRestart, [
      `http.tls_cert_path (unreadable now: no answer within ${RELOAD_FILE_READ_TIMEOUT_MS} ms)`,
    ]);
  } finally {
    await settleOn(clock, rt.stop(), "the stop");
  }
});

Deno.test("a reload enabling the Sparkplug link with a TLS file the start cannot read (too large) says a restart refuses it; the reload still applies", async () => {
  const dir = tempDir("runtime-sparkplug-tls-");
  const ca = `${dir}/ca.pem`;
  // Larger than a file the start reads may be; the loader only checks that it exists.
  await Deno.writeTextFile(ca, "#".repeat(READ_FILE_MAX_BYTES + 1));
  const rt = newKernel(testConfig({ providers: [] }));
  await rt.start();
  try {
    const next: Config = {
      ...rt.config,
      logging: { ...rt.config.logging, level: "debug" },
      sparkplug: {
        ...rt.config.sparkplug,
        enabled: true,
        brokerUrl: "mqtts://127.0.0.1:8883",
        groupId: "g",
        edgeNodeId: "n",
        tls: { caPath: ca, certPath: null, keyPath: null },
      },
    };
    const report = await rt.reload(next);
    const refusal = `sparkplug.tls.ca_file: cannot read '${ca}': too large: ` +
      `${READ_FILE_MAX_BYTES + 1} bytes, the limit is ${READ_FILE_MAX_BYTES} bytes (4 MiB)`;
    assert.ok(
      report.needsRestart.includes(`sparkplug.tls (a restart refuses it: ${refusal})`),
      report.needsRestart.join("\n"),
    );
    assert.equal(rt.config.logging.level, "debug", "the rest of the reload applies");
    // What a restart with that file does: it refuses to start, naming the same file.
    const restarted = newKernel(next);
    await assert.rejects(restarted.start(), (e) => `${e}`.includes(refusal));
    await restarted.stop();
  } finally {
    await rt.stop();
  }
});

Deno.test("a reload disabling the Sparkplug link neither reads nor judges its TLS files: one unreadable now says nothing", async () => {
  const dir = tempDir("runtime-sparkplug-off-");
  const { cert, key } = await selfSignedCert(dir);
  const reads: string[] = [];
  const rt = newKernel(
    testConfig({
      providers: [],
      sparkplug: {
        enabled: true,
        brokerUrl: "mqtts://127.0.0.1:1",
        groupId: "g",
        edgeNodeId: "n",
        tls: { caPath: cert, certPath: cert, keyPath: key },
      },
    }),
    {
      readRegularFile: (path, maxBytes) => {
        reads.push(path);
        return readRegularFile(path, maxBytes);
      },
    },
  );
  await rt.start();
  try {
    assert.ok(reads.includes(cert), "read at start");
    reads.length = 0;
    // The CA's mount is gone; the link is switched off with its files still named.
    await Deno.remove(cert);
    const report = await rt.reload({
      ...rt.config,
      sparkplug: { ...rt.config.sparkplug, enabled: false },
    });
    assert.deepEqual(reads, [], "a disabled link's files are not read");
    assert.deepEqual(
      report.needsRestart.filter((k) => k.startsWith("sparkplug.tls")),
      [],
      report.needsRestart.join("\n"),
    );
  } finally {
    await rt.stop();
  }
});

Deno.test("a reload turning the HTTP server on judges its TLS files as the start will: an expired certificate a restart refuses is said on the http.enabled line", async () => {
  const dir = tempDir("runtime-http-on-");
  // An expired pair named all along, the server off: the start reads neither file.
  const { cert, key } = await certWithDates(dir, "20200101000000Z", "20200201000000Z");
  const off = testConfig({
    providers: [],
    http: { enabled: false, tlsCertPath: cert, tlsKeyPath: key },
  });
  const rt = newKernel(off, { serve: serveHttp });
  await rt.start();
  try {
    assert.equal(rt.http, null, "no server while http.enabled is false");
    const next: Config = {
      ...rt.config,
      http: { ...rt.config.http, enabled: true },
      logging: { ...rt.config.logging, level: "debug" },
    };
    const report = await rt.reload(next);
    const on = report.needsRestart.find((k) => k.startsWith("http.enabled"));
    assert.match(
      on ?? "",
      /^http\.enabled \(a restart refuses it: the certificate '[^']+' has expired /,
      report.needsRestart.join("\n"),
    );
    assert.equal(rt.config.logging.level, "debug", "the rest of the reload applies");
    // What a restart with that file does: it refuses to start, on the same certificate.
    const restarted = newKernel(next, { serve: serveHttp });
    await assert.rejects(restarted.start(), /has expired/);
    await restarted.stop();
  } finally {
    await rt.stop();
  }
});
