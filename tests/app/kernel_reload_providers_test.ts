/**
 * Kernel.reload's providers section against the registry it reconciles: the entries in effect
 * (Kernel.config.providers) follow the running providers whatever happens after the reconcile, so
 * the next reload diffs against what runs.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { refuseRegistration } from "../helpers/unregistered.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";
import { failedStartText } from "../../src/providers/mod.ts";

Deno.test("Kernel.reload: a failure after the providers reconcile keeps the entries in effect with the registry", async () => {
  const rt = await startRuntime(testConfig());
  try {
    const base = rt.config;
    const next = { ...base, providers: [...base.providers, simProvider("sim1")] };
    // What follows the reconcile (the e-stop's securing wait) fails once.
    const estop = rt.estop as unknown as { securing: (h: unknown) => unknown };
    const securing = estop.securing;
    estop.securing = () => Promise.reject(new Error("securing failed"));
    const first = await rt.reload(next);
    estop.securing = securing;
    assert.deepEqual(first.providers.added, ["sim1"]);
    assert.ok(rt.registry.host("sim1") !== undefined, "sim1 runs");
    assert.deepEqual(
      rt.config.providers.map((p) => p.id),
      rt.registry.hosts.map((h) => h.id),
      "the entries in effect are the running providers",
    );
    // The same file again: nothing to do (not "Provider already registered: sim1").
    const second = await rt.reload(next);
    assert.deepEqual(second.failed, [], JSON.stringify(second.failed));
    assert.deepEqual(second.providers.added, []);
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.whenAllProvidersAvailable: a reload removing the one provider still down completes it", async () => {
  const base = testConfig();
  const rt = await startRuntime({
    ...base,
    providers: [...base.providers, simProvider("sim1", { restart: false })],
  });
  try {
    const sim1 = rt.registry.host("sim1")!;
    Deno.kill(sim1.session!.pid, "SIGKILL");
    await waitFor("sim1 down", () => !sim1.available);
    let ready = 0;
    rt.whenAllProvidersAvailable(() => ready++);
    assert.equal(ready, 0, "sim1 is down");
    const report = await rt.reload({
      ...rt.config,
      providers: rt.config.providers.filter((p) => p.id !== "sim1"),
    });
    assert.deepEqual(report.providers.removed, ["sim1"]);
    assert.ok(rt.registry.hosts.every((h) => h.available));
    assert.equal(ready, 1, "every provider listed is AVAILABLE: the listener is told");
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.whenAllProvidersAvailable waits for a provider a reload restarts: not while it fails to start or is not registered; a reload dropping it completes it", async () => {
  const base = testConfig();
  const rt = await startRuntime({
    ...base,
    providers: [...base.providers, simProvider("sim1", { restart: false })],
  });
  try {
    const sim1 = rt.registry.host("sim1")!;
    const good = sim1.config;
    Deno.kill(sim1.session!.pid, "SIGKILL");
    await waitFor("sim1 down", () => !sim1.available);
    let ready = 0;
    rt.whenAllProvidersAvailable(() => ready++);
    assert.equal(ready, 0, "sim1 is down");
    const withSim1 = (entry: typeof good) => ({
      ...rt.config,
      providers: [...rt.config.providers.filter((p) => p.id !== "sim1"), entry],
    });

    // Its entry changed to one that does not start: its old host is taken out, its new one
    // listed down. sim1 is configured and not running all along.
    const broken = await rt.reload(withSim1({ ...good, command: "/nonexistent/provider" }));
    assert.match(
      broken.providers.failed.map(failedStartText).join(),
      /^sim1: cannot start provider/,
    );
    assert.equal(ready, 0, "not while sim1 is being restarted nor once it failed to start");

    // Its entry fixed, its host not registered (a host listener fails): still not running.
    const allow = refuseRegistration(rt.registry, "sim1");
    const refused = await rt.reload(withSim1(good));
    assert.match(
      refused.providers.failed.map(failedStartText).join(),
      /^sim1: Provider sim1 not registered/,
    );
    assert.ok(rt.registry.hosts.every((h) => h.available), "every host registered is up");
    assert.equal(ready, 0, "not while sim1 has no host");
    allow();

    // The file drops sim1: every provider configured is AVAILABLE.
    const dropped = await rt.reload({
      ...rt.config,
      providers: rt.config.providers.filter((p) => p.id !== "sim1"),
    });
    assert.deepEqual(dropped.providers.failed, []);
    assert.equal(ready, 1, "told once sim1 is no longer configured");
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.reload bounds an added provider's start by runtime.startup_timeout_ms: one answering each DescribeDevice in time but never done is reported failed, the reload done", async () => {
  // Each DescribeDevice answered within timeout_ms; 60 of them take some 12 s.
  const devices = Object.fromEntries(
    Array.from({ length: 60 }, (_, i) => [`d${i}`, { signals: [{ id: "x", type: T.DOUBLE }] }]),
  );
  const file = await Deno.makeTempFile({ prefix: "slow-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify({ devices, describeDelayMs: 200 }));
  // The configuration's least start-up budget.
  const rt = await startRuntime(testConfig({ runtime: { startupTimeoutMs: 5000 } }));
  try {
    const report = await rt.reload({
      ...rt.config,
      providers: [...rt.config.providers, programmableProvider("p1", file, { timeoutMs: 1000 })],
    });
    assert.deepEqual(report.providers.added, []);
    assert.equal(report.providers.failed.length, 1, JSON.stringify(report.providers.failed));
    assert.match(
      failedStartText(report.providers.failed[0]!),
      /^p1: provider start not complete within runtime\.startup_timeout_ms \(5000 ms\)/,
    );
    assert.deepEqual(rt.config.providers.map((p) => p.id), ["sim0"], "p1 is not in effect");
    assert.match(
      rt.registry.startFailureText("p1") ?? "",
      /p1 failed to start at a configuration reload \(provider start not complete within runtime\.startup_timeout_ms/,
    );
    assert.equal(rt.registry.host("p1")?.available ?? false, false);
  } finally {
    await rt.stop();
    await Deno.remove(file);
  }
});
