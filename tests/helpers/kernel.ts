/** Boots the runtime kernel (src/app/kernel.ts) over real simulated provider processes. */
import type { Config } from "../../src/config/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import type { ProviderRegistry } from "../../src/providers/mod.ts";
import { Inventory, StateCache } from "../../src/state/mod.ts";
import { LineLogger, spawnProcess, systemClock } from "../../src/host/mod.ts";
import { Kernel } from "../../src/app/kernel.ts";

/** A logger for tests: silent unless RUNTIME_TEST_LOG=debug|info|warn|error is set. */
export function testLogger(): LineLogger {
  const level = Deno.env.get("RUNTIME_TEST_LOG");
  return new LineLogger({
    level: (level as "debug") ?? "error",
    journald: false,
    now: () => Date.now(),
    write: level ? (line) => console.error(line) : () => {},
  });
}

/**
 * Starts a Kernel; the caller must `await rt.stop()` (try/finally). With `arm`, switches the
 * mode from IDLE to MANUAL so actuating calls are allowed.
 */
export async function startRuntime(
  config: Config,
  options: { arm?: boolean } = {},
): Promise<Kernel> {
  const rt = new Kernel(config, { spawn: spawnProcess, clock: systemClock, log: testLogger() });
  try {
    await rt.start();
    if (options.arm) await rt.modes.request("MANUAL");
  } catch (err) {
    await rt.stop();
    throw err;
  }
  return rt;
}

/** Polls `check` every 20 ms until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs = 10000,
): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Collects events from the runtime's bus until disposed. */
export function recordEvents(rt: Kernel): { events: RuntimeEvent[]; stop: () => void } {
  const events: RuntimeEvent[] = [];
  const stop = rt.bus.subscribe((e) => events.push(e.event));
  return { events, stop };
}

/** True while a process with this pid exists (and is not a zombie). */
export function processAlive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

/** startRuntime in MANUAL mode: actuating calls allowed. */
export function startArmed(config: Config): Promise<Kernel> {
  return startRuntime(config, { arm: true });
}

/**
 * The read ports the upper layers get over a bare registry (a test that builds the e-stop or the
 * mode manager by hand): the inventory and the fresh reads of a state cache over it.
 */
export function readPorts(registry: ProviderRegistry): { inventory: Inventory; reads: StateCache } {
  return {
    inventory: new Inventory(registry),
    reads: new StateCache({
      registry,
      bus: new EventBus(),
      clock: systemClock,
      log: testLogger(),
      intervalMs: 60_000,
    }),
  };
}
