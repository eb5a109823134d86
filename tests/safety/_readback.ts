/**
 * Runs the scripted read-back provider (tests/safety/_readback_provider.ts; in-process by
 * default: tests/helpers/readback_program.ts) under the rig's runtime (tests/helpers/rig.ts). Its
 * signals declare no poll hint, so nothing polls them: every ReadSignals the provider sees is a
 * read-back.
 */
import type { ProviderConfig } from "../../src/config/mod.ts";
import type { ProviderRegistry } from "../../src/providers/mod.ts";
import type { StateCache } from "../../src/state/mod.ts";
import { type DeviceScript, READBACK_MAIN } from "../helpers/readback_program.ts";
import { waitFor } from "../helpers/kernel.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { type ManualClock, runToSettle } from "../helpers/clock.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { call, expectation } from "./_fixture.ts";

export type { DeviceScript };

/** A provider entry running the scripted read-back provider. */
export function readbackProvider(
  id: string,
  script: Record<string, DeviceScript>,
  o: { logFile?: string; timeoutMs?: number } = {},
): ProviderConfig {
  return {
    id,
    command: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      "--allow-write",
      READBACK_MAIN,
      JSON.stringify(script),
      ...(o.logFile ? [o.logFile] : []),
    ],
    timeoutMs: o.timeoutMs ?? 5000,
    helloTimeoutMs: 10000,
    readyTimeoutMs: 10000,
    restartPolicy: {
      enabled: false,
      maxAttempts: 1,
      backoffMs: [100],
      timeoutMs: 30000,
      successResetMs: 1000,
    },
  };
}

/** A started runtime over the given providers; `close()` stops it and removes the log file. */
export interface ReadbackFixture {
  readonly registry: ProviderRegistry;
  /** The runtime's fresh-read port (the state cache). */
  readonly cache: StateCache;
  /** The ReadSignals each provider received, one `<device> <signal ids>` line each. */
  reads(): string[];
  readonly logFile: string;
  close(): Promise<void>;
}

/**
 * Starts the providers `make(logFile)` returns (they may share the one log file). The poll loop
 * runs every `pollingIntervalMs` (default 60 s: no cycle within a test, and the priming pass asks
 * for no GetHealth, so a hung read-back holds no poll and stop() waits for none). With a
 * ManualClock `clock`, the runtime and the providers run on it (virtual time: the test drives it
 * with runUntil, close() too; journals in memory).
 */
export async function startReadback(
  make: (logFile: string) => ProviderConfig[],
  o: { pollingIntervalMs?: number; clock?: ManualClock } = {},
): Promise<ReadbackFixture> {
  const logFile = await Deno.makeTempFile({ prefix: "readback-" });
  let r;
  try {
    r = await rig({
      providers: make(logFile),
      pollingIntervalMs: o.pollingIntervalMs ?? 60_000,
      // A provider hung on a read-back does not see stdin close: stop() ends it by signal after
      // 60 % of this budget (ProviderSession.terminate).
      runtime: { shutdownTimeoutMs: 500 },
      ...(o.clock ? { clock: o.clock, host: { files: new MemoryFiles() } } : {}),
    });
  } catch (err) {
    await Deno.remove(logFile);
    throw err;
  }
  const { registry, cache } = r.kernel;
  return {
    registry,
    cache,
    logFile,
    reads: () => Deno.readTextFileSync(logFile).split("\n").filter((l) => l !== ""),
    close: async () => {
      await (o.clock ? runToSettle(o.clock, r.kernel.stop(), "the stop") : r.stop());
      await Deno.remove(logFile);
    },
  };
}

/** How long the supervisor may take to have a killed provider back (EstopReadbackRig). */
export const RESTART_WAIT_MS = 20_000;

