/**
 * Whether a device is down, in the sense an operator means (docs/safety.md "A device that drops
 * out"), decided in one place for the AUTO gate, the device-loss latch, alarms and interlocks:
 *
 * | what is seen                                              | condition                          |
 * |-----------------------------------------------------------|------------------------------------|
 * | its provider is not configured, or not AVAILABLE          | down at once                       |
 * | its provider is up but does not list it                   | down at once                       |
 * | its last read failed or carried none of its polled        | failing; down once it has been so  |
 * | signals, no polled signal is OK (each is STALE,           | for {@link deviceDownAfterMs}      |
 * | UNAVAILABLE or FAULT, or never answered), or the          |                                    |
 * | provider's health reports it UNREACHABLE                  |                                    |
 * | it has no polled signal (nothing to judge reads by)       | up (listed by an AVAILABLE provider) |
 * | otherwise                                                 | up                                 |
 *
 * "Failing" is already a bad input for an alarm or an interlock (they have their own delay) and
 * refuses entering AUTO; "down" engages the device-loss latch. Time is the monotonic clock.
 *
 * Every device a provider lists is followed: each change of its condition is told to the
 * listeners when it happens, including the step from failing to down, which a timer decides on
 * time whether or not anything polls (a provider that hangs is not polled). One change is told
 * within "down": a device down on purpose while a reload restarts its provider (`reloading`) is
 * down without purpose once that reload fails to start the provider, or its new process is up
 * without it (`previousReloading`); and one
 * within "failing": a device failing from no known moment (its provider back, it not read since)
 * is failing from its first failed read (or its provider's health reporting it UNREACHABLE), told
 * then with that date; and one within "down": a device down already whose provider a reload
 * removes is down as `unconfigured` (gone, not lost), told once. A change is told with its date
 * (`sinceMono`) as condition() answers it from then on: a device that goes down with its provider
 * is dated from its provider's outage, noted by whichever is told of it first -- the state cache's
 * availability listener (its devices marked unavailable, each a poll here) or this monitor's own;
 * the order does not matter (its host's availability, not the cache's marks, judges it down; its
 * inventories are followed once the cache holds them). A device down stays dated from the
 * first moment of that outage until it is up again: a later cause (its provider down, a reload's
 * take-out, restart or removal of it, its provider's next crash while a restart left it out)
 * changes its reason, never moves its date later (firstDown); one failing by its reads that goes
 * down for such a cause is down since it began failing, as if its reads had lasted to the bound.
 * One failing in between as its provider came back (not up since: failing from its first failed
 * read after that return, as above) is down again from that outage's first moment, not from it.
 */
import { ProviderStatusError, StatusCode } from "../adpp/mod.ts";
import {
  type Clock,
  namedProviderId,
  RuntimeError,
  tellEach,
  type TimerId,
} from "../common/mod.ts";
import type { ProviderHost, ProviderRegistry } from "../providers/mod.ts";
import { noneAnswered, signalsFail } from "./_answers.ts";
import {
  type DeviceState,
  outcomeArrivedMono,
  outcomeArrivedMs,
  type StateCache,
} from "./state_cache.ts";

// The bound is common's (the configuration check reads it too); exported here as before.
export { DEVICE_DOWN_AFTER_POLLS, DEVICE_DOWN_MIN_MS, deviceDownAfterMs } from "../common/mod.ts";

/**
 * Least time between two device returns told for one provider (onDeviceReturn). Each one secures
 * the provider again while the e-stop is latched (its whole ladder) and makes its hook calls into
 * FAULT again while FAULT stands; a device whose reads fail now and then (a sensor on a noisy bus)
 * returns after each failed read. A return within this of its provider's last one told is told at
 * its end, with every other device of the provider that returned meanwhile (those still up then,
 * their provider still up): a device that flaps at every poll secures its provider again at most
 * once per interval, and a return is secured at most this late. Its provider's own return (or
 * outage) ends the interval.
 */
export const DEVICE_RETURN_MIN_INTERVAL_MS = 2000;

/**
 * Whether a failed call says its device did not answer (DeviceOutages.noteCallFailed): its provider
 * answered UNAVAILABLE or DEADLINE_EXCEEDED (the device did not take it), or the call was written
 * and got no answer within the provider's timeout_ms (DEADLINE_EXCEEDED at the runtime: a provider
 * waiting on a device longer than that; whether it carries the call out later is unknown, so the
 * device is not known to be safe). A call never written (taken back: refused UNAVAILABLE by the
 * router, no ProviderStatusError) or refused for its arguments says nothing of the device.
 */
function callUnanswered(err: unknown): boolean {
  if (err instanceof ProviderStatusError) {
    return err.providerCode === StatusCode.UNAVAILABLE ||
      err.providerCode === StatusCode.DEADLINE_EXCEEDED;
  }
  return err instanceof RuntimeError && err.code === "DEADLINE_EXCEEDED";
}

/**
 * Most devices per provider whose outage date is kept once their provider no longer lists them
 * (a restart that left them out): a provider that renames its devices at each restart leaves one
 * more at each. Past it, the date kept longest ago is let go: that device's outage is undated, it
 * is not told `unconfigured` when its provider is removed (condition() still answers it so; the
 * incident recorder forgets its outage at the removal all the same) and,
 * listed again, it is taken as first seen (no change from down is told).
 */
export const MAX_UNLISTED_DEVICE_DATES = 1024;

/** A device's condition now. */
export type DeviceConditionKind = "up" | "failing" | "down";

