import { ProviderError } from "../../../src/provider_sdk/mod.ts";
import type { SeededRandom } from "./rng.ts";
import { type SimDevice, simDeviceFields } from "./sim_device.ts";

const BASE_VOLTS = [2.5, 5.0, 7.5, 3.3];
const SIGMA_BY_QUALITY = { GOOD: 0.01, NOISY: 0.05, FAULT: 0.2 } as const;
type SensorQuality = keyof typeof SIGMA_BY_QUALITY;
const DRIFT_V_PER_S = 0.002;
const NOISY_AFTER_S = 30;
const FAULT_AFTER_S = 60;

/**
 * Safe state, also the start-up state: noise injection off, quality GOOD, no drift (what
 * inject_noise(false) does). The sensor drives nothing; this only undoes an injected degradation.
 */
const SAFE_OUTPUTS: Readonly<
  { noise: boolean; quality: SensorQuality; drift: number; timer: number }
> = {
  noise: false,
  quality: "GOOD",
  drift: 0,
  timer: 0,
};

/** analogsensor: four voltage channels with injectable drift and noise, as the reference sim's. */
export function createAnalogSensor(
  deviceId: string,
  _cfg: Readonly<Record<string, unknown>>,
  rng: SeededRandom,
): SimDevice {
  /** What calls write; the physics step advances drift, timer and quality too. */
  const s = { ...SAFE_OUTPUTS };
  // Noise is applied at read time, always (also with noise injection off).
  const reading = (ch: number) => {
    const v = BASE_VOLTS[ch]! + s.drift + rng.gaussian() * SIGMA_BY_QUALITY[s.quality];
    return Math.min(Math.max(v, 0), 10);
  };
  const hints = { pollHintHz: 10, staleAfterMs: 500 };
  return {
    definition: {
      ...simDeviceFields(
        deviceId,
        "sim.analog_sensor_module",
        "Sim Analog Sensor Module (4 channels)",
        "analog_input",
      ),
      signals: [
        ...[1, 2, 3, 4].map((n) => ({
          id: `voltage_ch${n}`,
          name: `Voltage Ch${n}`,
          type: "double" as const,
          unit: "V",
          ...hints,
          read: () => reading(n - 1),
        })),
        {
          id: "sensor_quality",
          name: "Sensor Quality",
          type: "string",
          pollHintHz: 0.5,
          staleAfterMs: 3000,
          read: () => s.quality,
        },
      ],
      functions: [
        {
          id: 1,
          name: "calibrate_channel",
          description: "Zero the drift (sensor quality must be GOOD)",
          category: "CONFIG",
          args: [{ name: "channel", type: "int64", min: 1, max: 4 }],
          precheckArgs: false,
          handler: (args) => {
            if (s.quality !== "GOOD") {
              throw ProviderError.failedPrecondition(
                `calibrate_channel: sensor quality is ${s.quality}, must be GOOD`,
              );
            }
            args.int64("channel");
            s.drift = 0;
            s.timer = 0;
          },
        },
        {
          id: 2,
          name: "inject_noise",
          description: "Enable or disable drift and quality degradation",
          category: "CONFIG",
          args: [{ name: "enabled", type: "bool" }],
          handler: (args) => {
            if (args.bool("enabled")) s.noise = true;
            else Object.assign(s, SAFE_OUTPUTS);
          },
        },
      ],
      applySafeState: () => void Object.assign(s, SAFE_OUTPUTS),
    },
    outputs: s,
    tick(dt) {
      s.timer += dt;
      if (!s.noise) return;
      s.drift += DRIFT_V_PER_S * dt;
      if (s.quality === "GOOD" && s.timer > NOISY_AFTER_S) s.quality = "NOISY";
      else if (s.quality === "NOISY" && s.timer > FAULT_AFTER_S) s.quality = "FAULT";
    },
  };
}
