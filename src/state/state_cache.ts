import { qualityFromWire, timestampToMs, typedValueFromWire } from "../adpp/mod.ts";
import {
  type Clock,
  type DeviceCapabilities,
  deviceHandle,
  type Logger,
  pollableSignals,
  type Quality,
  RuntimeError,
  sameValue,
  type TypedValue,
  worstQuality,
} from "../common/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type { ProviderHost, ProviderRegistry } from "../providers/mod.ts";

/** One cached signal sample. */
export interface SignalState {
  readonly value: TypedValue;
  readonly quality: Quality;
  /** Provider sample time (epoch ms), else the time the poll answer arrived. */
  readonly timestampMs: number;
}

/** Cached state of one device. */
export interface DeviceState {
  readonly providerId: string;
  readonly deviceId: string;
  /** Signals polled for this device (those with a poll hint), in capability order. */
  readonly pollable: readonly string[];
  readonly signals: ReadonlyMap<string, SignalState>;
  /** Epoch ms of the last successful poll; 0 if never. */
  readonly lastPollMs: number;
  /** Provider up and the last poll of this device answered OK. */
  readonly available: boolean;
}

interface MutableDeviceState {
  providerId: string;
  deviceId: string;
  pollable: string[];
  signals: Map<string, SignalState>;
  lastPollMs: number;
  available: boolean;
}

export interface StateCacheOptions {
  readonly registry: ProviderRegistry;
  readonly bus: EventBus;
  readonly clock: Clock;
  readonly log: Logger;
  /** polling.interval_ms */
  readonly intervalMs: number;
  /** How often the provider's own health (GetHealth) is refreshed for the health view. */
  readonly reportedHealthIntervalMs?: number;
}

/** Provider-reported health kept from the last GetHealth answer. */
export interface ReportedHealthEntry {
  readonly atMs: number;
  readonly response: import("../adpp/mod.ts").ResponsePayloads["get_health"];
}

/**
 * The runtime's view of every device's signals, filled by polling. Each provider has its own
 * poll loop, so a slow provider never delays another; one provider's polls never overlap.
 */
export class StateCache {
  readonly #opts: StateCacheOptions;
  readonly #log: Logger;
  /** provider id -> device id -> state, in discovery order. */
  readonly #byProvider = new Map<string, Map<string, MutableDeviceState>>();
  readonly #reported = new Map<string, ReportedHealthEntry>();
  readonly #loops = new Map<string, PollLoop>();
  #running = false;

