/**
 * The policy provider (tests/helpers/_policy_provider.ts, a real child process on the provider
 * SDK) as a provider entry, and a read of its counters through the runtime's own call path.
 */
import type { ProviderConfig } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { scalarOf } from "../../src/common/mod.ts";

const MAIN = new URL("./_policy_provider.ts", import.meta.url).pathname;

/**
 * The provider's call timeout (`timeout_ms`), which also judges its liveness: 30 s, not 5 s, so
 * that a loaded machine stalling the child for a few seconds neither fails a call (the counters
 * read by `policyStats`) nor marks the provider down. No test of it is about timeouts.
 */
export const POLICY_PROVIDER_TIMEOUT_MS = 30_000;

/** A provider entry running the policy provider under this Deno. */
export function policyProvider(id = "pol"): ProviderConfig {
  return {
    id,
    command: Deno.execPath(),
    args: ["run", "--quiet", MAIN],
    timeoutMs: POLICY_PROVIDER_TIMEOUT_MS,
    helloTimeoutMs: 10000,
    readyTimeoutMs: 10000,
    restartPolicy: {
      enabled: false,
      maxAttempts: 3,
      backoffMs: [100, 1000, 5000],
      timeoutMs: 30000,
      successResetMs: 1000,
    },
  };
}

/** The provider's counters: `reads_<device>` (ReadSignals) and `calls_<function of act0>`. */
export async function policyStats(rt: Kernel, id = "pol"): Promise<Record<string, number>> {
  const r = await rt.router.call({
    providerId: id,
    deviceId: "meta0",
    functionName: "stats",
    args: {},
    origin: "manual",
  });
  return Object.fromEntries(
    Object.entries(r.results).map(([k, v]) => [k, Number(scalarOf(v))]),
  );
}
