/**
 * A list for one log line or message: the first `max` items joined by ", ", then " and N more"
 * for the rest, so a line naming what a large machine has stays bounded (journald splits lines
 * over 48 KiB; a reader wants the count and a few names, not hundreds). `show` writes each item
 * named (e.g. cut to a bound), only those.
 */
export function namedList(
  items: readonly string[],
  max: number,
  show: (item: string) => string = (item) => item,
): string {
  const named = items.slice(0, max).map(show).join(", ");
  return items.length <= max ? named : `${named} and ${items.length - max} more`;
}

/**
 * Bound on the functions or devices a warning (a log line, a stop's answer) names; the rest are
 * counted ("and N more"). Every one is in the answer's `uncovered` and in the plan
 * GET /v0/runtime/status shows (`estop.plan.uncovered`, `estop.unverified_devices`).
 */
export const MAX_NAMED_IN_WARNING = 20;

/**
 * What a run made for device returns says brought it (the e-stop's securing run of a provider, the
 * hook calls into FAULT made again for it): `has device <id> answering again`, or
 * `has devices <id>, <id> answering again`, up to MAX_NAMED_IN_WARNING named, the rest counted.
 */
export function deviceReturnWhy(deviceIds: readonly string[]): string {
  return deviceIds.length === 1
    ? `has device ${deviceIds[0]} answering again`
    : `has devices ${namedList(deviceIds, MAX_NAMED_IN_WARNING)} answering again`;
}

/** What a run made for a provider's return says by default: the provider itself is up again. */
export const PROVIDER_BACK_WHY = "is AVAILABLE again";

/** Stands for a run's device returns among its causes: said as deviceReturnWhy of its devices. */
export const DEVICES_ANSWERING: unique symbol = Symbol("devices answering again");

/** One cause of a run made for a provider's return: what a reason said, or its device returns. */
export type ProviderBackCause = string | typeof DEVICES_ANSWERING;

/**
 * What brought a run made for a provider's return (the e-stop's securing run of a provider, the
 * hook calls into FAULT made again for it): each cause once, in the order they joined -- distinct
 * reasons, at most one per kind (the provider's return, each kind of reload, its device returns),
 * so bounded by those kinds -- and, while DEVICES_ANSWERING is among them, the devices whose
 * returns it is made for (bounded by the provider's devices).
 */
export interface ProviderBackCauses {
  causes: ProviderBackCause[];
  devices?: string[];
}

/**
 * A run's line, what brought it: every cause in the order they joined, its device returns as
 * deviceReturnWhy names them, up to MAX_NAMED_IN_WARNING named (`is AVAILABLE again and had its
 * ladder calls changed by a reload`).
 */
export function causesWhy(
  causes: readonly ProviderBackCause[],
  devices: readonly string[] = [],
): string {
  const said = causes.map((c) => c === DEVICES_ANSWERING ? deviceReturnWhy(devices) : c);
  if (said.length <= 1) return said[0] ?? PROVIDER_BACK_WHY;
  return `${namedList(said.slice(0, -1), MAX_NAMED_IN_WARNING)} and ${said.at(-1)}`;
}

/**
 * Joins the causes of a later reason (`joining`) to a waiting run's (`into`), each once in order:
 * a device's return joining names that device too, except where the provider's own return is
 * among them (its return covers its devices: said in their place, and dropped when it joins).
 */
export function joinCauses(into: ProviderBackCauses, joining: ProviderBackCauses): void {
  for (const cause of joining.causes) {
    if (cause === DEVICES_ANSWERING) {
      // The provider's own return covers its devices answering again.
      if (into.causes.includes(PROVIDER_BACK_WHY)) continue;
      into.devices ??= [];
      for (const d of joining.devices ?? []) if (!into.devices.includes(d)) into.devices.push(d);
    } else if (cause === PROVIDER_BACK_WHY && into.devices !== undefined) {
      // The provider's own return says its devices' returns in their place.
      into.causes = into.causes.filter((c) => c !== DEVICES_ANSWERING);
      delete into.devices;
    }
    if (!into.causes.includes(cause)) into.causes.push(cause);
  }
}

/** Made for device returns only, none other joined: its line is the device-return spell's. */
export function onlyDeviceReturns(causes: readonly ProviderBackCause[]): boolean {
  return causes.length === 1 && causes[0] === DEVICES_ANSWERING;
}