  constructor(opts: StateCacheOptions) {
    this.#opts = opts;
    this.#log = opts.log.child("state");
    for (const host of opts.registry.hosts) {
      this.#byProvider.set(host.id, new Map());
      host.onInventory((devices) => this.#applyInventory(host.id, devices));
      host.onAvailability((up) => {
        if (!up) this.#markProviderDown(host.id);
        else this.#loops.get(host.id)?.wake();
      });
      if (host.devices.length > 0) this.#applyInventory(host.id, host.devices);
    }
  }

  /** Primes the cache with one poll pass of every provider, then starts the poll loops. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    await Promise.all(this.#opts.registry.hosts.map((h) => this.#pollProvider(h)));
    for (const host of this.#opts.registry.hosts) {
      const loop = new PollLoop(this.#opts.intervalMs, () => this.#cycle(host), this.#opts.clock);
      this.#loops.set(host.id, loop);
      loop.start();
    }
  }

  /** Stops polling and waits for polls in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all([...this.#loops.values()].map((l) => l.stop()));
    this.#loops.clear();
  }

  device(providerId: string, deviceId: string): DeviceState | undefined {
    return this.#byProvider.get(providerId)?.get(deviceId);
  }

  /** Every device with cached state entries, in discovery order. */
  devices(): DeviceState[] {
    return [...this.#byProvider.values()].flatMap((m) => [...m.values()]);
  }

  /** Devices of one provider. */
  providerDevices(providerId: string): DeviceState[] {
    return [...(this.#byProvider.get(providerId)?.values() ?? [])];
  }

  signal(providerId: string, deviceId: string, signalId: string): SignalState | undefined {
    return this.device(providerId, deviceId)?.signals.get(signalId);
  }

  /** Worst signal quality; UNAVAILABLE when the device is unavailable. */
  deviceQuality(state: DeviceState): Quality {
    if (!state.available) return "UNAVAILABLE";
    return worstQuality([...state.signals.values()].map((s) => s.quality));
  }

  reportedHealth(providerId: string): ReportedHealthEntry | undefined {
    return this.#reported.get(providerId);
  }

  /**
   * Polls one device now (best effort; used right after a successful call so the cache reflects
   * the effect). Resolves when done; never throws.
   */
  async pollDevice(providerId: string, deviceId: string): Promise<void> {
    const host = this.#opts.registry.host(providerId);
    const dev = this.#byProvider.get(providerId)?.get(deviceId);
    if (!host || !dev || dev.pollable.length === 0 || !host.available) return;
    await this.#pollOne(host, dev);
  }

  /**
   * A live GetHealth round-trip to one provider (not the cached view). Stores the answer for the
   * health view. Resolves null when the provider is down or does not implement GetHealth.
   */
  async fetchReportedHealth(host: ProviderHost): Promise<ReportedHealthEntry | null> {
    const session = host.session;
    if (!host.available || !session || session.supportsGetHealth === false) return null;
    try {
      const response = await host.request("get_health", {});
      session.supportsGetHealth = true;
      const entry = { atMs: this.#opts.clock.nowMs(), response };
      this.#reported.set(host.id, entry);
      return entry;
    } catch (err) {
      if (err instanceof RuntimeError && err.details?.provider_code === 14) {
        session.supportsGetHealth = false; // UNIMPLEMENTED: do not ask this session again
      }
      return null;
    }
  }

  // ---- polling ----

  async #cycle(host: ProviderHost): Promise<void> {
    if (!host.available) return;
    await this.#pollProvider(host);
    const every = this.#opts.reportedHealthIntervalMs ?? 5000;
    const last = this.#reported.get(host.id)?.atMs ?? 0;
    if (host.available && this.#opts.clock.nowMs() - last >= every) {
      await this.fetchReportedHealth(host);
    }
  }

  async #pollProvider(host: ProviderHost): Promise<void> {
    if (!host.available) return;
    const devices = [...(this.#byProvider.get(host.id)?.values() ?? [])].filter((d) =>
      d.pollable.length > 0
    );
    if (devices.length === 0) {
      // Nothing to poll: a heartbeat keeps liveness checks running.
      const answered = await host.request("get_health", {}).then(
        () => true,
        (err) => !(err instanceof RuntimeError && err.code === "DEADLINE_EXCEEDED"),
      );
      if (host.available) host.noteLiveness(answered);
      return;
    }
    for (const dev of devices) {
      if (!host.available) return;
      const answered = await this.#pollOne(host, dev);
      if (!answered) return; // hung: do not queue more requests behind it this cycle
    }
  }

  /** Polls one device; returns false when the provider did not answer in time. */
  async #pollOne(host: ProviderHost, dev: MutableDeviceState): Promise<boolean> {
    try {
      const r = await host.request("read_signals", {
        device_id: dev.deviceId,
        signal_ids: dev.pollable,
      });
      host.noteLiveness(true);
      this.#applySamples(dev, r.values ?? []);
      return true;
    } catch (err) {
      const timedOut = err instanceof RuntimeError && err.code === "DEADLINE_EXCEEDED";
      if (timedOut) host.noteLiveness(false);
      else if (err instanceof RuntimeError && err.details?.provider_code !== undefined) {
        host.noteLiveness(true); // an error status is still an answer
      }
      if (host.available) {
        this.#log.debug(
          `poll ${deviceHandle(dev.providerId, dev.deviceId)} failed: ${(err as Error).message}`,
        );
        this.#markDeviceUnavailable(dev);
      }
      return !timedOut;
    }
  }

  #applySamples(
    dev: MutableDeviceState,
    values: readonly import("../adpp/mod.ts").WireSignalValue[],
  ): void {
    const now = this.#opts.clock.nowMs();
    dev.lastPollMs = now;
    for (const sv of values) {
      const signalId = sv.signal_id ?? "";
      const value = typedValueFromWire(sv.value);
      if (!signalId || value === null) continue;
      const next: SignalState = {
        value,
        quality: qualityFromWire(sv.quality),
        timestampMs: timestampToMs(sv.timestamp) ?? now,
      };
      this.#store(dev, signalId, next, now);
    }
    if (!dev.available) {
      dev.available = true;
      this.#publishAvailability(dev, true, now);
    }
  }

  #store(dev: MutableDeviceState, signalId: string, next: SignalState, now: number): void {
    const prev = dev.signals.get(signalId);
    dev.signals.set(signalId, next);
    const qualityChanged = prev !== undefined && prev.quality !== next.quality;
    if (prev === undefined || qualityChanged || !sameValue(prev.value, next.value)) {
      this.#opts.bus.publish({
        kind: "state_update",
        provider_id: dev.providerId,
        device_id: dev.deviceId,
        signal_id: signalId,
        value: next.value,
        quality: next.quality,
        timestamp_ms: now,
      });
    }
    if (qualityChanged) {
      this.#opts.bus.publish({
        kind: "quality_change",
        provider_id: dev.providerId,
        device_id: dev.deviceId,
        signal_id: signalId,
        old_quality: prev.quality,
        new_quality: next.quality,
        timestamp_ms: now,
      });
    }
  }

  /** Keeps the last values but marks every signal UNAVAILABLE (and says so once). */
  #markDeviceUnavailable(dev: MutableDeviceState): void {
    const now = this.#opts.clock.nowMs();
    for (const [id, s] of dev.signals) {
      if (s.quality !== "UNAVAILABLE") this.#store(dev, id, { ...s, quality: "UNAVAILABLE" }, now);
    }
    if (dev.available) {
      dev.available = false;
      this.#publishAvailability(dev, false, now);
    }
  }

  #markProviderDown(providerId: string): void {
    for (const dev of this.#byProvider.get(providerId)?.values() ?? []) {
      this.#markDeviceUnavailable(dev);
    }
  }

  #publishAvailability(dev: MutableDeviceState, available: boolean, now: number): void {
    this.#opts.bus.publish({
      kind: "device_availability",
      provider_id: dev.providerId,
      device_id: dev.deviceId,
      available,
      timestamp_ms: now,
    });
  }

  /** New inventory after (re)discovery: keep known devices' samples, rebuild the poll plan. */
  #applyInventory(providerId: string, devices: readonly DeviceCapabilities[]): void {
    const old = this.#byProvider.get(providerId) ?? new Map<string, MutableDeviceState>();
    const next = new Map<string, MutableDeviceState>();
    for (const caps of devices) {
      const id = caps.device.deviceId;
      const pollable = pollableSignals(caps);
      const prev = old.get(id);
      const signals = new Map<string, SignalState>();
      for (const sid of pollable) {
        const s = prev?.signals.get(sid);
        if (s) signals.set(sid, s);
      }
      next.set(id, {
        providerId,
        deviceId: id,
        pollable,
        signals,
        lastPollMs: prev?.lastPollMs ?? 0,
        available: prev?.available ?? false,
      });
    }
    const now = this.#opts.clock.nowMs();
    for (const [id, dev] of old) {
      if (!next.has(id) && dev.available) this.#publishAvailability(dev, false, now);
    }
    this.#byProvider.set(providerId, next);
  }
}

/** A fixed-cadence loop that never overlaps itself and stops promptly. */
class PollLoop {
  readonly #intervalMs: number;
  readonly #body: () => Promise<void>;
  readonly #clock: Clock;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  #current: Promise<void> | null = null;

  constructor(intervalMs: number, body: () => Promise<void>, clock: Clock) {
    this.#intervalMs = intervalMs;
    this.#body = body;
    this.#clock = clock;
  }

  start(): void {
    this.#running = true;
    this.#schedule(this.#intervalMs);
  }

  /** Runs the next cycle now (e.g. a provider just came back) unless one is in flight. */
  wake(): void {
    if (!this.#running || this.#current) return;
    clearTimeout(this.#timer);
    this.#schedule(0);
  }

  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    await this.#current;
  }

  #schedule(delay: number): void {
    this.#timer = setTimeout(() => this.#run(), delay);
  }

  async #run(): Promise<void> {
    if (!this.#running) return;
    const started = this.#clock.monoMs();
    this.#current = this.#body().catch(() => {});
    await this.#current;
    this.#current = null;
    if (!this.#running) return;
    const elapsed = this.#clock.monoMs() - started;
    this.#schedule(Math.max(0, this.#intervalMs - elapsed));
  }
}
