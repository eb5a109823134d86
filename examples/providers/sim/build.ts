/**
 * Builds the simulated provider from its configuration: the devices, chaos_control and, in
 * non_interacting mode, the physics clock. main.ts serves it on stdin/stdout; tests serve the same
 * provider in-process (tests/helpers/in_process_provider.ts), so both run one construction.
 */
import { createAnalogSensor } from "./analogsensor.ts";
import { type ChaosHost, ChaosState } from "./chaos.ts";
import type { SimConfig } from "./config.ts";
import { createMotorCtl } from "./motorctl.ts";
import { createRelayIo } from "./relayio.ts";
import { SeededRandom } from "./rng.ts";
import { createTempCtl } from "./tempctl.ts";
import { PhysicsClock } from "./physics_clock.ts";
import { SimProvider, type StartupReport } from "./sim_provider.ts";
import { DeviceInitError, type SimDevice } from "./sim_device.ts";
import type { HostRequirement } from "../../../src/provider_sdk/mod.ts";

/** The reference simulator seeds its noise generator with 42. */
export const RNG_SEED = 42;

/** Creates the configured devices; failures are collected, not thrown. */
export function createDevices(
  config: SimConfig,
  rng: SeededRandom,
): { devices: SimDevice[]; failed: StartupReport["failed"] } {
  const devices: SimDevice[] = [];
  const failed: Array<{ id: string; type: string; reason: string }> = [];
  for (const d of config.devices) {
    try {
      switch (d.type) {
        case "tempctl":
          devices.push(createTempCtl(d.id, d.extra));
          break;
        case "motorctl":
          devices.push(createMotorCtl(d.id, d.extra));
          break;
        case "relayio":
          devices.push(createRelayIo(d.id, d.extra));
          break;
        case "analogsensor":
          devices.push(createAnalogSensor(d.id, d.extra, rng));
          break;
        default:
          throw new DeviceInitError(`devices[${d.id}].type: unknown device type '${d.type}'`);
      }
    } catch (err) {
      if (!(err instanceof DeviceInitError)) throw err;
      failed.push({ id: d.id, type: d.type, reason: err.message });
    }
  }
  return { devices, failed };
}

/** What buildSimProvider built. */
export interface BuiltSim {
  readonly provider: SimProvider;
  /** The devices that failed to initialise (startup_policy decides whether that is fatal). */
  readonly failed: StartupReport["failed"];
  readonly deviceCount: number;
}

/**
 * The simulated provider of `config`: its devices (seeded noise), chaos_control acting on the
 * process through `host`, and the physics of non_interacting mode stepped on `monoMs`.
 */
export function buildSimProvider(
  config: SimConfig,
  o: {
    host: ChaosHost;
    monoMs?: () => number;
    /** What the simulated hardware needs (`host.device_nodes`): unmet, it starts not ready. */
    hostRequirements?: readonly HostRequirement[];
  },
): BuiltSim {
  const monoMs = o.monoMs ?? (() => performance.now());
  const { devices, failed } = createDevices(config, new SeededRandom(RNG_SEED));
  // non_interacting: the physics steps at tick_rate_hz, run when a request looks at a device.
  const physics = config.mode === "non_interacting" && config.tickRateHz !== null
    ? new PhysicsClock(devices, config.tickRateHz, monoMs)
    : null;
  const provider = new SimProvider({
    devices,
    startup: { policy: config.startupPolicy, configured: config.devices.length, failed },
    chaos: new ChaosState(monoMs, new SeededRandom(RNG_SEED)),
    host: o.host,
    ...(physics === null ? {} : { physics }),
    ...(o.hostRequirements === undefined ? {} : { hostRequirements: o.hostRequirements }),
  });
  return { provider, failed, deviceCount: devices.length };
}
