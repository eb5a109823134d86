/**
 * Kernel.reload of a provider entry that differs only in supervision or start settings
 * (restart_policy, hello_timeout_ms, ready_timeout_ms: IN_PLACE_PROVIDER_FIELDS), over the
 * simulated provider as a child process: applied to the running host in place (also in AUTO:
 * nothing stops), a pending restart the new policy forbids is cancelled, a provider whose circuit
 * is open is updated and retried in place, and any other field changed with them still restarts
 * the provider.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import type { Config, ProviderConfig } from "../../src/config/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { automationConfig, enterAuto, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/** `config` with sim0's entry replaced by `change(entry)`. */
function withSim0(config: Config, change: (p: ProviderConfig) => ProviderConfig): Config {
  return {
    ...config,
    providers: config.providers.map((p) => p.id === "sim0" ? change(p) : p),
  };
}

function sim0Pid(rt: Kernel): number {
  const pid = rt.registry.host("sim0")?.session?.pid;
  assert.ok(pid !== undefined, "sim0 runs");
  return pid;
}

async function crash(rt: Kernel): Promise<void> {
  const host = rt.registry.host("sim0")!;
  const failures = host.counts().failures;
  Deno.kill(sim0Pid(rt), "SIGKILL");
  await waitFor("sim0's crash seen", () => host.counts().failures > failures, 30000);
}

Deno.test("Kernel.reload in AUTO applies a restart_policy and hello_timeout_ms change in place: not held back, same process, AUTO goes on", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const rt = await startRuntime(automationConfig(tree));
    try {
      await enterAuto(rt);
      assert.equal(rt.modes.current(), "AUTO");
      const host = rt.registry.host("sim0")!;
      const pid = sim0Pid(rt);
      const next = withSim0(rt.config, (p) => ({
        ...p,
        helloTimeoutMs: p.helloTimeoutMs + 1000,
        restartPolicy: { ...p.restartPolicy, maxAttempts: 1, backoffMs: [100] },
      }));
      const report = await rt.reload(next);
      assert.deepEqual(report.providers.updated, [
        { id: "sim0", fields: ["restart_policy", "hello_timeout_ms"] },
      ]);
      assert.deepEqual(report.providers.held, [], "nothing stops: nothing to hold back");
      assert.deepEqual(report.providers.restarted, []);
      assert.deepEqual(report.refused, [], JSON.stringify(report.refused));
      assert.ok(report.applied.includes("providers"));
      assert.equal(rt.modes.current(), "AUTO", "the recipe runs on");
      assert.equal(rt.registry.host("sim0"), host, "the same host");
      assert.equal(sim0Pid(rt), pid, "the same process");
      assert.deepEqual(host.config, next.providers[0], "the host runs with the new entry");
      assert.deepEqual(rt.config.providers, next.providers, "the new entry is in effect");
      assert.equal(host.supervision().max_attempts, 1);
      // The same file again: nothing left to do.
      const again = await rt.reload(next);
      assert.deepEqual(again.providers.updated, []);
      assert.deepEqual(again.providers.unchanged, ["sim0"]);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload turning restart_policy off while a restart is pending in backoff cancels it: the circuit opens, nothing is started", async () => {
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("sim0", { restart: { backoffMs: [60000, 60000, 60000] } })],
    }),
  );
  try {
    const host = rt.registry.host("sim0")!;
    await crash(rt);
    assert.equal(host.state.phase, "BACKOFF");
    assert.equal(host.lifecycle, "RESTARTING");
    const report = await rt.reload(
      withSim0(rt.config, (p) => ({ ...p, restartPolicy: { ...p.restartPolicy, enabled: false } })),
    );
    assert.deepEqual(report.providers.updated, [{ id: "sim0", fields: ["restart_policy"] }]);
    assert.deepEqual(report.providers.restarted, []);
    assert.equal(rt.registry.host("sim0"), host, "the same host, not restarted by the reload");
    assert.equal(host.lifecycle, "CIRCUIT_OPEN", "the pending restart is cancelled");
    assert.equal(host.supervision().next_restart_in_ms, null);
    assert.equal(host.available, false);
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.reload lowering max_attempts below the attempt pending in backoff opens the circuit", async () => {
  const rt = await startRuntime(
    testConfig({
      providers: [
        simProvider("sim0", {
          restart: { maxAttempts: 2, backoffMs: [0, 60000], successResetMs: 600000 },
        }),
      ],
    }),
  );
  try {
    const host = rt.registry.host("sim0")!;
    await crash(rt);
    await waitFor("sim0 up again (attempt 1)", () => host.available, 30000);
    await crash(rt);
    assert.equal(host.state.phase, "BACKOFF");
    assert.equal(host.state.attemptCount, 2, "attempt 2 of 2 is pending");
    // max_attempts 1: attempt 2 is no longer allowed; 2 would still allow it.
    const keep = await rt.reload(
      withSim0(
        rt.config,
        (p) => ({ ...p, restartPolicy: { ...p.restartPolicy, timeoutMs: 29000 } }),
      ),
    );
    assert.deepEqual(keep.providers.updated, [{ id: "sim0", fields: ["restart_policy"] }]);
    assert.equal(host.state.phase, "BACKOFF", "attempt 2 of 2 stays pending");
    const report = await rt.reload(
      withSim0(rt.config, (p) => ({
        ...p,
        restartPolicy: { ...p.restartPolicy, maxAttempts: 1, backoffMs: [0] },
      })),
    );
    assert.deepEqual(report.providers.updated, [{ id: "sim0", fields: ["restart_policy"] }]);
    assert.equal(host.lifecycle, "CIRCUIT_OPEN");
    assert.equal(host.supervision().attempt_count, 2);
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.reload changing restart_policy of a provider whose circuit is open updates it in place and retries it: the same host starts again", async () => {
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0", { restart: false })] }),
  );
  try {
    await crash(rt);
    const host = rt.registry.host("sim0")!;
    assert.equal(host.lifecycle, "CIRCUIT_OPEN");
    const report = await rt.reload(
      withSim0(rt.config, (p) => ({ ...p, restartPolicy: { ...p.restartPolicy, enabled: true } })),
    );
    assert.deepEqual(report.providers.restarted, []);
    assert.deepEqual(report.providers.updated, [{ id: "sim0", fields: ["restart_policy"] }]);
    assert.deepEqual(report.providers.retried, ["sim0"]);
    assert.equal(rt.registry.host("sim0"), host, "the same host (its devices keep their claims)");
    assert.equal(host.available, true);
    assert.equal(host.config.restartPolicy.enabled, true);
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.reload changing restart_policy together with timeout_ms restarts the provider as before", async () => {
  const rt = await startRuntime(testConfig());
  try {
    const pid = sim0Pid(rt);
    const report = await rt.reload(
      withSim0(rt.config, (p) => ({
        ...p,
        timeoutMs: p.timeoutMs + 1,
        restartPolicy: { ...p.restartPolicy, enabled: false },
      })),
    );
    assert.deepEqual(report.providers.restarted, ["sim0"]);
    assert.deepEqual(report.providers.updated, []);
    assert.notEqual(sim0Pid(rt), pid, "a new process");
  } finally {
    await rt.stop();
  }
});
