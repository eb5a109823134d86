/**
 * A configured provider no host is registered under, made on purpose: a host listener that
 * throws makes ProviderRegistry.add take the host out again ("Provider <id> not registered: a
 * host listener failed: listener broke"), so a reload that restarts or adds the provider leaves
 * its id configured with no host. And the kernel's API served on a real loopback socket, as the
 * scenarios that read such a provider over HTTP need it.
 */
import type { Config } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { ProviderRegistry } from "../../src/providers/mod.ts";
import { HttpApi } from "../../src/http/mod.ts";
import { fixtureServices, HttpFixture } from "./runtime_fixture.ts";

/** The reason a reload reports (and the registry keeps) for a host refuseRegistration refused. */
export const NOT_REGISTERED = (id: string) =>
  `Provider ${id} not registered: a host listener failed: listener broke`;

/**
 * Refuses every registration of a host under `id` from now on (the hosts registered already are
 * left alone) until the answered function is called.
 */
export function refuseRegistration(registry: ProviderRegistry, id: string): () => void {
  let refuse = false;
  registry.eachHost((host) => {
    if (refuse && host.id === id) throw new Error("listener broke");
  });
  refuse = true;
  return () => void (refuse = false);
}

/** `config` with provider `id`'s entry changed (timeout_ms one more): a reload restarts it. */
export function withEntryChanged(config: Config, id: string): Config {
  return {
    ...config,
    providers: config.providers.map((p) => p.id === id ? { ...p, timeoutMs: p.timeoutMs + 1 } : p),
  };
}

/** The kernel's API (its services, no token) on 127.0.0.1; disposing it closes and shuts it. */
export async function serveKernelApi(rt: Kernel): Promise<{ port: number } & AsyncDisposable> {
  const services = fixtureServices(rt);
  const api = new HttpApi(services, { apiToken: "" });
  const server = await new HttpFixture(rt, services, api).serve();
  return {
    port: server.port,
    [Symbol.asyncDispose]: async () => {
      api.close();
      await server.shutdown();
    },
  };
}
