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
 * the device's latch or release before it, its provider-wide entry's included (a step back of the
 * wall clock: NTP).
 *
 * Bounded without releasing anything: a provider that renames its devices at each restart leaves
 * a device down for good at each one. Past MAX_LATCHED_DEVICES_PER_PROVIDER devices of a provider
 * latched one by one, its further lost devices are held in ONE provider-wide entry, which counts
 * them and names the latest: it refuses automated calls to every device of the provider except
 * those it exempts -- a device it holds may come back under its name, so its release would be
 * unsafe. It exempts the devices lost in no sense of the named latch: those the provider listed,
 * not down (up or only failing), when it was made or when AUTO was last entered, and not lost
 * since; so a device it refuses is one it holds, or one listed since it was made (which may be
 * one it holds, back). It stays until a reload removes the provider. The WARN lines at an entry
 * into AUTO are one per provider past MAX_KEPT_LINES_PER_PROVIDER devices kept. Every refusal it
 * starts is announced (`provider_wide: true`): a device it holds, and one its provider lists anew
 * (at a rediscovery) that it refuses; and so is their end: an entry into AUTO announces the release
 * of each device of the provider it exempts anew, and the entry's removal one release for the
 * whole entry (`provider_wide: true`).
 */
import {
  type Clock,
  DepartedDates,
  deviceHandle,
  failedPrecondition,
  type Logger,
  namedDeviceHandle,
  namedProviderId,
  neverThrowing,
  quoteDeviceHandle,
  transitionDate,
} from "../common/mod.ts";
import { MAX_PROVIDERS, type RuntimeMode } from "../config/mod.ts";
import type { AuditOrigin, GateContext, ModeChange } from "../control/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type { DeviceCondition, DeviceConditionChange, DeviceOutages } from "../state/mod.ts";

/** A latched device: when and why it was lost. */
export interface LossEntry {
  readonly providerId: string;
  readonly deviceId: string;
  /** The latch's date: the wall time it went down, no earlier than its release before it. */
  readonly atMs: number;
  readonly reason: string;
}

/**
 * Devices of one provider the latch holds one by one. Past it, the provider's further lost devices
 * are held as one provider-wide entry (ProviderLossEntry): nothing is released, and what a
 * provider renaming its devices at each restart adds is bounded (module comment).
 */
export const MAX_LATCHED_DEVICES_PER_PROVIDER = 64;

/**
 * Devices of one provider kept latched at an entry into AUTO (still down) that get a WARN line
 * each; past it, the provider's are one line naming the first of them and counting the rest.
 */
export const MAX_KEPT_LINES_PER_PROVIDER = 3;

/**
 * Provider ids a reload removed whose latest latch or release date is kept for the provider
 * configured again under the id (DeviceLossLatch #departedAt): at most this many, the one removed
 * longest ago let go of first. MAX_PROVIDERS: every provider of one configuration.
 */
export const MAX_DEPARTED_PROVIDER_DATES = MAX_PROVIDERS;

/**
 * A provider past MAX_LATCHED_DEVICES_PER_PROVIDER latched devices: its further lost devices, held
 * as one entry (counted, the latest named). Automated calls to any of its devices are refused
 * except those it exempts: listed and not down (up or only failing) when the entry was made or
 * when AUTO was last entered, and not lost since.
 */
export interface ProviderLossEntry {
  readonly providerId: string;
  /** Losses held here (a device lost again after an entry into AUTO counts again). */
  readonly losses: number;
  /** When the first of them was lost (the entry's date). */
  readonly atMs: number;
  /** The latest device held here, when and why it was lost. */
  readonly lastDeviceId: string;
  readonly lastAtMs: number;
  readonly lastReason: string;
  /** How many devices of the provider it exempts (exemptDeviceIds). */
  readonly exempt: number;
  /**
   * The devices of the provider it exempts, not held: listed and not down when it was made or when
   * AUTO was last entered, not lost since. At most the devices the provider lists
   * (MAX_DEVICES_PER_PROVIDER).
   */
  readonly exemptDeviceIds: readonly string[];
}

