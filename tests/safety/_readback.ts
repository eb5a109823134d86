/**
 * Runs tests/safety/_readback_provider.ts as real child processes under a bare ProviderRegistry
 * (no state cache, so nothing polls: every ReadSignals the provider sees is a read-back).
 */
import type { ProviderConfig } from "../../src/config/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";
import { ProviderRegistry } from "../../src/providers/mod.ts";
import { testLogger } from "../helpers/kernel.ts";

const READBACK_MAIN = new URL("./_readback_provider.ts", import.meta.url).pathname;

/** One device of the scripted provider (see _readback_provider.ts). */
export interface DeviceScript {
  signals: Record<string, "bool" | "double" | "int64" | "uint64" | "string">;
  reads: Array<Record<string, { v?: boolean | number | string; q?: string }>>;
  then?: "repeat" | "hang" | "fail";
  delayMs?: number;
  actuate?: "ok" | "unavailable";
}

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

/** A started registry of the given providers; `close()` stops them and removes the log file. */
export interface ReadbackFixture {
  readonly registry: ProviderRegistry;
  /** The ReadSignals each provider received, one `<device> <signal ids>` line each. */
  reads(): string[];
  readonly logFile: string;
  close(): Promise<void>;
}

/** Starts the providers `make(logFile)` returns (they may share the one log file). */
export async function startReadback(
  make: (logFile: string) => ProviderConfig[],
): Promise<ReadbackFixture> {
  const logFile = await Deno.makeTempFile({ prefix: "readback-" });
  const registry = new ProviderRegistry(make(logFile), {
    spawn: spawnProcess,
    clock: systemClock,
    log: testLogger(),
    bus: new EventBus(),
    cwd: ".",
    shutdownTimeoutMs: 2000,
  });
  try {
    await registry.startAll(20000, 2000);
  } catch (err) {
    await Deno.remove(logFile);
    throw err;
  }
  return {
    registry,
    logFile,
    reads: () => Deno.readTextFileSync(logFile).split("\n").filter((l) => l !== ""),
    close: async () => {
      await registry.stopAll(2000);
      await Deno.remove(logFile);
    },
  };
}
