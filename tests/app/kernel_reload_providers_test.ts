/**
 * Kernel.reload's providers section against the registry it reconciles: the entries in effect
 * (Kernel.config.providers) follow the running providers whatever happens after the reconcile, so
 * the next reload diffs against what runs.
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

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
