/**
 * A reload that removes a provider takes its host out of the registry, telling the host-removed
 * listeners, then stops it. A listener that throws is contained and said at ERROR; when that line
 * throws too (a custom logger), the host must still be stopped -- not taken out of the registry
 * and left running, a provider process no stop reaches any more -- and the listeners after the
 * faulty one still told. Real: the kernel with the simulated provider as a child process.
 */
import assert from "node:assert/strict";
import { processAlive, waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";

Deno.test("a reload removing a provider stops it although a host-removed listener and its ERROR line throw", async () => {
  await using r = await rig({
    providers: [simProvider("kept"), simProvider("gone")],
    programs: false,
    // The sink fails on the registry's listener-error line.
    onLine: (line) => {
      if (line.includes("a host-removed listener failed")) throw new Error("log sink failed");
    },
  });
  const rt = r.kernel;
  let thrown = 0;
  rt.registry.onHostRemoved(() => {
    thrown++;
    throw new Error("a peripheral subsystem's bug (host removed)");
  });
  const told: string[] = [];
  rt.registry.onHostRemoved((host) => told.push(host.id));
  const unconfigured: string[] = [];
  rt.registry.onUnconfigured((id) => unconfigured.push(id));
  const pid = rt.registry.host("gone")?.session?.pid;
  assert.ok(pid !== undefined, "gone runs as a child process");
  try {
    const report = await rt.reload({
      ...rt.config,
      providers: rt.config.providers.filter((p) => p.id !== "gone"),
    });
    assert.equal(thrown, 1, "the faulty listener ran");
    assert.deepEqual(report.providers.removed, ["gone"], JSON.stringify(report));
    assert.deepEqual(report.failed, [], "no section failed");
    assert.deepEqual(told, ["gone"], "the listener after the faulty one was told");
    assert.deepEqual(unconfigured, ["gone"], "its id told unconfigured");
    assert.equal(rt.registry.host("gone"), undefined);
    // Before: taken out of the registry but never stopped, its process ran on.
    await waitFor("the removed provider's process to end", () => !processAlive(pid), 5000);
  } finally {
    if (processAlive(pid)) Deno.kill(pid, "SIGKILL");
  }
});
