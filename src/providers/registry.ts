import {
  DepartedDates,
  type DeviceCapabilities,
  type DeviceInfo,
  errorMessage,
  type Logger,
  namedProviderId,
  neverThrowing,
  raceTimeout,
  type ReloadStart,
  reloadStartWords,
  RuntimeError,
  startFailureWords,
} from "../common/mod.ts";
import {
  diffProviders,
  MAX_PROVIDERS,
  type ProviderConfig,
  type ProviderDiff,
} from "../config/mod.ts";
import { findClaimConflict } from "./claims.ts";
import { ProviderHost, type ProviderHostDeps } from "./provider_host.ts";
import { lastStderrLines } from "./provider_session.ts";
import { SpawnQueue } from "./spawn_queue.ts";

/**
 * Why a section (or a provider's start) a reload did not get to, or cut short, did not apply:
 * the runtime's stop began. The reload summary (app/reloader.ts summarize) compares a failed
 * start's `why` with it to name that start `not started`, and says it once, in its head.
 */
export const RELOAD_STOPPING = "the runtime is stopping";

/** A provider a reload did not get running, and why (ReconcileReport.failed). */
export interface FailedStart {
  /**
   * Its configured id: any length, ": " in it too (the config refuses only "/", "." and ".."),
   * so carried apart from `why`, never parsed back out of a text.
   */
  readonly id: string;
  readonly why: string;
}

/** A failed start as the `config_reload` event says it: `id: why`, the id as configured. */
export function failedStartText(f: FailedStart): string {
  return `${f.id}: ${f.why}`;
}

/** What a reconcile did with each provider entry of a reload. */
export interface ReconcileReport {
  /** New entries started. */
  readonly added: string[];
  /** Changed entries restarted with their new settings. */
  readonly restarted: string[];
  /**
   * Unchanged or updated entries whose circuit was open, up again after a retry
   * (ProviderHost.retry: the same host, its failure streak reset). One that did not come up is
   * in `failed` instead.
   */
  readonly retried: string[];
  /**
   * Entries that differ only in supervision or start settings (IN_PLACE_PROVIDER_FIELDS),
   * applied to the running host in place (also in AUTO: nothing is stopped): id and fields.
   */
  readonly updated: { readonly id: string; readonly fields: readonly string[] }[];
  readonly removed: string[];
  readonly unchanged: string[];
  /**
   * Added or changed entries that did not come up (they are not running); also the retried ones
   * that did not (their supervisor has them again). Said as text only where it is printed.
   */
  readonly failed: FailedStart[];
  /** Added entries that did not come up (ids; each also in `failed` with its why). */
  readonly addFailed: string[];
  /**
   * Changed entries whose old process was stopped and whose successor did not come up (ids; each
   * also in `failed` with its why): restarts tried, not up.
   */
  readonly restartFailed: string[];
  /** Removals and changes held back (`id`): they run as before. */
  readonly held: string[];
  /** The provider entries now in effect, in the new order (held ones with their old entry). */
  readonly effective: ProviderConfig[];
  /** The hosts it started (the caller may wait for what follows their start). */
  readonly started: ProviderHost[];
  /**
   * Providers the previous reload failed to start (listed down until this one took them out, or
   * never registered), in that order.
   */
  readonly cleared: string[];
}

/** How a reconcile proceeds. */
export interface ReconcileOptions {
  /** Removals and changes are held back (the running ones stay as they are). */
  readonly holdRemovals: boolean;
  /** What stopping a provider may take (runtime.shutdown_timeout_ms). */
  readonly stopBudgetMs: number;
  /**
   * What starting an added or changed provider may take in all (runtime.startup_timeout_ms, as at
   * start-up): one not up within it is a failed start.
   */
  readonly startBudgetMs: number;
  /** True once the runtime is shutting down: nothing more is started. */
  readonly stopping: () => boolean;
  /** Told the ids about to be stopped or restarted, and [] once that is over. */
  readonly restarting?: (ids: readonly string[]) => void;
  /**
   * Waited for before a removed or changed provider is taken out and stopped (the stop actions in
   * flight to it, the e-stop's ladder calls and the hook calls into FAULT: bounded by the caller);
   * one that rejects is waited for no more.
   */
  readonly beforeStop?: (providerId: string) => Promise<void>;
  /**
   * The plan(before, next) the caller made when its reload began and acted on (alarms retired
   * early, the AUTO check deferred for the providers it starts): carried out as it is, so that a
   * circuit opening (or a provider coming back) meanwhile does not turn an in-place update into a
   * restart nobody expected, or the reverse. Without it, reconcile plans now.
   */
  readonly plan?: ProviderPlan;
}

/**
 * What a reconcile does with each provider entry: the configuration's diff (diffProviders) as
 * the running providers change it (ProviderRegistry.plan).
 */
export interface ProviderPlan extends ProviderDiff {
  /**
   * Entries whose circuit is open, identical to the ones in effect or updated in place (in
   * `updated` as well), new order: retried in place with the failure streak reset
   * (ProviderHost.retry; not in `unchanged`).
   */
  readonly retried: readonly ProviderConfig[];
}

/**
 * Provider ids a reload stopped whose last availability flip date is kept for a host of the id a
 * later reload configures again (ProviderRegistry #retiredFlipAt): at most this many, the one
 * stopped longest ago let go of first. MAX_PROVIDERS: every provider of one configuration.
 */
export const MAX_RETIRED_FLIP_DATES = MAX_PROVIDERS;

/** Told of every provider host: those there now (at once) and each one added later. */
export type HostListener = (host: ProviderHost) => void;

