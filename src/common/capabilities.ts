import type { ValueType } from "./typed_value.ts";

/** A device key as `provider_id/device_id`. */
export type DeviceHandle = string;

export function deviceHandle(providerId: string, deviceId: string): DeviceHandle {
  return `${providerId}/${deviceId}`;
}

/** Splits `provider/device` on the first `/`; null unless both parts are non-empty. */
export function parseDeviceHandle(
  handle: string,
): { providerId: string; deviceId: string } | null {
  const i = handle.indexOf("/");
  if (i <= 0 || i === handle.length - 1) return null;
  return { providerId: handle.slice(0, i), deviceId: handle.slice(i + 1) };
}

/** FunctionPolicy.Category names. */
export type FunctionCategory = "UNSPECIFIED" | "READ" | "CONFIG" | "ACTUATE";

/** Argument specification; bounds are present only when the provider declared them. */
export interface ArgSpec {
  readonly name: string;
  /** null when the provider left the type unspecified (calls using it are refused). */
  readonly type: ValueType | null;
  readonly unit: string;
  readonly description: string;
  readonly required: boolean;
  /** Inclusive bounds for the arg's own numeric type (min_double for double, ...). */
  readonly min?: number;
  readonly max?: number;
  readonly allowedValues: readonly string[];
}

export interface FunctionSpec {
  readonly functionId: number;
  readonly name: string;
  readonly description: string;
  readonly category: FunctionCategory;
  /** Read-only only when the category is READ; everything else actuates (project rule). */
  readonly actuating: boolean;
  readonly args: readonly ArgSpec[];
}

export interface SignalSpec {
  readonly signalId: string;
  readonly name: string;
  readonly description: string;
  readonly valueType: ValueType | null;
  readonly unit: string;
  readonly pollHintHz: number;
  readonly staleAfterMs: number;
}

export interface DeviceInfo {
  readonly providerId: string;
  readonly deviceId: string;
  readonly providerName: string;
  readonly typeId: string;
  readonly typeVersion: string;
  readonly label: string;
  readonly address: string;
  readonly tags: Readonly<Record<string, string>>;
}

/** What DescribeDevice told us about one device. */
export interface DeviceCapabilities {
  readonly device: DeviceInfo;
  readonly functions: readonly FunctionSpec[];
  readonly signals: readonly SignalSpec[];
}

/** Signals the runtime polls: those with a positive poll hint (anolis' notion of "default"). */
export function pollableSignals(caps: DeviceCapabilities): string[] {
  return caps.signals.filter((s) => s.pollHintHz > 0).map((s) => s.signalId);
}