/** A provider-wide entry as the latch keeps it (ProviderLossEntry). */
interface WideEntry {
  readonly providerId: string;
  losses: number;
  readonly atMs: number;
  lastDeviceId: string;
  lastAtMs: number;
  lastReason: string;
  /**
   * Its devices listed and not down (up or failing) when it was made or at the last entry into
   * AUTO, and not lost since: not held. At most the devices the provider listed then
   * (MAX_DEVICES_PER_PROVIDER).
   */
  exempt: Set<string>;
  /**
   * Its devices not exempt whose refusal an event announced (a hold, or a listing: #listed), so
   * that a listing announces only the refusals it starts. Kept to the devices the provider listed
   * at its latest (re)discovery and those held since: at most twice MAX_DEVICES_PER_PROVIDER.
   */
  announced: Set<string>;
  /**
   * The date of its latest latch or release announced (a hold, an exemption, its removal): the
   * next is dated no earlier (a step back of the wall clock: NTP).
   */
  datedAtMs: number;
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
  /**
   * The device ids a provider lists now: when its provider-wide entry (ProviderLossEntry) is made
   * and at an entry into AUTO, those not down are exempt from it. Absent: none is, the entry
   * refuses every device.
   */
  readonly devicesOf?: (providerId: string) => readonly string[];
  /**
   * Subscribes to a provider's (re)discovery (its devices' conditions current when told): a device
   * its provider-wide entry refuses listed anew is announced then. Absent: it is not.
   */
  readonly onListed?: (listener: (providerId: string) => void) => () => void;
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
  /** Provider id -> how many of its devices #latched holds (MAX_LATCHED_DEVICES_PER_PROVIDER). */
  readonly #latchedOf = new Map<string, number>();
  /** Provider id -> its provider-wide entry, once past MAX_LATCHED_DEVICES_PER_PROVIDER. */
  readonly #wide = new Map<string, WideEntry>();
  /**
   * Provider id -> device id -> the date of the device's latest latch or release (#transitionAt),
   * kept after its release so that a later latch is never dated before it. A provider's entries
   * leave with it (forgetProvider, or a device found unconfigured), their latest kept in
   * #departedAt: a provider configured again under that id brings new devices, dated no earlier
   * than that removal. Bounded per provider by the devices #latched holds
   * (MAX_LATCHED_DEVICES_PER_PROVIDER) and those it listed since (a device no longer listed is
   * down, so latched or held by the provider-wide entry, which keeps no date per device).
   */
  readonly #lastTransitionAt = new Map<string, Map<string, number>>();
  /**
   * Provider id -> the latest latch or release date of a provider a reload removed (its releases
   * at the removal included), for the provider configured again under the id: every latch and
   * release of its devices is dated no earlier (#floor), so a step back of the wall clock (NTP)
   * between the two reloads, or more than one, does not date a latch before the release that
   * removal announced for the same handle. Kept until taken, at most MAX_DEPARTED_PROVIDER_DATES
   * ids, the one removed longest ago let go of first (DepartedDates).
   */
  readonly #departedAt = new DepartedDates(MAX_DEPARTED_PROVIDER_DATES);
  /**
   * Provider id -> the date taken from #departedAt for the provider configured again (#floor):
   * no latch or release of its devices is dated earlier. Back to #departedAt at its removal; at
   * most one per provider id configured.
   */
  readonly #floorOf = new Map<string, number>();
  readonly #unsubscribe: () => void;
  readonly #unsubscribeListed: () => void;
  #forcedFault: string | null = null;