/** What estopReadbackRig builds the runtime of. */
export interface EstopReadbackOptions {
  /** The prefix of the temporary log file provider rb writes. */
  readonly logPrefix: string;
  /** rb's one device dev0, its one signal `out` (bool) aside: reads, delay, how calls answer. */
  readonly dev0: Omit<DeviceScript, "signals">;
  /** runtime.shutdown_timeout_ms. */
  readonly shutdownTimeoutMs: number;
  /** safety.verify_timeout_ms. */
  readonly verifyTimeoutMs: number;
  /** rb's timeout_ms (each request's bound; default readbackProvider's). */
  readonly providerTimeoutMs?: number;
  /**
   * rb restarted by its supervisor (default: never): restarts enabled, the policy's maxAttempts
   * and backoffMs (one step) those given, else readbackProvider's.
   */
  readonly restart?: { readonly maxAttempts?: number; readonly backoffMs?: number };
}

/** A started rig (tests/helpers/rig.ts) and what its read-back provider rb wrote. */
export interface EstopReadbackRig extends Rig {
  /** rb's log: `dev0 out` a ReadSignals, `call dev0 set_output` a call. */
  readonly logFile: string;
  /** The log's lines so far. */
  providerLines(): string[];
  /** Waits for the first read-back's ReadSignals at rb. */
  readBackAsked(): Promise<void>;
  /**
   * Kills rb (SIGKILL), waits for it down, then back (RESTART_WAIT_MS), then for the read-back of
   * its securing run under the latch at the new process. Returns the log's line count before the
   * kill.
   */
  restartUnderLatch(): Promise<number>;
}

/**
 * The runtime of the e-stop read-back tests of Kernel.stop (tests/app/kernel_stop_estop_*): the
 * read-back provider "rb" as a real child process (device dev0, signal `out`, its log in a
 * temporary file), an e-stop whose ladder calls rb/dev0 set_output and expects rb/dev0/out false.
 * Disposing of it stops the runtime and removes the log file.
 */
export async function estopReadbackRig(o: EstopReadbackOptions): Promise<EstopReadbackRig> {
  const logFile = await Deno.makeTempFile({ prefix: o.logPrefix });
  const base = readbackProvider("rb", { dev0: { signals: { out: "bool" }, ...o.dev0 } }, {
    logFile,
    ...(o.providerTimeoutMs === undefined ? {} : { timeoutMs: o.providerTimeoutMs }),
  });
  const provider: ProviderConfig = o.restart === undefined ? base : {
    ...base,
    restartPolicy: {
      ...base.restartPolicy,
      enabled: true,
      maxAttempts: o.restart.maxAttempts ?? base.restartPolicy.maxAttempts,
      backoffMs: o.restart.backoffMs === undefined
        ? base.restartPolicy.backoffMs
        : [o.restart.backoffMs],
    },
  };
  let r: Rig;
  try {
    r = await rig({
      programs: false, // the read-back provider as a real child process
      providers: [provider],
      runtime: { shutdownTimeoutMs: o.shutdownTimeoutMs },
      safety: {
        hooks: [call("rb/dev0", "set_output")],
        expect: [expectation("rb/dev0/out", { equals: false })],
        verifyTimeoutMs: o.verifyTimeoutMs,
      },
    });
  } catch (err) {
    await Deno.remove(logFile).catch(() => {});
    throw err;
  }
  const providerLines = () => Deno.readTextFileSync(logFile).split("\n").filter((l) => l !== "");
  return {
    ...r,
    logFile,
    providerLines,
    readBackAsked: async () => {
      await waitFor(
        "the read-back's ReadSignals at the provider",
        () => Deno.readTextFileSync(logFile).includes("dev0 out"),
      );
    },
    restartUnderLatch: async () => {
      const host = r.kernel.registry.host("rb")!;
      const before = providerLines().length;
      r.kill("rb");
      await waitFor("rb down", () => !host.available);
      await waitFor("rb back", () => host.available, RESTART_WAIT_MS);
      await waitFor(
        "the securing run's read-back at the restarted provider",
        () => providerLines().slice(before).some((l) => l === "dev0 out"),
        RESTART_WAIT_MS,
      );
      return before;
    },
    [Symbol.asyncDispose]: async () => {
      await r.stop();
      await Deno.remove(logFile).catch(() => {});
    },
  };
}
