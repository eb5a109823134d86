/**
 * Stop actions (origin "safety": the e-stop ladder, the hooks of a transition into FAULT) and a
 * provider queue that is full: the calls in it were admitted before the stop and are refused one
 * after another by the gates that changed (latch, FAULT) as soon as the call on the wire returns,
 * so the queue drains within about the provider's timeout_ms. A stop action refused as busy
 * meanwhile retries until it gets its turn, bounded, instead of failing at once.
 */
import { type Clock, type Logger, readClockTwice, sleepOn, toRuntimeError } from "../common/mod.ts";
import type { InventoryReader } from "../state/mod.ts";

/** Pause between attempts of a stop action refused because its provider's queue is full. */
export const BUSY_RETRY_INTERVAL_MS = 10;
/** How long past the provider's timeout_ms a stop action keeps retrying a full queue. */
export const BUSY_RETRY_MARGIN_MS = 1000;

/**
 * The longest one stop action to a provider whose timeout_ms is `timeoutMs` can take
 * (retryWhileBusy): it retries a full queue for up to timeout_ms + BUSY_RETRY_MARGIN_MS, its last
 * attempt BUSY_RETRY_INTERVAL_MS after that at most, and once sent it runs up to its own deadline,
 * timeout_ms: 2 x timeout_ms + BUSY_RETRY_MARGIN_MS + BUSY_RETRY_INTERVAL_MS. What bounds a
 * reload's wait for a provider's stop actions, per call (Estop.stopActionsSettled).
 */
export function stopActionWorstCaseMs(timeoutMs: number): number {
  return 2 * timeoutMs + BUSY_RETRY_MARGIN_MS + BUSY_RETRY_INTERVAL_MS;
}

/**
 * Runs `call` (a stop action to `providerId`), retrying while its provider is up but its call queue
 * is full, for up to the provider's timeout_ms + BUSY_RETRY_MARGIN_MS. A provider that is down,
 * or not configured, fails at once (the error `call` rejects with). A clock that fails never
 * keeps the call from being sent: asked once more, and when it fails again the call is made once,
 * not retried (no deadline to bound the retries); each failure an ERROR line on `log`.
 */
export async function retryWhileBusy<T>(
  inventory: InventoryReader,
  clock: Clock,
  providerId: string,
  call: () => Promise<T>,
  log?: Logger,
): Promise<T> {
  const host = inventory.provider(providerId);
  if (!host) return await call(); // rejects: the router names the unknown provider
  const readClock = () =>
    readClockTwice(
      () => clock.monoMs(),
      log,
      `stop action to ${providerId}`,
      `stop action to ${providerId}: no retry while its provider is busy`,
    );
  const startedAt = readClock();
  const deadline = startedAt === null
    ? null
    : startedAt + host.config.timeoutMs + BUSY_RETRY_MARGIN_MS;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      const e = toRuntimeError(err);
      // Runtime-side UNAVAILABLE (no provider status code) while the provider is up = queue full.
      const busy = e.code === "UNAVAILABLE" && e.details?.provider_code === undefined &&
        host.available && deadline !== null;
      if (!busy) throw e;
      const now = readClock();
      if (now === null || now >= deadline) throw e;
      await sleepOn(clock, BUSY_RETRY_INTERVAL_MS);
    }
  }
}
