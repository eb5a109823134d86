import { providerTextWithin, quoteCutText } from "./provider_text.ts";
import type { ValueType } from "./typed_value.ts";

/** A device key as `provider_id/device_id`. */
export type DeviceHandle = string;

export function deviceHandle(providerId: string, deviceId: string): DeviceHandle {
  return `${providerId}/${deviceId}`;
}

/** Longest device id a log line quotes (longer is cut, marked with an ellipsis). */
export const QUOTED_DEVICE_ID_CHARS = 64;

/**
 * Longest provider id (configured, of any length) a log line or an answer's reason names; longer
 * is cut, marked with an ellipsis. Every layer that names a provider (control, safety) cuts it so.
 */
export const QUOTED_PROVIDER_ID_CHARS = 128;

/**
 * A provider id as a log line or an answer's reason names it, unquoted (the operator's configured
 * id, not a provider's text): cut to QUOTED_PROVIDER_ID_CHARS, so an id of any length makes no
 * line of that length. Not for keys or ids an answer carries as fields: those keep it whole.
 */
export function namedProviderId(providerId: string): string {
  return providerTextWithin(providerId, QUOTED_PROVIDER_ID_CHARS);
}

/**
 * A device id (the provider's text, or configured) a log line or an answer's reason names
 * unquoted: cut to QUOTED_DEVICE_ID_CHARS, as quoteDeviceHandle cuts it.
 */
export function namedDeviceId(deviceId: string): string {
  return providerTextWithin(deviceId, QUOTED_DEVICE_ID_CHARS);
}

/**
 * A device as a log line or an answer's reason names it unquoted, `provider_id/device_id`: the
 * provider id cut as namedProviderId, the device id as namedDeviceId, each marked with an ellipsis
 * when cut. The quoted form (a device id a provider chose freely) is quoteDeviceHandle.
 */
export function namedDeviceHandle(providerId: string, deviceId: string): string {
  return `${namedProviderId(providerId)}/${namedDeviceId(deviceId)}`;
}

/**
 * A device handle as its writer gave it (`provider/device`: a tree's literal or computed handle, a
 * hook's call), as a log line or a message names it unquoted: namedDeviceHandle of its parts, a
 * handle without a `/` cut as a provider id. For handles the runtime built from a device's ids,
 * namedDeviceHandle(providerId, deviceId) says the same.
 */
export function namedHandle(handle: DeviceHandle): string {
  const providerId = providerIdOf(handle);
  return providerId === handle
    ? namedProviderId(handle)
    : namedDeviceHandle(providerId, handle.slice(providerId.length + 1));
}

/**
 * A device in a log line: `"provider_id/device_id"`, cut as namedDeviceHandle first (the device
 * id, a provider's text, to QUOTED_DEVICE_ID_CHARS, the provider id to QUOTED_PROVIDER_ID_CHARS),
 * then quoted as quoteProviderTextWithin quotes (quoteCutText: JSON, DEL, C1 and U+2028/U+2029
 * escaped too), so that a quote, a control character or 10 KB in it can neither forge nor flood
 * the line. Not for keys or API answers: those take deviceHandle.
 */
export function quoteDeviceHandle(providerId: string, deviceId: string): string {
  return quoteCutText(namedDeviceHandle(providerId, deviceId));
}

/**
 * A device id alone in a message (its provider named apart): `"device_id"`, cut to
 * QUOTED_DEVICE_ID_CHARS as namedDeviceId, then quoted as quoteDeviceHandle.
 */
export function quoteDeviceId(deviceId: string): string {
  return quoteCutText(namedDeviceId(deviceId));
}

/**
 * The provider id of a `provider/device` handle: the text before its first `/` (the whole text
 * when it has none). Unlike parseDeviceHandle it never refuses: for handles the runtime built.
 */
export function providerIdOf(handle: DeviceHandle): string {
  const i = handle.indexOf("/");
  return i < 0 ? handle : handle.slice(0, i);
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

/**
 * A function's FunctionPolicy as declared (ADPP FunctionSpec.policy, minus the category). The
 * runtime enforces it on every call but the stop actions (docs/http-api.md, "Provider policies").
 */
export interface FunctionPolicy {
  /** Runtime modes (IDLE, MANUAL, AUTO, FAULT) a call is allowed in; empty = every mode. */
  readonly allowedModes: readonly string[];
  /** Calls need a lease; this runtime grants none, so they are refused. */
  readonly requiresLease: boolean;
  /** Least time between two calls of this function sent to the provider; 0 = none. */
  readonly minIntervalMs: number;
  readonly isIdempotent: boolean;
  readonly safetyProfile: string;
}

/** The policy of a function that declares none: no restriction. */
export const NO_FUNCTION_POLICY: FunctionPolicy = {
  allowedModes: [],
  requiresLease: false,
  minIntervalMs: 0,
  isIdempotent: false,
  safetyProfile: "",
};

export interface FunctionSpec {
  readonly functionId: number;
  readonly name: string;
  readonly description: string;
  readonly category: FunctionCategory;
  /** Read-only only when the category is READ; everything else actuates (project rule). */
  readonly actuating: boolean;
  readonly args: readonly ArgSpec[];
  /** Absent: NO_FUNCTION_POLICY (a spec built by hand; the wire conversion always sets it). */
  readonly policy?: FunctionPolicy;
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