/** Told the id of a provider the configuration no longer has (ProviderRegistry.onUnconfigured). */
export type UnconfiguredListener = (providerId: string) => void;

/** Told the id of a provider a reconcile is to start anew (ProviderRegistry.onStarting). */
export type StartingListener = (providerId: string) => void;

/** Told the id of a provider a reconcile failed to start (ProviderRegistry.onStartFailed). */
export type StartFailedListener = (providerId: string) => void;

/**
 * Why a configured provider has no host (ProviderRegistry.notRunning): the last reload failed to
 * register or start it, a reload is restarting it (its entry changed) or starting it anew (its
 * entry added), or a reload did not get it running (the runtime stopping meanwhile).
 */
export type NotRunningCause = "start_failed" | "restarting" | "starting" | "not_started";

/** ProviderRegistry.notRunning's answer: its cause and the one wording every place says. */
export interface NotRunning {
  readonly cause: NotRunningCause;
  readonly text: string;
}

/**
 * All configured providers, in config order, and the devices they expose. A configuration
 * reload adds and removes hosts (add/remove); subsystems that keep per-provider state follow
 * with eachHost and onHostRemoved.
 */
export class ProviderRegistry {
  #hosts = new Map<string, ProviderHost>();
  /** True once startAll checked the claims of the whole inventory (later commits are admitted). */
  #checked = false;
  /** Whether the runtime's stop has begun (endRestarts): hosts added later make no restart either. */
  #restartsEnded = false;
  /**
   * The stops of hosts a reload took out of the registry and is still ending (a removed or changed
   * provider, one that came up too late): stopAll waits for them too, so a shutdown during a
   * reload does not leave a provider process behind.
   */
  readonly #retiring = new Set<Promise<void>>();
  /**
   * The hosts those stops are ending: out of the registry, but their processes may still drive
   * the bus until they have exited (up to the stop budget), so their claims count until then.
   */
  readonly #retiringHosts = new Set<ProviderHost>();
  /**
   * Hosts a reload added that did not come up: stopped, but kept in the registry so that health
   * and metrics list them down with the reason (ProviderHost.startError) until the next reload,
   * which takes them out first (their entries are not in effect) and starts them again if its
   * file still has them.
   */
  readonly #failedStarts = new Set<ProviderHost>();
  /**
   * Ids a reload is stopping to start again with a changed entry: out of the registry meanwhile,
   * but not gone (their devices are down, as in a supervisor restart, not unconfigured). Out once
   * its successor is up, at the reconcile's end, or once the runtime's stop (stopAll) stops the
   * host registered under it.
   */
  readonly #replacing = new Set<string>();
  /**
   * Id -> the last availability flip date of a host taken out of the registry (#takeOut: removed,
   * restarted, listed down after a failed start and taken out by the next reload, not registered,
   * remove()), its stop's flip included: its successor under the id (a changed entry, or one
   * configured again later) is dated no earlier (ProviderHost.follow), as the devices of a provider
   * configured again are, however many times the wall clock stepped back (NTP) meanwhile. Taken by
   * add(); at most MAX_RETIRED_FLIP_DATES ids, the one taken out longest ago let go of first
   * (DepartedDates).
   */
  readonly #retiredFlipAt = new DepartedDates(MAX_RETIRED_FLIP_DATES);
  /**
   * Id -> the inventory last listed by a host taken out of the registry while its id stays
   * configured (#takeOut: a reload restarting it, or starting it again after a failed start), for
   * lastListed: a call to the provider before a host under the id lists its own is refused
   * UNAVAILABLE, and the function it names is read here for the audit trail only -- never to let
   * a call pass. Dropped once a host under the id lists its inventory, and once the id is no
   * longer configured (#tellUnconfigured): at most one per configured id.
   */
  readonly #retiredInventory = new Map<string, readonly DeviceCapabilities[]>();
  /**
   * Ids whose host a reload could not register (a host listener failed) -> why: their entries are
   * in the file, not in effect, until the next reload (which clears this first). At most the
   * providers of one configuration.
   */
  readonly #notRegistered = new Map<string, string>();
  /**
   * The ids of the configuration file the registry was built from or last reconciled to (its
   * `next`), and the ones that reconcile held back, less those remove() took out since: what
   * configured() answers for an id no host is registered under. At most the providers of one
   * configuration.
   */
  #configuredIds: Set<string>;
  /**
   * Ids a running reconcile starts anew (its entry added: new, or again after the reload before
   * failed to start it) -> how far: `waiting` until its host is registered (starting()), then
   * `registered` until it is up. Out once its start is over -- up, failed, not started, or its host
   * stopped (stopAll: a shutdown) -- and at the reconcile's end: startingText() reads it. At most
   * the providers of one configuration; empty outside a reconcile.
   */
  readonly #adding = new Map<string, AddPhase>();
  readonly #deps: ProviderHostDeps;
  /**
   * The lines of a listener that threw: they never throw. One that throws (a custom logger) must
   * not skip the listeners after it, nor leave a host taken out of the registry unstopped.
   */
  readonly #lines: Logger;
  readonly #added: HostListener[] = [];
  readonly #removed: HostListener[] = [];
  readonly #unconfigured: UnconfiguredListener[] = [];
  readonly #startingListeners: StartingListener[] = [];
  readonly #startFailedListeners: StartFailedListener[] = [];

