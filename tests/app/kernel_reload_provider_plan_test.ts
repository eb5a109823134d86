/**
 * Kernel.reload decides once, at its start, what it does with each provider entry
 * (ProviderRegistry.plan), and its providers section carries out that decision: a circuit that
 * opens between the reload's start and the providers section does not turn the in-place update
 * the kernel planned for (alarms not retired early, AUTO check not deferred) into a restart.
 * The simulated provider runs as a child process; the window is driven by crashing it just
 * before the registry reconciles.
 */
import assert from "node:assert/strict";
import type { Config, ProviderConfig } from "../../src/config/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

/** `config` with sim0's entry replaced by `change(entry)`. */
function withSim0(config: Config, change: (p: ProviderConfig) => ProviderConfig): Config {
  return {
    ...config,
    providers: config.providers.map((p) => p.id === "sim0" ? change(p) : p),
  };
}

Deno.test("Kernel.reload carries out the provider plan made at its start: a circuit opening before the providers section leaves the planned in-place update, not a restart", async () => {
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0", { restart: false })] }),
  );
  try {
    const host = rt.registry.host("sim0")!;
    assert.equal(host.available, true);
    const plans: string[] = [];
    const plan = rt.registry.plan.bind(rt.registry);
    rt.registry.plan = (before, next) => {
      const d = plan(before, next);
      plans.push(
        `changed [${d.changed.map((p) => p.id)}] updated [${d.updated.map((u) => u.entry.id)}]`,
      );
      return d;
    };
    const reconcile = rt.registry.reconcile.bind(rt.registry);
    let crashed = false;
    rt.registry.reconcile = async (before, next, o) => {
      // The window: the kernel has planned (sim0 up: an in-place update); now its circuit opens.
      const pid = host.session?.pid;
      assert.ok(pid !== undefined, "sim0 runs when the providers section begins");
      Deno.kill(pid, "SIGKILL");
      await waitFor("sim0's circuit open", () => host.lifecycle === "CIRCUIT_OPEN", 30000);
      crashed = true;
      return await reconcile(before, next, o);
    };
    const next = withSim0(rt.config, (p) => ({
      ...p,
      restartPolicy: { ...p.restartPolicy, timeoutMs: p.restartPolicy.timeoutMs + 1000 },
    }));
    const report = await rt.reload(next);
    assert.ok(crashed, "the window was driven");
    assert.deepEqual(report.providers.restarted, [], "no restart the kernel did not plan for");
    assert.deepEqual(report.providers.updated, [{ id: "sim0", fields: ["restart_policy"] }]);
    assert.equal(rt.registry.host("sim0"), host, "the same host, updated in place");
    assert.deepEqual(host.config, next.providers[0], "the host has the new entry");
    assert.deepEqual(rt.config.providers, next.providers, "the new entry is in effect");
    assert.equal(host.lifecycle, "CIRCUIT_OPEN", "down as its crash left it");
    assert.deepEqual(plans, ["changed [] updated [sim0]"], "planned once, at the reload's start");
  } finally {
    await rt.stop();
  }
});
