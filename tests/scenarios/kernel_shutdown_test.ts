import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { newKernel, processAlive, startArmed, waitFor } from "../helpers/kernel.ts";
import { SIM_INERT_YAML, SIM_MAIN, simProvider, testConfig } from "../helpers/sim_config.ts";
import { killLeftovers, readScriptedLog, scriptedProvider } from "./process_helpers.ts";

Deno.test("Kernel.stop ends a restart attempt that is still waiting for Hello, within the shutdown budget", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-stop-" });
  // First start: the real simulated provider. Every restart: a process that never says Hello.
  const script = `${dir}/provider.sh`;
  await Deno.writeTextFile(
    script,
    `#!/bin/sh
if [ -e "${dir}/started" ]; then exec sleep 600; fi
touch "${dir}/started"
exec "${Deno.execPath()}" run --quiet --allow-read --allow-env "${SIM_MAIN}" --config "${SIM_INERT_YAML}"
`,
  );
  await Deno.chmod(script, 0o755);
  const base = simProvider("sim0", { restart: { backoffMs: [0, 0, 0] } });
  const config = testConfig({
    providers: [{ ...base, command: script, args: [], helloTimeoutMs: 60000 }],
  });
  const rt = await startArmed(config);
  const host = rt.registry.host("sim0")!;
  try {
    Deno.kill(host.session!.pid, "SIGKILL");
    await waitFor("restart attempt running", () => host.state.phase === "ATTEMPTING");
    const budget = config.runtime.shutdownTimeoutMs + 1000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      rt.stop().then(() => "stopped"),
      new Promise((r) => (timer = setTimeout(() => r("overran"), budget))),
    ]);
    clearTimeout(timer);
    assert.equal(outcome, "stopped", `stop must finish within ${budget} ms`);
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel.stop while the first poll hangs makes start() fail at once and leaves nothing running", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-stop-" });
  const log = `${dir}/provider.log`;
  const config = testConfig({
    providers: [scriptedProvider("hung", ["--log", log, "--hang", "read_signals"], {
      timeoutMs: 60000,
    })],
  });
  const rt = newKernel(config);
  try {
    const started = rt.start().then(() => "started", (e) => e);
    await waitFor("first poll hanging", () => readScriptedLog(log).hangs.length > 0);
    await rt.stop();
    const outcome = await started;
    assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${outcome}`);
    assert.equal(outcome.code, "UNAVAILABLE");
    assert.equal(processAlive(readScriptedLog(log).pids[0]!), false);
    // Deno's sanitizers fail this test if a poll loop (a timer) is still running.
  } finally {
    await rt.stop();
    killLeftovers(readScriptedLog(log).pids);
    await Deno.remove(dir, { recursive: true });
  }
});
