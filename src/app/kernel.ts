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
import type { Config } from "../config/mod.ts";
import {
  actuatingFunctionCount,
  CallRouter,
  ModeManager,
  ParameterStore,
  validateDeclaredCalls,
} from "../control/mod.ts";
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
import { AutomationEngine, type ReadFileFn } from "../automation/mod.ts";
import { AlarmEngine } from "../alarms/mod.ts";
import { AuditTrail } from "../audit/mod.ts";
import { diffSections, type SectionKey, sectionOf, sectionsToOffer } from "./live_config.ts";
import { protectionWeakenings, type Weakening } from "./run_gate.ts";

/** What the runtime needs from the host (injected so tests can pass their own). */
export interface KernelHost {
  readonly spawn: SpawnFn;
  readonly clock: Clock;
  readonly log: Logger;
  /** Reads behavior-tree files (default: host readFileBytes); tests may pass their own. */
  readonly readFile?: ReadFileFn;
}

/** The running service's kernel: providers, state cache, call router and event bus. */
export class Kernel {
  #config: Config;
  readonly host: KernelHost;
  readonly bus: EventBus;
  readonly registry: ProviderRegistry;
  /** The registry as the upper layers may see it: read-only, no frame (state/inventory.ts). */
  readonly inventory: Inventory;
  readonly cache: StateCache;
  /** Whether each device is failing or down (AUTO gate, device-loss latch, alarms). */
  readonly outages: DeviceOutages;
  readonly router: CallRouter;
  /** Kernel mode (IDLE at start); its gate is on the router. */
  readonly modes: ModeManager;
  /** Automation parameters; absent when automation is disabled (HTTP answers 503). */
  readonly parameters?: ParameterStore;
  /** Software e-stop latch and safe-state ladder; its gate is on the router. */
  readonly estop: Estop;
  /** Behavior-tree automation; absent when automation is disabled (HTTP answers 503). */
  readonly automation?: AutomationEngine;
  /** Alarms and interlocks: always present (empty without configured ones). */
  readonly alarms: AlarmEngine;
  /** Who applies each live section of a reload (app/live_config.ts). */
  readonly #owners = new Map<SectionKey, SectionApply>();
  /**
   * Audit trail of every actuating decision (docs/http-api.md "Audit trail"): in memory until the service opens its
   * journal under runtime.data_dir (startService).
   */
  readonly audit: AuditTrail;
  #startedAtMono = 0;
  #starting: Promise<void> | null = null;
  #stopping: Promise<void> | null = null;
  /** Providers a reload is stopping or restarting now (AUTO is refused meanwhile). */
  #reloadRestarting: readonly string[] = [];

  constructor(config: Config, host: KernelHost) {
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
    // Gates register on the router here, mode first
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
    // Evaluated after every poll, in every mode. Their
    // actions go through the same paths as an operator's: forceFault (hooks included) and the
    // e-stop's trigger (cause alarm:<id>). The interlock gate runs for every call but the stop
    // actions (origin safety: the ladder and the hooks into FAULT), which skip every gate.
    this.alarms = new AlarmEngine({
      alarms: config.alarms,
      interlocks: config.interlocks,
      cache: this.cache,
      inventory: this.inventory,
      outages: this.outages,
      audit: this.audit,
      bus: this.bus,
      clock: host.clock,
      log,
      actions: {
        fault: (reason, alarmId) =>
          this.modes.forceFault(reason, { kind: "alarm", alarm_id: alarmId }),
        estop: (reason, cause) =>
          this.estop.trigger(reason, {
            cause,
            source: { kind: "alarm", alarm_id: cause.replace(/^alarm:/, "") },
          }),
      },
    });
    this.router.addGate(this.alarms.gate, "interlock");
    // A rediscovery may add actuating functions: AUTO must then still have its FAULT hook.
    this.inventory.onChange((_id, change) => {
      if (change === "changed") void this.modes.recheckAutoGate();
    });
    // Ticks only in AUTO; an e-stop forces FAULT, which halts it
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
    this.#ownKernelSections();
  }

