/**
 * A list for one log line or message: the first `max` items joined by ", ", then " and N more"
 * for the rest, so a line naming what a large machine has stays bounded (journald splits lines
 * over 48 KiB; a reader wants the count and a few names, not hundreds).
 */
export function namedList(items: readonly string[], max: number): string {
  if (items.length <= max) return items.join(", ");
  return `${items.slice(0, max).join(", ")} and ${items.length - max} more`;
}
