import type { DeviceDefinition } from "../../../src/provider_sdk/mod.ts";

/** Name and version the simulator reports (the reference simulator's identity). */
export const SIM_PROVIDER_NAME = "anolis-provider-sim";
export const SIM_PROVIDER_VERSION = "0.2.3";

/** One value a call can write. */
export type OutputValue = number | boolean | string;

/**
 * A simulated device: its ADPP declaration (with its safe state, `definition.applySafeState`), the
 * values calls write, and a physics step.
 */
export interface SimDevice {
  readonly definition: DeviceDefinition;
  /**
   * Everything a call to the device can change, mutated in place by its handlers: an injected
   * stuck-output fault copies it before a call and puts it back afterwards.
   */
  readonly outputs: Record<string, OutputValue>;
  /** Advances the physics by `dt` seconds (only called in non_interacting mode). */
  tick(dt: number): void;
}

/** A device's configuration is invalid: under startup_policy strict the provider exits 1. */
export class DeviceInitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DeviceInitError";
  }
}

/** Common Device fields of every simulated device. */
export function simDeviceFields(
  deviceId: string,
  typeId: string,
  label: string,
  kind: string,
): Pick<DeviceDefinition, "deviceId" | "typeId" | "typeVersion" | "label" | "address" | "tags"> {
  return {
    deviceId,
    typeId,
    typeVersion: "1.0",
    label,
    address: `sim://${deviceId}`,
    tags: { family: "sim", kind },
  };
}

/** First-order lag step toward `target` with time constant `tau` seconds. */
export function firstOrderLag(x: number, target: number, dt: number, tau: number): number {
  return x + (1 - Math.exp(-dt / tau)) * (target - x);
}

/** Reads an optional finite number from a device's extra config keys. */
export function optionalNumber(
  deviceId: string,
  cfg: Readonly<Record<string, unknown>>,
  key: string,
): number | undefined {
  const v = cfg[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw new DeviceInitError(`devices[${deviceId}].${key}: must be a number, got ${String(v)}`);
  }
  return v;
}
