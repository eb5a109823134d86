/**
 * The one rig of the unit tests of state/, control/ and safety/: the runtime's subsystems built
 * by the production Kernel (src/app/kernel.ts) from a test config and test host ports, so a test
 * gets the registry, inventory, cache, outages, router, modes, e-stop, alarms and audit wired as
 * production wires them, not an assembly of its own.
 *
 * Providers run in-process by default (tests/helpers/in_process_provider.ts over the programs of
 * tests/helpers/programs.ts: the simulated provider, the plant, the programmable and the read-back
 * provider); a provider whose program is not
 * known, or every provider with `programs: false` (or RUNTIME_TEST_CHILDREN=1 in the environment:
 * a whole test file against real children, but for rigs on a ManualClock), runs as a real child
 * process. The clock is the
 * system's unless a test gives one; in-process providers sleep on it too. With a ManualClock
 * (tests/helpers/clock.ts), start and stop fire the timers that fall due meanwhile without moving
 * time; a test runs virtual time with runUntil (memory journal files: tests/helpers/
 * memory_files.ts).
 *
 *   await using r = await rig({ providers: [plantProvider("plant")], arm: true });
 *   await r.kernel.router.call({ ... });
 *   r.provider<FakeProvider>("plant").count("call");
 */
import type { Clock, LogLevel } from "../../src/common/mod.ts";
import type { Config } from "../../src/config/mod.ts";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { LineLogger, spawnProcess, systemClock } from "../../src/host/mod.ts";
import type { ProviderHandler } from "../../src/provider_sdk/mod.ts";
import type { Kernel, KernelHost } from "../../src/app/kernel.ts";
import { ManualClock, settleOn } from "./clock.ts";
import { type InProcessSpawn, inProcessSpawn, type Programs } from "./in_process_provider.ts";
import { newKernel } from "./kernel.ts";
import { TEST_PROGRAMS } from "./programs.ts";
import { testConfig, type TestConfigOptions } from "./sim_config.ts";

/** How to build a rig: the config (testConfig's options, no providers unless given) and host. */
export interface RigOptions extends TestConfigOptions {
  /** The whole config instead of testConfig(these options). */
  readonly config?: Config;
  /**
   * The programs run in-process (default TEST_PROGRAMS; a provider entry naming another program
   * runs as a real child); false: every provider is a real child process.
   */
  readonly programs?: Programs | false;
  /** Time and timers of every subsystem (default the system clock). */
  readonly clock?: Clock;
  /** rig(): starts the kernel: providers up, the priming poll, polling (default true). */
  readonly start?: boolean;
  /** After start, IDLE -> MANUAL (actuating calls allowed). */
  readonly arm?: boolean;
  /** The lowest level `lines` keeps (default "info"). */
  readonly logLevel?: LogLevel;
  /** `lines` in journald form (`<N>[scope] text`) instead of `LEVEL time [scope] text`. */
  readonly journald?: boolean;
  /** Told every line `lines` keeps, as it is written. */
  readonly onLine?: (line: string) => void;
  /** Other host ports (spawn and clock here win over `programs` and `clock`). */
  readonly host?: Partial<KernelHost>;
}

/** A kernel under test and what the rig saw of it. */
export interface Rig extends AsyncDisposable {
  readonly kernel: Kernel;
  readonly clock: Clock;
  /** The in-process spawn (null when every provider is a real child). */
  readonly fakes: InProcessSpawn | null;
  /** Every event published on the kernel's bus since it was built. */
  readonly events: RuntimeEvent[];
  /** Every log line at `logLevel` and above (echoed to stderr when RUNTIME_TEST_LOG is set). */
  readonly lines: string[];
  /** The handler of provider `id`'s current in-process process (throws when there is none). */
  provider<T extends ProviderHandler = ProviderHandler>(id: string): T;
  /**
   * Sends `signal` (default SIGKILL) to provider `id`'s current process, in-process or a real
   * child; returns its pid.
   */
  kill(id: string, signal?: "SIGTERM" | "SIGKILL"): number;
  /** Starts the kernel (see Kernel.start). */
  start(): Promise<void>;
  /** Stops the kernel (providers, polling, journals); idempotent. */
  stop(): Promise<void>;
}

/** Builds and, unless `start: false`, starts a kernel over the test host ports (see rigNotStarted). */
export async function rig(o: RigOptions = {}): Promise<Rig> {
  const r = rigNotStarted(o);
  if (o.start ?? true) {
    try {
      await r.start();
      if (o.arm) await settle(r.clock, r.kernel.modes.request("MANUAL"), "MANUAL");
    } catch (err) {
      await r.stop();
      throw err;
    }
  }
  return r;
}

/** `p`'s outcome; on a ManualClock, the timers that fall due meanwhile fire (settleOn). */
function settle<T>(clock: Clock, p: Promise<T>, what: string): Promise<T> {
  return clock instanceof ManualClock ? settleOn(clock, p, what) : p;
}

/**
 * A rig whose kernel is built but not started (no process, no timer): for a test of subsystems
 * that need no provider up, e.g. the mode manager or the e-stop over an empty registry.
 */
export function rigNotStarted(o: RigOptions = {}): Rig {
  const clock = o.host?.clock ?? o.clock ?? systemClock;
  // Virtual time (a ManualClock) needs its providers in-process: a child sleeps in real time.
  const children = o.programs === false ||
    (Deno.env.get("RUNTIME_TEST_CHILDREN") === "1" && !(clock instanceof ManualClock));
  const fakes = children
    ? null
    : inProcessSpawn(o.programs ?? TEST_PROGRAMS, { otherwise: spawnProcess, clock });
  const lines: string[] = [];
  const echo = Deno.env.get("RUNTIME_TEST_LOG") !== undefined;
  const log = new LineLogger({
    level: o.logLevel ?? "info",
    journald: o.journald ?? false,
    now: () => clock.nowMs(),
    write: (line) => {
      lines.push(line);
      o.onLine?.(line);
      if (echo) console.error(line);
    },
  });
  const config = o.config ?? testConfig({ ...o, providers: o.providers ?? [] });
  const kernel = newKernel(config, {
    spawn: fakes?.spawn ?? spawnProcess,
    log,
    ...o.host,
    clock,
  });
  const events: RuntimeEvent[] = [];
  kernel.bus.subscribe((e) => events.push(e.event));
  const stop = () => settle(clock, kernel.stop(), "the kernel's stop");
  return {
    kernel,
    clock,
    fakes,
    events,
    lines,
    provider<T extends ProviderHandler>(id: string): T {
      const pid = kernel.registry.host(id)?.session?.pid;
      const handler = pid === undefined ? undefined : fakes?.process(pid)?.handler;
      if (handler == null) throw new Error(`provider ${id} has no in-process process running`);
      return handler as T;
    },
    kill(id, signal = "SIGKILL") {
      const pid = kernel.registry.host(id)?.session?.pid;
      if (pid === undefined) throw new Error(`provider ${id} has no process running`);
      const fake = fakes?.process(pid);
      if (fake) fake.kill(signal);
      else Deno.kill(pid, signal);
      return pid;
    },
    start: () => settle(clock, kernel.start(), "the kernel's start"),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