  constructor(providers: readonly ProviderConfig[], deps: ProviderHostDeps) {
    // One queue for every provider of the runtime: a restart storm spawns one at a time, paced.
    // Once start-up has checked the whole inventory, every inventory committed later (a restart,
    // a provider a reload adds or changes) is checked against the devices of every other
    // provider: a resource claim another device holds refuses it.
    // A provider counts with every device it listed since its entry last changed, also while it
    // is down or no longer lists some (ProviderHost.claimDevices): it keeps their claims until a
    // reload removes or changes it (docs/http-api.md, "Resource claims"), and until the process
    // that reload stops has ended.
    this.#deps = {
      ...deps,
      spawnQueue: deps.spawnQueue ?? new SpawnQueue(deps.clock),
      admit: (providerId, devices) =>
        this.#checked
          ? findClaimConflict([
            ...this.hosts.filter((h) => h.id !== providerId).flatMap((h) => h.claimDevices),
            ...[...this.#retiringHosts].flatMap((h) => h.claimDevices),
            ...devices,
          ])
          : null,
    };
    for (const p of providers) this.#hosts.set(p.id, new ProviderHost(p, this.#deps));
    this.#configuredIds = new Set(providers.map((p) => p.id));
    this.#lines = neverThrowing(deps.log);
  }