/** What the monitor says about one device. */
export interface DeviceCondition {
  readonly kind: DeviceConditionKind;
  /** Why it is failing or down (`provider sim0 is UNAVAILABLE`, `reads fail: ...`); "" when up. */
  readonly reason: string;
  /** Monotonic time the device started failing or went down; null when up (or not known). */
  readonly sinceMono: number | null;
  /**
   * Down because its provider is not configured (a reload removed it): the device no longer
   * exists here; a provider configured again under the id brings new devices.
   */
  readonly unconfigured?: true;
  /**
   * Down because a reload is stopping its provider to start it again with a changed entry (until
   * its new process is up or fails to start): lost as in any restart (latched), but on purpose,
   * so not a device loss incident (history/).
   */
  readonly reloading?: true;
}

/**
 * A change of a watched device's condition: of its kind, or (failing still) of its start from
 * none known to its first failed read, or (down still) to `unconfigured` (`previous` then equals
 * `condition.kind`).
 */
export interface DeviceConditionChange {
  readonly providerId: string;
  readonly deviceId: string;
  readonly previous: DeviceConditionKind;
  /**
   * The device was down because a reload was restarting its provider (DeviceCondition.reloading)
   * and the reload then failed to start that provider, or its new process is up without it: down
   * still, no longer on purpose.
   */
  readonly previousReloading?: true;
  readonly condition: DeviceCondition;
  /** Wall time of the change (for events and records). */
  readonly atWallMs: number;
  /**
   * Told by the failed read that began its failing spell: the wall time it arrived
   * (outcomeArrivedMs), as the cache dates its UNAVAILABLE marks and device_availability.
   * `condition.sinceMono` is that read's arrival -- unless down at once, not up since an outage
   * (failing from no known moment as its provider came back): that outage's first moment
   * (Tracked.outageSince). A failure held behind another device's hung read is applied, and this
   * change told (atWallMs), later. Absent otherwise.
   */
  readonly sinceWallMs?: number;
}

export type DeviceConditionListener = (change: DeviceConditionChange) => void;

/**
 * Told when a device that stopped answering while its provider stayed up (failing or down; a read
 * failed since its provider came back counts) answers again with its provider still up
 * (onDeviceReturn).
 */
export type DeviceReturnListener = (providerId: string, deviceId: string) => void;

export interface DeviceOutagesOptions {
  readonly registry: ProviderRegistry;
  readonly cache: StateCache;
  readonly clock: Clock;
  /** How long reads must fail before the device is down (deviceDownAfterMs of the interval). */
  readonly downAfterMs: number;
  /**
   * A listener that threw (logged by the kernel): the others are told all the same (tellEach),
   * the e-stop's and the mode manager's securing of a device that answers again among them.
   */
  readonly onListenerError?: (err: unknown) => void;
}

const UP: DeviceCondition = { kind: "up", reason: "", sinceMono: null };

/** A device of the current inventory whose condition changes are told (every listed device). */
interface Tracked {
  readonly providerId: string;
  readonly deviceId: string;
  condition: DeviceCondition;
  timer: TimerId | null;
  /**
   * When its outage began (monotonic), while it has not been up since: set when it goes down (not
   * on purpose: `reloading`), kept through a failing spell as its provider comes back (not up in
   * between), so that down again it is dated from that outage's first moment (#recheck); null
   * once up. Listed again by the successor of a reload that took it out not down
   * (#takenOutOnPurpose), it has none: that take-out was no loss.
   */
  outageSince: number | null;
  /**
   * The e-stop found it not answering while its polls did not (#unanswered: a safe-state call
   * or a read-back its provider answered so, in an outage between two polls): its next answered
   * poll, it up, is a device return (#polled). Cleared then.
   */
  unanswered: boolean;
}

/** One provider's device returns as told (DEVICE_RETURN_MIN_INTERVAL_MS). */
interface ReturnPace {
  /** Monotonic time the last return was told. */
  toldAt: number;
  /** Devices that returned since, within the interval: told at its end (#tellPending). */
  readonly pending: Set<string>;
  timer: TimerId | null;
}

/** Decides "device down" (module comment) and tells every change of a listed device. */
export class DeviceOutages {
  readonly #o: DeviceOutagesOptions;
  #downAfterMs: number;
  /**
   * When each failing device started failing (monotonic); keyed by the cache's own device
   * object (no key built per poll; a rediscovered device starts afresh).
   */
  readonly #failingSince = new WeakMap<DeviceState, number>();
  /**
   * The failing devices (#failingSince) that have been judged down: down for the rest of their
   * failing spell, whatever the bound does meanwhile (a reload that lengthens polling.interval_ms
   * does not make a lost device "failing" again, to be lost a second time at the longer bound).
   */
  readonly #downInSpell = new WeakSet<DeviceState>();
  /**
   * The failing devices (#failingSince) with a failed read in their spell: one failing only as
   * its provider came back (not read since) or as its provider's health reports it UNREACHABLE
   * is not said to have failing reads (readFailure).
   */
  readonly #readFailedInSpell = new WeakSet<DeviceState>();
  /**
   * Provider id -> monotonic time it went down (cleared when it comes back or is unconfigured;
   * kept through a reload's restart of it: one outage until its successor is up).
   */
  readonly #providerDownSince = new Map<string, number>();
  /** Provider id -> device id -> the device as followed (two lookups per poll, no key string). */
  readonly #tracked = new Map<string, Map<string, Tracked>>();
  readonly #listeners: DeviceConditionListener[] = [];
  readonly #returnListeners: DeviceReturnListener[] = [];
  /**
   * Per provider id, its devices that stopped answering while it stayed up (failing or down);
   * emptied when the provider goes down, comes back or is removed (its own return is whole, but
   * a device whose read fails once it is back is out again: #polled).
   */
  readonly #devicesOut = new Map<string, Set<string>>();
  /** Per provider id, its device returns as told (#deviceReturned); forgotten as #devicesOut. */
  readonly #returnPace = new Map<string, ReturnPace>();
  /**
   * Per provider id a reload is restarting (its entry changed): the devices its old host listed
   * that the take-out brought down (not those down already) and when that host was taken out,
   * until the new host is up, the reload fails to start it (#restartFailed) or the provider is
   * unconfigured. At most one per configured provider.
   */
  readonly #restarting = new Map<string, { deviceIds: string[]; sinceMono: number }>();
  /**
   * Per provider id, when each device it listed and then left out at a restart went down
   * (monotonic; its provider's outage before that restart, or its reads' failure before that):
   * its condition keeps that date while it is not listed, as it had while listed, through its
   * provider's later outages too (#judge); so does one a reload restarting its provider took out
   * (from then, or from its loss before). Forgotten when it is listed again (its change from down
   * told then) or its provider unconfigured (told `unconfigured` then); at most
   * MAX_UNLISTED_DEVICE_DATES per provider.
   */
  readonly #unlistedSince = new Map<string, Map<string, number>>();
  #stopped = false;

