/**
 * runtime.startup_timeout_ms bounds the whole bring-up, the first poll pass included, and a stop
 * signal during start-up acts at once (scripted providers that hang at each start-up stage).
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { newKernel } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { PORT_ATTEMPTS } from "../helpers/ports.ts";
import {
  freePort,
  killLeftovers,
  processAlive,
  providerYaml,
  readScriptedLog,
  type RuntimeProcess,
  scriptedCommand,
  scriptedProvider,
  spawnRuntime,
  waitFor,
  within,
  writeRuntimeConfig,
} from "./process_helpers.ts";

/**
 * Spawns the runtime on the configuration `config(port)` writes for a free port and resolves once
 * its provider hangs in start-up (the scripted log at `log` says so; within 30 s). The runtime
 * probes its port before it spawns a provider: when a stranger took the port first, that start
 * ends (exit 3) and the runtime is spawned again on another port, up to PORT_ATTEMPTS times.
 */
async function spawnUntilHung(
  config: (port: number) => Promise<string>,
  log: string,
  what: string,
): Promise<RuntimeProcess> {
  for (let attempt = 1;; attempt++) {
    const rt = spawnRuntime(await config(freePort()));
    let ended = false;
    rt.exit.then(() => ended = true);
    await waitFor(what, () => ended || readScriptedLog(log).hangs.length > 0, 30000)
      .catch(async (err) => {
        await rt.dispose();
        throw err;
      });
    if (!ended) return rt;
    const { stderr } = await rt.exit;
    const portTaken = /start-up failed: http: cannot listen on .*Address already in use/;
    if (!portTaken.test(stderr) || attempt >= PORT_ATTEMPTS) {
      throw new Error(`the runtime ended before ${what}:\n${stderr}`);
    }
  }
}

Deno.test("Kernel.start fails within runtime.startup_timeout_ms when a provider hangs on its first poll, leaving nothing running", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-startup-" });
  const log = `${dir}/provider.log`;
  const config = testConfig({
    // The budget must leave the scripted provider (a Deno process of its own) time to start and
    // reach its first poll on a loaded machine: with 1500 ms, CI's once did not (no hang logged).
    runtime: { startupTimeoutMs: 5000 },
    // timeout_ms far beyond the start-up budget: only the budget can end the first poll.
    providers: [
      simProvider("sim0"),
      scriptedProvider("hung", ["--log", log, "--hang", "read_signals"], { timeoutMs: 60000 }),
    ],
  });
  const rt = newKernel(config);
  try {
    const outcome = await within(rt.start().then(() => "started", (e) => e), 20000);
    assert.notEqual(outcome, "timeout", "start() must end within the start-up budget");
    assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${outcome}`);
    assert.equal(outcome.code, "DEADLINE_EXCEEDED");
    assert.match(outcome.message, /runtime\.startup_timeout_ms \(5000 ms\)/);
    assert.match(outcome.message, /hung/);
    assert.deepEqual(readScriptedLog(log).hangs, ["read_signals"]);
    assert.equal(rt.registry.host("sim0")!.available, false, "the healthy provider was stopped");
    await waitFor("hung provider ended", () => !processAlive(readScriptedLog(log).pids[0]!), 5000);
  } finally {
    await rt.stop();
    killLeftovers(readScriptedLog(log).pids);
    await Deno.remove(dir, { recursive: true });
  }
});

for (const stage of ["hello", "wait_ready", "read_signals"]) {
  Deno.test(`SIGTERM while a provider hangs in ${stage} during start-up stops the runtime at once`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "runtime-startup-" });
    const log = `${dir}/provider.log`;
    let rt: RuntimeProcess | undefined;
    try {
      rt = await spawnUntilHung(
        (port) =>
          writeRuntimeConfig(dir, {
            port,
            runtime: "  shutdown_timeout_ms: 2000\n  startup_timeout_ms: 120000\n",
            providers: providerYaml(
              "hung",
              scriptedCommand(["--log", log, "--hang", stage, "--spawn-helper"]),
              "    timeout_ms: 60000\n    hello_timeout_ms: 60000\n    ready_timeout_ms: 60000\n",
            ),
          }),
        log,
        `provider hanging in ${stage}`,
      );
      rt.child.kill("SIGTERM");
      // The stop budget is 2 s (+1 s grace); start-up alone would wait 60 s for the provider.
      const exit = await within(rt.exit, 10000);
      if (exit === "timeout") assert.fail("SIGTERM during start-up must act at once");
      assert.equal(exit.code, 0, exit.stderr);
      const { pids, helpers } = readScriptedLog(log);
      assert.equal(processAlive(pids[0]!), false, "the provider is gone");
      await waitFor("helper gone", () => !processAlive(helpers[0]!), 2000);
    } finally {
      await rt?.dispose();
      const { pids, helpers } = readScriptedLog(log);
      killLeftovers([...pids, ...helpers]);
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("SIGHUP during a start-up that then fails says the reload waits for start-up, then one line says it was not done", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-startup-" });
  const log = `${dir}/provider.log`;
  // The provider never answers Hello: the start-up budget (its least, 5 s) ends the start.
  let rt: RuntimeProcess | undefined;
  try {
    rt = await spawnUntilHung(
      (port) =>
        writeRuntimeConfig(dir, {
          port,
          runtime: "  shutdown_timeout_ms: 2000\n  startup_timeout_ms: 5000\n",
          providers: providerYaml(
            "hung",
            scriptedCommand(["--log", log, "--hang", "hello"]),
            "    timeout_ms: 60000\n    hello_timeout_ms: 60000\n    ready_timeout_ms: 60000\n",
          ),
        }),
      log,
      "provider hanging in hello",
    );
    rt.child.kill("SIGHUP");
    await rt.stderrLine(/SIGHUP received/);
    const exit = await within(rt.exit, 30000);
    if (exit === "timeout") assert.fail("the start-up budget must end the start");
    assert.equal(exit.code, 3, exit.stderr);
    const lines = exit.stderr.split("\n");
    assert.equal(lines.filter((l) => /^ERROR .*start-up failed: /.test(l)).length, 1, exit.stderr);
    // The line at the signal says what happens: the reload waits for start-up, none starts now.
    const received = lines.filter((l) => l.includes("SIGHUP received"));
    assert.equal(received.length, 1, exit.stderr);
    assert.match(
      received[0]!,
      /^INFO .*SIGHUP received during start-up: the configuration is reloaded once start-up finishes$/,
    );
    const dropped = lines.filter((l) => l.includes("SIGHUP") && l.includes("not reloaded"));
    assert.equal(dropped.length, 1, `the SIGHUP vanished without a word:\n${exit.stderr}`);
    assert.match(dropped[0]!, /^WARN .*start-up did not finish/);
  } finally {
    await rt?.dispose();
    killLeftovers(readScriptedLog(log).pids);
    await Deno.remove(dir, { recursive: true });
  }
});
