/**
 * The real clock's timers (src/host/clock.ts) past what one host timer holds: a delay longer than
 * 2^31 - 1 ms waits (a host timer would run it after 1 ms, and an alarm engine whose next wake-up
 * is that far re-armed it at once, again and again), as a chain of shorter timers that fires
 * once the whole delay ran out and that clearTimer stops at any link.
 */
import assert from "node:assert/strict";
import { hostTimers, MAX_HOST_TIMER_MS, systemClock } from "../../src/host/mod.ts";

/** Resolves once a `ms` timer of `timers` fires. */
function after(timers: Pick<typeof systemClock, "setTimer">, ms: number): Promise<void> {
  return new Promise((resolve) => timers.setTimer(resolve, ms));
}

Deno.test("systemClock.setTimer waits out a delay longer than one host timer holds, instead of firing at once", async () => {
  let fired = false;
  const long = systemClock.setTimer(() => (fired = true), MAX_HOST_TIMER_MS + 1);
  try {
    // Host timers fire in the order they fall due: one wrapped to 1 ms would come before this.
    await after(systemClock, 50);
    assert.equal(fired, false);
  } finally {
    systemClock.clearTimer(long);
  }
});

Deno.test("hostTimers chains timers past its bound: the chain fires once, after the whole delay; cleared midway it never fires", async () => {
  const timers = hostTimers(10);
  let fired = 0;
  const done = Promise.withResolvers<void>();
  const start = performance.now();
  timers.setTimer(() => {
    fired++;
    done.resolve();
  }, 100);
  // A 20 ms timer set after it falls due first: the chain's first 10 ms links did not run it --
  // unless the process was held up past the whole delay meanwhile (a loaded machine), when
  // running it is right.
  await after(timers, 20);
  if (performance.now() - start < 100) assert.equal(fired, 0);
  await done.promise;
  await after(timers, 30);
  assert.equal(fired, 1, "once");

  let cleared = false;
  const set = performance.now();
  const stopped = timers.setTimer(() => (cleared = true), 100);
  await after(timers, 15); // past its first link: a later link is pending
  timers.clearTimer(stopped);
  // Cleared before its whole delay ran out (a loaded machine may hold the process up past it,
  // when running it was right; a timer may fire up to a millisecond early): it never fires.
  const clearedBeforeDue = performance.now() - set < 98;
  await after(timers, 120);
  if (clearedBeforeDue) assert.equal(cleared, false);
});
