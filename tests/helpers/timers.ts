/**
 * A ledger of the timers (setTimeout) armed while it is open: which are still pending. Deno 2.9's
 * test sanitizer no longer reports a timer a test leaves behind, and a forgotten timer is a real
 * fault (a process that cannot exit, a restart due after shutdown, a loop that spins), so tests
 * that assert "nothing left pending" keep this ledger. Timers still run for real; only their
 * arming and clearing are written down.
 */

/** The timers armed since the ledger opened. */
export interface TimerLedger {
  /** Delays (ms, as given) of the timers that neither fired nor were cleared, in arming order. */
  pending(): number[];
  /** Stops keeping the ledger (timers armed meanwhile keep running). */
  close(): void;
}

/**
 * Opens a ledger: until close(), every setTimeout and clearTimeout in this process is noted, but
 * those armed from code whose stack matches `ignore` (e.g. ADPP_DEADLINE_TIMER of clock.ts: the
 * ADPP session's deadline timer, another component's).
 */
export function openTimerLedger(ignore?: RegExp): TimerLedger {
  const g = globalThis as { setTimeout: unknown; clearTimeout: unknown };
  const originalSet = globalThis.setTimeout;
  const originalClear = globalThis.clearTimeout;
  type TimerId = ReturnType<typeof setTimeout>;
  const pending = new Map<TimerId, number>();
  g.setTimeout = (handler: (...args: unknown[]) => void, delay?: number, ...args: unknown[]) => {
    const id = originalSet(() => {
      pending.delete(id);
      handler(...args);
    }, delay);
    if (ignore === undefined || !ignore.test(new Error().stack ?? "")) pending.set(id, delay ?? 0);
    return id;
  };
  g.clearTimeout = (id?: TimerId) => {
    if (id !== undefined) pending.delete(id);
    originalClear(id);
  };
  return {
    pending: () => [...pending.values()],
    close() {
      g.setTimeout = originalSet;
      g.clearTimeout = originalClear;
    },
  };
}
