/**
 * Kernel.reload racing a mode change: the AUTO rule of a reload (docs/safety.md, "Configuration
 * reloads never weaken a running machine") holds for a section applied after AUTO was entered
 * during the same reload, not only when AUTO was running when the reload started.
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/** A tree that keeps running (reads and waits): AUTO stays up for the whole test. */
const IDLE_TREE = treeXml(`<Sleep msec="60000" />`);

Deno.test("Kernel.reload: AUTO entered while the reload starts a new provider; the later hooks section is still refused from leaving AUTO -> FAULT uncovered", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", IDLE_TREE);
    const rt = await startRuntime(automationConfig(tree), { arm: true });
    try {
      const base = rt.config;
      assert.equal(rt.modes.autoGateProblem(), null);
      // Adds a provider (its start takes a process spawn and handshake) and drops every hook.
      const next = {
        ...base,
        providers: [...base.providers, simProvider("sim1")],
        automation: {
          ...base.automation,
          modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
        },
      };
      let reloadDone = false;
      const reloading = rt.reload(next).finally(() => (reloadDone = true));
      // The operator enters AUTO while the reload is starting sim1 (an addition: not refused).
      const entered = await rt.modes.request("AUTO").catch((err: Error) => err.message);
      assert.equal(reloadDone, false, "the mode request settled while the reload was running");
      const report = await reloading;
      assert.deepEqual(report.providers.added, ["sim1"]);
      if (rt.modes.current() === "AUTO") {
        // The machine runs in AUTO: a reload may not have left it in a state AUTO refuses.
        assert.equal(
          rt.modes.autoGateProblem(),
          null,
          `AUTO (entered: ${entered}) runs without a hook covering AUTO -> FAULT; reload: ${
            JSON.stringify({ applied: report.applied, refused: report.refused })
          }`,
        );
        assert.deepEqual(report.refused.map((r) => r.section), [
          "automation.mode_transition_hooks",
        ]);
      }
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