  constructor(options: DeviceLossLatchOptions) {
    this.#o = options;
    this.#log = neverThrowing(options.log.child("device-loss"));
    this.#unsubscribe = options.outages.onChange((change) => this.#changed(change));
    this.#unsubscribeListed = options.onListed?.((id) => this.#listed(id)) ?? (() => {});
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

  /** The provider-wide entries (status): providers past MAX_LATCHED_DEVICES_PER_PROVIDER. */
  providerEntries(): ProviderLossEntry[] {
    this.#forgetUnconfigured();
    return [...this.#wide.values()].map((w) => ({
      providerId: w.providerId,
      losses: w.losses,
      atMs: w.atMs,
      lastDeviceId: w.lastDeviceId,
      lastAtMs: w.lastAtMs,
      lastReason: w.lastReason,
      exempt: w.exempt.size,
      exemptDeviceIds: [...w.exempt],
    }));
  }

  /**
   * A reload removed provider `providerId`: its latched devices leave the latch at once (whether
   * the inventory's removal or each device's `unconfigured` condition change comes first: the
   * later finds nothing left; a reload configuring the id again brings new devices, which the
   * removed process's loss must not latch).
   */
  forgetProvider(providerId: string): void {
    for (const [handle, entry] of this.#latched) {
      if (entry.providerId === providerId) {
        this.#release(handle, entry, "its provider is no longer configured");
      }
    }
    this.#dropWide(providerId);
    let latest: number | undefined;
    for (const at of this.#lastTransitionAt.get(providerId)?.values() ?? []) {
      latest = Math.max(latest ?? at, at);
    }
    this.#depart(providerId, latest);
    this.#lastTransitionAt.delete(providerId);
  }

  /**
   * Provider `providerId` is no longer configured: `at`, a date of one of its latches or releases
   * (undefined: none), and the date it was floored by (#floorOf) are kept for the provider
   * configured again under the id (#departedAt).
   */
  #depart(providerId: string, at: number | undefined): void {
    const floor = this.#floorOf.get(providerId);
    this.#floorOf.delete(providerId);
    if (floor !== undefined) this.#departedAt.keep(providerId, floor);
    if (at !== undefined) this.#departedAt.keep(providerId, at);
  }

  /**
   * The date no latch or release of provider `providerId`'s devices may come before: the latest of
   * a provider of its id a reload removed (#departedAt, taken at its first date after), if any.
   */
  #floor(providerId: string): number | undefined {
    const departed = this.#departedAt.take(providerId);
    if (departed !== undefined) {
      this.#floorOf.set(providerId, Math.max(this.#floorOf.get(providerId) ?? departed, departed));
    }
    return this.#floorOf.get(providerId);
  }

  /**
   * A provider no longer configured: its provider-wide entry leaves with it, announced as a named
   * device's release is (a line, a `device_loss_latch` event, `provider_wide: true`: every device
   * the entry held is released, the latest named), so a client that saw its latches sees them end.
   */
  #dropWide(providerId: string): void {
    const wide = this.#wide.get(providerId);
    if (wide === undefined) return;
    this.#wide.delete(providerId);
    const reason = "its provider is no longer configured";
    this.#log.info(
      `released the provider-wide latch of ${quoteDeviceHandle(providerId, wide.lastDeviceId)} ` +
        `and ${wide.losses - 1} more lost device(s) of its provider: ${reason}`,
    );
    const atMs = transitionDate(this.#o.clock.nowMs(), wide.datedAtMs);
    this.#o.bus.publish({
      kind: "device_loss_latch",
      provider_id: providerId,
      device_id: wide.lastDeviceId,
      latched: false,
      reason,
      provider_wide: true,
      timestamp_ms: atMs,
    });
    this.#depart(providerId, atMs);
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
    const at = transitionDate(transitionDate(wall, this.#floor(providerId)), before);
    devices.set(deviceId, at);
    return at;
  }

  /** A device of a provider no longer configured: its date is kept for the provider's next. */
  #departDevice(providerId: string, deviceId: string): void {
    this.#depart(providerId, this.#lastTransitionAt.get(providerId)?.get(deviceId));
    this.#forgetDevice(providerId, deviceId);
  }

  /**
   * Lets go of a device's date (#lastTransitionAt): one held by a provider-wide entry (which dates
   * it), or one of a provider no longer configured (#departDevice kept it first).
   */
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
      this.#departDevice(entry.providerId, entry.deviceId);
    }
    for (const wide of [...this.#wide.values()]) {
      const c = this.#o.outages.condition(wide.providerId, wide.lastDeviceId);
      if (c.unconfigured === true) this.#dropWide(wide.providerId);
    }
  }

  #release(handle: string, entry: LossEntry, reason: string): void {
    this.#latched.delete(handle);
    const n = (this.#latchedOf.get(entry.providerId) ?? 1) - 1;
    if (n > 0) this.#latchedOf.set(entry.providerId, n);
    else this.#latchedOf.delete(entry.providerId);
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
    if (ctx.origin !== "automated") return null;
    if (this.#latched.size === 0 && this.#wide.size === 0) return null;
    const { providerId, deviceId } = ctx.device.device;
    const handle = deviceHandle(providerId, deviceId);
    const entry = this.#latched.get(handle);
    // The device's ids (a configured provider id: any length) cut, as every reason names them.
    const named = namedDeviceHandle(providerId, deviceId);
    if (!entry) {
      const wide = this.#wide.get(providerId);
      if (wide === undefined || wide.exempt.has(deviceId)) return null;
      return failedPrecondition(
        `Device-loss latch: more than ${MAX_LATCHED_DEVICES_PER_PROVIDER} devices of ` +
          `${
            namedProviderId(providerId)
          } were lost (${wide.losses} held as one entry, the latest ` +
          `${namedDeviceHandle(providerId, wide.lastDeviceId)}: ${wide.lastReason} at ` +
          `${new Date(wide.lastAtMs).toISOString()}) and ${named} was not listed and up when ` +
          "the entry was made or AUTO was last entered, or was lost since: it may be one of " +
          "them; automation may not command it until an operator enters AUTO again while it is " +
          `up (${ctx.fn.name} refused)`,
      );
    }
    return failedPrecondition(
      `Device-loss latch: ${named} was lost (${entry.reason} at ${
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
    /** Provider id -> its devices kept latched (still down), quoted. */
    const kept = new Map<string, string[]>();
    /** Handles released by name now: a provider-wide entry does not announce them again. */
    const releasedByName = new Set<string>();
    for (const [handle, entry] of this.#latched) {
      if (this.#o.outages.condition(entry.providerId, entry.deviceId).kind === "down") {
        const quoted = quoteDeviceHandle(entry.providerId, entry.deviceId);
        const of = kept.get(entry.providerId);
        if (of === undefined) kept.set(entry.providerId, [quoted]);
        else of.push(quoted);
        continue;
      }
      this.#release(handle, entry, "AUTO entered again");
      releasedByName.add(handle);
    }
    for (const [providerId, quoted] of kept) {
      this.#linesPerDevice(
        "warn",
        quoted,
        (q) => `kept ${q} latched: AUTO entered while it is still down`,
        (named) =>
          `kept ${quoted.length} devices of provider ${providerId} latched: AUTO entered while ` +
          `they are still down (${named})`,
      );
    }
    // A provider-wide entry cannot release what it holds (it does not know their names): it
    // exempts the provider's devices back now (listed, not down: a failing one is not lost, and
    // a named latch releases it), and keeps refusing every other one.
    for (const wide of this.#wide.values()) {
      const p = wide.providerId;
      const up = this.#notLost(p);
      const before = wide.exempt;
      wide.exempt = new Set(up);
      for (const d of up) wide.announced.delete(d);
      // One released by name now was announced so; one exempt already was never refused.
      this.#exempted(
        wide,
        up.filter((d) => !before.has(d) && !releasedByName.has(deviceHandle(p, d))),
      );
      this.#log.warn(
        `kept the provider-wide latch of provider ${p}: more than ` +
          `${MAX_LATCHED_DEVICES_PER_PROVIDER} of its devices were lost (${wide.losses} ` +
          `held as one entry since ${new Date(wide.atMs).toISOString()}, the latest ` +
          `${quoteDeviceHandle(p, wide.lastDeviceId)}); automation may command only the ` +
          `${up.length} of its devices not lost now until AUTO is entered again; a reload that ` +
          "removes the provider clears it",
      );
    }
  }

  /**
   * The devices of provider `providerId` lost in no sense of the named latch now: listed, not
   * down (up, or failing: failing reads are no loss), not latched by name. At most the devices
   * the provider lists (MAX_DEVICES_PER_PROVIDER); none without `devicesOf`.
   */
  #notLost(providerId: string): string[] {
    return (this.#o.devicesOf?.(providerId) ?? []).filter((d) =>
      !this.#latched.has(deviceHandle(providerId, d)) &&
      this.#o.outages.condition(providerId, d).kind !== "down"
    );
  }

  /**
   * Logs one line per device of one provider (`quoted`) up to MAX_KEPT_LINES_PER_PROVIDER (`one`);
   * past it, one line for them all (`many`, given the first of them named and the rest counted).
   */
  #linesPerDevice(
    level: "info" | "warn",
    quoted: readonly string[],
    one: (quoted: string) => string,
    many: (named: string) => string,
  ): void {
    if (quoted.length <= MAX_KEPT_LINES_PER_PROVIDER) {
      for (const q of quoted) this.#log[level](one(q));
      return;
    }
    this.#log[level](
      many(
        `${quoted.slice(0, MAX_KEPT_LINES_PER_PROVIDER).join(", ")} and ` +
          `${quoted.length - MAX_KEPT_LINES_PER_PROVIDER} more`,
      ),
    );
  }

  /**
   * Announces the devices an entry into AUTO exempts anew from `wide` (up now, refused until now):
   * each is released as a named device is (a `device_loss_latch` event, `AUTO entered again`), so
   * a client that saw one held sees it end; their lines are one per device up to
   * MAX_KEPT_LINES_PER_PROVIDER, else one for the provider. At most the devices the provider lists.
   */
  #exempted(wide: WideEntry, deviceIds: readonly string[]): void {
    const p = wide.providerId;
    const reason = "AUTO entered again";
    this.#linesPerDevice(
      "info",
      deviceIds.map((d) => quoteDeviceHandle(p, d)),
      (q) => `released ${q} from its provider's provider-wide latch: ${reason}`,
      (named) =>
        `released ${deviceIds.length} devices of provider ${p} from its provider-wide latch: ` +
        `${reason} while they are up (${named})`,
    );
    this.#announceWide(wide, deviceIds, false, reason);
  }

  /**
   * Publishes a `device_loss_latch` event for each of `deviceIds`, devices of `wide`'s provider:
   * latched by the entry (`provider_wide: true`) or released from it. Each is dated no earlier than
   * the entry's latest event nor the device's own (one latched by name once), and is the entry's
   * latest; a release's date is the device's own from then on (#transitionAt), a latch by the
   * entry keeps none (#hold).
   */
  #announceWide(
    wide: WideEntry,
    deviceIds: readonly string[],
    latched: boolean,
    reason: string,
  ): void {
    const p = wide.providerId;
    const now = this.#o.clock.nowMs();
    for (const d of deviceIds) {
      const wall = transitionDate(now, wide.datedAtMs);
      const atMs = latched
        ? transitionDate(wall, this.#lastTransitionAt.get(p)?.get(d))
        : this.#transitionAt(p, d, wall);
      wide.datedAtMs = atMs;
      this.#o.bus.publish({
        kind: "device_loss_latch",
        provider_id: p,
        device_id: d,
        latched,
        reason,
        ...(latched ? { provider_wide: true } : {}),
        timestamp_ms: atMs,
      });
    }
  }

  /**
   * Provider `providerId` was (re)discovered: a device it lists that its provider-wide entry
   * refuses (not exempt, not latched by name) and whose refusal no event announced yet -- one
   * listed since the entry was made: new, or one it holds back under its name -- is announced as
   * latched (`provider_wide: true`), as a held device is; lines one per device up to
   * MAX_KEPT_LINES_PER_PROVIDER, else one for the provider. At most the devices it lists.
   */
  #listed(providerId: string): void {
    const wide = this.#wide.get(providerId);
    if (wide === undefined) return;
    const listed = this.#o.devicesOf?.(providerId) ?? [];
    const kept = new Set<string>();
    const fresh: string[] = [];
    for (const d of listed) {
      if (wide.exempt.has(d) || this.#latched.has(deviceHandle(providerId, d))) continue;
      kept.add(d);
      if (!wide.announced.has(d)) fresh.push(d);
    }
    // What is not listed now needs no announcement kept: listed again, it is announced again.
    wide.announced = kept;
    if (fresh.length === 0) return;
    const reason = "listed while its provider's provider-wide entry holds devices it does not " +
      "name: it may be one of them, back";
    this.#linesPerDevice(
      "warn",
      fresh.map((d) => quoteDeviceHandle(providerId, d)),
      (q) =>
        `latched ${q}: ${reason}; automation may not command it until AUTO is entered again ` +
        "while it is up",
      (named) =>
        `latched ${fresh.length} devices of provider ${providerId}: ${reason}; automation may ` +
        `not command them until AUTO is entered again while they are up (${named})`,
    );
    this.#announceWide(wide, fresh, true, reason);
  }

  /** Stops following device outages and listings. */
  dispose(): void {
    this.#unsubscribe();
    this.#unsubscribeListed();
  }

  #changed(change: DeviceConditionChange): void {
    const { providerId, deviceId } = change;
    const handle = deviceHandle(providerId, deviceId);
    if (change.condition.kind !== "down") {
      if (change.previous === "down") this.#back(providerId, deviceId, change.condition);
      return;
    }
    // A reload that restarted its provider failed to start it, or its new process is up without
    // it: latched as it was taken out, and dated so; its reason is now the failure's (or that it
    // is not in the inventory), not that the reload is restarting it.
    if (change.previousReloading === true) {
      this.#restate(providerId, deviceId, change.condition.reason);
      return;
    }
    // Removed by a reload (outside AUTO: a removal is held back in AUTO): not lost, gone.
    if (change.condition.unconfigured === true) {
      const entry = this.#latched.get(handle);
      if (entry !== undefined) this.#release(handle, entry, "its provider is no longer configured");
      this.#departDevice(providerId, deviceId);
      this.#dropWide(providerId);
      return;
    }
    const reason = change.condition.reason;
    // Decided in this step, before any await: FAULT is committed synchronously by forceFault.
    const fault = this.#o.modes.current() === "AUTO" && this.#o.treeDependsOn(handle);
    this.#latch(providerId, deviceId, reason, change.atWallMs);
    // The device's ids (a configured provider id: any length) cut in the reasons below.
    const named = namedDeviceHandle(providerId, deviceId);
    if (!fault) {
      // MANUAL -> AUTO running its before-hooks was judged with this device up: refused at its
      // commit even if the device is back by then (its return would release the latch there and
      // the tree would command it at once), as a reload restarting a provider refuses it.
      if (this.#o.treeDependsOn(handle)) {
        // The remedy is the device's, not the configuration's: it stays latched, and entering
        // AUTO once it is back releases it.
        this.#o.modes.invalidateAutoEntry?.(
          `${named}, a device the behavior tree depends on, was lost (${reason})`,
          `${named} stays latched: request AUTO again once it is back (entering AUTO releases it)`,
          "device_loss",
        );
      }
      return;
    }
    const why = `device-loss latch: ${named} is down (${reason})`;
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

  /**
   * A latched device the tree depends on is back (no longer down). A MANUAL -> AUTO running its
   * before-hooks now was requested while it was down, so that entry is to keep it latched (its
   * return comes after the operator's act); its commit would release it instead, and the tree
   * would command it at once: that entry is refused at its commit, as one during whose hooks such
   * a device was lost. No-op when no transition into AUTO is pending. One only failing (its
   * provider back, it not answering yet: `condition`) is released by that commit too (not down),
   * so refused the same -- said as it is then: not answering, not come back.
   */
  #back(providerId: string, deviceId: string, condition: DeviceCondition): void {
    const handle = deviceHandle(providerId, deviceId);
    if (!this.#o.treeDependsOn(handle)) return;
    const entry = this.#latched.get(handle);
    // Or held in its provider's provider-wide entry (past MAX_LATCHED_DEVICES_PER_PROVIDER): the
    // commit would exempt it as up, and the tree command it at once, the same.
    const wide = entry === undefined ? this.#wide.get(providerId) : undefined;
    if (entry === undefined && (wide === undefined || wide.exempt.has(deviceId))) return;
    const lost = entry !== undefined
      ? entry.reason
      : `held in its provider's provider-wide entry, the latest ` +
        `${namedDeviceHandle(providerId, wide!.lastDeviceId)}: ${wide!.lastReason}`;
    const named = namedDeviceHandle(providerId, deviceId);
    if (condition.kind === "failing") {
      this.#o.modes.invalidateAutoEntry?.(
        `${named}, a device the behavior tree depends on, is no longer down, not answering ` +
          `(${condition.reason}; it was lost: ${lost})`,
        `${named} stays latched: request AUTO again once it answers (entering AUTO releases it)`,
        "device_loss",
      );
      return;
    }
    this.#o.modes.invalidateAutoEntry?.(
      `${named}, a device the behavior tree depends on, came back (it was lost: ${lost})`,
      `${named} stays latched: request AUTO again now that it is back (entering AUTO ` +
        "releases it)",
      "device_loss",
    );
  }

  /**
   * The reason of a latched device (by name, or the latest of its provider-wide entry) is now
   * `reason`: the loss it was latched for turned out otherwise (a reload restarting its provider
   * failed to start it). Its date stays; nothing is released or announced again.
   */
  #restate(providerId: string, deviceId: string, reason: string): void {
    const handle = deviceHandle(providerId, deviceId);
    const entry = this.#latched.get(handle);
    if (entry !== undefined) this.#latched.set(handle, { ...entry, reason });
    const wide = this.#wide.get(providerId);
    if (wide !== undefined && wide.lastDeviceId === deviceId) wide.lastReason = reason;
  }

  #latch(providerId: string, deviceId: string, reason: string, wallMs: number): void {
    const handle = deviceHandle(providerId, deviceId);
    if (this.#latched.has(handle)) return;
    const count = this.#latchedOf.get(providerId) ?? 0;
    if (count >= MAX_LATCHED_DEVICES_PER_PROVIDER) {
      return this.#hold(this.#wide.get(providerId), providerId, deviceId, reason, wallMs);
    }
    this.#latchedOf.set(providerId, count + 1);
    // One its provider's provider-wide entry refused until now (held, or listed since it was
    // made): its latest event may be the entry's, which keeps no date per device -- no earlier.
    const wide = this.#wide.get(providerId);
    const refusedAt = wide !== undefined && !wide.exempt.has(deviceId) ? wide.datedAtMs : null;
    const atMs = this.#transitionAt(providerId, deviceId, transitionDate(wallMs, refusedAt));
    this.#latched.set(handle, { providerId, deviceId, atMs, reason });
    // Latched by name (named releases at an entry into AUTO made room): lost, so no longer exempt
    // from its provider's provider-wide entry; its release by name ends both refusals.
    wide?.exempt.delete(deviceId);
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

  /**
   * Holds a lost device in its provider's provider-wide entry (made at the first): the provider
   * has MAX_LATCHED_DEVICES_PER_PROVIDER devices latched one by one already. Its date is the
   * entry's, no earlier than the entry's latest; no date is kept for the device itself.
   */
  #hold(
    wide: WideEntry | undefined,
    providerId: string,
    deviceId: string,
    reason: string,
    wallMs: number,
  ): void {
    // No earlier than the entry's latest event, nor the device's own latch or release before,
    // nor a removed provider's of its id (#floor).
    const own = this.#lastTransitionAt.get(providerId)?.get(deviceId);
    const wall = transitionDate(wallMs, this.#floor(providerId));
    const atMs = transitionDate(transitionDate(wall, wide?.datedAtMs), own);
    const quoted = quoteDeviceHandle(providerId, deviceId);
    if (wide === undefined) {
      // It holds this one only: the provider's devices not lost now are exempt (refusing them
      // would start refusals no event announces); one listed later may be one it holds, back.
      const exempt = new Set(this.#notLost(providerId));
      exempt.delete(deviceId);
      this.#wide.set(providerId, {
        providerId,
        losses: 1,
        atMs,
        lastDeviceId: deviceId,
        lastAtMs: atMs,
        lastReason: reason,
        exempt,
        announced: new Set([deviceId]),
        datedAtMs: atMs,
      });
      this.#log.warn(
        `latched ${quoted}: ${reason}; more than ${MAX_LATCHED_DEVICES_PER_PROVIDER} devices of ` +
          "its provider are latched: this one and any further lost are held as one " +
          `provider-wide entry; automation may command only the ${exempt.size} of its devices ` +
          "not lost now, and those listed and up when AUTO is next entered (a reload that " +
          "removes the provider clears it)",
      );
    } else {
      wide.exempt.delete(deviceId);
      wide.announced.add(deviceId);
      wide.losses++;
      wide.lastDeviceId = deviceId;
      wide.lastAtMs = atMs;
      wide.lastReason = reason;
      wide.datedAtMs = atMs;
      this.#log.warn(
        `latched ${quoted}: ${reason}; held in its provider's provider-wide entry ` +
          `(${wide.losses} devices lost)`,
      );
    }
    this.#forgetDevice(providerId, deviceId);
    this.#o.bus.publish({
      kind: "device_loss_latch",
      provider_id: providerId,
      device_id: deviceId,
      latched: true,
      reason,
      provider_wide: true,
      timestamp_ms: atMs,
    });
  }
}
