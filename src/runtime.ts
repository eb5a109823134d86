/**
 * Composition root: config + host -> subsystems, and their start/stop order.
 * Start: providers (concurrently, bounded by startup_timeout_ms) -> one priming poll -> polling
 * -> (HTTP etc. added by main). Stop: stop accepting work -> stop polling -> end providers.
 */
import {
  type Clock,
  type Logger,
  type ProviderHealthView,
  type SpawnFn,
} from "./common/mod.ts";
import type { Config } from "./config/mod.ts";
import { CallRouter } from "./control/mod.ts";
import { EventBus } from "./events/mod.ts";
import { ProviderRegistry } from "./providers/mod.ts";
import { providerHealthViews, StateCache } from "./state/mod.ts";

/** What the runtime needs from the host (injected so tests can pass their own). */
export interface RuntimeHost {
  readonly spawn: SpawnFn;
  readonly clock: Clock;
  readonly log: Logger;
}

/** The running service's kernel: providers, state cache, call router and event bus. */
export class Runtime {
  readonly config: Config;
  readonly host: RuntimeHost;
  readonly bus: EventBus;
  readonly registry: ProviderRegistry;
  readonly cache: StateCache;
  readonly router: CallRouter;
  #startedAtMono = 0;
  #stopping: Promise<void> | null = null;

  constructor(config: Config, host: RuntimeHost) {
    this.config = config;
    this.host = host;
    const log = host.log;
    this.bus = new EventBus({
      onListenerError: (err) => log.error(`event listener failed: ${errText(err)}`),
    });
    this.registry = new ProviderRegistry(config.providers, {
      spawn: host.spawn,
      clock: host.clock,
      log: log.child("provider"),
      bus: this.bus,
      cwd: config.configDir,
      shutdownTimeoutMs: config.runtime.shutdownTimeoutMs,
    });
    this.cache = new StateCache({
      registry: this.registry,
      bus: this.bus,
      clock: host.clock,
      log,
      intervalMs: config.polling.intervalMs,
    });
    this.router = new CallRouter({ registry: this.registry, cache: this.cache, log });
  }

  /** Brings every provider up (fail-fast), primes the cache and starts polling. */
  async start(): Promise<void> {
    this.#startedAtMono = this.host.clock.monoMs();
    await this.registry.startAll(
      this.config.runtime.startupTimeoutMs,
      this.config.runtime.shutdownTimeoutMs,
    );
    await this.cache.start();
    this.host.log.info(
      `runtime up: ${this.registry.hosts.length} provider(s), ${this.registry.devices().length} device(s)`,
    );
  }

  /** Seconds since start() began. */
  uptimeSeconds(): number {
    return Math.floor((this.host.clock.monoMs() - this.#startedAtMono) / 1000);
  }

  /** GET /v0/providers/health from the cached view. */
  providerHealth(): ProviderHealthView[] {
    return providerHealthViews(this.registry, this.cache, {
      pollingIntervalMs: this.config.polling.intervalMs,
      staleness: this.config.health.staleness,
      nowMs: this.host.clock.nowMs(),
    });
  }

  /** Health with a live GetHealth round-trip per available provider (telemetry snapshots). */
  async providerHealthLive(): Promise<ProviderHealthView[]> {
    const live = new Map(
      await Promise.all(
        this.registry.hosts.map(async (h) => [h.id, await this.cache.fetchReportedHealth(h)] as const),
      ),
    );
    return providerHealthViews(this.registry, this.cache, {
      pollingIntervalMs: this.config.polling.intervalMs,
      staleness: this.config.health.staleness,
      nowMs: this.host.clock.nowMs(),
    }, live);
  }

  /** Stops polling and ends every provider within runtime.shutdown_timeout_ms. Idempotent. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const budget = this.config.runtime.shutdownTimeoutMs;
      await this.cache.stop();
      await this.registry.stopAll(budget);
      this.host.log.info("runtime stopped");
    })();
    return this.#stopping;
  }
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
