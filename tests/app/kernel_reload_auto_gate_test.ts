/**
 * The AUTO -> FAULT hook rule across a reload while AUTO runs (docs/safety.md sec. 9): the rule
 * depends on whether anything actuates, and a reload may add a provider that does (additions
 * apply in AUTO) in the same file that changes the hooks. The hooks section is judged against the
 * machine as it is when that section applies, not as it was when the reload began.
 */
import assert from "node:assert/strict";
import type { Config, HookConfig } from "../../src/config/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";
import { simProvider } from "../helpers/sim_config.ts";
import {
  automationConfig,
  enterAuto,
  STOP_MOTOR_ON_FAULT,
  TreeDir,
  treeXml,
} from "../scenarios/automation_helpers.ts";

Deno.test("Kernel.reload in AUTO adding an actuating provider and dropping the AUTO -> FAULT hook's cover refuses the hooks section", async () => {
  const dir = await TreeDir.create();
  const file = await Deno.makeTempFile({ prefix: "reload-auto-gate-", suffix: ".json" });
  try {
    // A read-only rig: nothing actuates, so AUTO needs no AUTO -> FAULT hook (it has one).
    await Deno.writeTextFile(
      file,
      JSON.stringify({ devices: { probe: { signals: [{ id: "temp", type: T.DOUBLE }] } } }),
    );
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree, {
      config: { providers: [programmableProvider("ro", file)] },
    });
    const hooks = (from: HookConfig["from"]): Config["automation"]["modeTransitionHooks"] => ({
      beforeTransition: [{ ...STOP_MOTOR_ON_FAULT, from }],
      afterTransition: [],
    });
    const rt = await startRuntime({
      ...base,
      automation: { ...base.automation, modeTransitionHooks: hooks("AUTO") },
    });
    try {
      await enterAuto(rt);
      // The same calls, now on MANUAL -> FAULT: AUTO -> FAULT is no longer covered, and sim0
      // (added by the same reload) actuates.
      const report = await rt.reload({
        ...rt.config,
        providers: [...rt.config.providers, simProvider("sim0")],
        automation: { ...rt.config.automation, modeTransitionHooks: hooks("MANUAL") },
      });
      assert.deepEqual(report.providers.added, ["sim0"]);
      assert.equal(rt.modes.current(), "AUTO");
      assert.equal(
        rt.modes.autoGateProblem(),
        null,
        "AUTO runs in a state it would refuse to enter",
      );
      assert.deepEqual(report.refused.map((r) => r.section), ["automation.mode_transition_hooks"]);
    } finally {
      await rt.stop();
    }
  } finally {
    await Deno.remove(file).catch(() => {});
    await dir.dispose();
  }
});