  /** Calls `listener` for every host now and for every host added later (before it starts). */
  eachHost(listener: HostListener): void {
    for (const h of this.#hosts.values()) listener(h);
    this.#added.push(listener);
  }

  /** Calls `listener` for every host removed from now on (after it left the registry). */
  onHostRemoved(listener: HostListener): void {
    this.#removed.push(listener);
  }

  /**
   * Calls `listener` with the id of every provider the configuration drops from now on: once, as
   * configured() turns false for it -- remove(), or a reconcile whose file no longer has it --
   * whether a host was registered under it (told after the onHostRemoved listeners) or not (a
   * provider the reload before could not register: at the reconcile's start). The one notice that
   * a provider is gone for good, not lost: a host a reload takes out while its id stays configured
   * (restarted, or started again after a failed start) is not told. A listener that throws is
   * logged and the others are still told.
   */
  onUnconfigured(listener: UnconfiguredListener): void {
    this.#unconfigured.push(listener);
  }

  /**
   * Adds a host for a new provider entry (not started: the caller starts it). Throws
   * FAILED_PRECONDITION when the id is taken, and INTERNAL when a host listener throws: the host
   * is then taken out again (onHostRemoved listeners told), never left registered half-wired; its
   * id stays configured as it was (a reload's file keeps it: configured()).
   */
  add(config: ProviderConfig): ProviderHost {
    if (this.#hosts.has(config.id)) {
      throw new RuntimeError(
        "FAILED_PRECONDITION",
        `Provider already registered: ${namedProviderId(config.id)}`,
      );
    }
    const host = new ProviderHost(config, this.#deps);
    if (this.#restartsEnded) host.endRestarts();
    // Its own inventory listed: the one its predecessor listed (lastListed) is done with.
    host.onInventory(() => {
      if (this.#hosts.get(config.id) === host) this.#retiredInventory.delete(config.id);
    });
    const retiredAt = this.#retiredFlipAt.take(config.id);
    if (retiredAt !== undefined) host.follow(retiredAt);
    this.#hosts.set(config.id, host);
    try {
      for (const l of this.#added) l(host);
    } catch (err) {
      this.#takeOut(config.id);
      throw new RuntimeError(
        "INTERNAL",
        `Provider ${namedProviderId(config.id)} not registered: a host listener failed: ${
          errorMessage(err)
        }`,
        { cause: err },
      );
    }
    return host;
  }

  /**
   * Takes a provider out of the configuration (configured() is false from now on) and its host
   * out of the registry (calls to it are refused NOT_FOUND from now on); returns the host, which
   * the caller stops. Undefined when no such provider is registered. A listener that throws is
   * logged and the others are still told: the caller must get the host to stop it.
   */
  remove(providerId: string): ProviderHost | undefined {
    const was = this.configured(providerId);
    this.#configuredIds.delete(providerId);
    const host = this.#takeOut(providerId);
    // Without a host #takeOut told nothing: configured() turned false here.
    if (host === undefined && was) this.#tellUnconfigured(providerId);
    return host;
  }

  /**
   * Takes a host out of the registry, its id configured or not as it was (a reload carries out its
   * file, whose ids it set first: #configuredIds); the onHostRemoved listeners are told (see
   * remove()), then the onUnconfigured ones when its id is no longer configured. The one way out
   * of the registry: its last flip date, and each one after (its stop's, whoever stops it), is
   * kept for its successor under the id (#noteRetiredFlip).
   */
  #takeOut(providerId: string): ProviderHost | undefined {
    const host = this.#hosts.get(providerId);
    if (!host) return undefined;
    this.#hosts.delete(providerId);
    // Its id still configured (restarted): its devices stay known for the audit of the calls
    // refused until a host under the id lists its own (lastListed). One that never listed (a
    // failed start) leaves the inventory of the one before it.
    if (host.listed && this.#configuredIds.has(providerId)) {
      this.#retiredInventory.set(providerId, host.devices);
    }
    this.#noteRetiredFlip(host);
    host.onAvailability(() => this.#noteRetiredFlip(host));
    for (const l of this.#removed) {
      try {
        l(host);
      } catch (err) {
        this.#lines.error(
          `provider ${namedProviderId(providerId)} removed: a host-removed listener failed: ${
            errorMessage(err)
          }`,
        );
      }
    }
    if (!this.configured(providerId)) this.#tellUnconfigured(providerId);
    return host;
  }

  /**
   * Calls `listener` with the id of every provider a reconcile is to start anew (its entry added:
   * new, or again after the reload before failed to start it), as that reconcile begins: from then
   * on the id is configured with no host registered (configuredWithoutHost, starting()) -- a down
   * provider -- until its host is registered (eachHost listeners), which may first wait for the
   * stops of the providers the reload removes or changes. Nothing else tells that change. A
   * listener that throws is logged and the others are still told.
   */
  onStarting(listener: StartingListener): void {
    this.#startingListeners.push(listener);
  }

  /**
   * Calls `listener` with the id of every provider a reconcile restarts (its entry changed) or
   * starts anew (added) and then fails to register or start -- not for the runtime stopping
   * meanwhile -- once its failure is recorded (startFailure answers it; a host it started is
   * listed down, one it could not register is not). A listener that throws is logged and the
   * others are still told.
   */
  onStartFailed(listener: StartFailedListener): void {
    this.#startFailedListeners.push(listener);
  }

  /** Tells the onUnconfigured listeners (each one contained, as #takeOut's). */
  #tellUnconfigured(providerId: string): void {
    this.#retiredInventory.delete(providerId);
    this.#tellEach(this.#unconfigured, providerId, "unconfigured");
  }

  /** Tells `listeners` the id, each one contained (logged: `what` the notice was). */
  #tellEach(listeners: readonly ((id: string) => void)[], providerId: string, what: string): void {
    for (const l of listeners) {
      try {
        l(providerId);
      } catch (err) {
        this.#lines.error(
          `provider ${namedProviderId(providerId)} ${what}: a listener failed: ${
            errorMessage(err)
          }`,
        );
      }
    }
  }

  /**
   * Whether every configured provider is up: a host registered under each configured id (none
   * missing: a reload restarting or starting it, or one it could not register) and AVAILABLE.
   * Hosts a running reload has yet to take out count as well (until onHostRemoved).
   */
  allAvailable(): boolean {
    return this.hosts.every((h) => h.available) && this.configuredWithoutHost().length === 0;
  }

  /**
   * What a reconcile from `before` (the entries in effect) to `next` would do with each entry now:
   * diffProviders, except that an entry differing only in IN_PLACE_PROVIDER_FIELDS is restarted
   * (changed) rather than updated in place when it has no host to update (it is not registered, or
   * its host is stopped). An unchanged entry whose circuit is open is retried: the runtime gave it
   * up, a reload is the operator asking to try it again (an unchanged entry of a provider up or
   * being brought back by its supervisor is not touched). One updated in place whose circuit is
   * open is retried as well, after the update (the retry runs with its new settings): the same
   * host, so its devices keep their claims -- a restart would let a rival take them meanwhile.
   */
  plan(before: readonly ProviderConfig[], next: readonly ProviderConfig[]): ProviderPlan {
    const d = diffProviders(before, next);
    const inPlace = (id: string) => {
      const phase = this.#hosts.get(id)?.state.phase;
      return phase !== undefined && phase !== "STOPPED";
    };
    const isOpen = (id: string) => this.#hosts.get(id)?.state.phase === "CIRCUIT_OPEN";
    const open = new Set(
      [...d.unchanged, ...d.updated.map((u) => u.entry.id)].filter(isOpen),
    );
    const retry = {
      retried: next.filter((p) => open.has(p.id)),
      unchanged: d.unchanged.filter((id) => !open.has(id)),
    };
    const restart = new Set(d.updated.filter((u) => !inPlace(u.entry.id)).map((u) => u.entry.id));
    if (restart.size === 0) return { ...d, ...retry };
    return {
      ...d,
      ...retry,
      // In the new order, as diffProviders lists them.
      changed: next.filter((p) => restart.has(p.id) || d.changed.some((c) => c.id === p.id)),
      updated: d.updated.filter((u) => !restart.has(u.entry.id)),
    };
  }

  /**
   * Brings the running providers to the entries of a reload (`before`: the entries in effect):
   * unchanged ones are not touched; ones that differ only in supervision or start settings are
   * updated in place (o.plan, else plan(); also while removals are held back: nothing is
   * stopped); removed and changed ones are stopped first (a changed one's old process is gone
   * before its successor starts: they may share a bus address) -- unless held back -- then new
   * and changed ones start with the handshake and discovery of start-up, each within
   * o.startBudgetMs in all (as at start-up). One that does not come up is stopped and reported;
   * its entry is not in effect, but its host stays listed (down, with ProviderHost.startError)
   * until the next reload. Unchanged or updated ones whose circuit is open (the plan's `retried`)
   * are retried in place meanwhile (ProviderHost.retry; an updated one with its new entry), also
   * while removals are held back (nothing that runs is stopped): their host, its devices and their
   * claims stay; one that does not come up is reported failed and stays under its supervisor.
   */
  async reconcile(
    before: readonly ProviderConfig[],
    next: readonly ProviderConfig[],
    o: ReconcileOptions,
  ): Promise<ReconcileReport> {
    const old = new Map(before.map((p) => [p.id, p]));
    const d = o.plan ?? this.plan(before, next);
    const added = d.added;
    const changedAll = d.changed;
    const unchanged = d.unchanged;
    const removedAll = d.removed;
    const held = o.holdRemovals ? [...removedAll, ...changedAll.map((p) => p.id)] : [];
    const removed = o.holdRemovals ? [] : removedAll;
    const changed = o.holdRemovals ? [] : changedAll;
    const retried = d.retried;
    const failed: FailedStart[] = [];
    const fail = (id: string, why: string) => void failed.push({ id, why });
    const started: ProviderHost[] = [];
    const updated: { id: string; fields: string[] }[] = [];
    for (const u of d.updated) {
      updated.push({ id: u.entry.id, fields: this.#hosts.get(u.entry.id)!.updateInPlace(u.entry) });
    }
    const updatedIds = new Set(updated.map((u) => u.id));
    o.restarting?.([...removed, ...changed.map((p) => p.id)]);
    const failedBefore = this.failedStarts();
    const notRegisteredBefore = [...this.#notRegistered.keys()];
    this.#failedStarts.clear();
    this.#notRegistered.clear();
    // Before any host is taken out: one whose id the file keeps is not removed (configured()).
    const unhostedBefore = this.configuredWithoutHost();
    this.#configuredIds = new Set([...next.map((p) => p.id), ...held]);
    for (const p of changed) this.#replacing.add(p.id);
    for (const p of added) this.#adding.set(p.id, "waiting");
    // Dropped with no host to take out (the reload before could not register it): told now; one
    // with a host is told as #retire takes it out.
    for (const id of unhostedBefore) if (!this.configured(id)) this.#tellUnconfigured(id);
    // Configured with no host from now on: down before anything is stopped or registered.
    for (const p of added) this.#tellEach(this.#startingListeners, p.id, "starting");
    const retriedUp: string[] = [];
    try {
      await Promise.all([
        ...failedBefore.map((h) => this.#retire(h.id, o.stopBudgetMs)),
        ...removed.map((id) => this.#retireAfter(id, o)),
        ...changed.map((p) => this.#retireAfter(p.id, o)),
      ]);
      // Retried in place while the others start (they never reject: a failure is reported).
      const retries = Promise.all(retried.map(async (p) => {
        const host = this.#hosts.get(p.id);
        if (host === undefined) return;
        if (o.stopping()) return void fail(p.id, RELOAD_STOPPING);
        const why = await host.retry();
        // Cut by the runtime's stop (its host stopped under the retry): not started, as a start
        // the stop cut below -- not "not up" as a failure of its own.
        const cut = o.stopping() && host.retryCutByStop;
        if (why !== null) {
          return void fail(p.id, cut ? RELOAD_STOPPING : why);
        }
        retriedUp.push(p.id);
        started.push(host);
      }));
      await Promise.all([...changed, ...added].map(async (p) => {
        if (o.stopping()) {
          this.#adding.delete(p.id);
          return void fail(p.id, RELOAD_STOPPING);
        }
        let host: ProviderHost;
        try {
          host = this.add(p);
        } catch (err) {
          // Not registered (add took it out again): nothing to stop, nothing listed down.
          this.#adding.delete(p.id);
          this.#notRegistered.set(p.id, errorMessage(err));
          fail(p.id, errorMessage(err));
          return this.#tellEach(this.#startFailedListeners, p.id, "failed to start");
        }
        // Unless a stop came meanwhile (an eachHost listener, stopAll): that host is stopping.
        if (this.#adding.has(p.id)) this.#adding.set(p.id, "registered");
        try {
          await host.start({ ms: o.startBudgetMs, setting: "runtime.startup_timeout_ms" });
          // Shutdown began meanwhile and may have missed it: it must not outlive the runtime.
          if (o.stopping()) throw new RuntimeError("UNAVAILABLE", RELOAD_STOPPING);
          started.push(host);
          // Its restart (or first start) is done once it is up: a later outage of that process
          // (while the reload still starts others) is a loss, not the reload's doing
          // (restartingText, startingText).
          this.#replacing.delete(p.id);
          this.#adding.delete(p.id);
        } catch (err) {
          this.#adding.delete(p.id);
          // Cut by the runtime's stop (it stopped this host before its start failed: its Hello
          // "closed by the runtime", its discovery "runtime is stopping"): not started, the stop's
          // doing, said as one the stop kept from starting -- not as a failure of its own. One that
          // failed on its own (a Hello refused) keeps its error, though stopped while it ended.
          const cut = o.stopping() && host.startCutByStop;
          fail(p.id, cut ? RELOAD_STOPPING : errorMessage(err));
          if (o.stopping()) return await this.#retire(p.id, o.stopBudgetMs);
          // Listed down with its reason until the next reload (#failedStarts); stopAll joins it.
          this.#failedStarts.add(host);
          this.#tellEach(this.#startFailedListeners, p.id, "failed to start");
          await host.stop(o.stopBudgetMs);
        }
      }));
      await retries;
    } finally {
      for (const p of changed) this.#replacing.delete(p.id);
      for (const p of added) this.#adding.delete(p.id);
      o.restarting?.([]);
    }
    const startedIds = new Set(started.map((h) => h.id));
    // The entries in effect: the new order; held ones keep their old entries.
    const effective: ProviderConfig[] = [];
    for (const p of next) {
      if (startedIds.has(p.id) || updatedIds.has(p.id)) effective.push(p);
      else if (
        held.includes(p.id) || unchanged.includes(p.id) || retried.some((r) => r.id === p.id)
      ) {
        effective.push(old.get(p.id)!);
      }
    }
    for (const id of held) {
      if (!effective.some((p) => p.id === id)) effective.push(old.get(id)!);
    }
    this.reorder(effective.map((p) => p.id));
    return {
      added: added.filter((p) => startedIds.has(p.id)).map((p) => p.id),
      restarted: changed.filter((p) => startedIds.has(p.id)).map((p) => p.id),
      retried: retried.filter((p) => retriedUp.includes(p.id)).map((p) => p.id),
      updated,
      removed: [...removed],
      unchanged: [...unchanged],
      failed,
      addFailed: added.filter((p) => !startedIds.has(p.id)).map((p) => p.id),
      restartFailed: changed.filter((p) => !startedIds.has(p.id)).map((p) => p.id),
      held,
      effective,
      started,
      cleared: [...failedBefore.map((h) => h.id), ...notRegisteredBefore],
    };
  }

  /**
   * Whether a reload is restarting this provider (its entry changed): between the old host's
   * removal and its successor's registration no host is registered under the id, yet the
   * provider is not gone. True until its successor is up (or the reload ends, or the runtime's
   * stop stops the host registered under it: stopAll).
   */
  replacing(providerId: string): boolean {
    return this.#replacing.has(providerId);
  }

  /**
   * Whether `providerId` is configured: its entry is in the configuration file the registry runs
   * (a host registered under it, or none while a reload restarts it or since the last reload
   * failed to start it: it did not come up, or was not registered), or a reload holds its removal
   * back. False once a reload whose file no longer has it has begun. The one answer to "did a
   * reload remove this provider?": a host taken out while its id is configured is not gone, its
   * devices are lost (the device-loss latch and the e-stop keep them), not unconfigured.
   */
  configured(providerId: string): boolean {
    return this.#hosts.has(providerId) || this.#configuredIds.has(providerId);
  }

  /**
   * The configured ids no host is registered under (configured()): outside a reload, those the
   * last reload could not register (a host listener failed) or started no more (the runtime
   * stopping); while one runs, also those it is restarting or starting, until their hosts are
   * registered. Each is down: its entry is in the file and nothing of it runs.
   */
  configuredWithoutHost(): string[] {
    return [...this.#configuredIds].filter((id) => !this.#hosts.has(id));
  }

  /**
   * Whether a running reload is about to start this provider anew -- its entry added: new, or
   * again after the reload before failed to start it -- and has not registered its host yet (it
   * may first wait for the stops of the providers it removes). Not one it restarts (its entry
   * changed: replacing()).
   */
  starting(providerId: string): boolean {
    return this.#adding.get(providerId) === "waiting";
  }

  /**
   * Why the last reload failed to start `providerId` (its entry added or changed): the start error
   * of its host listed down, or why its host was not registered; null otherwise. Its entry is in
   * the configuration file though not in effect (until the next reload).
   */
  startFailure(providerId: string): string | null {
    const listed = this.failedStarts().find((h) => h.id === providerId);
    if (listed !== undefined) return listed.startError;
    return this.#notRegistered.get(providerId) ?? null;
  }

  /**
   * startFailure in the one wording every place says it (GET /v0/providers/health's start_error,
   * whether a host is listed down or none was registered; notRunning): "provider <id> failed to
   * start at a configuration reload (<why>)". Null when the last reload did not fail to start it.
   */
  startFailureText(providerId: string): string | null {
    const failure = this.startFailure(providerId);
    return failure === null
      ? null
      : `provider ${namedProviderId(providerId)} ${startFailureWords(failure)}`;
  }

  /**
   * Why a configured provider has no host, in the one wording every place that says it uses
   * (device conditions, the e-stop's unverified devices, Sparkplug, GET /v0/providers/health):
   * the last reload failed to register it (startFailure: first, as a reload that failed to
   * register a provider it restarts is done with it, though it is replacing() until the reload
   * ends), a reload is restarting it (replacing) or starting it anew (starting), else a reload
   * did not get it running (the runtime stopping meanwhile). Null while a host is registered
   * under the id (listed down or not: its own state says why) and for an id not configured.
   */
  notRunning(providerId: string): NotRunning | null {
    if (this.#hosts.has(providerId) || !this.#configuredIds.has(providerId)) return null;
    const failed = this.startFailureText(providerId);
    if (failed !== null) return { cause: "start_failed", text: failed };
    const restarting = this.restartingText(providerId);
    if (restarting !== null) return { cause: "restarting", text: restarting };
    if (this.starting(providerId)) {
      return { cause: "starting", text: reloadStartText(providerId, "starting") };
    }
    return {
      cause: "not_started",
      text: `provider ${
        namedProviderId(providerId)
      } is not running: a configuration reload failed to start it`,
    };
  }

  /**
   * While a reload is restarting `providerId` (replacing) and has not failed to start it
   * (startFailureText): "provider <id> is being restarted by a configuration reload" -- whether
   * its successor is registered yet (starting) or not (notRunning); null otherwise, also once its
   * successor is up (replacing: an outage of that process, while the reload still starts others,
   * is a loss of its own), and once the runtime's stop (stopAll) stops its successor: that host
   * reads as stopped. The device conditions say it through the whole restart, as they say it
   * while no host is registered.
   */
  restartingText(providerId: string): string | null {
    return this.reloadStart(providerId) === "restarting"
      ? reloadStartText(providerId, "restarting")
      : null;
  }

  /**
   * While a reload is starting `providerId` anew (its entry added) and has not failed to start it
   * (startFailureText): "provider <id> is being started by a configuration reload" -- whether its
   * host is registered yet (then not up yet) or not (starting, notRunning); null otherwise, also
   * once the runtime's stop (stopAll) stops its host: that host reads as stopped. The device
   * conditions say it until its host is up, as restartingText for one it restarts.
   */
  startingText(providerId: string): string | null {
    return this.reloadStart(providerId) === "starting"
      ? reloadStartText(providerId, "starting")
      : null;
  }

  /**
   * What a running reload is doing with `providerId`, not up yet and not failed to start
   * (startFailureText): restarting it (replacing) or starting it anew (its entry added) -- not
   * once its host is stopping (stopAll); null otherwise. restartingText and startingText say it
   * with the provider as subject, the e-stop's unverified reasons of a device its host no longer
   * lists (InventoryReader.reloadStart) -- in the same words (reloadStartWords).
   */
  reloadStart(providerId: string): ReloadStart | null {
    if (this.startFailureText(providerId) !== null) return null;
    if (this.replacing(providerId)) return "restarting";
    return this.#adding.has(providerId) ? "starting" : null;
  }

  /** notRunning's wording alone. */
  whyNotRunning(providerId: string): string | null {
    return this.notRunning(providerId)?.text ?? null;
  }

  /**
   * Every configured id (configured()) in the order of the configuration file the registry runs:
   * its ids, a host registered under each or not (a removal held back after them), then any other
   * registered host. Not the order of `hosts`, which lists a host a reload failed to start after
   * the entries in effect, and one it registers meanwhile last.
   */
  configuredIds(): string[] {
    return [
      ...this.#configuredIds,
      ...[...this.#hosts.keys()].filter((id) => !this.#configuredIds.has(id)),
    ];
  }

  /**
   * The hosts the last reload failed to start, still listed (down) until the next reconcile takes
   * them out: a reload whose providers section is unchanged must reconcile all the same.
   */
  failedStarts(): ProviderHost[] {
    return [...this.#failedStarts].filter((h) => this.#hosts.get(h.id) === h);
  }

  /**
   * #retire once o.beforeStop has let `providerId` go: the host stays registered (and its
   * session open) until then.
   */
  async #retireAfter(providerId: string, o: ReconcileOptions): Promise<void> {
    if (o.beforeStop !== undefined && this.#hosts.has(providerId)) {
      await o.beforeStop(providerId).catch(() => {});
    }
    await this.#retire(providerId, o.stopBudgetMs);
  }

  /** Takes a host out (remove) and stops it; stopAll waits for that stop as well. */
  #retire(providerId: string, budgetMs: number): Promise<void> {
    const host = this.#takeOut(providerId);
    if (host === undefined) return Promise.resolve();
    this.#retiringHosts.add(host);
    const stopped = host.stop(budgetMs);
    this.#retiring.add(stopped);
    return stopped.finally(() => {
      this.#retiring.delete(stopped);
      this.#retiringHosts.delete(host);
    });
  }

  /**
   * Keeps the last flip date of `host`, taken out (#takeOut), for its successor under the id
   * (#retiredFlipAt), or dates the successor no earlier when one is registered already.
   */
  #noteRetiredFlip(host: ProviderHost): void {
    const at = host.lastFlipAt;
    const successor = this.#hosts.get(host.id);
    if (at === null) return;
    if (successor !== undefined) successor.follow(at);
    else this.#retiredFlipAt.keep(host.id, at);
  }

  /** Puts the hosts in the order of `ids` (the configuration's); ids not listed keep their place after. */
  reorder(ids: readonly string[]): void {
    const next = new Map<string, ProviderHost>();
    for (const id of ids) {
      const h = this.#hosts.get(id);
      if (h) next.set(id, h);
    }
    for (const [id, h] of this.#hosts) if (!next.has(id)) next.set(id, h);
    this.#hosts = next;
  }

  get hosts(): readonly ProviderHost[] {
    return [...this.#hosts.values()];
  }

  /**
   * The hosts a reload took out of the registry (removed or restarted) whose stop is still ending
   * their process: it may still carry out a call it held when its session was closed, until it
   * has exited (the e-stop's drain waits for those: CallRouter.drainFrom).
   */
  retiringHosts(): readonly ProviderHost[] {
    return [...this.#retiringHosts];
  }

  host(providerId: string): ProviderHost | undefined {
    return this.#hosts.get(providerId);
  }

  /** Every known device in discovery order (provider config order, then ListDevices order). */
  devices(): DeviceInfo[] {
    return this.hosts.flatMap((h) => h.devices.map((d) => d.device));
  }

  capabilities(providerId: string, deviceId: string): DeviceCapabilities | undefined {
    return this.#hosts.get(providerId)?.devices.find((d) => d.device.deviceId === deviceId);
  }

  /**
   * The device as its provider last listed it: the registered host's inventory once it listed one
   * (also while it is down: a crash keeps its devices), else, while the id stays configured, the
   * one listed by the host a reload took out (restarting it: no host registered yet, or its
   * successor not up yet). For the audit of a call refused UNAVAILABLE meanwhile
   * (CallRouter.lastDeclared), never to route one: capabilities answers what can be called.
   */
  lastListed(providerId: string, deviceId: string): DeviceCapabilities | undefined {
    const host = this.#hosts.get(providerId);
    const devices = host?.listed ? host.devices : this.#retiredInventory.get(providerId);
    return devices?.find((d) => d.device.deviceId === deviceId);
  }

  /**
   * Starts every provider concurrently; all must be up within `timeoutMs` (fail-fast in that no
   * runtime runs with a provider missing: once every start has ended, or the deadline came
   * first, any failure stops them all and the error names each provider that failed, with its
   * reason). The starts still running after one failed are waited for, up to the deadline, so
   * that one run names every failure to fix, not the first. `beforeStop` is called once the start
   * has failed, before any provider is stopped: that stop is on purpose (the caller tells its
   * outage monitor so, as before any stop), not a device loss.
   */
  async startAll(
    timeoutMs: number,
    stopBudgetMs: number,
    beforeStop: () => void = () => {},
  ): Promise<void> {
    const results = this.hosts.map((h) =>
      h.start().then(
        () => null,
        (err) => `${h.id}: ${errorMessage(err)}`,
      )
    );
    const all = Promise.all(results);
    const outcome = await raceTimeout(this.#deps.clock, all, timeoutMs, "timeout" as const);
    if (outcome === "timeout") {
      // Said before they are stopped: what they last wrote usually says why they are not ready.
      // One whose start already failed is named with its reason, not as merely not ready: that
      // reason (a command not found, another protocol) is why start-up fails.
      const pending = this.hosts.filter((h) => !h.available && h.startError === null).map(
        describeNotReady,
      );
      const failed = this.hosts.filter((h) => h.startError !== null).map((h) =>
        `${h.id}: ${h.startError}`
      );
      await this.#stopAfterFailedStart(beforeStop, stopBudgetMs);
      await all;
      const said = [
        pending.join(", "),
        failed.length === 0 ? "" : `provider start failed: ${failed.join("; ")}`,
      ].filter((s) => s !== "");
      throw new RuntimeError(
        "DEADLINE_EXCEEDED",
        `providers not ready within runtime.startup_timeout_ms (${timeoutMs} ms): ${
          said.join("; ")
        }`,
      );
    }
    const failures = outcome.filter((f): f is string => f !== null);
    if (failures.length > 0) {
      await this.#stopAfterFailedStart(beforeStop, stopBudgetMs);
      throw new RuntimeError("UNAVAILABLE", `provider start failed: ${failures.join("; ")}`);
    }
    // The claims of the whole inventory, in configuration order (from now on each commit is
    // admitted against the others' devices): each provider's claim devices, so that one restarted
    // during start-up (admitted unchecked until now) still counts the devices it no longer lists.
    const conflict = findClaimConflict(this.hosts.flatMap((h) => h.claimDevices));
    if (conflict) {
      await this.#stopAfterFailedStart(beforeStop, stopBudgetMs);
      throw new RuntimeError("FAILED_PRECONDITION", conflict);
    }
    this.#checked = true;
  }

  /**
   * Stops every provider after startAll failed, `beforeStop` told first: one that throws must not
   * leave the providers running.
   */
  async #stopAfterFailedStart(beforeStop: () => void, budgetMs: number): Promise<void> {
    try {
      beforeStop();
    } catch (err) {
      this.#lines.error(
        `provider start failed: telling the stop of the providers failed: ${
          errorMessage(err)
        }; they are stopped anyway`,
      );
    }
    await this.stopAll(budgetMs);
  }

  /**
   * The runtime's stop has begun (Kernel.stop, in its own call): from now on no provider is
   * restarted by its supervisor (ProviderHost.endRestarts) -- one that fails meanwhile, or that
   * the second stop signal kills, stays down until stopAll ends it -- while the HTTP drain and the
   * stop actions (an e-stop's ladder) still run on the providers that are up. Idempotent.
   */
  endRestarts(): void {
    this.#restartsEnded = true;
    for (const h of this.hosts) h.endRestarts();
  }

  /**
   * Stops every provider concurrently within `budgetMs`, and waits for the ones a reload is still
   * ending. One a running reload adds or restarts is stopping from now on, no longer being started
   * or restarted (reloadStart): its host reads as any other being stopped -- its devices down
   * without the reload's purpose (DeviceCondition.reloading), the runtime's stop being on purpose
   * itself (its caller stops the outage monitor first: no device loss). One whose host is not
   * registered yet reads as one a reload did not get running (notRunning). The ones a reload is
   * retiring are bounded by `budgetMs` too when it ends before their own stop's budget (a hurried
   * runtime stop: ProviderHost.stop kills them when it runs out), not left to the reload's.
   * `hurried` (a second stop signal: Kernel.stop, StopDeadline.hurried), settled before or while
   * this stop runs: every provider it is still ending, the ones a reload is retiring too, is
   * killed then (ProviderHost.killStopping), not once `budgetMs` runs out; nothing once it has
   * ended. Should that kill throw, the stop still waits for every provider, then rejects saying so.
   */
  async stopAll(budgetMs: number, hurried?: Promise<void>): Promise<void> {
    // Also the ones whose host is not registered yet: read as a reload did not get them running.
    this.#adding.clear();
    this.#replacing.clear();
    const stopped = Promise.all([
      ...this.hosts.map((h) => h.stop(budgetMs)),
      ...[...this.#retiringHosts].map((h) => h.stop(budgetMs)),
      ...this.#retiring,
    ]);
    let ended = false;
    // The kill's error, if it threw (at most one: the hurry settles once).
    const killFailed: unknown[] = [];
    void hurried?.then(() => {
      if (ended) return;
      try {
        for (const h of [...this.hosts, ...this.#retiringHosts]) h.killStopping();
      } catch (err) {
        killFailed.push(err);
      }
    });
    try {
      await stopped;
    } finally {
      ended = true;
    }
    if (killFailed.length > 0) {
      throw new RuntimeError(
        "INTERNAL",
        `the providers' kill at the hurry (a second stop signal) failed: ${
          errorMessage(killFailed[0])
        }; the providers' stop went on to its end`,
      );
    }
  }
}

/**
 * A provider that is not ready, for a start-up failure: its id and why its start failed (which
 * quotes its last stderr lines), or, while it is still starting, its last stderr lines.
 */
export function describeNotReady(host: ProviderHost): string {
  if (host.startError !== null) return `${host.id} (start failed: ${host.startError})`;
  const last = lastStderrLines(host.stderrTail);
  return last === "" ? host.id : `${host.id} (${last})`;
}

/**
 * How far a running reconcile is with a provider it starts anew (#adding): its host not
 * registered yet, or registered and not up yet.
 */
type AddPhase = "waiting" | "registered";

/**
 * The wording of notRunning, restartingText and startingText for a provider a reload is starting
 * or restarting: "provider <id> is being started by a configuration reload" (reloadStartWords).
 */
function reloadStartText(providerId: string, start: ReloadStart): string {
  return `provider ${namedProviderId(providerId)} ${reloadStartWords(start)}`;
}
