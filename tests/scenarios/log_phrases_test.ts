/**
 * The three log phrases launchers and test harnesses written for anolis wait for, in our format
 * (level first, one line per event), each written at the moment anolis writes it:
 * - `Runtime Ready`: once, when the API is up and every provider is AVAILABLE
 *   (anolis core/src/main.cpp logs "Runtime Ready" after Runtime::initialize, HTTP included);
 * - `Runtime startup timeout exceeded`: when runtime.startup_timeout_ms runs out, not after the
 *   providers have been stopped (anolis core/runtime/runtime.cpp, check_startup_deadline);
 * - `Restart timeout exceeded for provider '<id>'`: when a restart attempt is found past
 *   restart_policy.timeout_ms (during or after the handshake or discovery), before the half-started
 *   process is ended
 *   (anolis core/runtime/runtime.cpp, restart_provider).
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { newKernel, startArmed, waitFor } from "../helpers/kernel.ts";
import { SIM_INERT_YAML, SIM_MAIN, simProvider, testConfig } from "../helpers/sim_config.ts";
import {
  killLeftovers,
  processAlive,
  providerYaml,
  readScriptedLog,
  scriptedProvider,
  startRuntimeOnFreePort,
  within,
  writeRuntimeConfig,
} from "./process_helpers.ts";

/** A logger keeping every line (info and up), calling `onLine` as each is written. */
function watchingLogger(onLine: (line: string) => void = () => {}) {
  const lines: string[] = [];
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => Date.now(),
    write: (line) => {
      lines.push(line);
      onLine(line);
    },
  });
  return { log, lines };
}

/**
 * sim0 and a scripted provider `hung` hanging in `stage` (its log at `plog`, `args` after), under
 * a 1500 ms start-up budget and a 600 ms stop budget.
 */
function hungAtStartConfig(
  plog: string,
  stage: string,
  args: string[],
  options: Parameters<typeof scriptedProvider>[2],
) {
  return testConfig({
    runtime: { startupTimeoutMs: 1500, shutdownTimeoutMs: 600 },
    providers: [
      simProvider("sim0", { yaml: SIM_INERT_YAML }),
      scriptedProvider("hung", ["--log", plog, "--hang", stage, ...args], options),
    ],
  });
}

