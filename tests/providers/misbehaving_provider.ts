/**
 * The misbehaving provider (_misbehaving_provider.ts) as a real child process, provider `p0`,
 * behind a ProviderRegistry and a StateCache built directly (nothing polls unless the test asks),
 * every log line kept.
 */
import { EventBus } from "../../src/events/mod.ts";
import { ProviderRegistry } from "../../src/providers/mod.ts";
import { StateCache } from "../../src/state/mod.ts";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import type { MisbehaviourPlan } from "./_misbehaving_provider.ts";

export type { MisbehaviourPlan } from "./_misbehaving_provider.ts";

const MAIN = new URL("./_misbehaving_provider.ts", import.meta.url).pathname;

/** Starts provider `p0` with `plan`; `close` stops the cache and the provider. */
export async function startMisbehaving(plan: MisbehaviourPlan) {
  const file = await Deno.makeTempFile({ prefix: "misbehaving-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(plan));
  const { log, lines } = capturingLogger({ now: () => 0 });
  const bus = new EventBus();
  const registry = new ProviderRegistry([{
    id: "p0",
    command: Deno.execPath(),
    args: ["run", "--quiet", "--allow-read", MAIN, file],
    timeoutMs: 5000,
    helloTimeoutMs: 10000,
    readyTimeoutMs: 10000,
    restartPolicy: {
      enabled: false,
      maxAttempts: 3,
      backoffMs: [0, 0, 0],
      timeoutMs: 30000,
      successResetMs: 60000,
    },
  }], {
    spawn: spawnProcess,
    clock: systemClock,
    log,
    bus,
    cwd: Deno.cwd(),
    shutdownTimeoutMs: 1000,
  });
  const cache = new StateCache({ registry, bus, clock: systemClock, log, intervalMs: 60_000 });
  const close = async () => {
    await cache.stop();
    await registry.stopAll(1000);
    await Deno.remove(file).catch(() => {});
  };
  try {
    await registry.startAll(30_000, 1000);
  } catch (err) {
    await close();
    throw err;
  }
  return { registry, cache, lines, close };
}
