/**
 * A stop while the mode is AUTO halts the behavior tree (its "automation" stage) and leaves the mode
 * AUTO: one INFO line says the stop, not a mode change, ended the tree's ticking -- the log is the
 * only place that tells an operator, after a restart, that the tree was ticking until the stop. A
 * stop outside AUTO (nothing ticking) says nothing of the tree. Real kernel, real child, real HTTP.
 */
import assert from "node:assert/strict";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  automationConfig,
  enterAuto,
  MOTOR_THEN_SLEEP,
  TreeDir,
} from "../scenarios/automation_helpers.ts";

const HALTED = /halted by the runtime's stop/;

async function withTreeFile(run: (tree: string) => Promise<void>): Promise<void> {
  const dir = await TreeDir.create();
  try {
    await run(await dir.write("recipe.xml", MOTOR_THEN_SLEEP));
  } finally {
    await dir.dispose();
  }
}

Deno.test("Kernel.stop in AUTO: one INFO line says the runtime's stop halted the ticking tree (the mode stays AUTO)", async () => {
  await withTreeFile(async (tree) => {
    const { log, lines } = capturingLogger({ level: "info" });
    const rt = await startServing(automationConfig(tree, { config: { http: { port: 0 } } }), {
      log,
    });
    let stopped = false;
    try {
      await enterAuto(rt);
      await waitFor(
        "the tree ticking in AUTO",
        () => (rt.automation!.status().engine_diagnostics.total_ticks ?? 0) > 0,
      );
      await rt.stop();
      stopped = true;
      assert.equal(rt.modes.current(), "AUTO", "the stop leaves the mode as it was");
      const halted = lines.filter((l) => HALTED.test(l));
      assert.equal(halted.length, 1, `one line of the halt:\n${lines.join("\n")}`);
      assert.match(
        halted[0]!,
        new RegExp(
          `^INFO .*behavior tree ${tree.replaceAll(/[.*+?^${}()|[\]\\/]/g, "\\$&")} halted by ` +
            `the runtime's stop \\(mode AUTO\\)`,
        ),
      );
      const at = lines.indexOf(halted[0]!);
      const end = lines.findIndex((l) => l.includes("runtime stopped"));
      assert.ok(end > at, `said before 'runtime stopped':\n${lines.join("\n")}`);
    } finally {
      if (!stopped) await rt.stop().catch(() => {});
    }
  });
});

Deno.test("Kernel.stop in MANUAL: the tree was not ticking, so no line says the stop halted it", async () => {
  await withTreeFile(async (tree) => {
    const { log, lines } = capturingLogger({ level: "info" });
    const rt = await startServing(automationConfig(tree, { config: { http: { port: 0 } } }), {
      log,
    });
    let stopped = false;
    try {
      await rt.modes.request("MANUAL");
      await rt.stop();
      stopped = true;
      assert.ok(lines.some((l) => l.includes("runtime stopped")), lines.join("\n"));
      assert.deepEqual(lines.filter((l) => HALTED.test(l)), []);
    } finally {
      if (!stopped) await rt.stop().catch(() => {});
    }
  });
});