  /** The configuration in effect (after a reload: what of the new file could be applied). */
  get config(): Config {
    return this.#config;
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
    // A tree that does not load fails the start before any spawn
    await this.automation?.load();
    this.#throwIfStopping();
    const budgetMs = this.config.runtime.startupTimeoutMs;
    // Said the moment the budget runs out (launchers written for anolis wait for this phrase),
    // not once the providers are stopped, which takes up to shutdown_timeout_ms more. This timer
    // also ends the priming poll, and the registry's own (set after it) fires after it: what
    // is pending is read before anything is stopped.
    let expire: () => void = () => {};
    const expired = new Promise<"expired">((r) => (expire = () => r("expired")));
    const overrun = clock.setTimer(() => {
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
      clock.clearTimer(overrun);
    }
    if (this.#stopping) {
      await this.cache.stop(); // the poll loops began after stop() had stopped the cache
      this.#throwIfStopping();
    }
    // Start-up preflight, log only (config.md sec. 6)
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
    // Alarms saw the priming poll already; now what no poll reaches (an unknown
    // device or signal) is evaluated too.
    this.alarms.start();
    this.automation?.start();
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
   * Lets the composition root own a section the kernel does not (telemetry, the HTTP tokens, the
   * log level): a reload that changes it calls `apply` with the new configuration.
   */
  ownSection(key: SectionKey, apply: SectionApply): void {
    this.#owners.set(key, apply);
  }

  /**
   * A configuration reload (app/live_config.ts): the difference from the configuration in effect,
   * section by section, each changed live section applied in place by its owner; restart-only keys
   * reported. While AUTO runs, a section that would weaken a protection or change the running
   * recipe is refused (app/run_gate.ts), and so are provider removals and changes (additions
   * apply). A refused or failed section keeps its old value in `config`, so the next reload tries
   * it again. Outside AUTO a weakened protection applies and is recorded on the audit trail. The
   * caller serializes reloads.
   */
  async reload(next: Config): Promise<ReloadReport> {
    if (this.#stopping) throw unavailable("reload refused: the runtime is stopping");
    const diff = diffSections(this.#config, next);
    const auto = this.modes.current() === "AUTO";
    const weakenings = protectionWeakenings(
      this.#config,
      next,
      actuatingFunctionCount(this.inventory),
    );
    const report: MutableReloadReport = {
      providers: {
        added: [],
        restarted: [],
        removed: [],
        unchanged: next.providers.map((p) => p.id),
        failed: [],
        held: [],
      },
      applied: [],
      notes: [],
      refused: [],
      failed: [],
      needsRestart: [...diff.needsRestart],
      weakened: [],
      estopActions: 0,
    };
    for (const key of sectionsToOffer(diff)) {
      const section = sectionOf(key);
      const weakens = weakenings.filter((w) => w.section === key);
      const apply = this.#owners.get(key);
      if (apply === undefined) {
        report.failed.push({ section: key, why: "no owner applies this section" });
        continue;
      }
      let result: SectionResult | void;
      try {
        result = await apply(next, { auto, weakens, report, changed: diff.live.includes(key) });
      } catch (err) {
        report.failed.push({ section: key, why: errText(err) });
        this.#recordReload(key, "failed", errText(err), weakens);
        continue;
      }
      // A section that names a file, offered although the configuration did not change it, whose
      // file did not change either.
      if (result?.unchanged === true) continue;
      if (result?.refused !== undefined) {
        report.refused.push({ section: key, why: result.refused });
        this.#recordReload(key, "refused", result.refused, weakens);
        if (result.effective === undefined) continue;
      }
      this.#config = result?.effective ?? section.take(this.#config, next);
      if (result?.refused === undefined) report.applied.push(key);
      if (result?.note) report.notes.push(result.note);
      if (weakens.length > 0) {
        report.weakened.push(...weakens);
        this.#recordReload(key, "accepted", null, weakens);
      }
    }
    return report;
  }

  /** Records a reload's decision on a section that weakens a protection, or that was refused. */
  #recordReload(
    key: SectionKey,
    outcome: "accepted" | "refused" | "failed",
    reason: string | null,
    weakens: readonly Weakening[],
  ): void {
    if (outcome === "accepted" && weakens.length === 0) return;
    for (const w of weakens) {
      this.host.log.warn(
        `config reload: ${key}: ${w.what} (${outcome === "accepted" ? "applied" : outcome})`,
      );
    }
    this.audit.record({
      action: "config",
      origin: { kind: "reload", cause: "SIGHUP" },
      outcome,
      function: key,
      args: { weakens: weakens.map((w) => w.what) },
      reason,
      ...(outcome === "refused" ? { refused_by: "run_gate" } : {}),
      latency_ms: 0,
    });
  }

  /** The kernel's own sections (the composition root adds the service's with ownSection). */
  #ownKernelSections(): void {
    const own = (key: SectionKey, apply: SectionApply) => this.#owners.set(key, apply);
    own("providers", async (next, { auto, report }) => {
      const budget = this.#config.runtime.shutdownTimeoutMs;
      const r = await this.registry.reconcile(this.#config.providers, next.providers, {
        holdRemovals: auto,
        stopBudgetMs: budget,
        stopping: () => this.#stopping !== null,
        restarting: (ids) => (this.#reloadRestarting = ids),
      });
      report.providers = {
        added: r.added,
        restarted: r.restarted,
        removed: r.removed,
        unchanged: r.unchanged,
        failed: r.failed,
        held: r.held,
      };
      const effective = { ...this.#config, providers: r.effective };
      if (r.added.length + r.restarted.length + r.removed.length > 0) {
        for (const problem of validateDeclaredCalls(effective, this.inventory)) {
          this.host.log.error(`declared call does not resolve: ${problem}`);
        }
        void this.modes.recheckAutoGate();
      }
      // A provider that came up while the e-stop is latched is brought to the safe state by the
      // e-stop itself (it follows every provider's availability); the report counts its calls.
      for (const host of r.started) {
        const secured = this.estop.securing(host);
        if (secured) report.estopActions += (await secured).length;
      }
      const failed = r.failed.length > 0 ? `; failed to start: ${r.failed.join("; ")}` : "";
      return {
        effective,
        ...(r.held.length > 0
          ? {
            refused: `mode is AUTO: removal or change of ${r.held.join(", ")} held back${failed}`,
          }
          : {}),
      };
    });
    own("polling", (next) => {
      this.cache.setIntervalMs(next.polling.intervalMs);
      this.outages.setDownAfterMs(deviceDownAfterMs(next.polling.intervalMs));
      return { note: `polling ${this.#config.polling.intervalMs}->${next.polling.intervalMs} ms` };
    });
    own("health", (next) => this.cache.setStaleness(next.health.staleness));
    own("automation.behavior_tree", async (next, { changed }) => {
      const na = next.automation;
      // Automation disabled: nothing runs a tree; the setting is only kept.
      if (!this.automation) return changed ? {} : { unchanged: true };
      // reloadTree compares path, rate and the file's digest: it says "unchanged" for the same.
      const r = await this.automation.reloadTree(na.behaviorTree, na.tickRateHz);
      if (r === "unchanged") return { unchanged: true };
      if (r === "refused_auto") {
        return { refused: "mode is AUTO: the running tree is never swapped" };
      }
      return { note: "behavior tree reloaded" };
    });
    own("automation.parameters", (next, { auto }) => {
      const params = this.parameters;
      if (!params) return {};
      const changes = params.valueChanges(next.automation.parameters);
      if (auto && changes.length > 0) {
        return {
          refused: `mode is AUTO: it would change the running recipe: ${changes.join(", ")}`,
        };
      }
      params.redeclare(next.automation.parameters);
      return {};
    });
    own("automation.mode_transition_hooks", (next, { auto, weakens }) => {
      if (auto && weakens.length > 0) return { refused: refusal(weakens) };
      const na = next.automation;
      this.modes.reconfigure(na.modeTransitionHooks, na.manualGatingPolicy);
      // Without a safety: section the e-stop adopts the *->FAULT hooks: they changed.
      const candidate = sectionOf("automation.mode_transition_hooks").take(this.#config, next);
      if (!candidate.safety.present) {
        this.estop.reconfigure(effectiveSafeState(candidate).safeState);
      }
      return {};
    });
    own("safety", (next, { auto, weakens }) => {
      if (auto && weakens.length > 0) return { refused: refusal(weakens) };
      const candidate = sectionOf("safety").take(this.#config, next);
      this.estop.reconfigure(effectiveSafeState(candidate).safeState);
      return {};
    });
    own("alarms", (next, { auto, weakens }) => {
      if (auto && weakens.length > 0) return { refused: refusal(weakens) };
      this.alarms.reconfigure({ alarms: next.alarms, interlocks: next.interlocks });
      return {};
    });
  }

  /**
   * Stops polling and ends every provider within runtime.shutdown_timeout_ms. Idempotent. During
   * start() it acts at once: ending the providers ends whatever start-up stage waits on them.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const budget = this.config.runtime.shutdownTimeoutMs;
      this.automation?.stop(); // halt the tree before polling stops
      this.alarms.stop(); // no alarm action while the runtime shuts down
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

/** What a reload did (the reloader's summary line and `config_reload` event). */
export interface ReloadReport {
  readonly providers: {
    /** Started (added, or restarted because their entry changed). */
    readonly added: readonly string[];
    readonly restarted: readonly string[];
    readonly removed: readonly string[];
    readonly unchanged: readonly string[];
    /** Added or changed providers that did not come up: `id: why` (they are not running). */
    readonly failed: readonly string[];
    /** Removals and changes held back while the mode is AUTO (ids; they run as before). */
    readonly held: readonly string[];
  };
  /** Live sections that took effect, in table order. */
  readonly applied: readonly SectionKey[];
  /** What applied sections say (`polling 100->200 ms`, `behavior tree reloaded`). */
  readonly notes: readonly string[];
  /** Sections refused (they keep their old value): a protection, the recipe, AUTO. */
  readonly refused: readonly { readonly section: string; readonly why: string }[];
  /** Sections whose owner failed to apply them (they keep their old value). */
  readonly failed: readonly { readonly section: string; readonly why: string }[];
  /** Changed keys that need a restart, in YAML spelling. */
  readonly needsRestart: readonly string[];
  /** Protections weakened by sections that applied (outside AUTO; each on the audit trail). */
  readonly weakened: readonly Weakening[];
  /** Ladder calls the latched e-stop ran for providers the reload started. */
  readonly estopActions: number;
}

interface MutableReloadReport {
  providers: ReloadReport["providers"];
  applied: SectionKey[];
  notes: string[];
  refused: { section: string; why: string }[];
  failed: { section: string; why: string }[];
  needsRestart: string[];
  weakened: Weakening[];
  estopActions: number;
}

/** What an owner is told when its section changed. */
export interface SectionContext {
  /** The mode is AUTO: nothing that weakens a protection or changes the recipe may apply. */
  readonly auto: boolean;
  /** The protections this section's change would weaken (app/run_gate.ts). */
  readonly weakens: readonly Weakening[];
  readonly report: MutableReloadReport;
  /** The section differs in the file (false: offered because it reads a file, app/live_config.ts). */
  readonly changed: boolean;
}

/** What an owner did: nothing to say (applied), a note, a refusal, or the effective config. */
export interface SectionResult {
  /** Nothing changed (a section offered because it reads a file whose content is the same). */
  readonly unchanged?: boolean;
  readonly note?: string;
  /** Why it was refused: the section keeps its old value (unless `effective` says otherwise). */
  readonly refused?: string;
  /** The configuration in effect now, when the section applied only in part. */
  readonly effective?: Config;
}

/** Applies one section of `next` in place; throws when it cannot (the old value stays). */
export type SectionApply = (
  next: Config,
  ctx: SectionContext,
) => SectionResult | void | Promise<SectionResult | void>;

/** A refusal naming what the change would weaken. */
function refusal(weakens: readonly Weakening[]): string {
  return `mode is AUTO: it would weaken a protection: ${weakens.map((w) => w.what).join("; ")}`;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
