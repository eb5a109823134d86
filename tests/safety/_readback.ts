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
import { rig } from "../helpers/rig.ts";
import { type ManualClock, runToSettle } from "../helpers/clock.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";

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
