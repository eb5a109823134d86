/** Shared pieces of the provider-data scenarios: the scripted provider and a capturing logger. */
import type { ProviderConfig } from "../../src/config/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";

const DATA_PROVIDER = new URL("./_data_provider.ts", import.meta.url).pathname;

/** A provider entry running tests/scenarios/_data_provider.ts with one scenario. */
export function dataProvider(id: string, scenario: string): ProviderConfig {
  return {
    id,
    command: Deno.execPath(),
    args: ["run", "--quiet", DATA_PROVIDER, scenario],
    timeoutMs: 5000,
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

/** A logger keeping every line at `warn` and above (for asserting what was logged, and how much). */
export function capturingLogger(): { log: LineLogger; lines: string[] } {
  const lines: string[] = [];
  const log = new LineLogger({
    level: "warn",
    journald: false,
    now: () => Date.now(),
    write: (line) => lines.push(line),
  });
  return { log, lines };
}
