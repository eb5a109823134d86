/**
 * Composition root: config + host -> subsystems, and their start/stop order.
 * Start: providers (concurrently) -> one priming poll -> polling -> (HTTP etc. added by main);
 * providers and the priming poll together are bounded by startup_timeout_ms.
 * Stop: stop accepting work -> stop polling -> end providers.
 */
import {
  type Clock,
  type Logger,
  type ProviderHealthView,
  RuntimeError,
  type SpawnFn,
  unavailable,
} from "../common/mod.ts";
import type { Config, ConfigDiff, ProviderConfig } from "../config/mod.ts";
import { CallRouter, ModeManager, ParameterStore, validateDeclaredCalls } from "../control/mod.ts";
import { EventBus } from "../events/mod.ts";
import { readFileBytes } from "../host/mod.ts";
import { describeNotReady, ProviderRegistry } from "../providers/mod.ts";
import {
  deviceDownAfterMs,
  DeviceOutages,
  Inventory,
  providerHealthViews,
  StateCache,
} from "../state/mod.ts";
import { effectiveSafeState, Estop } from "../safety/mod.ts";
// --- automation (issue 6) ---
import { AutomationEngine, type ReadFileFn, type TreeReload } from "../automation/mod.ts";
// --- alarms and interlocks (issue 20) ---
import { AlarmEngine } from "../alarms/mod.ts";
// --- audit trail (issue 21) ---
import { AuditTrail } from "../audit/mod.ts";

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
  #config: Config;
  readonly host: RuntimeHost;
  readonly bus: EventBus;
  readonly registry: ProviderRegistry;
  /** The registry as the upper layers may see it: read-only, no frame (state/inventory.ts). */
  readonly inventory: Inventory;
  readonly cache: StateCache;
  /** Whether each device is failing or down (AUTO gate, device-loss latch, alarms). */
  readonly outages: DeviceOutages;
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
  #alarms: AlarmEngine;
  /**
   * Audit trail of every actuating decision (issue 21): in memory until the service opens its
   * journal under runtime.data_dir (startService).
   */
  readonly audit: AuditTrail;
  #startedAtMono = 0;
  #starting: Promise<void> | null = null;
  #stopping: Promise<void> | null = null;
  /** Providers a reload is stopping or restarting now (AUTO is refused meanwhile). */
  #reloadRestarting: readonly string[] = [];

  constructor(config: Config, host: RuntimeHost) {
    this.#config = config;
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
    this.inventory = new Inventory(this.registry);
    this.cache = new StateCache({
      registry: this.registry,
      bus: this.bus,
      clock: host.clock,
      log,
      intervalMs: config.polling.intervalMs,
      staleness: config.health.staleness,
    });
    this.outages = new DeviceOutages({
      registry: this.registry,
      cache: this.cache,
      clock: host.clock,
      downAfterMs: deviceDownAfterMs(config.polling.intervalMs),
    });
    this.audit = new AuditTrail({
      clock: host.clock,
      log,
      mode: () => this.modes.current(),
    });
    this.router = new CallRouter({
      registry: this.registry,
      cache: this.cache,
      log,
      clock: host.clock,
      audit: this.audit,
    });
    // --- modes, parameters, e-stop (issue 5): gates register on the router here, mode first ---
    const automation = config.automation;
    this.modes = new ModeManager({
      router: this.router,
      inventory: this.inventory,
      bus: this.bus,
      clock: host.clock,
      log,
      automationEnabled: automation.enabled,
      manualGatingPolicy: automation.manualGatingPolicy,
      hooks: automation.modeTransitionHooks,
      audit: this.audit,
    });
    // The AUTO rule of reloads (applyConfig) is decided when the reload starts: entering AUTO
    // while it is taking providers away would let the tree start on devices about to go.
    this.modes.addArmCheck(
      (_from, to) =>
        to === "AUTO" && this.#reloadRestarting.length > 0
          ? `refusing AUTO: a configuration reload is stopping or restarting provider(s) ${
            this.#reloadRestarting.join(", ")
          }; retry when it has finished`
          : null,
      "reload",
    );
    if (automation.enabled) {
      this.parameters = new ParameterStore({
        parameters: automation.parameters,
        bus: this.bus,
        clock: host.clock,
        log,
        audit: this.audit,
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
      inventory: this.inventory,
      reads: this.cache,
      clock: host.clock,
      log,
      safeState,
      modes: this.modes,
      bus: this.bus,
      audit: this.audit,
    });
    // --- alarms and interlocks (issue 20): evaluated after every poll, in every mode. Their
    // actions go through the same paths as an operator's: forceFault (hooks included) and the
    // e-stop's trigger (cause alarm:<id>). The interlock gate runs for every call but the stop
    // actions (origin safety: the ladder and the hooks into FAULT), which skip every gate.
    this.#alarms = this.#buildAlarms(config);
    // A restart that rediscovers the same inventory changes no binding (issue 34 item 4).
    this.registry.eachHost((h) =>
      h.onInventory((_d, changed) => {
        if (changed) this.#alarms.inventoryChanged();
      })
    );
    this.registry.onHostRemoved(() => this.#alarms.inventoryChanged());
    this.router.addGate(this.#alarms.gate, "interlock");
    // --- end alarms and interlocks ---
    // A rediscovery may add actuating functions: AUTO must then still have its FAULT hook.
    this.registry.eachHost((h) =>
      h.onInventory((_d, changed) => {
        if (changed) void this.modes.recheckAutoGate();
      })
    );
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
        outages: this.outages,
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

  /** The configuration in effect (after a reload: what of the new file could be applied). */
  get config(): Config {
    return this.#config;
  }

  /** Alarms and interlocks (issue 20); always present (empty without configured ones). */
  get alarms(): AlarmEngine {
    return this.#alarms;
  }

  /** An alarm engine for `config` (at construction, and rebuilt by a reload). */
  #buildAlarms(config: Config, carryFrom?: AlarmEngine): AlarmEngine {
    return new AlarmEngine({
      ...(carryFrom ? { carryFrom } : {}),
      alarms: config.alarms,
      interlocks: config.interlocks,
      cache: this.cache,
      inventory: this.inventory,
      outages: this.outages,
      audit: this.audit,
      bus: this.bus,
      clock: this.host.clock,
      log: this.host.log,
      actions: {
        fault: (reason, alarmId) =>
          this.modes.forceFault(reason, { kind: "alarm", alarm_id: alarmId }),
        estop: (reason, cause) =>
          this.estop.trigger(reason, {
            cause,
            source: { kind: "alarm", alarm_id: cause.replace(/^alarm:/, "") },
          }),
      },
      watchInventory: false,
    });
  }

  /**
   * Brings every provider up (fail-fast), primes the cache with one poll pass and starts polling.
   * Provider start-up and the first poll pass share runtime.startup_timeout_ms; past it, or when
   * stop() is called meanwhile, everything started is stopped and start() throws.
   */
  start(): Promise<void> {
    this.#starting ??= this.#start();
    return this.#starting;
  }

  async #start(): Promise<void> {
    const clock = this.host.clock;
    this.#startedAtMono = clock.monoMs();
    // --- automation (issue 6): a tree that does not load fails the start before any spawn ---
    await this.automation?.load();
    // --- end automation ---
    this.#throwIfStopping();
    const budgetMs = this.config.runtime.startupTimeoutMs;
    // Said the moment the budget runs out (launchers written for anolis wait for this phrase),
    // not once the providers are stopped, which takes up to shutdown_timeout_ms more. This timer
    // also ends the priming poll, and the registry's own (set after it) fires after it: what
    // is pending is read before anything is stopped.
    let expire: () => void = () => {};
    const expired = new Promise<"expired">((r) => (expire = () => r("expired")));
    const overrun = setTimeout(() => {
      this.host.log.error(
        `Runtime startup timeout exceeded: runtime.startup_timeout_ms (${budgetMs} ms) ran out, ${this.#startupPending()}; stopping`,
      );
      expire();
    }, budgetMs);
    try {
      await this.registry.startAll(budgetMs, this.config.runtime.shutdownTimeoutMs);
      this.#throwIfStopping();
      await this.#primeCache(budgetMs, expired);
    } finally {
      clearTimeout(overrun);
    }
    if (this.#stopping) {
      await this.cache.stop(); // the poll loops began after stop() had stopped the cache
      this.#throwIfStopping();
    }
    // --- modes, parameters, e-stop (issue 5): start-up preflight, log only (config.md sec. 6) ---
    for (const problem of validateDeclaredCalls(this.config, this.inventory)) {
      this.host.log.error(`declared call does not resolve: ${problem}`);
    }
    // The exact e-stop plan, its gaps and unverifiable devices; logged again on inventory change.
    this.estop.logPlan("start-up");
    // Once the inventory is known: a tree that AUTO could never start is said now, not at the
    // operator's first POST /v0/mode.
    const autoProblem = this.config.automation.enabled ? this.modes.autoGateProblem() : null;
    if (autoProblem) {
      this.host.log.warn(
        `automation is enabled but POST /v0/mode AUTO will answer 409: ${autoProblem}`,
      );
    }
    // --- end modes, parameters, e-stop ---
    // Alarms (issue 20) saw the priming poll already; now what no poll reaches (an unknown
    // device or signal) is evaluated too.
    this.#alarms.start();
    // --- automation (issue 6) ---
    this.automation?.start();
    // --- end automation ---
    this.host.log.info(
      `runtime up: ${this.registry.hosts.length} provider(s), ${this.registry.devices().length} device(s)`,
    );
  }

  /**
   * The first poll pass, bounded by what is left of the start-up budget (`expired` resolves when
   * it runs out). A provider whose first poll has not answered by then fails the start: providers
   * are stopped (which ends the polls still waiting), then the poll loops the pass started.
   */
  async #primeCache(budgetMs: number, expired: Promise<"expired">): Promise<void> {
    const priming = this.cache.start();
    const outcome = await Promise.race([priming, expired]);
    if (outcome !== "expired") return;
    const unanswered = this.registry.hosts.filter((h) =>
      this.cache.providerDevices(h.id).some((d) => d.pollable.length > 0 && d.lastPollMs === 0)
    ).map((h) => h.id);
    await this.registry.stopAll(this.config.runtime.shutdownTimeoutMs);
    await priming;
    await this.cache.stop();
    throw new RuntimeError(
      "DEADLINE_EXCEEDED",
      `start-up not complete within runtime.startup_timeout_ms (${budgetMs} ms): first poll ${
        unanswered.length > 0 ? `of ${unanswered.join(", ")} ` : ""
      }not answered`,
    );
  }

  /** What start-up still waits for: providers not up, else first polls not answered. */
  #startupPending(): string {
    const down = this.registry.hosts.filter((h) => !h.available).map(describeNotReady);
    if (down.length > 0) return `providers not ready: ${down.join(", ")}`;
    const unanswered = this.registry.hosts.filter((h) =>
      this.cache.providerDevices(h.id).some((d) => d.pollable.length > 0 && d.lastPollMs === 0)
    ).map((h) => h.id);
    return `first poll not answered by: ${unanswered.join(", ")}`;
  }

  /**
   * Calls `listener` once, as soon as every provider is AVAILABLE (at once when they all are
   * now); never after stop(). The service says "Runtime Ready" with it.
   */
  whenAllProvidersAvailable(listener: () => void): void {
    let called = false;
    const check = () => {
      if (called || this.#stopping || !this.registry.hosts.every((h) => h.available)) return;
      called = true;
      listener();
    };
    for (const h of this.registry.hosts) h.onAvailability(check);
    check();
  }

  #throwIfStopping(): void {
    if (this.#stopping) throw unavailable("start-up aborted: the runtime is stopping");
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
      nowMono: this.host.clock.monoMs(),
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
      nowMono: this.host.clock.monoMs(),
    }, live);
  }

  /**
   * Applies a validated configuration's difference from the running one (SIGHUP reload; the
   * caller serializes reloads). Unchanged providers are not touched. While the mode is AUTO,
   * provider removals and changes and a new behavior tree are refused (the tree and the devices
   * it drives keep running) and reported; additions still apply. Providers that stop go the way
   * shutdown stops them (stdin closed, then SIGTERM/SIGKILL within runtime.shutdown_timeout_ms);
   * providers that start do the handshake and discovery of start-up (bounded by their
   * hello/ready timeouts) and, if the e-stop is latched when they come up, are brought to the
   * safe state by it (as after any restart), which the reload waits for.
   * What `diff.needsRestart` names is left as it is. The effective configuration (`config`)
   * keeps the old values of everything refused or not applied, so the next reload tries again.
   */
  async applyConfig(next: Config, diff: ConfigDiff): Promise<KernelReloadReport> {
    if (this.#stopping) throw unavailable("reload refused: the runtime is stopping");
    const log = this.host.log;
    const budget = this.#config.runtime.shutdownTimeoutMs;
    const auto = this.modes.current() === "AUTO";
    const d = diff.providers;
    const refusedInAuto = auto ? [...d.removed, ...d.changed.map((p) => p.id)] : [];
    const removed = auto ? [] : [...d.removed];
    const changed = auto ? [] : [...d.changed];
    const starting = [...changed, ...d.added];
    const failed: string[] = [];
    const startedOk: ProviderConfig[] = [];
    this.#reloadRestarting = [...removed, ...changed.map((p) => p.id)];
    try {
      // Stop first: a changed provider's old process is gone before its successor starts (they
      // may share a device or a bus address).
      await Promise.all([
        ...removed.map((id) => this.registry.remove(id)?.stop(budget)),
        ...changed.map((p) => this.registry.remove(p.id)?.stop(budget)),
      ]);
      await Promise.all(starting.map(async (p) => {
        if (this.#stopping) return void failed.push(`${p.id}: the runtime is stopping`);
        const host = this.registry.add(p);
        try {
          await host.start();
          // Shutdown began meanwhile and may have missed it: it must not outlive the runtime.
          if (this.#stopping) throw unavailable("the runtime is stopping");
          startedOk.push(p);
        } catch (err) {
          failed.push(`${p.id}: ${errText(err)}`);
          this.registry.remove(p.id);
          await host.stop(budget);
        }
      }));
    } finally {
      this.#reloadRestarting = [];
    }
    const startedIds = new Set(startedOk.map((p) => p.id));
    // The effective provider list: new order; refused changes keep their old entries.
    const old = new Map(this.#config.providers.map((p) => [p.id, p]));
    const providers: ProviderConfig[] = [];
    for (const p of next.providers) {
      if (startedIds.has(p.id)) providers.push(p);
      else if (refusedInAuto.includes(p.id) || d.unchanged.includes(p.id)) {
        providers.push(old.get(p.id)!);
      }
    }
    for (const id of refusedInAuto) {
      if (!providers.some((p) => p.id === id)) providers.push(old.get(id)!);
    }
    this.registry.reorder(providers.map((p) => p.id));

    const applied: string[] = [];
    if (diff.pollingIntervalMs) {
      this.cache.setIntervalMs(next.polling.intervalMs);
      this.outages.setDownAfterMs(deviceDownAfterMs(next.polling.intervalMs));
      applied.push("polling");
    }
    if (diff.health) {
      this.cache.setStaleness(next.health.staleness);
      applied.push("health");
    }
    if (diff.safety) {
      const { safeState } = effectiveSafeState(next);
      this.estop.reconfigure(safeState);
      applied.push("safety");
    } else if (diff.modeHooks && !next.safety.present) {
      // Without a safety: section the ladder adopts the *->FAULT hooks: they changed.
      this.estop.reconfigure(effectiveSafeState(next).safeState);
    }
    const na = next.automation;
    if (diff.modeHooks) {
      this.modes.reconfigure(na.modeTransitionHooks, na.manualGatingPolicy);
      applied.push("mode_hooks");
    }
    const params = diff.parameters;
    if (
      this.parameters && params.added.length + params.removed.length + params.redeclared.length > 0
    ) {
      this.parameters.redeclare(na.parameters);
      applied.push("parameters");
    }
    if (diff.alarms) {
      const before = this.#alarms;
      const rebuilt = this.#buildAlarms(next, before);
      before.stop();
      this.router.replaceGate(before.gate, rebuilt.gate, "interlock");
      this.#alarms = rebuilt;
      rebuilt.start();
      applied.push("alarms");
    }
    let tree: KernelReloadReport["tree"] = "n/a";
    let treeError: string | null = null;
    const ca = this.#config.automation;
    let treePath = ca.behaviorTree;
    let tickRateHz = ca.tickRateHz;
    if (this.automation && ca.enabled === na.enabled) {
      try {
        tree = await this.automation.reloadTree(na.behaviorTree, na.tickRateHz);
        if (tree !== "refused_auto") [treePath, tickRateHz] = [na.behaviorTree, na.tickRateHz];
        if (tree === "unchanged") tree = "n/a";
      } catch (err) {
        tree = "failed";
        treeError = errText(err);
      }
    }
    this.#config = {
      ...next,
      runtime: this.#config.runtime,
      http: this.#config.http,
      // The journal was sized at start: `audit.*` needs a restart (reported again next reload).
      audit: this.#config.audit,
      providers,
      automation: {
        ...na,
        enabled: ca.enabled,
        behaviorTree: treePath,
        tickRateHz,
        ...(this.parameters ? {} : { parameters: ca.parameters }),
      },
    };
    if (starting.length + removed.length > 0) {
      for (const problem of validateDeclaredCalls(this.#config, this.inventory)) {
        log.error(`declared call does not resolve: ${problem}`);
      }
      void this.modes.recheckAutoGate();
    }
    // A provider that came up while the e-stop is latched is brought to the safe state by the
    // e-stop itself (it follows every host's availability); the report counts those calls.
    let estopActions = 0;
    for (const id of startedIds) {
      const host = this.registry.host(id);
      const secured = host ? this.estop.securing(host) : null;
      if (secured) estopActions += (await secured).length;
    }
    return {
      providers: {
        added: d.added.filter((p) => startedIds.has(p.id)).map((p) => p.id),
        restarted: changed.filter((p) => startedIds.has(p.id)).map((p) => p.id),
        removed,
        unchanged: [...d.unchanged],
        failed,
        refusedInAuto,
      },
      tree,
      treeError,
      applied,
      estopActions,
    };
  }

  /**
   * Stops polling and ends every provider within runtime.shutdown_timeout_ms. Idempotent. During
   * start() it acts at once: ending the providers ends whatever start-up stage waits on them.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const budget = this.config.runtime.shutdownTimeoutMs;
      this.automation?.stop(); // automation (issue 6): halt the tree before polling stops
      this.#alarms.stop(); // issue 20: no alarm action while the runtime shuts down
      this.outages.stop(); // nor a device-loss latch forcing FAULT
      this.estop.close(); // a plan log waiting for its turn is not written
      await this.cache.stop();
      await this.registry.stopAll(budget);
      if (this.#starting) {
        await this.#starting.catch(() => {}); // settles once its providers are gone
        await this.cache.stop();
      }
      // The open (collapsing) audit entry is closed; a call still settling records on its own.
      this.audit.seal();
      this.host.log.info("runtime stopped");
    })();
    return this.#stopping;
  }
}

/** What Runtime.applyConfig did with each part of a reload (the service adds its own parts). */
export interface KernelReloadReport {
  readonly providers: {
    /** Started (added, or restarted because their entry changed). */
    readonly added: string[];
    readonly restarted: string[];
    readonly removed: string[];
    readonly unchanged: string[];
    /** Added or changed providers that did not come up: `id: why` (they are not running). */
    readonly failed: string[];
    /** Removals and changes refused while the mode is AUTO (ids; they run as before). */
    readonly refusedInAuto: string[];
  };
  /** "n/a" when automation is disabled or the tree settings did not change. */
  readonly tree: TreeReload | "failed" | "n/a";
  /** Why the tree did not load (tree "failed"). */
  readonly treeError: string | null;
  /** Sections that took effect: `polling`, `health`, `safety`, `mode_hooks`, `parameters`, `alarms`. */
  readonly applied: string[];
  /**
   * Ladder calls the e-stop ran for the started providers because they came up while it was
   * latched (Estop.securing).
   */
  readonly estopActions: number;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
