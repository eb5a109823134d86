/**
 * The device-loss latch (later anolis releases; issue 19 sec. 4): after a device was lost -- its
 * provider crashed or restarted, or the device stopped answering or dropped out of the inventory
 * -- automation may not command that device again until an operator deliberately enters AUTO
 * again. Their reason: on their reference rig an impeller restarted by itself ~1.4 s after power
 * returned to its provider, because the tree simply carried on.
 *
 * Only automated calls (the behavior tree) are refused; manual calls, mode-transition hooks and
 * the safe-state ladder are exempt. Every latch and release is published (`device_loss_latch`).
 */
import { type Clock, deviceHandle, failedPrecondition, type Logger } from "../common/mod.ts";
import type { GateContext, ModeChange } from "../control/mod.ts";
import type { EventBus } from "../events/mod.ts";

/** A latched device: when and why it was lost. */
interface LossEntry {
  readonly providerId: string;
  readonly deviceId: string;
  readonly atMs: number;
  readonly reason: string;
}

export interface DeviceLossLatchOptions {
  readonly bus: EventBus;
  readonly clock: Clock;
  readonly log: Logger;
  /** Device ids a provider has now (the registry's inventory). */
  readonly devicesOf: (providerId: string) => readonly string[];
}

/** Tracks lost devices and refuses automated calls to them until AUTO is entered again. */
export class DeviceLossLatch {
  readonly #o: DeviceLossLatchOptions;
  readonly #log: Logger;
  readonly #latched = new Map<string, LossEntry>();
  readonly #unsubscribe: () => void;

  constructor(options: DeviceLossLatchOptions) {
    this.#o = options;
    this.#log = options.log.child("device-loss");
    this.#unsubscribe = options.bus.subscribe(({ event: e }) => {
      if (e.kind === "provider_health_change" && e.state === "UNAVAILABLE") {
        for (const d of options.devicesOf(e.provider_id)) {
          this.#latch(e.provider_id, d, `provider ${e.provider_id} went down`);
        }
      } else if (e.kind === "device_availability" && !e.available) {
        this.#latch(e.provider_id, e.device_id, "device became unavailable");
      }
    });
  }

  /** Handles of the latched devices, in the order they were lost. */
  latched(): string[] {
    return [...this.#latched.keys()];
  }

  /** The router gate: refuses automated calls to a latched device. */
  readonly gate = (ctx: GateContext): ReturnType<typeof failedPrecondition> | null => {
    if (ctx.origin !== "automated" || this.#latched.size === 0) return null;
    const handle = deviceHandle(ctx.device.device.providerId, ctx.device.device.deviceId);
    const entry = this.#latched.get(handle);
    if (!entry) return null;
    return failedPrecondition(
      `Device-loss latch: ${handle} was lost (${entry.reason} at ${
        new Date(entry.atMs).toISOString()
      }); automation may not command it until an operator enters AUTO again ` +
        `(${ctx.fn.name} refused)`,
    );
  };

  /** Mode listener: entering AUTO (a deliberate operator act) releases every latch. */
  onModeChange(change: ModeChange): void {
    if (change.current !== "AUTO" || change.previous === "AUTO") return;
    for (const [handle, entry] of this.#latched) {
      this.#latched.delete(handle);
      this.#log.info(`released ${handle}: AUTO entered again`);
      this.#o.bus.publish({
        kind: "device_loss_latch",
        provider_id: entry.providerId,
        device_id: entry.deviceId,
        latched: false,
        reason: "AUTO entered again",
        timestamp_ms: this.#o.clock.nowMs(),
      });
    }
  }

  /** Stops listening for losses. */
  dispose(): void {
    this.#unsubscribe();
  }

  #latch(providerId: string, deviceId: string, reason: string): void {
    const handle = deviceHandle(providerId, deviceId);
    if (this.#latched.has(handle)) return;
    const atMs = this.#o.clock.nowMs();
    this.#latched.set(handle, { providerId, deviceId, atMs, reason });
    this.#log.warn(
      `latched ${handle}: ${reason}; automation may not command it until AUTO is entered again`,
    );
    this.#o.bus.publish({
      kind: "device_loss_latch",
      provider_id: providerId,
      device_id: deviceId,
      latched: true,
      reason,
      timestamp_ms: atMs,
    });
  }
}
