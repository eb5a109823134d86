/**
 * The shared set-up of the scenarios that hold a reload in its window (call_reload_restart_window,
 * estop_reload_restart_window, runtime_status_unhosted, providers_health_unhosted,
 * reload_failed_start_not_removed; sparkplug/command_reload_restart): the programmable provider
 * "slow", whose process takes 4 s to exit once its stdin closes, beside the simulated sim0 and
 * sim1; a reload that restarts sim1 (its entry changed) and removes slow holds sim1 between its
 * old process's removal and its new one's registration until slow has exited. Real child
 * processes.
 */
import type { ReloadReport } from "../../src/app/reload_report.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { Config, ProviderConfig } from "../../src/config/mod.ts";
import { tempDir, waitFor } from "./kernel.ts";
import { programmableProvider } from "./programmable_provider.ts";
import { inertSim } from "../safety/_fixture.ts";

/**
 * The programmable provider "slow" (its inventory file in a temporary folder named `prefix`...):
 * once its stdin closes it takes 4 s to exit, well within the stop's budget before SIGTERM with
 * runtime.shutdown_timeout_ms 10 s (6 s).
 */
export async function slowToExit(prefix: string): Promise<ProviderConfig> {
  const slowFile = `${tempDir(prefix)}/slow.json`;
  await Deno.writeTextFile(
    slowFile,
    JSON.stringify({ exitDelayMs: 4000, devices: { probe: { signals: [] } } }),
  );
  return programmableProvider("slow", slowFile);
}

/**
 * The inert sim0 and sim1 and slow (slowToExit), and the runtime section that gives slow's exit
 * room (runtime.shutdown_timeout_ms 10 s): spread them into the test's config.
 */
export async function reloadWindowConfig(prefix: string): Promise<{
  providers: ProviderConfig[];
  runtime: Partial<Config["runtime"]>;
}> {
  return {
    providers: [inertSim("sim0"), inertSim("sim1"), await slowToExit(prefix)],
    runtime: { shutdownTimeoutMs: 10_000 },
  };
}

/**
 * Starts the reload that keeps the first provider (sim0), restarts sim1 and removes the rest
 * (slow), and resolves once it is in the window: sim1's old process gone, its new one not
 * registered (10 s at most). `reload`: that reload.
 */
export async function reloadIntoWindow(rt: Kernel): Promise<{ reload: Promise<ReloadReport> }> {
  const sim1 = rt.config.providers.find((p) => p.id === "sim1")!;
  // sim1's entry changed (restarted), slow removed: sim1 waits for slow's exit to start again.
  const reload = rt.reload({
    ...rt.config,
    providers: [rt.config.providers[0]!, { ...sim1, timeoutMs: sim1.timeoutMs + 1 }],
  });
  await waitFor(
    "sim1's old process gone, its new one not registered",
    () => rt.registry.host("sim1") === undefined && rt.registry.replacing("sim1"),
    10_000,
  );
  return { reload };
}
