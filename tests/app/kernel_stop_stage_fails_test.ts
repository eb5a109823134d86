/**
 * Kernel.stop when a stage before the providers' stop fails (the history's last rows cannot be
 * written, the Sparkplug node's stop throws): the providers are still stopped the way a stop ends
 * them (stdin closed: their own safe state), not left to the process's budget and its SIGKILL;
 * each failing stage is logged once, ERROR, naming it; the data_dir lock is still released, last;
 * and stop() rejects (INTERNAL, naming the stages), which the process turns into exit code 4.
 * Real: the kernel with the simulated provider as a child process; the history's stop made to
 * reject and the alarm engine's to throw.
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { type DataDirLock, LineLogger, lockDataDir } from "../../src/host/mod.ts";
import { processAlive, startRuntime } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

Deno.test("Kernel.stop stops the providers and releases the data_dir lock when the history's stop rejects and the alarms' throws", async () => {
  const lines: string[] = [];
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => 0,
    write: (line) => void lines.push(line),
  });
  const order: string[] = [];
  const lock = async (dir: string): Promise<DataDirLock> => {
    const taken = await lockDataDir(dir);
    if (!("release" in taken)) return taken;
    return {
      release: () => {
        order.push("lock released");
        taken.release();
      },
    };
  };
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), {
    host: { log, lockDataDir: lock },
  });
  const pid = rt.registry.host("sim0")!.session!.pid;
  try {
    assert.ok(rt.history, "history is enabled");
    rt.history.stop = () => Promise.reject(new Error("history disk gone"));
    rt.alarms.stop = () => {
      throw new Error("alarm engine broken");
    };
    const stopAll = rt.registry.stopAll.bind(rt.registry);
    rt.registry.stopAll = (budget, hurried) => {
      order.push("providers stopped");
      return stopAll(budget, hurried);
    };
    const err = await rt.stop().then(() => null, (e: unknown) => e);
    assert.equal(processAlive(pid), false, "the provider was stopped");
    assert.deepEqual(order, ["providers stopped", "lock released"]);
    assert.ok(err instanceof RuntimeError, `stop() rejects with a RuntimeError, got ${err}`);
    assert.equal(err.code, "INTERNAL");
    assert.match(err.message, /but 2 stop stage\(s\) failed: alarms, history$/);
    const failures = lines.filter((l) => l.includes("stop: "));
    assert.equal(failures.length, 2, lines.join("\n"));
    assert.match(failures[0] ?? "", /^ERROR .*stop: alarms failed: alarm engine broken/);
    assert.match(failures[1] ?? "", /^ERROR .*stop: history failed: history disk gone/);
    assert.equal(lines.filter((l) => l.includes("runtime stopped")).length, 0);
  } finally {
    // Before the fix the stop rejected before the providers' stop: end them here.
    await rt.registry.stopAll(2000);
  }
});
