/**
 * The inventory as the upper layers see it (docs/architecture.md, "The core promise"): which
 * providers there are, whether each is up, what devices each declares -- and nothing that can
 * reach a provider. http/, alarms/ and safety/ read through this port; writes go through the call
 * router (control/), reads of values through the state cache. `deno task lint:layers` forbids
 * those folders from importing providers/ or adpp/ at all.
 */
import {
  type DeviceCapabilities,
  type DeviceInfo,
  errorMessage,
  type HostCheckView,
  type LifecycleState,
  type Logger,
  neverThrowing,
  type ProviderSupervisionView,
  type ReloadStart,
  tellEach,
} from "../common/mod.ts";
import type { ProviderHostCounts, ProviderRegistry } from "../providers/mod.ts";

/** One provider, read-only: never its session, never a request. */
export interface ProviderSummary {
  readonly id: string;
  readonly available: boolean;
  readonly lifecycle: LifecycleState;
  /** Its devices as discovered (empty while it never came up). */
  readonly devices: readonly DeviceCapabilities[];
  /**
   * Whether it listed its inventory since it was registered, even no device (its host check
   * unmet): known then, also while it is down. Absent: known once it lists a device.
   */
  readonly listed?: boolean;
  /** Its configured call timeout (`providers[].timeout_ms`): what bounds a wait on its calls. */
  readonly config: { readonly timeoutMs: number };
  /** Failures and restart attempts since start. */
  counts(): ProviderHostCounts;
  /** Supervision as GET /v0/providers/health shows it. */
  supervision(): ProviderSupervisionView;
  /** What it reported of its host when it last came up (null: nothing). */
  hostCheck(): HostCheckView | null;
}

/**
 * What happened to a provider's inventory: rediscovered with a difference (`changed`), rediscovered
 * the same after a restart (`unchanged`), its host taken out by a reload (`removed`: gone, or
 * restarted, or started again after a failed start -- configured() tells which), or the
 * configuration dropped the provider (`unconfigured`: ProviderRegistry.onUnconfigured, told once,
 * whether it had a host or not -- after that host's `removed` -- it is gone for good).
 */
export type InventoryChange = "changed" | "unchanged" | "removed" | "unconfigured";

/** Told when a provider's inventory may have changed. */
export type InventoryListener = (providerId: string, change: InventoryChange) => void;

/** Told when a provider becomes AVAILABLE or stops being so. */
export type AvailabilityListener = (provider: ProviderSummary, available: boolean) => void;

/** The read-only inventory port (see the module comment). */
export interface InventoryReader {
  /** Every configured provider, in configuration order. */
  providers(): readonly ProviderSummary[];
  provider(providerId: string): ProviderSummary | undefined;
  /** Every known device, in discovery order. */
  devices(): DeviceInfo[];
  capabilities(providerId: string, deviceId: string): DeviceCapabilities | undefined;
  /**
   * Subscribes to inventory changes: a provider's (re)discovery, a provider added or removed (by
   * a reload). A (re)discovered provider counts as up when its listeners are told, and the state
   * cache and the device outages hold its new inventory (the composition root builds this port
   * after them). Returns the unsubscribe function.
   */
  onChange(listener: InventoryListener): () => void;
  /** Subscribes to providers' availability (every provider, also those a reload adds). */
  onAvailability(listener: AvailabilityListener): () => void;
  /**
   * Whether this provider's entry is in the configuration (ProviderRegistry.configured): told
   * `removed` while it is -- a reload restarting it (its entry changed), or taking out the host
   * the reload before failed to start while the file keeps it -- it is not gone: its devices are
   * lost, not unconfigured. It is gone once told `unconfigured`. Absent: none with no host is.
   */
  configured?(providerId: string): boolean;
  /**
   * Why a configured provider has no host registered (a reload restarting or starting it, or one
   * that failed to start it), in the one wording of ProviderRegistry.whyNotRunning: "provider
   * <id> is being restarted by a configuration reload", say; the caller adds its own frame. Null
   * while one is listed, and for an id not configured. Absent: never known.
   */
  whyNotRunning?(providerId: string): string | null;
  /**
   * Every configured provider id, a host listed under it or not, in the configuration file's
   * order (ProviderRegistry.configuredIds). Absent: those of providers().
   */
  configuredIds?(): readonly string[];
  /**
   * Why the last configuration reload failed to start this provider (its host listed down, or not
   * registered at all), null otherwise. Absent: never known.
   */
  startFailure?(providerId: string): string | null;
  /**
   * startFailure in the one wording (ProviderRegistry.startFailureText): "provider <id> failed to
   * start at a configuration reload (<why>)". Absent: never known.
   */
  startFailureText?(providerId: string): string | null;
  /**
   * What a running configuration reload is doing with this provider, not up yet
   * (ProviderRegistry.reloadStart): starting it anew or restarting it; null otherwise (also once
   * it failed to start). Said in the words of reloadStartWords. Absent: never known.
   */
  reloadStart?(providerId: string): ReloadStart | null;
  /**
   * The providers a configuration reload took out (removed or restarted) whose process is still
   * ending (ProviderRegistry.retiringHosts): not in providers(), but a call one held when its
   * session was closed may still be carried out until it has exited. Absent: none.
   */
  stopping?(): readonly ProviderSummary[];
}

