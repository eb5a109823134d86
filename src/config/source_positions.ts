/**
 * Where the loader read each mode-transition hook and each of its calls, each alarm, interlock and
 * safe-state expectation: the line and column of its entry in the configuration file (1-based).
 * Kept beside the loaded objects, not in them: a reload compares the running configuration
 * structurally, and an edit elsewhere in the file that moves a hook's line must not make its
 * section differ. Entries built otherwise (tests) have none.
 */
import type { Position } from "./_source.ts";

const POSITIONS = new WeakMap<object, Position>();

/** Where `entry` (a hook, call, alarm, interlock or expectation, as loaded) was written. */
export function sourcePosition(
  entry: object,
): { readonly line: number; readonly column: number } | undefined {
  return POSITIONS.get(entry);
}

/** `line:column` of `entry` for a message, as ` (line L:C)`; "" when unknown. */
export function atSourcePosition(entry: object): string {
  const at = POSITIONS.get(entry);
  return at === undefined ? "" : ` (line ${at.line}:${at.column})`;
}

/** Notes where the loader read `entry` (config-internal) and returns it. */
export function noteSourcePosition<T extends object>(entry: T, at: Position): T {
  POSITIONS.set(entry, at);
  return entry;
}
