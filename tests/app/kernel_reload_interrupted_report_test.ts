/**
 * What a reload cut short by stop() reports: a section it did not get to is named as such, never
 * counted as unchanged (a provider the file adds is not "=" when the providers section never ran).
 */
import assert from "node:assert/strict";
import { RELOAD_FILE_READ_TIMEOUT_MS } from "../../src/app/kernel.ts";
import { summarize } from "../../src/app/reloader.ts";
import { serveHttp, spawnProcess } from "../../src/host/mod.ts";
import type { SpawnFn } from "../../src/common/mod.ts";
import { HungReads } from "../helpers/journal_files.ts";
import { newKernel, startRuntime, tempDir, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import type { Config } from "../../src/config/mod.ts";
import { ManualClock, runDueUntil, settleOn } from "../helpers/clock.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";
import { selfSignedCert } from "../http/_tls_certs.ts";
import { failedStartText } from "../../src/providers/mod.ts";

Deno.test("a reload stopped before its providers section (a TLS re-read hanging) does not count the provider it adds as unchanged", async () => {
  const { cert, key } = await selfSignedCert(tempDir("runtime-tls-"));
  const clock = new ManualClock();
  const reads = new HungReads();
  const rt = newKernel(
    testConfig({ providers: [], http: { tlsCertPath: cert, tlsKeyPath: key } }),
    { clock, readRegularFile: reads.read, serve: serveHttp },
  );
  await settleOn(clock, rt.start(), "the start");
  let stopped: Promise<void> | null = null;
  try {
    reads.pathPart = cert; // the certificate's re-read hangs: the reload waits before any section
    const reloading = rt.reload({ ...rt.config, providers: [simProvider("sim1")] });
    await runDueUntil(clock, "the certificate read again", () => reads.hung > 0);
    stopped = rt.stop();
    clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
    const report = await settleOn(clock, reloading, "the reload");
    await settleOn(clock, stopped, "the stop");
    assert.equal(report.interrupted, true);
    assert.equal(rt.registry.host("sim1"), undefined, "sim1 was never started");
    // Before: unchanged ["sim1"], and the summary said "providers +0 -0 ~0 =1".
    assert.deepEqual(report.providers.unchanged, [], JSON.stringify(report.providers));
    const line = summarize(report);
    assert.match(line, /providers \+0 -0 ~0 =0/, line);
    assert.match(
      line,
      /^config reload interrupted \(the runtime is stopping\): .*; not applied: providers \(not reached: added sim1\)/,
      line,
    );
  } finally {
    await settleOn(clock, stopped ?? rt.stop(), "the stop");
  }
});

Deno.test("ConfigReloader: the ERROR line of a reload cut short by stop() says the runtime is stopping once", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  let next: Config | null = null;
  const rt = await startRuntime(testConfig(), {
    host: { log, loadConfig: () => Promise.resolve({ ok: true, config: next!, warnings: [] }) },
  });
  let stopped: Promise<void> | null = null;
  try {
    const base = rt.config;
    next = {
      ...base,
      providers: [...base.providers, simProvider("sim1")],
      // A section after the providers: not applied, the stop having begun.
      polling: { ...base.polling, intervalMs: base.polling.intervalMs * 2 },
    };
    const reloading = rt.reloader!.request();
    await waitFor("sim1 starting", () => rt.registry.host("sim1"), 10000, 0);
    stopped = rt.stop();
    await reloading;
    await stopped;
    const said = lines.filter((l) => l.includes("config reload"));
    assert.equal(said.length, 1, said.join("\n"));
    const line = said[0]!;
    // Before: "config reload interrupted: the runtime is stopping; config reload: providers ...;
    // failed providers: the runtime is stopping; failed polling: the runtime is stopping; ...".
    assert.equal(line.split("stopping").length - 1, 1, line);
    assert.match(
      line,
      /^ERROR .*config reload interrupted \(the runtime is stopping\): providers /,
    );
    assert.match(line, /; not applied: providers, polling(;|$)/, line);
    assert.equal(line.split("config reload").length - 1, 1, line);
  } finally {
    await (stopped ?? rt.stop());
  }
});

Deno.test("ConfigReloader: after a provider's reload restart fails, the e-stop plan is logged again naming the failure, not 'being restarted'", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  let next: Config | null = null;
  const rt = await startRuntime(testConfig(), {
    host: { log, loadConfig: () => Promise.resolve({ ok: true, config: next!, warnings: [] }) },
  });
  try {
    // Its args change (a restart): the sim cannot read that file and exits before its Hello.
    next = {
      ...rt.config,
      providers: [simProvider("sim0", { yaml: "/nonexistent/sim.yaml", restart: false })],
    };
    await rt.reloader!.request();
    const summary = lines.findIndex((l) => l.includes("config reload:"));
    assert.match(lines[summary] ?? "", /failed to start: sim0: /);
    // The plan's log after a change waits out PLAN_LOG_INTERVAL_MS since the last one.
    const failedPlan = "e-stop plan (provider sim0 failed to start at a configuration reload)";
    await waitFor(
      "the plan logged after the failure",
      () => lines.some((l) => l.includes(failedPlan)),
    );
    const last = lines.findLast((l) => l.includes("no safe-state expectation covers"))!;
    // Before: the last plan lines (logged as sim0 was taken out) said it "is being restarted".
    assert.doesNotMatch(last, /being restarted/, last);
    assert.match(
      last,
      /its provider, which failed to start at a configuration reload \(Hello failed/,
      last,
    );
    assert.equal(
      lines.filter((l) => l.includes(failedPlan)).length,
      1,
      "one plan line for the failure",
    );
  } finally {
    await rt.stop();
  }
});

