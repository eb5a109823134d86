/**
 * The device-loss latch (as later anolis releases; docs/safety.md, "A device that drops out, and
 * the device-loss latch"): after a device was lost, automation may not command that device again
 * until an operator deliberately enters AUTO again. Their reason: on their reference rig an
 * impeller restarted by itself ~1.4 s after power returned to its provider, because the tree simply
 * carried on.
 *
 * "Lost" is the state layer's "device down" (state/device_outage.ts): its provider is down, it
 * left the inventory, or its reads have failed for longer than the bound -- whether or not its
 * provider stays up. Every device is followed, in every mode:
 *  - a device that goes down is latched: automated calls to it are refused (manual calls, mode
 *    transition hooks and the safe-state ladder are exempt);
 *  - in AUTO, a device the tree depends on (named literally in the tree, or commanded by it since
 *    AUTO was entered, a call still in flight at the entry included) going down forces FAULT at
 *    once (hooks included): the tree halts, and the mode change is on the audit trail with origin
 *    `device_loss` naming the device. Nothing is re-commanded when it returns: re-arming
 *    (FAULT -> MANUAL -> AUTO) is an operator's act, and entering AUTO is refused while a device
 *    the tree names is failing or down. Entering AUTO releases only the devices that are back:
 *    one still down stays latched until the next entry.
 * Every latch and release is published (`device_loss_latch`) and logged, dated no earlier than
 * the device's latch or release before it (a step back of the wall clock: NTP).
 */
import {
  type Clock,
  deviceHandle,
  failedPrecondition,
  type Logger,
  neverThrowing,
  quoteDeviceHandle,
  transitionDate,
} from "../common/mod.ts";
import type { RuntimeMode } from "../config/mod.ts";
import type { AuditOrigin, GateContext, ModeChange } from "../control/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type { DeviceConditionChange, DeviceOutages } from "../state/mod.ts";

/** A latched device: when and why it was lost. */
export interface LossEntry {
  readonly providerId: string;
  readonly deviceId: string;
  /** The latch's date: the wall time it went down, no earlier than its release before it. */
  readonly atMs: number;
  readonly reason: string;
}

/** The part of the mode manager the latch uses. */
export interface LatchModes {
  current(): RuntimeMode;
  /** Un-vetoable transition to FAULT (hooks included). */
  forceFault(reason: string, source?: AuditOrigin): Promise<boolean>;
  /**
   * Refuses a transition into AUTO whose before-hooks run now at its commit (why, remedy, the
   * audit `refused_by`).
   */
  invalidateAutoEntry?(why: string, remedy?: string, refusedBy?: string): void;
}

export interface DeviceLossLatchOptions {
  /** Device conditions: a latched device still down when AUTO is entered stays latched. */
  readonly outages: Pick<DeviceOutages, "onChange" | "condition">;
  readonly modes: LatchModes;
  readonly bus: EventBus;
  readonly clock: Clock;
  readonly log: Logger;
  /** Whether the tree depends on a device (named in it, or commanded since AUTO was entered). */
  readonly treeDependsOn: (handle: string) => boolean;
}

/** Tracks lost devices and refuses automated calls to them until AUTO is entered again. */
export class DeviceLossLatch {
  readonly #o: DeviceLossLatchOptions;
  /**
   * Its lines never throw: a logger that fails (a closed stderr) loses a line, never a latch's
   * announcement nor the FAULT a loss in AUTO forces (its line comes first).
   */
  readonly #log: Logger;
  readonly #latched = new Map<string, LossEntry>();
  /**
   * Provider id -> device id -> the date of the device's latest latch or release (#transitionAt),
   * kept after its release so that a later latch is never dated before it. A provider's entries
   * leave with it (forgetProvider, or a device found unconfigured): a provider configured again
   * under that id brings new devices. Bounded by the devices the configured providers listed.
   */
  readonly #lastTransitionAt = new Map<string, Map<string, number>>();
  readonly #unsubscribe: () => void;
  #forcedFault: string | null = null;

  constructor(options: DeviceLossLatchOptions) {
    this.#o = options;
    this.#log = neverThrowing(options.log.child("device-loss"));
    this.#unsubscribe = options.outages.onChange((change) => this.#changed(change));
  }

  /** Handles of the latched devices, in the order they were lost. */
  latched(): string[] {
    this.#forgetUnconfigured();
    return [...this.#latched.keys()];
  }

  /** The latched devices with when and why (status). */
  entries(): LossEntry[] {
    this.#forgetUnconfigured();
    return [...this.#latched.values()];
  }

  /**
   * A reload removed provider `providerId`: its latched devices leave the latch at once (one
   * already down when removed is told no condition change, and a reload configuring the id again
   * brings new devices, which the removed process's loss must not latch).
   */
  forgetProvider(providerId: string): void {
    for (const [handle, entry] of this.#latched) {
      if (entry.providerId === providerId) {
        this.#release(handle, entry, "its provider is no longer configured");
      }
    }
    this.#lastTransitionAt.delete(providerId);
  }

  /**
   * Dates a device's latch or release no earlier than its latch or release before it, and
   * records it: a step back of the wall clock (NTP) must not date a release before the latch it
   * ends, nor a latch before the release before it (as AlarmEngine dates an interlock's).
   */
  #transitionAt(providerId: string, deviceId: string, wall: number): number {
    let devices = this.#lastTransitionAt.get(providerId);
    if (devices === undefined) {
      devices = new Map();
      this.#lastTransitionAt.set(providerId, devices);
    }
    const before = devices.get(deviceId);
    const at = transitionDate(wall, before);
    devices.set(deviceId, at);
    return at;
  }

  /** A device of a provider no longer configured: its date leaves with it (#lastTransitionAt). */
  #forgetDevice(providerId: string, deviceId: string): void {
    const devices = this.#lastTransitionAt.get(providerId);
    if (devices === undefined) return;
    devices.delete(deviceId);
    if (devices.size === 0) this.#lastTransitionAt.delete(providerId);
  }