  constructor(options: DeviceOutagesOptions) {
    this.#o = options;
    this.#downAfterMs = options.downAfterMs;
    options.cache.onDevicePolled((dev) => this.#polled(dev, true));
    options.cache.onFreshReadFailed((providerId, deviceId) =>
      this.#unanswered(providerId, deviceId)
    );
    // A new inventory, once the cache holds it (not as the host tells it: the cache may be told
    // after this monitor, and a device is judged by the cache's entry for it).
    options.cache.onInventoryApplied((providerId) => {
      const host = options.registry.host(providerId);
      if (host !== undefined) this.#follow(host);
    });
    // The provider's own health changed which devices it reports UNREACHABLE: judged now, not at
    // each device's next poll.
    options.cache.onReportedUnreachable((providerId) => {
      for (const dev of options.cache.providerDevices(providerId)) this.#polled(dev, false);
    });
    options.registry.eachHost((host) => {
      const current = () => options.registry.host(host.id) === host;
      // A successor a reload restarting the provider registers keeps its take-out's date (the
      // devices' outage goes on): its devices were told down then.
      if (!host.available) this.#noteProviderDown(host.id);
      host.onAvailability((up) => {
        if (!current()) return;
        const restarted = up ? this.#restarting.get(host.id) : undefined;
        if (up) this.#restarting.delete(host.id);
        this.#devicesOut.delete(host.id);
        this.#forgetReturns(host.id);
        if (up) this.#providerDownSince.delete(host.id);
        else this.#noteProviderDown(host.id);
        this.#recheckProvider(host.id);
        // Its inventory is in place (told before its availability): those the new process left
        // out are down no longer on purpose.
        if (restarted !== undefined) this.#restartLeftOut(host.id, restarted.deviceIds);
      });
      // Down still, for another reason (its restarts used up: the circuit open; a reload's retry):
      // the reason shown follows, the date stays (#recheck tells no change within "down").
      host.onDownLifecycle(() => {
        if (current()) this.#recheckProvider(host.id);
      });
      // Its devices as the cache holds them now (none yet unless the host is up already); each
      // later inventory once the cache holds it (#follow).
      this.#follow(host);
    });
    options.registry.onHostRemoved((host) => {
      this.#devicesOut.delete(host.id);
      this.#forgetReturns(host.id);
      const now = options.clock.monoMs();
      // Down since the take-out, or since it went down before it (its devices were told that).
      this.#noteProviderDown(host.id);
      const tracked = [...this.#tracked.get(host.id)?.values() ?? []];
      const reloading = options.registry.notRunning(host.id)?.cause === "restarting";
      // Only those the take-out brings down: one down already (its provider crashed, its reads
      // failed) was lost then, and is not lost a second time if the restart fails.
      const deviceIds = tracked.filter((t) => t.condition.kind !== "down").map((t) => t.deviceId);
      this.#recheckProvider(host.id);
      // A reload restarting it: each device is down since the take-out (or its provider's outage
      // before it: as judged now), also once the new process is up without it.
      if (reloading) { for (const t of tracked) this.#keepUnlisted(t); }
      // Restarting: its devices stay down since then, as they were told, while no host is
      // registered and while its successor starts (until it is up, or the id unconfigured).
      if (!reloading) this.#providerDownSince.delete(host.id);
      // Its devices, down on purpose while the reload restarts it, are lost if it fails to start
      // (#restartFailed). A new host the reload could not register, taken out with no devices,
      // leaves the old host's as they were.
      if (reloading && deviceIds.length > 0) {
        this.#restarting.set(host.id, { deviceIds, sinceMono: now });
      }
    });
    options.registry.onStartFailed((id) => this.#restartFailed(id));
    options.registry.onUnconfigured((id) => {
      this.#restarting.delete(id);
      this.#tellUnlistedGone(id);
      this.#unlistedSince.delete(id);
      this.#providerDownSince.delete(id);
    });
  }

  /**
   * Follows every device `host` (the one registered under its id) lists: one not followed yet is
   * judged where it starts (a device is lost only after it was seen), or, listed again after a
   * restart left it out, told its change from down; then every device of the provider is
   * re-judged (one it no longer lists told down, then forgotten). Asked when the host is
   * registered and each time the cache holds a new inventory of it.
   */
  #follow(host: ProviderHost): void {
    if (this.#o.registry.host(host.id) !== host) return;
    let tracked = this.#tracked.get(host.id);
    if (tracked === undefined) this.#tracked.set(host.id, tracked = new Map());
    for (const caps of host.devices) {
      const id = caps.device.deviceId;
      if (tracked.has(id)) continue;
      const unlisted = this.#unlistedSince.get(host.id)?.get(id);
      this.#forgetUnlisted(host.id, id);
      const t: Tracked = {
        providerId: host.id,
        deviceId: id,
        condition: UP,
        timer: null,
        outageSince: null,
        unanswered: false,
      };
      // Listed again after a restart left it out (or a reload's take-out): it was told down,
      // so its condition now is told as a change from that (the recheck below), not taken
      // for where it starts.
      if (unlisted !== undefined) {
        t.condition = down(notListedText(host.id), unlisted);
        // Its outage goes on -- unless a reload restarting its provider took it out not down
        // (on purpose, #restarting: not lost), and its successor lists it again.
        if (!this.#takenOutOnPurpose(host.id, id)) t.outageSince = unlisted;
      } else {
        // First seen: its condition now is where it starts (a device is lost only after it
        // was seen, so a provider still starting loses nothing).
        t.condition = this.#judge(host.id, id);
      }
      tracked.set(id, t);
    }
    this.#recheckProvider(host.id);
  }

  /** How long reads must fail before a device is down (ms). */
  get downAfterMs(): number {
    return this.#downAfterMs;
  }

  /**
   * Changes the bound (polling interval reloaded); re-judges every device at once: a failing one
   * is down at once if it has failed for the new bound already; one already down stays down.
   */
  setDownAfterMs(ms: number): void {
    this.#downAfterMs = ms;
    for (const providerId of this.#tracked.keys()) this.#recheckProvider(providerId);
  }

  /**
   * The device's condition now (table in the module comment). A listed device's is kept up to
   * date on every poll, availability and inventory change and at the bound (two lookups).
   */
  condition(providerId: string, deviceId: string): DeviceCondition {
    const t = this.#tracked.get(providerId)?.get(deviceId);
    return t === undefined || this.#stopped ? this.#judge(providerId, deviceId) : t.condition;
  }

  #judge(providerId: string, deviceId: string): DeviceCondition {
    const host = this.#o.registry.host(providerId);
    // One no longer listed (a restart left it out, a reload's take-out) is down since then: a
    // later outage of its provider, take-out or removal does not date it later (#unlistedSince).
    if (host === undefined || !host.available) {
      const unlisted = this.#unlistedSince.get(providerId)?.get(deviceId) ?? null;
      return firstDown(this.#judgeNow(providerId, deviceId, host), unlisted);
    }
    return this.#judgeNow(providerId, deviceId, host);
  }

  /** The device's condition as its current cause dates it (#judge keeps an earlier outage's). */
  #judgeNow(
    providerId: string,
    deviceId: string,
    host: ProviderHost | undefined,
  ): DeviceCondition {
    // Its entry in the file, no host under it (ProviderRegistry.whyNotRunning says why): lost,
    // not gone. One a reload restarts (its entry changed) is lost as in any restart.
    // One the reload restarting it failed to register is not restarting any more (its text says
    // so): reloading follows the same answer.
    const notRunning = host ? null : this.#o.registry.notRunning(providerId);
    if (notRunning !== null) {
      const lost = down(notRunning.text, this.#providerSince(providerId));
      return notRunning.cause === "restarting" ? { ...lost, reloading: true } : lost;
    }
    if (!host) {
      return {
        ...down(
          `provider ${namedProviderId(providerId)} is not configured`,
          this.#providerSince(providerId),
        ),
        unconfigured: true,
      };
    }
    if (!host.available) {
      // The successor of a reload restarting it, not up yet: down on purpose, said as while no
      // host was registered (notRunning), not in its lifecycle's words.
      const restarting = this.#o.registry.restartingText(providerId);
      if (restarting !== null) {
        return { ...down(restarting, this.#providerSince(providerId)), reloading: true };
      }
      // Listed down since the last reload failed to start it: that says why, as everywhere. One a
      // reload adds, registered and not up yet: being started, as before it was registered.
      return down(
        this.#o.registry.startFailureText(providerId) ??
          this.#o.registry.startingText(providerId) ??
          `provider ${namedProviderId(providerId)} is unavailable (${host.lifecycle})`,
        this.#providerSince(providerId),
      );
    }
    // The cache holds an entry for every device the provider lists (polled or not).
    const dev = this.#o.cache.device(providerId, deviceId);
    if (dev === undefined) {
      // Up without it because its host lacks what it needs: said, as the e-stop's verification
      // says it, so a refusal of AUTO naming the device tells why (docs/http-api.md, "Providers
      // up but not ready").
      const unmet = host.hostCheck()?.status === "unmet";
      return down(
        notListedText(providerId) + (unmet ? HOST_UNMET_SUFFIX : ""),
        this.#unlistedSince.get(providerId)?.get(deviceId) ?? null,
      );
    }
    const failure = readFailure(dev, this.#o.cache, this.#readFailedInSpell);
    if (failure === null) return UP;
    const since = this.#failingSince.get(dev) ?? null;
    if (
      since !== null &&
      (this.#downInSpell.has(dev) || this.#o.clock.monoMs() - since >= this.#downAfterMs)
    ) {
      this.#downInSpell.add(dev);
      return { kind: "down", reason: failure, sinceMono: since };
    }
    return { kind: "failing", reason: failure, sinceMono: since };
  }

  /**
   * Subscribes to the return of a device that stopped answering while its provider stayed up:
   * told once it answers again, its provider still up (the e-stop secures it again while latched,
   * the mode manager makes the hook calls into FAULT again while FAULT stands). A device out
   * because its provider went down is left to the provider's own return. One provider's returns
   * are told at most once per DEVICE_RETURN_MIN_INTERVAL_MS (those meanwhile together at its end).
   * Returns the unsubscribe function.
   */
  onDeviceReturn(listener: DeviceReturnListener): () => void {
    this.#returnListeners.push(listener);
    return () => {
      const i = this.#returnListeners.indexOf(listener);
      if (i >= 0) this.#returnListeners.splice(i, 1);
    };
  }

  /** Subscribes to condition changes of listed devices; returns the unsubscribe function. */
  onChange(listener: DeviceConditionListener): () => void {
    this.#listeners.push(listener);
    return () => {
      const i = this.#listeners.indexOf(listener);
      if (i >= 0) this.#listeners.splice(i, 1);
    };
  }

  /** Stops every timer; no listener is told anything after this. */
  stop(): void {
    this.#stopped = true;
    for (const devices of this.#tracked.values()) {
      for (const t of devices.values()) this.#o.clock.clearTimer(t.timer);
    }
    for (const id of [...this.#returnPace.keys()]) this.#forgetReturns(id);
  }

  /**
   * A reload failed to start a provider it was restarting: the devices its old host listed, down
   * on purpose since it was taken out (reloading), are down without purpose from now on -- told
   * once each (previousReloading), their loss dated from that take-out.
   */
  #restartFailed(providerId: string): void {
    const restarting = this.#restarting.get(providerId);
    this.#restarting.delete(providerId);
    if (restarting === undefined || this.#stopped) return;
    // Down since that take-out, as condition() answers from now on (not since the failed new host
    // was registered, nor unknown when none was).
    if (!(this.#o.registry.host(providerId)?.available ?? false)) {
      this.#providerDownSince.set(providerId, restarting.sinceMono);
    }
    this.#tellNoLongerOnPurpose(providerId, restarting.deviceIds);
  }

  /**
   * A reload restarted a provider and its new process is up without some of the devices its old
   * host listed (down on purpose since the take-out, reloading): each is down without purpose from
   * now on, not in the inventory -- told once (previousReloading), dated from that take-out (kept
   * while it is not listed: #unlistedSince), as a failed start's (#restartFailed).
   */
  #restartLeftOut(providerId: string, deviceIds: readonly string[]): void {
    if (this.#stopped) return;
    const tracked = this.#tracked.get(providerId);
    // One listed again: its change from down is told (follow).
    this.#tellNoLongerOnPurpose(providerId, deviceIds.filter((id) => !tracked?.has(id)));
  }

  /**
   * Each of `deviceIds`, down on purpose while a reload restarted its provider, told down no
   * longer on purpose (previousReloading), its condition as judged now (#restartFailed,
   * #restartLeftOut).
   */
  #tellNoLongerOnPurpose(providerId: string, deviceIds: Iterable<string>): void {
    const atWallMs = this.#o.clock.nowMs();
    const onError = this.#o.onListenerError ?? (() => {});
    for (const deviceId of deviceIds) {
      const change: DeviceConditionChange = {
        providerId,
        deviceId,
        previous: "down",
        previousReloading: true,
        condition: this.#judge(providerId, deviceId),
        atWallMs,
      };
      tellEach(this.#listeners, [change], onError);
    }
  }

  /**
   * A provider no longer configured: each device it no longer listed (#unlistedSince: left out by
   * a restart, or taken out by a reload restarting it), down and followed no more, is told gone
   * (`unconfigured`) once -- as a listed one is (#recheck): the device-loss latch releases it now.
   */
  #tellUnlistedGone(providerId: string): void {
    const dates = this.#unlistedSince.get(providerId);
    if (dates === undefined || this.#stopped) return;
    const atWallMs = this.#o.clock.nowMs();
    const onError = this.#o.onListenerError ?? (() => {});
    for (const deviceId of dates.keys()) {
      const condition = this.#judge(providerId, deviceId);
      if (condition.unconfigured !== true) continue;
      const change: DeviceConditionChange = {
        providerId,
        deviceId,
        previous: "down",
        condition,
        atWallMs,
      };
      tellEach(this.#listeners, [change], onError);
    }
  }

  #providerSince(providerId: string): number | null {
    return this.#providerDownSince.get(providerId) ?? null;
  }

  /**
   * Its current host went down now, unless already noted: by whichever is told first, the state
   * cache's availability listener (it marks the devices unavailable: #polled) or this monitor's
   * own (either order: a device is judged down by its host's availability, not by those marks).
   * The change of each to "down" is told then, with this date -- not undated, and not dated a
   * moment later without being told again (a listener keeps the date it is told).
   */
  #noteProviderDown(providerId: string): void {
    if (!this.#providerDownSince.has(providerId)) {
      this.#providerDownSince.set(providerId, this.#o.clock.monoMs());
    }
  }

  /**
   * After every poll of a device (answered or failed: `read`), when its provider went down, and
   * when its provider's health changed which devices it reports UNREACHABLE.
   */
  #polled(dev: DeviceState, read: boolean): void {
    const host = this.#o.registry.host(dev.providerId);
    if (host !== undefined && !host.available) this.#noteProviderDown(dev.providerId);
    const failing = host !== undefined && host.available && readsFail(dev, this.#o.cache);
    // Begun by a failed read, or by its provider's health reporting it UNREACHABLE -- not by a
    // health report about another device while it is not read since its provider came back.
    const began = failing && !this.#failingSince.has(dev) &&
      (read || reportedUnreachable(dev, this.#o.cache));
    if (!failing) {
      // A healthy poll (the common case) touches one map: the spell's marks only if it had one.
      if (this.#failingSince.delete(dev)) {
        this.#downInSpell.delete(dev);
        this.#readFailedInSpell.delete(dev);
      }
    } else if (began) {
      // A read's outcome is dated by its arrival: one held behind another device's hung read is
      // applied later, and the spell began then, not at the apply.
      const now = this.#o.clock.monoMs();
      this.#failingSince.set(dev, read ? outcomeArrivedMono(dev, now) : now);
    }
    if (failing && read) this.#readFailedInSpell.add(dev);
    const t = this.#tracked.get(dev.providerId)?.get(dev.deviceId);
    if (t === undefined) return;
    // Begun by this read: its change says the wall time the read arrived (sinceWallMs).
    if (began && read) {
      this.#recheck(t, this.#failingSince.get(dev)!, outcomeArrivedMs(dev, this.#o.clock.nowMs()));
    } else this.#recheck(t);
    // A failed read (or its provider's health reporting it UNREACHABLE) with its provider up: the
    // device is out, also when its condition did not change -- failing since its provider came
    // back (judged so before any read, its provider's return clearing #devicesOut): the calls
    // that return brought (the e-stop's ladder, the hooks into FAULT) found it not answering, so
    // its answer is a return of its own.
    if (began) this.#noteOut(t);
    // Found not answering by the e-stop only (no poll failed since): this answer is its return.
    // A field of the device already in hand: nothing more on a healthy poll.
    if (t.unanswered && read && t.condition.kind === "up") {
      t.unanswered = false;
      const out = this.#devicesOut.get(t.providerId);
      if (!out?.delete(t.deviceId)) return;
      if (out.size === 0) this.#devicesOut.delete(t.providerId);
      this.#deviceReturned(t.providerId, t.deviceId);
    }
  }

  /**
   * A safe-state call to `deviceId` failed (`err`): one the device did not answer (callUnanswered:
   * its provider answered UNAVAILABLE or DEADLINE_EXCEEDED, or the call got no answer within its
   * provider's timeout_ms -- it is out, though its polls may not have found it so: an outage
   * between two polls) is secured again at its next answer, as a device whose read failed is. Any
   * other failure (arguments refused, the provider down) says nothing of the device answering.
   */
  noteCallFailed(providerId: string, deviceId: string, err: unknown): void {
    if (callUnanswered(err)) this.#unanswered(providerId, deviceId);
  }

  /**
   * A device found not answering by the e-stop (a read-back its provider answered with an error
   * or did not answer within its whole timeout_ms: StateCache onFreshReadFailed; a safe-state call
   * the device did not answer: callUnanswered), its provider up: out (#devicesOut), and its next
   * answered poll is a return (Tracked.unanswered) even if no poll found it failing.
   */
  #unanswered(providerId: string, deviceId: string): void {
    if (this.#stopped) return;
    const t = this.#tracked.get(providerId)?.get(deviceId);
    if (t === undefined || this.#o.registry.host(providerId)?.available !== true) return;
    t.unanswered = true;
    const out = this.#devicesOut.get(providerId);
    if (out) out.add(deviceId);
    else this.#devicesOut.set(providerId, new Set([deviceId]));
  }

  /** Re-judges every device of a provider; one no longer listed is told once, then forgotten. */
  #recheckProvider(providerId: string): void {
    const tracked = this.#tracked.get(providerId);
    if (tracked === undefined) return;
    const host = this.#o.registry.host(providerId);
    for (const [id, t] of tracked) {
      const listed = host !== undefined && host.devices.some((d) => d.device.deviceId === id);
      const left = !listed && (host === undefined || host.available);
      // Left out by its provider's restart: down since it went down (its provider's outage
      // before that restart), not undated from now on.
      if (left && host !== undefined) this.#keepUnlisted(t);
      this.#recheck(t);
      if (left) {
        this.#o.clock.clearTimer(t.timer);
        tracked.delete(id);
      }
    }
    if (host === undefined) this.#tracked.delete(providerId);
  }

  /**
   * Judges `t` again and tells a change of it. `beganMono`/`beganWallMs`: a failed read began its
   * failing spell now, arrived then (#polled; NaN: none did): a change it brings says its wall
   * time (sinceWallMs), also one dated from an earlier outage.
   */
  #recheck(t: Tracked, beganMono = NaN, beganWallMs = 0): void {
    if (this.#stopped) return;
    const previous = t.condition;
    // Down still for a later cause (its provider down, a reload's take-out, removed): the reason
    // may change, the date stays the outage's first moment, as it was told (firstDown). So does
    // one failing by its reads that goes down for another cause before the bound: down since it
    // began failing, as at the bound (and as incidents date its loss), not since that cause.
    const kept = previous.kind !== "up" ? previous.sinceMono : null;
    // Down again, not up since an outage (failing in between as its provider came back, not read
    // since): dated from that outage's first moment too (Tracked.outageSince).
    const next = firstDown(this.#judge(t.providerId, t.deviceId), earliest(kept, t.outageSince));
    t.condition = next;
    if (next.kind === "up") t.outageSince = null;
    else if (next.kind === "down" && next.reloading !== true && t.outageSince === null) {
      t.outageSince = next.sinceMono;
    }
    this.#armDownTimer(t);
    // Same kind: told only when a failing device's start becomes known (failing from no known
    // moment as its provider came back, then its first failed read): a listener keeps the date
    // it is told, and nothing else would tell it this one.
    const dated = next.kind === "failing" && previous.sinceMono === null && next.sinceMono !== null;
    // Down still, but gone: a reload removed its provider (the device-loss latch releases it).
    const gone = next.unconfigured === true && previous.unconfigured !== true;
    if (previous.kind === next.kind && !dated && !gone) return;
    const change: DeviceConditionChange = {
      providerId: t.providerId,
      deviceId: t.deviceId,
      previous: previous.kind,
      condition: next,
      atWallMs: this.#o.clock.nowMs(),
      // Also when dated from an earlier outage (outageSince, kept): the loss of a device failing
      // as its provider came back is the spell's (incidents), which began at this read.
      ...(Number.isNaN(beganMono) ? {} : { sinceWallMs: beganWallMs }),
    };
    const onError = this.#o.onListenerError ?? (() => {});
    tellEach(this.#listeners, [change], onError);
    // Only dated (whether it is out is #polled's to say: a failed read), or gone.
    if (previous.kind === next.kind) return;
    if (this.#o.registry.host(t.providerId)?.available !== true) return;
    if (next.kind !== "up") return this.#noteOut(t);
    const out = this.#devicesOut.get(t.providerId);
    if (!out?.delete(t.deviceId)) return;
    if (out.size === 0) this.#devicesOut.delete(t.providerId);
    this.#deviceReturned(t.providerId, t.deviceId);
  }

  /**
   * A device answers again with its provider up: told at once, unless its provider's last return
   * was told less than DEVICE_RETURN_MIN_INTERVAL_MS ago; then at that interval's end.
   */
  #deviceReturned(providerId: string, deviceId: string): void {
    const now = this.#o.clock.monoMs();
    const pace = this.#returnPace.get(providerId);
    if (pace !== undefined && now - pace.toldAt < DEVICE_RETURN_MIN_INTERVAL_MS) {
      pace.pending.add(deviceId);
      pace.timer ??= this.#o.clock.setTimer(
        () => this.#tellPending(providerId, pace),
        pace.toldAt + DEVICE_RETURN_MIN_INTERVAL_MS - now,
      );
      return;
    }
    // Past the interval: a return still waiting for a timer that has not fired is told now too.
    const earlier = pace === undefined ? [] : [...pace.pending].filter((d) => d !== deviceId);
    this.#forgetReturns(providerId);
    this.#returnPace.set(providerId, { toldAt: now, pending: new Set(), timer: null });
    this.#tellReturns(providerId, [...earlier.filter((d) => this.#isUp(providerId, d)), deviceId]);
  }

  /** The interval's end: the devices that returned within it and are still up are told. */
  #tellPending(providerId: string, pace: ReturnPace): void {
    pace.timer = null;
    if (this.#stopped || this.#returnPace.get(providerId) !== pace) return;
    if (this.#o.registry.host(providerId)?.available !== true) return;
    // One out again meanwhile is told at its next answer (#devicesOut holds it again).
    const devices = [...pace.pending].filter((d) => this.#isUp(providerId, d));
    pace.pending.clear();
    if (devices.length === 0) return;
    pace.toldAt = this.#o.clock.monoMs();
    this.#tellReturns(providerId, devices);
  }

  #isUp(providerId: string, deviceId: string): boolean {
    return this.#tracked.get(providerId)?.get(deviceId)?.condition.kind === "up";
  }

  #tellReturns(providerId: string, deviceIds: readonly string[]): void {
    const onError = this.#o.onListenerError ?? (() => {});
    for (const d of deviceIds) tellEach(this.#returnListeners, [providerId, d], onError);
  }

  /**
   * Whether a reload restarting the provider took the device out not down (on purpose: no loss)
   * and its successor is not told up yet (#restarting): listed again by it, the device has no
   * outage (Tracked.outageSince). Scans that reload's devices (at most those its old host listed).
   */
  #takenOutOnPurpose(providerId: string, deviceId: string): boolean {
    return this.#restarting.get(providerId)?.deviceIds.includes(deviceId) ?? false;
  }

  /** Keeps when a device its provider no longer lists went down (#unlistedSince). */
  #keepUnlisted(t: Tracked): void {
    const c = t.condition;
    const since = c.kind !== "up" && c.sinceMono !== null ? c.sinceMono : this.#o.clock.monoMs();
    let dates = this.#unlistedSince.get(t.providerId);
    if (dates === undefined) this.#unlistedSince.set(t.providerId, dates = new Map());
    dates.delete(t.deviceId); // re-inserted last: the map stays in the order they were kept
    dates.set(t.deviceId, since);
    if (dates.size > MAX_UNLISTED_DEVICE_DATES) dates.delete(dates.keys().next().value!);
  }

  /** A device listed again: its condition is judged afresh. */
  #forgetUnlisted(providerId: string, deviceId: string): void {
    const dates = this.#unlistedSince.get(providerId);
    if (dates?.delete(deviceId) && dates.size === 0) this.#unlistedSince.delete(providerId);
  }

  /** A provider's own return, outage or removal: its device returns start afresh. */
  #forgetReturns(providerId: string): void {
    const pace = this.#returnPace.get(providerId);
    if (pace === undefined) return;
    this.#o.clock.clearTimer(pace.timer);
    this.#returnPace.delete(providerId);
  }

  /**
   * Notes a device that is failing or down while its provider is up as out (#devicesOut): its
   * answer, its provider still up, is a device return.
   */
  #noteOut(t: Tracked): void {
    if (t.condition.kind === "up") return;
    if (this.#o.registry.host(t.providerId)?.available !== true) return;
    const out = this.#devicesOut.get(t.providerId);
    if (out) out.add(t.deviceId);
    else this.#devicesOut.set(t.providerId, new Set([t.deviceId]));
  }

  /** A failing device is re-judged when the bound runs out (nothing may poll it meanwhile). */
  #armDownTimer(t: Tracked): void {
    const clock = this.#o.clock;
    if (t.timer !== null) {
      clock.clearTimer(t.timer);
      t.timer = null;
    }
    const c = t.condition;
    if (c.kind !== "failing" || c.sinceMono === null || this.#stopped) return;
    const dueIn = c.sinceMono + this.#downAfterMs - clock.monoMs();
    t.timer = clock.setTimer(() => {
      t.timer = null;
      this.#recheck(t);
    }, Math.max(0, dueIn));
  }
}

/**
 * Added to the reason of a device its provider, up, does not list while that provider's host check
 * is unmet (ProviderHost.hostCheck), in the words the e-stop's verification uses (safety/verify.ts).
 */
export const HOST_UNMET_SUFFIX = "; its host check is unmet";

/**
 * The reason of a device its provider does not list: the provider id (configured, of any length)
 * cut as namedProviderId, so that a 10 kB id makes no 10 kB reason, latch line or answer.
 */
function notListedText(providerId: string): string {
  return `not in the inventory of provider ${namedProviderId(providerId)}`;
}

function down(reason: string, sinceMono: number | null): DeviceCondition {
  return { kind: "down", reason, sinceMono };
}

/**
 * `next`, dated from `downSince` if it is down and that is earlier (or `next` undated): a device
 * down already (or failing, from a known moment) stays down since its outage's first moment until
 * it is up again -- a later cause (its provider down, a reload's take-out or removal) changes its
 * reason, not its date.
 */
function firstDown(next: DeviceCondition, downSince: number | null): DeviceCondition {
  if (next.kind !== "down" || downSince === null) return next;
  if (next.sinceMono !== null && next.sinceMono <= downSince) return next;
  return { ...next, sinceMono: downSince };
}

/** The earlier of two moments (monotonic ms); null for neither, one alone when the other is null. */
function earliest(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

/**
 * Whether the reads of a device fail: the last poll failed, its last answer carried none of its
 * polled signals, no polled signal it has answered is OK -- each is STALE (as the provider
 * reports it, or kept past its bound), UNAVAILABLE or FAULT (a signal never answered vouches for
 * nothing: it is judged by the ones it sends) -- or the provider's own health says the device is
 * UNREACHABLE. Allocates nothing (it runs after every poll).
 */
function readsFail(dev: DeviceState, cache: StateCache): boolean {
  if (dev.pollable.length === 0) return false;
  if (!dev.available) return true;
  if (noneAnswered(dev) || signalsFail(dev)) return true;
  return reportedUnreachable(dev, cache);
}

function reportedUnreachable(dev: DeviceState, cache: StateCache): boolean {
  return cache.reportedUnreachable(dev.providerId, dev.deviceId);
}

/**
 * Why the reads of a device fail (readsFail's reasons, as an operator reads them); else null.
 * `readFailedInSpell`: the devices a read of which failed in this failing spell (one not read
 * since it was listed, or since its provider came back, has had none); asked only of a device
 * marked unavailable (a healthy poll does not look it up). One with no failed read that its
 * provider's health reports UNREACHABLE says so: that report, not a read, dated it.
 */
function readFailure(
  dev: DeviceState,
  cache: StateCache,
  readFailedInSpell: WeakSet<DeviceState>,
): string | null {
  if (!readsFail(dev, cache)) return null;
  if (!dev.available) {
    const readFailed = readFailedInSpell.has(dev);
    if (!readFailed && reportedUnreachable(dev, cache)) {
      return "its provider reports it UNREACHABLE";
    }
    if (dev.lastPollMs === 0) return "it has not answered a read yet";
    if (readFailed) return "its reads fail";
    return "it has not answered a read since its provider came back";
  }
  if (reportedUnreachable(dev, cache)) return "its provider reports it UNREACHABLE";
  // Every sample it has is bad (a FAULT refused for its type keeps its old receipt: said so,
  // not "none answered"), unless all of them are only kept samples the cache aged (STALE, not
  // received at its last answer: nothing the provider reported); else its last answer carried
  // none of its polled signals.
  if (dev.signals.size > 0 && signalsFail(dev) && !onlyKeptStale(dev)) {
    return "every polled signal is STALE, UNAVAILABLE or FAULT";
  }
  return "its reads are answered, but none of its polled signals answered";
}

/** Every polled signal's sample is STALE and was not received at the device's last answer. */
function onlyKeptStale(dev: DeviceState): boolean {
  const pollable = dev.pollable;
  for (let i = 0; i < pollable.length; i++) {
    const s = dev.signals.get(pollable[i]!);
    if (s !== undefined && (s.quality !== "STALE" || s.receivedMono === dev.lastPollMono)) {
      return false;
    }
  }
  return true;
}
