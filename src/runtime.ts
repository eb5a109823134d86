/**
 * Composition root: config + host -> subsystems, and their start/stop order.
 * Start: providers (concurrently, bounded by startup_timeout_ms) -> one priming poll -> polling
 * -> (HTTP etc. added by main). Stop: stop accepting work -> stop polling -> end providers.
 */
import { type Clock, type Logger, type ProviderHealthView, type SpawnFn } from "./common/mod.ts";
import type { Config } from "./config/mod.ts";
import { CallRouter, ModeManager, ParameterStore, validateDeclaredCalls } from "./control/mod.ts";
import { EventBus } from "./events/mod.ts";
import { readFileBytes } from "./host/mod.ts";
import { ProviderRegistry } from "./providers/mod.ts";
import { providerHealthViews, StateCache } from "./state/mod.ts";
import { effectiveSafeState, Estop } from "./safety/mod.ts";
// --- automation (issue 6) ---
import { AutomationEngine, type ReadFileFn } from "./automation/mod.ts";

/** What the runtime needs from the host (injected so tests can pass their own). */
export interface RuntimeHost {
  readonly spawn: SpawnFn;
  readonly clock: Clock;
  readonly log: Logger;
  // --- automation (issue 6) ---
  /** Reads behavior-tree files (default: host readFileBytes); tests may pass their own. */
  readonly readFile?: ReadFileFn;
}

/** The running service's kernel: providers, state cache, call router and event bus. */
export class Runtime {
  readonly config: Config;
  readonly host: RuntimeHost;
  readonly bus: EventBus;
  readonly registry: ProviderRegistry;
  readonly cache: StateCache;
  readonly router: CallRouter;
  // --- modes, parameters, e-stop (issue 5) ---
  /** Runtime mode (IDLE at start); its gate is on the router. */
  readonly modes: ModeManager;
  /** Automation parameters; absent when automation is disabled (HTTP answers 503). */
  readonly parameters?: ParameterStore;
  /** Software e-stop latch and safe-state ladder; its gate is on the router. */
  readonly estop: Estop;
  // --- end modes, parameters, e-stop ---
  // --- automation (issue 6) ---
  /** Behavior-tree automation; absent when automation is disabled (HTTP answers 503). */
  readonly automation?: AutomationEngine;
  // --- end automation ---
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
    // --- modes, parameters, e-stop (issue 5): gates register on the router here, mode first ---
    const automation = config.automation;
    this.modes = new ModeManager({
      router: this.router,
      registry: this.registry,
      bus: this.bus,
      clock: host.clock,
      log,
      automationEnabled: automation.enabled,
      manualGatingPolicy: automation.manualGatingPolicy,
      hooks: automation.modeTransitionHooks,
    });
    if (automation.enabled) {
      this.parameters = new ParameterStore({
        parameters: automation.parameters,
        bus: this.bus,
        clock: host.clock,
        log,
      });
    }
    const { safeState, adopted } = effectiveSafeState(config);
    if (adopted) {
      log.warn(
        `no safety section: ${safeState.hooks.length} call(s) of *->FAULT mode-transition hooks adopted as safety.safe_state.hooks`,
      );
    }
    // The e-stop always commits FAULT (with or without automation: a reset must never leave the
    // machine armed) and refuses arming while latched.
    this.estop = new Estop({
      router: this.router,
      registry: this.registry,
      clock: host.clock,
      log,
      safeState,
      modes: this.modes,
      bus: this.bus,
    });
    // A rediscovery may add actuating functions: AUTO must then still have its FAULT hook.
    for (const h of this.registry.hosts) h.onInventory(() => void this.modes.recheckAutoGate());
    // --- end modes, parameters, e-stop ---
    // --- automation (issue 6): ticks only in AUTO; an e-stop forces FAULT, which halts it ---
    if (automation.enabled) {
      this.automation = new AutomationEngine({
        behaviorTree: automation.behaviorTree,
        tickRateHz: automation.tickRateHz,
        cache: this.cache,
        router: this.router,
        inventory: {
          providerAvailable: (id) => this.registry.host(id)?.available ?? false,
          devicesOf: (id) => this.registry.host(id)?.devices.map((d) => d.device.deviceId) ?? [],
        },
        ...(this.parameters ? { parameters: this.parameters } : {}),
        modes: this.modes,
        bus: this.bus,
        clock: host.clock,
        log,
        readFile: host.readFile ?? readFileBytes,
      });
    }
    // --- end automation ---
  }

  /** Brings every provider up (fail-fast), primes the cache and starts polling. */
  async start(): Promise<void> {
    this.#startedAtMono = this.host.clock.monoMs();
    // --- automation (issue 6): a tree that does not load fails the start before any spawn ---
    await this.automation?.load();
    // --- end automation ---
    await this.registry.startAll(
      this.config.runtime.startupTimeoutMs,
      this.config.runtime.shutdownTimeoutMs,
    );
    await this.cache.start();
    // --- modes, parameters, e-stop (issue 5): start-up preflight, log only (config.md §6) ---
    for (const problem of validateDeclaredCalls(this.config, this.registry)) {
      this.host.log.error(`declared call does not resolve: ${problem}`);
    }
    // The exact e-stop plan, its gaps and unverifiable devices; logged again on inventory change.
    this.estop.logPlan("start-up");
    // --- end modes, parameters, e-stop ---
    // --- automation (issue 6) ---
    this.automation?.start();
    // --- end automation ---
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
        this.registry.hosts.map(async (h) =>
          [h.id, await this.cache.fetchReportedHealth(h)] as const
        ),
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
      this.automation?.stop(); // automation (issue 6): halt the tree before polling stops
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
