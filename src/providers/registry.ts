import {
  type DeviceCapabilities,
  deviceHandle,
  type DeviceInfo,
  RuntimeError,
} from "../common/mod.ts";
import type { ProviderConfig } from "../config/mod.ts";
import { ProviderHost, type ProviderHostDeps } from "./provider_host.ts";
import { raceTimeout } from "./provider_session.ts";

/** All configured providers, in config order, and the devices they expose. */
export class ProviderRegistry {
  readonly #hosts = new Map<string, ProviderHost>();

  constructor(providers: readonly ProviderConfig[], deps: ProviderHostDeps) {
    for (const p of providers) this.#hosts.set(p.id, new ProviderHost(p, deps));
  }

  get hosts(): readonly ProviderHost[] {
    return [...this.#hosts.values()];
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
   * Starts every provider concurrently; all must be up within `timeoutMs` (fail-fast: on any
   * failure the others are stopped and the error names each provider that failed).
   */
  async startAll(timeoutMs: number, stopBudgetMs: number): Promise<void> {
    const results = this.hosts.map((h) =>
      h.start().then(
        () => null,
        (err) => `${h.id}: ${err instanceof Error ? err.message : String(err)}`,
      )
    );
    const all = Promise.all(results);
    const outcome = await raceTimeout(all, timeoutMs, "timeout" as const);
    if (outcome === "timeout") {
      const pending = this.hosts.filter((h) => !h.available).map((h) => h.id);
      await this.stopAll(stopBudgetMs);
      await all;
      throw new RuntimeError(
        "DEADLINE_EXCEEDED",
        `providers not ready within runtime.startup_timeout_ms (${timeoutMs} ms): ${
          pending.join(", ")
        }`,
      );
    }
    const failures = outcome.filter((f): f is string => f !== null);
    if (failures.length > 0) {
      await this.stopAll(stopBudgetMs);
      throw new RuntimeError("UNAVAILABLE", `provider start failed: ${failures.join("; ")}`);
    }
    const conflict = findAddressConflict(this.hosts.flatMap((h) => h.devices));
    if (conflict) {
      await this.stopAll(stopBudgetMs);
      throw new RuntimeError("FAILED_PRECONDITION", conflict);
    }
  }

  /** Stops every provider concurrently within `budgetMs`. */
  async stopAll(budgetMs: number): Promise<void> {
    await Promise.all(this.hosts.map((h) => h.stop(budgetMs)));
  }
}

/**
 * Bus ownership check: two devices claiming the same `hw.bus_path` + `hw.i2c_address` (tags, both
 * or neither; address compared canonically as lowercase hex) is a conflict. Returns the message.
 */
export function findAddressConflict(devices: readonly DeviceCapabilities[]): string | null {
  const owners = new Map<string, string>();
  for (const d of devices) {
    const bus = d.device.tags["hw.bus_path"];
    const addr = d.device.tags["hw.i2c_address"];
    const handle = deviceHandle(d.device.providerId, d.device.deviceId);
    if (bus === undefined || addr === undefined) {
      if (bus === addr) continue; // neither
      return `device ${handle}: tags hw.bus_path and hw.i2c_address must be given together`;
    }
    const n = Number(addr); // Number() ignores surrounding white space
    const key = `${bus}@${Number.isFinite(n) ? `0x${n.toString(16)}` : addr.trim().toLowerCase()}`;
    const other = owners.get(key);
    if (other) return `devices ${other} and ${handle} both claim bus address ${key}`;
    owners.set(key, handle);
  }
  return null;
}