Deno.test("a reload stopped before its providers section names what it did not reach with its kinds apart from its ids", async () => {
  const { cert, key } = await selfSignedCert(tempDir("runtime-tls-"));
  const clock = new ManualClock();
  const reads = new HungReads();
  const rt = newKernel(
    testConfig({ providers: [simProvider("sim2")], http: { tlsCertPath: cert, tlsKeyPath: key } }),
    { clock, readRegularFile: reads.read, serve: serveHttp },
  );
  await settleOn(clock, rt.start(), "the start");
  let stopped: Promise<void> | null = null;
  try {
    reads.pathPart = cert; // the certificate's re-read hangs: the reload waits before any section
    const reloading = rt.reload({
      ...rt.config,
      providers: [simProvider("sim1"), simProvider("sim3")],
    });
    await runDueUntil(clock, "the certificate read again", () => reads.hung > 0);
    stopped = rt.stop();
    clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
    const report = await settleOn(clock, reloading, "the reload");
    await settleOn(clock, stopped, "the stop");
    const line = summarize(report);
    // Before: "(not reached: added sim1, sim3, removed sim2)": "removed" read as one more id.
    assert.match(
      line,
      /not applied: providers \(not reached: added sim1, sim3 \/ removed sim2\)/,
      line,
    );
    const why = report.failed.find((f) => f.section === "providers")?.why;
    assert.equal(why, "the runtime is stopping (not reached: added sim1, sim3 / removed sim2)");
  } finally {
    await settleOn(clock, stopped ?? rt.stop(), "the stop");
  }
});

Deno.test("ConfigReloader: a providers section cut short by stop() after it removed a provider says it applied in part", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  let next: Config | null = null;
  const rt = await startRuntime(testConfig(), {
    host: { log, loadConfig: () => Promise.resolve({ ok: true, config: next!, warnings: [] }) },
  });
  let stopped: Promise<void> | null = null;
  try {
    const base = rt.config;
    assert.deepEqual(base.providers.map((p) => p.id), ["sim0"]);
    // sim0 is removed (stopped, for good) before sim1 starts; the stop cuts sim1's start short.
    next = { ...base, providers: [simProvider("sim1")] };
    const reloading = rt.reloader!.request();
    await waitFor("sim1 starting", () => rt.registry.host("sim1"), 10000, 0);
    stopped = rt.stop();
    await reloading;
    await stopped;
    const line = lines.find((l) => l.includes("config reload"))!;
    assert.match(line, /providers \+1 -1 /, line);
    // Before: "not applied: providers", though sim0 was removed and stays removed.
    assert.match(line, /; applied in part: providers(;|$)/, line);
    assert.doesNotMatch(line, /not applied: providers/, line);
    assert.match(line, /sim1/, line); // its start cut short, named (how depends on the timing)
  } finally {
    await (stopped ?? rt.stop());
  }
});

Deno.test("a reload whose provider start the stop cuts (its Hello held) says it not started, not failed to start", async () => {
  // sim1's process answers no Hello: its start is under way, held, until the stop ends it.
  const file = `${tempDir("reload-held-hello-")}/held.json`;
  await Deno.writeTextFile(
    file,
    JSON.stringify({
      hello: { hang: true },
      stderr: ["waiting before its Hello"],
      devices: { d0: { signals: [{ id: "v", type: T.DOUBLE }] } },
    }),
  );
  const rt = await startRuntime(testConfig());
  let stopped: Promise<void> | null = null;
  try {
    const reloading = rt.reload({
      ...rt.config,
      providers: [...rt.config.providers, programmableProvider("sim1", file)],
    });
    // Its stderr line read: its session is the one starting, its Hello sent and unanswered.
    await waitFor(
      "sim1's Hello under way",
      () => (rt.registry.host("sim1")?.stderrTail.length ?? 0) > 0,
    );
    stopped = rt.stop();
    const report = await reloading;
    await stopped;
    assert.equal(report.interrupted, true);
    // Before: ["sim1: Hello failed: ... closed by the runtime"], a failure of its own.
    assert.deepEqual(report.providers.failed, [{ id: "sim1", why: "the runtime is stopping" }]);
    const line = summarize(report);
    assert.match(line, /^config reload interrupted \(the runtime is stopping\): /, line);
    assert.match(line, /; not started: sim1(;|$)/, line);
    assert.doesNotMatch(line, /failed to start|closed by the runtime/, line);
  } finally {
    await (stopped ?? rt.stop());
  }
});

