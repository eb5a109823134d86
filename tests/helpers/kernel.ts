/** Boots the runtime kernel (src/app/kernel.ts) over real simulated provider processes. */
import type { Config } from "../../src/config/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import type { ProviderRegistry } from "../../src/providers/mod.ts";
import { Inventory, StateCache } from "../../src/state/mod.ts";
import { LineLogger, serveHttp, spawnProcess, systemClock } from "../../src/host/mod.ts";
import { Kernel, type KernelHost } from "../../src/app/kernel.ts";

/** Temporary folders made by this test file, removed when it ends. */
const tempDirs: string[] = [];
globalThis.addEventListener("unload", () => {
  for (const dir of tempDirs.splice(0)) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch {
      // already gone
    }
  }
});

/** A fresh temporary folder, removed when the test file ends. */
export function tempDir(prefix = "runtime-test-"): string {
  const dir = Deno.makeTempDirSync({ prefix });
  tempDirs.push(dir);
  return dir;
}

/** The repository's folder (a trailing slash). */
const REPO_PATH = new URL("../../", import.meta.url).pathname;

/**
 * The config with its own runtime.data_dir (the kernel journals audit entries and runs there):
 * a fresh temporary folder unless the config already has one of its own (under the system's
 * temporary directory), so tests running in parallel never share a journal.
 */
export function isolated(config: Config): Config {
  const tmp = (Deno.env.get("TMPDIR") ?? "/tmp").replace(/\/$/, "");
  const dir = config.runtime.dataDir;
  // A checkout may itself live under the temporary directory (CI clones to /tmp): a data dir
  // inside the repository is the shared default, never a test's own.
  if (dir.startsWith(`${tmp}/`) && !dir.startsWith(REPO_PATH)) return config;
  return { ...config, runtime: { ...config.runtime, dataDir: tempDir("runtime-data-") } };
}

/** The host ports of a test kernel: real processes, real clock and files, a quiet logger. */
export function testHost(overrides: Partial<KernelHost> = {}): KernelHost {
  return {
    spawn: spawnProcess,
    clock: systemClock,
    log: testLogger(),
    // The test logger keeps the level RUNTIME_TEST_LOG asks for, whatever a reload's logging says.
    setLogLevel: () => {},
    ...overrides,
  };
}

/** A Kernel (not started) over `isolated(config)` and the test host ports. */
export function newKernel(config: Config, host: Partial<KernelHost> = {}): Kernel {
  return new Kernel(isolated(config), testHost(host));
}

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
  options: { arm?: boolean; host?: Partial<KernelHost> } = {},
): Promise<Kernel> {
  const rt = newKernel(config, options.host);
  try {
    await rt.start();
    if (options.arm) await rt.modes.request("MANUAL");
  } catch (err) {
    await rt.stop();
    throw err;
  }
  return rt;
}

/**
 * The whole service as production runs it: HTTP served on config.http.bind/port, journals under
 * runtime.data_dir (isolated), telemetry -- over the test host ports. `await k.stop()` ends it.
 */
export function startServing(config: Config, host: Partial<KernelHost> = {}): Promise<Kernel> {
  return startRuntime(config, { host: { serve: serveHttp, ...host } });
}

/**
 * Polls `check` every `everyMs` (default 20 ms; a cheap synchronous check may poll every turn of
 * the event loop, 0) until it returns a truthy value or `timeoutMs` passes.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs = 10000,
  everyMs = 20,
): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Resolves once the device `handle` ("provider/device") has been polled `n` more times, counted
 * from the call (a poll that fails counts: the cache marks the device then too). The proof that a
 * window a test asserts "nothing happened" in has passed, measured in the runtime's own poll
 * cycles (which slow down with a loaded machine, as a fixed sleep does not). Bounded: throws
 * after `timeoutMs`, naming `what`.
 */
export async function afterPolls(
  rt: Kernel,
  handle: string,
  n: number,
  what = `${n} polls of ${handle}`,
  // Generous: a loaded CI machine (a reload restarting a provider) has taken over 10 s.
  timeoutMs = 30000,
): Promise<void> {
  const [providerId, deviceId] = handle.split("/");
  let seen = 0;
  let done: () => void = () => {};
  const reached = new Promise<void>((r) => (done = r));
  const off = rt.cache.onDevicePolled((d) => {
    if (d.providerId === providerId && d.deviceId === deviceId && ++seen >= n) done();
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out waiting for ${what} (${seen} of ${n} seen)`)),
      timeoutMs,
    );
  });
  try {
    await Promise.race([reached, late]);
  } finally {
    off();
    clearTimeout(timer);
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