/** The inventory port over the provider registry (the composition root builds one). */
export class Inventory implements InventoryReader {
  readonly #registry: ProviderRegistry;
  readonly #listeners: InventoryListener[] = [];
  readonly #availability: AvailabilityListener[] = [];
  /**
   * A listener that threw: logged; the others are told all the same (tellEach), also when that
   * line throws (a custom logger): it is lost then, never the listeners after it.
   */
  readonly #failed: (err: unknown) => void;

  constructor(registry: ProviderRegistry, log?: Logger) {
    this.#registry = registry;
    const lines = log === undefined ? undefined : neverThrowing(log);
    this.#failed = (err) => lines?.error(`inventory listener failed: ${errorMessage(err)}`);
    registry.eachHost((host) => {
      host.onInventory((_devices, changed) => {
        if (registry.host(host.id) === host) {
          this.#tell(host.id, changed ? "changed" : "unchanged");
        }
      });
      host.onAvailability((up) => {
        if (registry.host(host.id) !== host) return;
        tellEach(this.#availability, [host, up], this.#failed);
      });
    });
    registry.onHostRemoved((host) => this.#tell(host.id, "removed"));
    registry.onUnconfigured((id) => this.#tell(id, "unconfigured"));
  }

  providers(): readonly ProviderSummary[] {
    return this.#registry.hosts;
  }

  provider(providerId: string): ProviderSummary | undefined {
    return this.#registry.host(providerId);
  }

  devices(): DeviceInfo[] {
    return this.#registry.devices();
  }

  capabilities(providerId: string, deviceId: string): DeviceCapabilities | undefined {
    return this.#registry.capabilities(providerId, deviceId);
  }

  onChange(listener: InventoryListener): () => void {
    this.#listeners.push(listener);
    return () => {
      const i = this.#listeners.indexOf(listener);
      if (i >= 0) this.#listeners.splice(i, 1);
    };
  }

  onAvailability(listener: AvailabilityListener): () => void {
    this.#availability.push(listener);
    return () => {
      const i = this.#availability.indexOf(listener);
      if (i >= 0) this.#availability.splice(i, 1);
    };
  }

  configured(providerId: string): boolean {
    return this.#registry.configured(providerId);
  }

  whyNotRunning(providerId: string): string | null {
    return this.#registry.whyNotRunning(providerId);
  }

  configuredIds(): readonly string[] {
    return this.#registry.configuredIds();
  }

  startFailure(providerId: string): string | null {
    return this.#registry.startFailure(providerId);
  }

  startFailureText(providerId: string): string | null {
    return this.#registry.startFailureText(providerId);
  }

  reloadStart(providerId: string): ReloadStart | null {
    return this.#registry.reloadStart(providerId);
  }

  stopping(): readonly ProviderSummary[] {
    return this.#registry.retiringHosts();
  }

  #tell(providerId: string, change: InventoryChange): void {
    tellEach(this.#listeners, [providerId, change], this.#failed);
  }
}