for (const stage of ["hello", "read_signals"]) {
  Deno.test(`Runtime.start logs 'Runtime startup timeout exceeded' once, when runtime.startup_timeout_ms runs out with a provider hanging in ${stage}, before the providers are stopped`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "runtime-phrase-" });
    const plog = `${dir}/provider.log`;
    // The provider ignores stdin EOF and SIGTERM: stopping it takes 90 % of the 0.6 s stop
    // budget, so a line written after the stop would find it gone.
    const config = hungAtStartConfig(
      plog,
      stage,
      ["--ignore-stdin-eof", "--ignore-sigterm", "--say", "waiting for /dev/ttyUSB0"],
      { timeoutMs: 60000, helloTimeoutMs: 60000 },
    );
    const aliveWhenLogged: boolean[] = [];
    const { log, lines } = watchingLogger((line) => {
      if (line.includes("Runtime startup timeout exceeded")) {
        aliveWhenLogged.push(processAlive(readScriptedLog(plog).pids[0]!));
      }
    });
    const rt = newKernel(config, { log });
    try {
      const outcome = await within(rt.start().then(() => "started", (e) => e), 20000);
      assert.ok(outcome instanceof Error, `start() must fail, got ${outcome}`);
      const said = lines.filter((l) => l.includes("Runtime startup timeout exceeded"));
      assert.equal(said.length, 1, lines.join("\n"));
      assert.match(said[0]!, /^ERROR /);
      assert.match(said[0]!, /runtime\.startup_timeout_ms \(1500 ms\)/);
      assert.match(said[0]!, stage === "hello" ? /not ready: hung\b/ : /first poll .*hung/);
      if (stage === "hello") {
        // What the provider last said, usually why it is not ready, in the log and the error.
        const why = `hung (provider's last stderr line: "waiting for /dev/ttyUSB0")`;
        assert.ok(said[0]!.includes(`not ready: ${why}`), said[0]);
        assert.ok((outcome as Error).message.includes(why), (outcome as Error).message);
      }
      assert.deepEqual(aliveWhenLogged, [true], "said while the hung provider still ran");
      assert.equal(lines.filter((l) => l.includes("Runtime Ready")).length, 0);
    } finally {
      await rt.stop();
      killLeftovers(readScriptedLog(plog).pids);
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("Kernel.start still fails at runtime.startup_timeout_ms when the logger throws on 'Runtime startup timeout exceeded', a provider hanging on its first poll", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-phrase-" });
  const plog = `${dir}/provider.log`;
  // timeout_ms far beyond the start-up budget: only the budget can end the first poll.
  const config = hungAtStartConfig(plog, "read_signals", [], { timeoutMs: 60000 });
  let thrown = 0;
  const { log } = watchingLogger((line) => {
    if (line.includes("Runtime startup timeout exceeded")) {
      thrown++;
      throw new Error("log sink failed");
    }
  });
  const rt = newKernel(config, { log });
  try {
    const outcome = await within(rt.start().then(() => "started", (e) => e), 20000);
    assert.notEqual(outcome, "timeout", "the start-up budget must end the start");
    assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${outcome}`);
    assert.equal(outcome.code, "DEADLINE_EXCEEDED");
    assert.match(outcome.message, /runtime\.startup_timeout_ms \(1500 ms\): first poll of hung/);
    assert.equal(thrown, 1, "the line was written, and threw");
    assert.deepEqual(readScriptedLog(plog).hangs, ["read_signals"]);
    assert.equal(rt.http, null, "the API was not served");
  } finally {
    await rt.stop();
    killLeftovers(readScriptedLog(plog).pids);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel.start says nothing about a start-up timeout when start-up completes in time", async () => {
  const { log, lines } = watchingLogger();
  const rt = newKernel(
    testConfig({ runtime: { startupTimeoutMs: 30000 }, providers: [simProvider("sim0")] }),
    { log },
  );
  try {
    await rt.start();
  } finally {
    await rt.stop();
  }
  assert.deepEqual(lines.filter((l) => l.includes("startup timeout")), []);
});

Deno.test("a restart attempt past restart_policy.timeout_ms logs 'Restart timeout exceeded for provider' once, before the restarted process is ended", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-phrase-" });
  // First start: the simulated provider. Every restart: the same, 0.4 s late, past its 0.3 s
  // budget (its pid is written first; `exec` keeps it).
  const script = `${dir}/provider.sh`;
  await Deno.writeTextFile(
    script,
    `#!/bin/sh
if [ -e "${dir}/started" ]; then echo $$ >> "${dir}/restarts"; sleep 0.4; fi
touch "${dir}/started"
exec "${Deno.execPath()}" run --quiet --allow-read --allow-env "${SIM_MAIN}" --config "${SIM_INERT_YAML}"
`,
  );
  await Deno.chmod(script, 0o755);
  const base = simProvider("sim0", {
    restart: { maxAttempts: 1, backoffMs: [0], timeoutMs: 300, successResetMs: 1000 },
  });
  const restartPids = () => {
    try {
      return Deno.readTextFileSync(`${dir}/restarts`).trim().split("\n").map(Number);
    } catch {
      return [];
    }
  };
  const aliveWhenLogged: boolean[] = [];
  const { log, lines } = watchingLogger((line) => {
    if (line.includes("Restart timeout exceeded")) {
      aliveWhenLogged.push(processAlive(restartPids()[0]!));
    }
  });
  const rt = newKernel(
    testConfig({ providers: [{ ...base, command: script, args: [] }] }),
    { log },
  );
  try {
    await rt.start();
    const host = rt.registry.host("sim0")!;
    Deno.kill(host.session!.pid, "SIGKILL");
    // max_attempts 1: the one attempt fails, then the circuit opens.
    await waitFor("circuit open", () => host.lifecycle === "CIRCUIT_OPEN", 20000);
    const said = lines.filter((l) => l.includes("Restart timeout exceeded"));
    assert.equal(said.length, 1, lines.join("\n"));
    assert.match(said[0]!, /^ERROR /);
    // anolis's phrase, as its tests wait for it, inside our line.
    assert.ok(said[0]!.includes("Restart timeout exceeded for provider 'sim0'"), said[0]);
    assert.match(said[0]!, /\[provider\/sim0\] restart attempt 1 failed: Restart timeout exceeded/);
    assert.match(said[0]!, /restart_policy\.timeout_ms 300 ms/);
    assert.deepEqual(aliveWhenLogged, [true], "said while the restarted process still ran");
    await waitFor("restarted process ended", () => !processAlive(restartPids()[0]!), 5000);
  } finally {
    await rt.stop();
    killLeftovers(restartPids());
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel.whenAllProvidersAvailable calls back once, when every provider is AVAILABLE", async () => {
  const rt = await startArmed(testConfig({
    providers: [
      simProvider("sim0", { yaml: SIM_INERT_YAML }),
      simProvider("sim1", { yaml: SIM_INERT_YAML, restart: { backoffMs: [300, 300, 300] } }),
    ],
  }));
  try {
    const sim1 = rt.registry.host("sim1")!;
    Deno.kill(sim1.session!.pid, "SIGKILL");
    await waitFor("sim1 down", () => !sim1.available);
    let calls = 0;
    rt.whenAllProvidersAvailable(() => calls++);
    assert.equal(calls, 0, "not while sim1 is down");
    await waitFor("sim1 back", () => sim1.available);
    assert.equal(calls, 1);
    // Once only: a later outage and recovery say nothing more.
    Deno.kill(sim1.session!.pid, "SIGKILL");
    await waitFor("sim1 down again", () => !sim1.available);
    await waitFor("sim1 back again", () => sim1.available, 15000);
    assert.equal(calls, 1);
    // Everything up already: at once.
    let now = 0;
    rt.whenAllProvidersAvailable(() => now++);
    assert.equal(now, 1);
  } finally {
    await rt.stop();
  }
});

Deno.test("runtime --config logs 'Runtime Ready' once, after the API listens, as an INFO line, and ends with 'shutdown complete'", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-phrase-" });
  try {
    const { rt } = await startRuntimeOnFreePort((port) =>
      writeRuntimeConfig(dir, {
        port,
        providers: providerYaml("sim0", {
          command: Deno.execPath(),
          args: [
            "run",
            "--quiet",
            "--allow-read",
            "--allow-env",
            SIM_MAIN,
            "--config",
            SIM_INERT_YAML,
          ],
        }),
      })
    );
    rt.child.kill("SIGTERM");
    const { code, stderr } = await rt.exit;
    assert.equal(code, 0, stderr);
    const lines = stderr.trimEnd().split("\n");
    const ready = lines.findIndex((l) => l.includes("Runtime Ready"));
    const listening = lines.findIndex((l) => l.includes("API listening on"));
    assert.ok(listening >= 0 && ready > listening, stderr);
    assert.equal(lines.filter((l) => l.includes("Runtime Ready")).length, 1, stderr);
    // anolis ends with "Shutdown complete"; this runtime with "shutdown complete".
    assert.match(lines.at(-1)!, /^INFO {2}\S+ shutdown complete$/);
    assert.match(
      lines[ready]!,
      /^INFO {2}\S+ Runtime Ready: 1 provider\(s\) AVAILABLE, 5 device\(s\)/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