Deno.test("a reload's provider start that failed on its own (its Hello refused) keeps its error when the stop begins while its process ends", async () => {
  await refusedHelloStoppedAt("stdin closed");
});

Deno.test("a reload's provider start that failed on its own (its Hello refused) keeps its error when the stop begins as its Hello is answered", async () => {
  await refusedHelloStoppedAt("answered");
});

/**
 * A reload adds sim1, which speaks another protocol (its Hello is refused: the start fails on its
 * own) and takes its time to exit once its stdin closes; the stop begins `at` its Hello's answer
 * (the refusal under way: the runtime waits for its stderr) or once the runtime closes its stdin
 * (ending the refused process). Either way the reload names the refusal, not the stop.
 */
async function refusedHelloStoppedAt(at: "answered" | "stdin closed"): Promise<void> {
  const file = `${tempDir("reload-refused-hello-")}/refused.json`;
  await Deno.writeTextFile(
    file,
    JSON.stringify({
      hello: { protocol: "0.0-other" },
      exitDelayMs: 10_000,
      devices: { d0: { signals: [{ id: "v", type: T.DOUBLE }] } },
    }),
  );
  // The real process, seen as the runtime reads its first answer and as it closes its stdin.
  let answered = false;
  let stdinClosed = false;
  const spawn: SpawnFn = (o) => {
    const p = spawnProcess(o);
    if (!o.args.includes(file)) return p;
    const writer = p.stdin.getWriter();
    return {
      pid: p.pid,
      stdout: p.stdout.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform: (chunk, out) => {
            answered = true;
            out.enqueue(chunk);
          },
        }),
      ),
      stderr: p.stderr,
      exited: p.exited,
      kill: (signal) => p.kill(signal),
      stdin: new WritableStream<Uint8Array>({
        write: (chunk) => writer.write(chunk),
        close: () => {
          stdinClosed = true;
          return writer.close();
        },
        abort: (reason) => writer.abort(reason),
      }),
    };
  };
  const rt = await startRuntime(testConfig(), { host: { spawn } });
  let stopped: Promise<void> | null = null;
  try {
    const reloading = rt.reload({
      ...rt.config,
      providers: [...rt.config.providers, programmableProvider("sim1", file)],
    });
    await waitFor(
      `sim1's Hello ${at === "answered" ? "answered" : "refused, its process being ended"}`,
      () => at === "answered" ? answered : stdinClosed,
      10000,
      0,
    );
    stopped = rt.stop();
    const report = await reloading;
    await stopped;
    // Before: ["sim1: the runtime is stopping"], its refusal said nowhere.
    assert.equal(report.providers.failed.length, 1, JSON.stringify(report.providers));
    assert.match(
      failedStartText(report.providers.failed[0]!),
      /^sim1: .*provider speaks protocol '0\.0-other'/,
    );
    const line = summarize(report);
    assert.match(line, /failed to start: sim1: .*provider speaks protocol '0\.0-other'/, line);
    assert.doesNotMatch(line, /not started: sim1/, line);
  } finally {
    await (stopped ?? rt.stop());
  }
}

Deno.test("a reload whose retry of a provider with its circuit open the stop cuts (its Hello held) says it not started, not failed to start", async () => {
  const file = `${tempDir("reload-held-retry-")}/retried.json`;
  const inventory = { devices: { d0: { signals: [{ id: "v", type: T.DOUBLE }] } } };
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const rt = await startRuntime(
    testConfig({
      providers: [
        programmableProvider("sim1", file, { restart: { maxAttempts: 0, backoffMs: [] } }),
      ],
    }),
  );
  let stopped: Promise<void> | null = null;
  try {
    const host = rt.registry.host("sim1")!;
    // No restart allowed: its crash opens its circuit, which a reload tries again.
    Deno.kill(host.session!.pid, "SIGKILL");
    await waitFor("sim1's circuit open", () => host.lifecycle === "CIRCUIT_OPEN", 10000, 0);
    // Its retry's process answers no Hello: the retry is under way, held, until the stop ends it.
    const line = "retried, waiting before its Hello";
    await Deno.writeTextFile(
      file,
      JSON.stringify({ ...inventory, hello: { hang: true }, stderr: [line] }),
    );
    const reloading = rt.reload({ ...rt.config });
    await waitFor("sim1's retry under way", () => host.stderrTail.includes(line), 10000, 0);
    stopped = rt.stop();
    const report = await reloading;
    await stopped;
    assert.equal(report.interrupted, true);
    // Before: ["sim1: not up: ..."], a failure of its own.
    assert.deepEqual(report.providers.failed, [{ id: "sim1", why: "the runtime is stopping" }]);
    const said = summarize(report);
    assert.match(said, /; not started: sim1(;|$)/, said);
    assert.doesNotMatch(said, /failed to start/, said);
  } finally {
    await (stopped ?? rt.stop());
  }
});
