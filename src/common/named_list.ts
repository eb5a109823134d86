/**
 * A list for one log line or message: the first `max` items joined by ", ", then " and N more"
 * for the rest, so a line naming what a large machine has stays bounded (journald splits lines
 * over 48 KiB; a reader wants the count and a few names, not hundreds).
 */
export function namedList(items: readonly string[], max: number): string {
  if (items.length <= max) return items.join(", ");
  return `${items.slice(0, max).join(", ")} and ${items.length - max} more`;
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
