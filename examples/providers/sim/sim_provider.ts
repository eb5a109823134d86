import {
  DeviceProvider,
  type HostRequirement,
  type ProviderDevice,
  ProviderError,
  type ReplyContext,
  type RequestPayloads,
  type ResponsePayloads,
  type WireDeviceHealth,
  WireDeviceState,
  WireProviderState,
  WireQuality,
} from "../../../src/provider_sdk/mod.ts";
import { applyCallFaults, type ChaosHost, type ChaosState, createChaosDevice } from "./chaos.ts";
import { SIM_PROVIDER_NAME, SIM_PROVIDER_VERSION, type SimDevice } from "./sim_device.ts";

/** Outcome of device initialisation, reported by WaitReady and GetHealth. */
export interface StartupReport {
  readonly policy: "strict" | "degraded";
  readonly configured: number;
  readonly failed: ReadonlyArray<{ id: string; type: string; reason: string }>;
}

/** Construction inputs of the simulated provider. */
export interface SimProviderOptions {
  /** Successfully initialised devices (listed sorted by id, chaos_control last). */
  readonly devices: readonly SimDevice[];
  readonly startup: StartupReport;
  readonly chaos: ChaosState;
  readonly host: ChaosHost;
  /** Called when WaitReady is handled (reserved for a `sim` mode ticker). */
  readonly onReady?: () => void;
  /** non_interacting physics: advanced before any request looks at a device. */
  readonly physics?: { advance(): void };
  readonly nowMs?: () => number;
  /** The start-up host check (host_check.ts); with one unmet the provider serves no devices. */
  readonly hostRequirements?: readonly HostRequirement[];
}

/** The simulated provider: the reference sim's device catalogue (README.md) plus chaos_control. */
export class SimProvider extends DeviceProvider {
  readonly #chaos: ChaosState;
  readonly #host: ChaosHost;
  readonly #startup: StartupReport;
  readonly #simDevices: ReadonlyMap<string, SimDevice>;
  readonly #physics: { advance(): void } | undefined;

  constructor(o: SimProviderOptions) {
    const startup = o.startup;
    super({
      name: SIM_PROVIDER_NAME,
      version: SIM_PROVIDER_VERSION,
      waitReady: () => {
        o.onReady?.();
        return {
          init_time_ms: "0",
          device_count: String(this.listedDevices().length),
          ...startupMetrics(startup),
          startup_degraded: String(startup.failed.length > 0),
          provider_version: SIM_PROVIDER_VERSION,
          provider_impl: "sim",
        };
      },
      ...(o.nowMs === undefined ? {} : { nowMs: o.nowMs }),
      ...(o.hostRequirements === undefined ? {} : { hostRequirements: o.hostRequirements }),
    });
    this.#chaos = o.chaos;
    this.#host = o.host;
    this.#physics = o.physics;
    this.#startup = startup;
    const sorted = [...o.devices].sort((a, b) =>
      a.definition.deviceId < b.definition.deviceId ? -1 : 1
    );
    for (const d of sorted) this.addDevice(d.definition);
    this.#simDevices = new Map(sorted.map((d) => [d.definition.deviceId, d]));
    this.addDevice(createChaosDevice(o.chaos, o.host));
  }

  protected override listedDevices(): ProviderDevice[] {
    return super.listedDevices().filter((d) => !this.#chaos.isUnavailable(d.definition.deviceId));
  }

  protected override findDevice(deviceId: string): ProviderDevice | undefined {
    this.#physics?.advance();
    return this.#chaos.isUnavailable(deviceId) ? undefined : super.findDevice(deviceId);
  }

  protected override signalQuality(device: ProviderDevice, signalId: string): number {
    return this.#chaos.hasSignalFault(device.definition.deviceId, signalId)
      ? WireQuality.FAULT
      : WireQuality.OK;
  }

  protected override beforeCall(req: RequestPayloads["call"], ctx: ReplyContext): Promise<void> {
    return applyCallFaults(this.#chaos, this.#host, req, ctx);
  }

  /**
   * Under an injected stuck-output fault the call runs as usual (checks, errors, OK) but the
   * device's outputs are put back afterwards: an actuator that acknowledges and does not obey.
   */
  override async call(
    req: RequestPayloads["call"],
    ctx: ReplyContext,
  ): Promise<ResponsePayloads["call"]> {
    this.#physics?.advance(); // before outputs are held: the steps due so far ran with the old ones
    const device = this.#simDevices.get(req.device_id ?? "");
    if (device === undefined || !this.#chaos.hasStuckOutputs(device.definition.deviceId)) {
      return await super.call(req, ctx);
    }
    const held = { ...device.outputs };
    try {
      return await super.call(req, ctx);
    } finally {
      Object.assign(device.outputs, held);
    }
  }

  /** A device with stuck outputs ignores the provider's own safe state too. */
  protected override applyDeviceSafeState(device: ProviderDevice): void | Promise<void> {
    this.#physics?.advance(); // the time before the safe state ran with the outputs before it
    if (this.#chaos.hasStuckOutputs(device.definition.deviceId)) return;
    return super.applyDeviceSafeState(device);
  }

  /** An unavailable device answers an empty read with no values, explicit ids with NOT_FOUND. */
  override readSignals(req: RequestPayloads["read_signals"]): ResponsePayloads["read_signals"] {
    const id = req.device_id ?? "";
    if (id !== "" && this.#chaos.isUnavailable(id) && super.findDevice(id) !== undefined) {
      if ((req.signal_ids ?? []).length > 0) {
        throw ProviderError.notFound(`device unavailable (injected fault): ${id}`);
      }
      return { device_id: id, values: [] };
    }
    return super.readSignals(req);
  }

  override getHealth(): ResponsePayloads["get_health"] {
    const s = this.#startup;
    const degraded = s.failed.length > 0;
    const devices: WireDeviceHealth[] = this.listedDevices().map((d) => ({
      device_id: d.definition.deviceId,
      state: WireDeviceState.OK,
      message: "ok",
      metrics: { impl: "sim" },
    }));
    for (const f of s.failed) {
      devices.push({
        device_id: f.id,
        state: WireDeviceState.UNREACHABLE,
        message: f.reason,
        metrics: { startup_failure: "true", device_type: f.type },
      });
    }
    return this.withHostHealth({
      provider: {
        state: degraded ? WireProviderState.DEGRADED : WireProviderState.OK,
        message: degraded ? `${s.failed.length} device(s) failed to initialise` : "ok",
        metrics: { impl: "sim", ...startupMetrics(s) },
      },
      devices,
    });
  }
}

function startupMetrics(s: StartupReport): Record<string, string> {
  return {
    startup_policy: s.policy,
    startup_configured_devices: String(s.configured),
    startup_initialized_devices: String(s.configured - s.failed.length),
    startup_failed_devices: String(s.failed.length),
  };
}
