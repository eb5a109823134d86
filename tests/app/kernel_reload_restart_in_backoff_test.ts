/**
 * A reload that restarts a provider (its `timeout_ms` changed) while the provider's supervisor
 * waits in backoff after a crash (README, "Reloading the configuration": a changed entry is
 * stopped and started again with the new entry). The reload's start is the one process: the old
 * supervisor's pending restart is cancelled, so once its due time passes no second process of
 * the provider runs. The simulated provider runs as a child process, its processes told apart by
 * a configuration file of the test's own.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { SIM_YAML, simProvider, testConfig } from "../helpers/sim_config.ts";

const BACKOFF_MS = 1500;
/** How long the slow provider's process takes to begin. */
const START_MS = 1500;

/** Pids of the processes whose command line names `marker`. */
async function processesNaming(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = await Deno.readTextFile(`/proc/${e.name}/cmdline`);
      if (cmd.split("\0").includes(marker)) pids.push(Number(e.name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

Deno.test("Kernel.reload restarting a provider whose supervisor waits in backoff runs one process: the pending restart is cancelled", async () => {
  const dir = await Deno.makeTempDir({ prefix: "reload-backoff-" });
  try {
    const yaml = `${dir}/sim0.yaml`;
    await Deno.copyFile(SIM_YAML, yaml);
    const rt = await startRuntime(testConfig({
      providers: [simProvider("sim0", {
        yaml,
        restart: { backoffMs: [BACKOFF_MS, BACKOFF_MS, BACKOFF_MS] },
      })],
    }));
    try {
      const old = rt.registry.host("sim0")!;
      const failures = old.counts().failures;
      const crashedAt = performance.now();
      Deno.kill(old.session!.pid, "SIGKILL");
      await waitFor("sim0's crash seen", () => old.counts().failures > failures, 30000);
      assert.equal(old.state.phase, "BACKOFF");

      const report = await rt.reload({
        ...rt.config,
        providers: rt.config.providers.map((p) => ({ ...p, timeoutMs: p.timeoutMs + 1 })),
      });
      assert.deepEqual(report.providers.restarted, ["sim0"]);
      const host = rt.registry.host("sim0")!;
      assert.equal(host.available, true);
      const pid = host.session!.pid;
      assert.equal(old.supervision().next_restart_in_ms, null, "the old restart is not pending");

      // Past the old supervisor's due time: still the one process, the reload's.
      await waitFor("the old backoff over", () => performance.now() - crashedAt > 2 * BACKOFF_MS);
      assert.deepEqual(await processesNaming(yaml), [pid]);
      assert.equal(rt.registry.host("sim0"), host);
      assert.equal(host.session!.pid, pid);
      assert.equal(host.available, true);
    } finally {
      await rt.stop();
    }
    assert.deepEqual(await processesNaming(yaml), [], "stopped with the runtime");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel.reload restarting a provider whose restart attempt is still starting runs one process: the attempt's process is stopped", async () => {
  const dir = await Deno.makeTempDir({ prefix: "reload-attempt-" });
  try {
    const yaml = `${dir}/sim0.yaml`;
    await Deno.copyFile(SIM_YAML, yaml);
    const sim = simProvider("sim0", { yaml, restart: { backoffMs: [50, 50, 50] } });
    // The process takes START_MS to begin (a slow board): a restart attempt is caught starting.
    const quoted = [sim.command, ...sim.args].map((a) => `'${a}'`).join(" ");
    const slow = {
      ...sim,
      command: "/bin/sh",
      args: ["-c", `sleep ${START_MS / 1000}; exec ${quoted}`],
    };
    const rt = await startRuntime(testConfig({ providers: [slow] }));
    try {
      const old = rt.registry.host("sim0")!;
      const failures = old.counts().failures;
      Deno.kill(old.session!.pid, "SIGKILL");
      await waitFor("sim0's crash seen", () => old.counts().failures > failures, 30000);
      await waitFor("the restart attempt starting", () => old.state.phase === "ATTEMPTING", 30000);
      const attemptAt = performance.now();

      const report = await rt.reload({
        ...rt.config,
        providers: rt.config.providers.map((p) => ({ ...p, timeoutMs: p.timeoutMs + 1 })),
      });
      assert.deepEqual(report.providers.restarted, ["sim0"]);
      const host = rt.registry.host("sim0")!;
      assert.equal(host.available, true);
      const pid = host.session!.pid;

      // Past the time the attempt's process would have begun: still the one process.
      await waitFor("the attempt's start over", () => performance.now() - attemptAt > 2 * START_MS);
      assert.deepEqual(await processesNaming(yaml), [pid]);
      assert.equal(host.session!.pid, pid);
    } finally {
      await rt.stop();
    }
    assert.deepEqual(await processesNaming(yaml), [], "stopped with the runtime");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