  /**
   * A latched device whose provider is no longer configured (a reload removed it) leaves the
   * latch: it no longer exists, and would otherwise be "down" for ever. A provider configured
   * again under that id brings new devices.
   */
  #forgetUnconfigured(): void {
    for (const [handle, entry] of this.#latched) {
      if (this.#o.outages.condition(entry.providerId, entry.deviceId).unconfigured !== true) {
        continue;
      }
      this.#release(handle, entry, "its provider is no longer configured");
      this.#forgetDevice(entry.providerId, entry.deviceId);
    }
  }

  #release(handle: string, entry: LossEntry, reason: string): void {
    this.#latched.delete(handle);
    this.#log.info(`released ${quoteDeviceHandle(entry.providerId, entry.deviceId)}: ${reason}`);
    this.#o.bus.publish({
      kind: "device_loss_latch",
      provider_id: entry.providerId,
      device_id: entry.deviceId,
      latched: false,
      reason,
      timestamp_ms: this.#transitionAt(entry.providerId, entry.deviceId, this.#o.clock.nowMs()),
    });
  }

  /** The device whose loss forced the FAULT the runtime is in; null otherwise. */
  get forcedFault(): string | null {
    return this.#forcedFault;
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

  /**
   * Mode listener: entering AUTO (a deliberate operator act) releases the latch of every device
   * that is back. One still down stays latched: its return comes after the operator's act, and
   * the tree would command it the moment it is back (the AUTO gate judges only the devices the
   * tree names literally).
   */
  onModeChange(change: ModeChange): void {
    if (change.current !== "FAULT") this.#forcedFault = null;
    if (change.current !== "AUTO" || change.previous === "AUTO") return;
    this.#forgetUnconfigured();
    for (const [handle, entry] of this.#latched) {
      if (this.#o.outages.condition(entry.providerId, entry.deviceId).kind === "down") {
        this.#log.warn(
          `kept ${
            quoteDeviceHandle(entry.providerId, entry.deviceId)
          } latched: AUTO entered while it is still down`,
        );
        continue;
      }
      this.#release(handle, entry, "AUTO entered again");
    }
  }

  /** Stops following device outages. */
  dispose(): void {
    this.#unsubscribe();
  }

  #changed(change: DeviceConditionChange): void {
    if (change.condition.kind !== "down") return;
    const { providerId, deviceId } = change;
    const handle = deviceHandle(providerId, deviceId);
    // Removed by a reload (outside AUTO: a removal is held back in AUTO): not lost, gone.
    if (change.condition.unconfigured === true) {
      const entry = this.#latched.get(handle);
      if (entry !== undefined) this.#release(handle, entry, "its provider is no longer configured");
      this.#forgetDevice(providerId, deviceId);
      return;
    }
    const reason = change.condition.reason;
    // Decided in this step, before any await: FAULT is committed synchronously by forceFault.
    const fault = this.#o.modes.current() === "AUTO" && this.#o.treeDependsOn(handle);
    this.#latch(providerId, deviceId, reason, change.atWallMs);
    if (!fault) {
      // MANUAL -> AUTO running its before-hooks was judged with this device up: refused at its
      // commit even if the device is back by then (its return would release the latch there and
      // the tree would command it at once), as a reload restarting a provider refuses it.
      if (this.#o.treeDependsOn(handle)) {
        // The remedy is the device's, not the configuration's: it stays latched, and entering
        // AUTO once it is back releases it.
        this.#o.modes.invalidateAutoEntry?.(
          `${handle}, a device the behavior tree depends on, was lost (${reason})`,
          `${handle} stays latched: request AUTO again once it is back (entering AUTO releases it)`,
          "device_loss",
        );
      }
      return;
    }
    const why = `device-loss latch: ${handle} is down (${reason})`;
    this.#forcedFault = handle;
    const quoted = quoteDeviceHandle(providerId, deviceId);
    this.#log.error(
      `device-loss latch: ${quoted} is down (${reason}): forcing FAULT; the tree is halted ` +
        `until an operator re-arms`,
    );
    void this.#o.modes.forceFault(why, { kind: "device_loss", device_handle: handle }).catch(
      (err) => this.#log.error(`forcing FAULT after the loss of ${quoted} failed: ${String(err)}`),
    );
  }

  #latch(providerId: string, deviceId: string, reason: string, wallMs: number): void {
    const handle = deviceHandle(providerId, deviceId);
    if (this.#latched.has(handle)) return;
    const atMs = this.#transitionAt(providerId, deviceId, wallMs);
    this.#latched.set(handle, { providerId, deviceId, atMs, reason });
    this.#log.warn(
      `latched ${quoteDeviceHandle(providerId, deviceId)}: ${reason}; automation may not ` +
        `command it until AUTO is entered again`,
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
