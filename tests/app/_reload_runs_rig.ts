/**
 * The rigs of the reload-and-runs tests (kernel_reload_runs_test, kernel_reload_run_facts_test):
 * the real kernel over the simulated provider, with its data in a temporary folder or running a
 * behavior tree, and the run events a reload leaves.
 */
import type { Kernel } from "../../src/app/kernel.ts";
import type { Config } from "../../src/config/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig, type TestConfigOptions } from "../helpers/sim_config.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/**
 * A runtime whose runtime.data_dir is a fresh temporary folder (with `o` besides); stopped and
 * the folder removed after `body`, which gets the configuration it started with.
 */
export async function withDataDirRuntime(
  o: TestConfigOptions,
  body: (rt: Kernel, base: Config) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "reload_runs_" });
  const base = testConfig({ runtime: { dataDir: dir }, ...o });
  const rt = await startRuntime(base);
  try {
    await body(rt, base);
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Two trees in a temporary folder, `a` (a Sleep of 60 s) and `b` (50 s), and a runtime running
 * `a`; stopped and the folder removed after `body`.
 */
export async function withTreeRuntime(
  body: (rt: Kernel, trees: { a: string; b: string }) => Promise<void>,
): Promise<void> {
  const dir = await TreeDir.create();
  try {
    const a = await dir.write("a.xml", treeXml(`<Sleep msec="60000" />`));
    const b = await dir.write("b.xml", treeXml(`<Sleep msec="50000" />`));
    const rt = await startRuntime(automationConfig(a));
    try {
      await body(rt, { a, b });
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
}

/** Reloads the configuration in force with its automation section changed by `change`. */
export function reloadAutomation(rt: Kernel, change: Partial<Config["automation"]>) {
  return rt.reload({ ...rt.config, automation: { ...rt.config.automation, ...change } });
}

/** The tick rate that is not the one in force (20 Hz, or 10 when it is 20). */
export function otherTickRate(rt: Kernel): number {
  return rt.config.automation.tickRateHz === 20 ? 10 : 20;
}
