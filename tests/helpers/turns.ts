/**
 * Waits measured in turns of the host's event loop, never in time: for in-process work made of
 * promise callbacks and 0 ms timers, which a loaded machine slows down but never stops.
 */
import assert from "node:assert/strict";

/** How many macrotask turns untilTurns waits at most, unless told otherwise. */
export const UNTIL_MAX_TURNS = 200;

/**
 * One macrotask turn of the event loop: resolves after every promise callback queued before it
 * has run, and after the timers already due with the same 0 ms delay.
 */
export function macrotask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Lets the event loop turn (one macrotask at a time, `turns` at most) until `ok()` holds, then
 * asserts it, failing with `what`.
 */
export async function untilTurns(
  ok: () => boolean,
  what: string,
  turns = UNTIL_MAX_TURNS,
): Promise<void> {
  for (let i = 0; i < turns && !ok(); i++) await macrotask();
  assert.ok(ok(), what);
}
