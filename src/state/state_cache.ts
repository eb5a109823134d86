import {
  isOtherDeviceAnswer,
  OtherDeviceAnswerError,
  PreparedRead,
  ProviderStatusError,
  qualityFromWire,
  type ReadReply,
  type ResponsePayloads,
  SampleBatch,
  typedValueFromWire,
  WireDeviceState,
  wireTypeAgrees,
  WireValueType,
} from "../adpp/mod.ts";
import {
  type Clock,
  DepartedDates,
  DERIVED_WARN_CYCLES,
  DERIVED_WARN_MIN_MS,
  type DeviceCapabilities,
  deviceHandle,
  errorMessage,
  Histogram,
  type Logger,
  neverThrowing,
  nextGridInstant,
  plainObjectConstructor,
  type Quality,
  quoteDeviceHandle,
  quoteProviderTextWithin,
  RuntimeError,
  sameValue,
  sharedInstantTimers,
  tellEach,
  type TimerId,
  toRuntimeError,
  transitionDate,
  type TypedValue,
  type ValueType,
  worstQuality,
} from "../common/mod.ts";
import type { EventBus } from "../events/mod.ts";
import {
  MAX_RETIRED_FLIP_DATES,
  type ProviderHost,
  type ProviderRegistry,
} from "../providers/mod.ts";
import { noneAnswered, signalsFail } from "./_answers.ts";
import { RateLimitedLog } from "./_rate_limited_log.ts";
import { deviceStaleness, type NoWarningStage, type StalenessBounds } from "./staleness.ts";

/**
 * One cached signal sample. `value` is null for a declared signal the provider has only answered
 * without a usable value; a sample without a usable value keeps the last good value (with its
 * timestamp) and takes the sample's quality (OK only for a value that was OK: withoutValue).
 */
export interface SignalState {
  readonly value: TypedValue | null;
  readonly quality: Quality;
  /**
   * Provider sample time (epoch ms), else the time the poll answer arrived. Reported as the
   * provider gave it and never used for an age: a provider's clock may be off by an hour.
   */
  readonly timestampMs: number;
  /**
   * When the runtime received the value (monotonic ms): every age and staleness is measured
   * from here. A sample without a usable value that keeps the last good value keeps its time.
   */
  readonly receivedMono: number;
}

/** A cache sample as the poll path refreshes it in place (SignalState is read-only above it). */
type MutableSignalState = { -readonly [K in keyof SignalState]: SignalState[K] };

/** One signal as a fresh read answered it. */
export interface FreshSample {
  readonly value: TypedValue | null;
  readonly quality: Quality;
}

/**
 * A fresh read: the provider's answer (samples by signal id as answered), or why there is none.
 * `timedOut`: the request got no answer within the time it was given.
 */
export type FreshRead =
  | {
    readonly ok: true;
    readonly samples: ReadonlyMap<string | undefined, FreshSample>;
    /** The ids asked for that the device does not declare (no sample of them is kept). */
    readonly undeclared?: ReadonlySet<string>;
  }
  | {
    readonly ok: false;
    readonly reason: string;
    readonly timedOut?: boolean;
    /**
     * The provider is down and nothing brings it back on its own (its circuit is open: only a
     * reload retries it; or it is stopped -- by a reload, or by the runtime's stop, which restarts
     * nothing once begun): asked again, it cannot answer. (A provider the runtime's stop stopped:
     * the read-backs end with the stop, Estop.endReadBacks.)
     */
    readonly staysDown?: boolean;
    /**
     * A reload removed the provider (its id no longer configured: ProviderRegistry.configured):
     * its devices are gone, not down -- it stays down, and no earlier read of them stands.
     */
    readonly removed?: boolean;
    /**
     * The provider's stop ended the read (its host stopped, the session closed under it), judged
     * when the read failed -- not the provider's own answer (ProviderStatusError) nor a failure
     * that came before the stop.
     */
    readonly cutByStop?: boolean;
  };

/**
 * Reads signals fresh from their provider -- a ReadSignals round-trip, never the cache (the
 * e-stop's read-back, safety/verify.ts). The only way above this layer to ask a provider for a
 * value; it sends nothing else.
 */
export interface FreshReader {
  readFresh(
    providerId: string,
    deviceId: string,
    signalIds: readonly string[],
    timeoutMs: number,
  ): Promise<FreshRead>;
}

/** Samples of one provider that were not stored as good values, counted since start. */
export interface DataFaultCounts {
  /** Value member disagreeing with its `Value.type` or the signal's declared type (FAULT). */
  type_mismatch: number;
  /** NaN or +/-Infinity doubles (stored with quality FAULT). */
  non_finite: number;
  /** Samples of signal ids the device did not declare (dropped). */
  undeclared_signal: number;
}

/**
 * A provider timestamp further than this from the runtime's wall clock when the sample arrives
 * (ahead or behind) is flagged: counted, logged at a bounded rate and shown in the provider's
 * health. Ages never depend on it (they are measured from receipt on the monotonic clock).
 */
export const TIMESTAMP_SKEW_LIMIT_MS = 30_000;

/**
 * Provider ids a reload removed whose devices' latest device_availability date is kept for the
 * provider configured again under the id (StateCache #removedAvailabilityAt): at most this many,
 * the one removed longest ago let go of first; as many as the registry keeps of their flips.
 */
export const MAX_REMOVED_AVAILABILITY_DATES = MAX_RETIRED_FLIP_DATES;

/**
 * Provider ids a reload removed (no longer configured) that a fresh read names so
 * (`provider removed by a configuration reload`, not `provider not found`): at most this many, the
 * one removed longest ago let go of first.
 */
export const MAX_REMOVED_PROVIDER_IDS = MAX_RETIRED_FLIP_DATES;

/** Samples whose provider timestamp was off by more than TIMESTAMP_SKEW_LIMIT_MS, since start. */
export interface TimestampSkew {
  /** Samples flagged since start. */
  samples_total: number;
  /** Provider time minus the runtime's wall time of the last flagged sample (ms; + = ahead). */
  last_skew_ms: number | null;
  /** Wall time the last flagged sample arrived; null before the first. */
  last_at_epoch_ms: number | null;
}

/**
 * Devices of one provider an inventory or a reload names in a no-WARNING-stage line (StateCache
 * #tellNoWarningStage); the others are counted in one more line.
 */
export const NO_WARNING_STAGE_LOG_DEVICES = 5;

/**
 * Devices per provider whose no-WARNING-stage notice is remembered while a rediscovery leaves them
 * out (StateCache #departedNoStageTold): a device listed again by a later restart is not said
 * again. As many as one inventory may list (MAX_DEVICES_PER_PROVIDER); the oldest is forgotten.
 */
export const NO_WARNING_STAGE_DEPARTED_DEVICES = 1024;

/**
 * Devices per provider whose signals (their last samples and declarations) are kept while a
 * rediscovery leaves them out (StateCache #departedSignals), so that one listed again carries on
 * from them as a device listed throughout does. As many as one inventory may list
 * (MAX_DEVICES_PER_PROVIDER): at most what the cache held of the provider while it listed them;
 * the one left out longest ago is forgotten first.
 */
export const DEPARTED_SIGNALS_DEVICES = 1024;
/**
 * Signals a device's rediscovery no longer declares whose last samples the cache keeps for their
 * return (MutableDeviceState.leftSlots), per device: as many as one device may declare
 * (MAX_SIGNALS_PER_DEVICE), so a device never holds more than twice its declared maximum; the
 * one left out longest ago forgotten first.
 */
export const LEFT_SIGNALS_PER_DEVICE = 1024;

/**
 * Provider ids a reload removed (or restarted: its entry changed) whose devices' signals, as
 * stream clients were last told of them, are kept for the provider configured again under the id
 * (StateCache #removedSignals): at most this many, the one removed longest ago let go of first;
 * as many as the dates kept of them (MAX_REMOVED_AVAILABILITY_DATES).
 */
export const MAX_REMOVED_SIGNALS_PROVIDERS = MAX_REMOVED_AVAILABILITY_DATES;

/**
 * Fresh reads of one device (readFresh: the e-stop's read-back) whose request runs on past its
 * caller's shorter bound (verify_timeout_ms) to the provider's whole timeout_ms, to learn whether
 * the device answers at all: at most this many at a time. A read-back of the device while they are
 * out (another press, a re-verification) sends its request with its own bound, as before, and a
 * cut one says nothing: the one out already asks what it would.
 */
export const MAX_FRESH_READS_LEFT_RUNNING_PER_DEVICE = 1;

/** Log lines about refused or faulted samples per provider, kind and window; the rest is counted. */
export const DATA_FAULT_LOG_LINES = 5;
/** The window of DATA_FAULT_LOG_LINES. */
export const DATA_FAULT_LOG_WINDOW_MS = 60_000;

/** Cached state of one device. */
export interface DeviceState {
  readonly providerId: string;
  readonly deviceId: string;
  /** Signals polled for this device (those with a poll hint), in capability order. */
  readonly pollable: readonly string[];
  readonly signals: ReadonlyMap<string, SignalState>;
  /** Epoch ms of the last successful poll (for display); 0 if never. */
  readonly lastPollMs: number;
  /** Monotonic ms of the last successful poll (for ages); 0 if never. */
  readonly lastPollMono: number;
  /** Provider up and the last poll of this device answered OK. */
  readonly available: boolean;
  /**
   * Epoch ms at which its last failed read arrived (an error status, an answer that could not be
   * read or named another device, a timeout), or it was marked unavailable with its provider
   * down: what its UNAVAILABLE samples and device_availability are dated by (an outcome held
   * behind another device's hung read is applied later); 0 if never. Absent: not known.
   */
  readonly lastFailMs?: number;
  /** Monotonic ms of the same (lastFailMs); 0 if never (lastFailMs says which). */
  readonly lastFailMono?: number;
}

/**
 * The monotonic time the outcome of `dev`'s last poll arrived: its answer's (lastPollMono) while
 * it is available, else its failed read's (lastFailMono); `nowMono` when none is known, never
 * later than it. Asked on a failing device's change, not per poll.
 */
export function outcomeArrivedMono(dev: DeviceState, nowMono: number): number {
  const at = dev.available
    ? (dev.lastPollMs > 0 ? dev.lastPollMono : nowMono)
    : ((dev.lastFailMs ?? 0) > 0 ? dev.lastFailMono ?? nowMono : nowMono);
  return Math.min(at, nowMono);
}

/** The wall time (epoch ms) of the same as outcomeArrivedMono, `nowMs` when none is known. */
export function outcomeArrivedMs(dev: DeviceState, nowMs: number): number {
  const at = dev.available ? dev.lastPollMs : dev.lastFailMs ?? 0;
  return at > 0 ? at : nowMs;
}

/**
 * What the device declared about one signal plus its cached sample: one lookup per sample gives
 * both the declared type and the previous state.
 */
interface SignalSlot {
  /** Declared value type; null when the provider left it unspecified (any member accepted). */
  readonly type: ValueType | null;
  /** Declared unit (SignalSpec.unit; "" for none). */
  readonly unit: string;
  /** Has a poll hint: requested by ReadSignals, cached and served. */
  readonly polled: boolean;
  /** Age (ms, monotonic) past which the cached sample is stale (staleAfterMs()). */
  staleAfterMs: number;
  /**
   * When a reload last tightened staleAfterMs (monotonic ms; -Infinity: never), and the bound
   * before it for the held sample (the age at which it went stale before, an earlier tightening
   * included): a sample usable until then went stale then, not earlier (staleSinceMono()).
   */
  tightenedAtMono: number;
  looserMs: number;
  /** The cached sample (the same object as in `signals`); undefined before the first. */
  last: SignalState | undefined;
  /**
   * A told-OK mark, only while `last` is undefined: stream clients were told this signal `OK` by
   * a process of the provider a reload took out (#keepRemovedSignals), and nothing since. Not a
   * sample (no value: nothing reads it as one, nor serves it): the quality its first sample
   * changes from (#store), and the receipt it goes STALE from when answers leave it out
   * (#applySamples) or UNAVAILABLE at a failed read (#markDeviceUnavailable). Null: none.
   */
  toldOk: ToldOk | null;
  /** The answer (StateCache's count of applied answers) that last carried it: one per answer. */
  answer: number;
}

/** A told-OK mark (SignalSlot.toldOk): the dates of the `OK` sample clients were told, not it. */
interface ToldOk {
  /** The told sample's timestamp (epoch ms), a STALE or UNAVAILABLE sample made of it keeps. */
  readonly timestampMs: number;
  /** When the runtime received the told sample (monotonic ms): its staleness runs from here. */
  readonly receivedMono: number;
}

/**
 * When a sample received at `receivedMono` went stale under a slot's bounds (staleSinceMono()):
 * its age past the bound, not before the tightening that set it for one usable until then.
 */
function slotStaleSince(slot: SignalSlot, receivedMono: number): number {
  return Math.max(
    receivedMono + slot.staleAfterMs,
    Math.min(slot.tightenedAtMono, receivedMono + slot.looserMs),
  );
}

/**
 * What the cache keeps of a device that left (StateCache #departedSignals, #removedSignals): its
 * slots (declarations, bounds, told-OK marks) and signals, and what stream clients were told of
 * its availability (a device a rediscovery left out, told its loss, is told its removal too).
 */
interface LeftDevice extends Pick<MutableDeviceState, "slots" | "signals" | "leftSlots"> {
  /**
   * The date of its latest device_availability when one was said of it since its provider was
   * configured (MutableDeviceState availabilityTold, availabilityAt): #removeHost tells it its
   * removal, dated no earlier. Null when none was: never answered, or a predecessor's device told
   * its removal already (#keepRemovedSignals).
   */
  readonly toldAt: number | null;
}

interface MutableDeviceState {
  providerId: string;
  deviceId: string;
  pollable: string[];
  /** The ReadSignals request of its polls (encoded with the inventory, sent by every poll). */
  readonly readRequest: PreparedRead;
  /**
   * Where its polls' answers are decoded (made with the inventory, refilled by every poll: no
   * object per sample). Held from the send until the pass applied the answer (`batchHeld`).
   */
  readonly readBatch: SampleBatch;
  /**
   * readBatch is taken by a request not applied yet: a poll beside it decodes into its own. Also
   * the device's read in flight: no poll pass sends it another (#pollProvider, pollDevice) until
   * its outcome is applied, as a cycle may end without it (#releasePass).
   */
  batchHeld: boolean;
  /** Every declared signal (built at inventory time, not per sample). */
  slots: Map<string, SignalSlot>;
  signals: Map<string, SignalState>;
  /**
   * The slots, with their last samples, of signals a rediscovery no longer declares while it
   * still lists the device (the newest last, at most LEFT_SIGNALS_PER_DEVICE); null when none. One
   * declared again carries on from its sample, as a device listed again does (#applyInventory):
   * its first answer is told as the quality change it is. Not served, not polled.
   */
  leftSlots: Map<string, SignalSlot> | null;
  lastPollMs: number;
  lastPollMono: number;
  lastFailMs: number;
  lastFailMono: number;
  available: boolean;
  /**
   * The date (epoch ms) of its latest device_availability (#publishAvailability); 0 before the
   * first. Set on a flip only, never by a poll that changes nothing; kept across rediscovery.
   */
  availabilityAt: number;
  /**
   * A device_availability was said of it (#publishAvailability) since its provider was configured
   * (kept across rediscovery, also while one leaves it out: #departedSignals): a reload that takes
   * the provider out says it gone only then (#removeHost), a device left out too. A device never
   * told (never answered: no polled signal, every read failed) needs no notice, nor one told its
   * removal already (a predecessor's, #removedSignals).
   */
  availabilityTold: boolean;
  /**
   * A slot of it may hold a told-OK mark (SignalSlot.toldOk): set by #applyInventory when it
   * carries one, cleared by #markDeviceUnavailable once it made each an UNAVAILABLE sample (a
   * sample stored meanwhile clears its own slot's). Spares a failing device's every pass a walk
   * of its slots.
   */
  toldOkHeld: boolean;
  /**
   * How often the poll loop polls this device (ms, a whole number of intervals): its signals'
   * poll hints within the staleness rules (staleness.ts, devicePollPeriodMs).
   */
  pollPeriodMs: number;
  /** This device's liveness bounds (health.staleness, else derived with its poll period). */
  bounds: StalenessBounds;
  /** Whether its bounds (#boundSlots) leave it no WARNING stage the file cannot tell (null: no). */
  noWarningStage: NoWarningStage | null;
  /**
   * The figures of the no-WARNING-stage line last written of it (noWarningStageNews: configured
   * stale bound and derived warn bound), "" when none: said once, again only when they change.
   * Kept across rediscovery.
   */
  noWarningStageTold: string;
  /** Poll-loop cycles still to skip before this device is polled again (0: polled next cycle). */
  skipCycles: number;
  /**
   * A loop cycle it was due in went without it, its read still out (batchHeld): its next read is
   * sent as soon as that read's answer is applied (StateCache.#resendLate), not at the next cycle.
   */
  lateDue: boolean;
  /**
   * Its last read was answered and the answer vouches for it: it carried one of its polled
   * signals and one of them is OK (readsAnswered). Until then it is polled every cycle.
   */
  readsAnswered: boolean;
  /** A pollDevice queued behind another poll and not started yet (joined, not repeated). */
  queuedPoll: Promise<void> | null;
}

/**
 * Poll figures of one provider since start (GET /metrics). Preallocated per provider at
 * construction and updated in place: recording a poll allocates nothing.
 */
export interface PollMetrics {
  /** Duration of every ReadSignals round-trip (answered or not), in seconds. */
  readonly duration: Histogram;
  /** Polls that failed: no answer in time, an error status, or the provider down. */
  errors: number;
}

/** Per provider: data-fault counters and a rate-limited log per kind. */
interface ProviderDataFaults {
  readonly counts: DataFaultCounts;
  readonly log: Readonly<
    Record<keyof DataFaultCounts | "skew" | "duplicate" | "other_device", RateLimitedLog>
  >;
  readonly skew: TimestampSkew;
}

export interface StateCacheOptions {
  readonly registry: ProviderRegistry;
  readonly bus: EventBus;
  readonly clock: Clock;
  readonly log: Logger;
  /** polling.interval_ms */
  readonly intervalMs: number;
  /**
   * health.staleness (0 = derived from the cadence, stalenessBounds()); default both 0. With
   * each signal's declared stale_after_ms it decides when a cached sample is stale.
   */
  readonly staleness?: StalenessBounds;
  /** How often the provider's own health (GetHealth) is refreshed for the health view. */
  readonly reportedHealthIntervalMs?: number;
}

/**
 * Told after every poll of a device: answered (the samples are stored) or failed (its signals
 * are marked UNAVAILABLE), and when its provider goes down. It receives the cache's own state
 * object (no copy: nothing is allocated per poll for it), must not keep it across inventory
 * changes, and must not throw (a listener that throws is logged, at a bounded rate, and skipped).
 */
export type DevicePolledListener = (device: DeviceState) => void;

/**
 * Told when a provider's own health (GetHealth) changes which of its devices it reports
 * UNREACHABLE. Must not throw (a listener that throws is logged, at a bounded rate, and skipped).
 */
export type ReportedUnreachableListener = (providerId: string) => void;

/** Told the id of a provider whose inventory the cache now holds (onInventoryApplied). */
export type InventoryAppliedListener = (providerId: string) => void;

/**
 * Told when a fresh read (readFresh: the e-stop's read-back) of a device its provider lists, of
 * signals it declares, was answered with an error status by the provider, or got no answer within
 * the provider's whole timeout_ms (a read whose caller's shorter bound answered it first runs on to
 * it, MAX_FRESH_READS_LEFT_RUNNING_PER_DEVICE: told when it ends): the device did not answer, as a
 * failed poll says (onFreshReadFailed). Must not throw (a listener that throws is logged, at a
 * bounded rate, and skipped).
 */
export type FreshReadFailedListener = (providerId: string, deviceId: string) => void;

/** Provider-reported health kept from the last GetHealth answer. */
export interface ReportedHealthEntry {
  readonly atMs: number;
  /** Monotonic time of the answer (when the next GetHealth is due). */
  readonly atMono: number;
  readonly response: ResponsePayloads["get_health"];
}

/**
 * The runtime's view of every device's signals, filled by polling. Each provider has its own
 * poll loop, so a slow provider never delays another. One provider's polls never overlap: the
 * loop's polls and the post-call polls (pollDevice) share one queue per provider, so an older
 * answer is never applied over a newer one.
 *
 * Only what a device declared is stored, as declared: samples of undeclared signal ids are
 * dropped; a value whose member disagrees with its `Value.type` or the declared type is refused
 * (quality FAULT, last good value kept); NaN/+/-Infinity are stored with quality FAULT; a declared
 * signal answered without a value keeps its place with the provider's quality. Each refusal is
 * counted per provider (health view) and logged at a bounded rate. An answer carrying a signal
 * more than once is taken at its first sample of it (the others logged at a bounded rate).
 */
export class StateCache implements FreshReader {
  readonly #opts: StateCacheOptions;
  readonly #log: Logger;
  /** provider id -> device id -> state, in discovery order. */
  readonly #byProvider = new Map<string, Map<string, MutableDeviceState>>();
  /**
   * provider id -> its devices with signals to poll, in discovery order (made with the inventory,
   * read by every poll pass: a pass that polls them all allocates no list of its own).
   */
  readonly #polledDevices = new Map<string, readonly MutableDeviceState[]>();
  readonly #reported = new Map<string, ReportedHealthEntry>();
  /**
   * Of each stored health answer, the devices it reports UNREACHABLE (by each device's first entry,
   * as read before): asked per device at every poll pass (reportedUnreachable), which scanned the
   * whole answer -- up to MAX_DEVICES_PER_PROVIDER entries for each of as many devices.
   */
  readonly #unreachableIn = new WeakMap<ReportedHealthEntry, ReadonlySet<string>>();
  readonly #loops = new Map<string, PollLoop>();
  /**
   * The poll loops' clock: every loop aims at the same grid instants, and their timers of one
   * instant share one host timer (common/grid.ts, sharedInstantTimers).
   */
  #loopClock: Clock | null = null;
  readonly #faults = new Map<string, ProviderDataFaults>();
  readonly #pollMetrics = new Map<string, PollMetrics>();
  readonly #discoveryWarnings = new Map<string, readonly string[]>();
  /** provider id -> its poll queue (ReadSignals one at a time). */
  readonly #pollQueues = new Map<string, PollQueue>();
  /**
   * An array, not a Set: iterating it by index allocates nothing on the poll path. Replaced, never
   * changed in place, by (un)subscribing: a notification in progress tells the list it began with.
   */
  #polledListeners: readonly DevicePolledListener[] = [];
  readonly #unreachableListeners: ReportedUnreachableListener[] = [];
  readonly #inventoryListeners: InventoryAppliedListener[] = [];
  readonly #freshReadFailedListeners: FreshReadFailedListener[] = [];
  /**
   * A listener's failure, said through lines that never throw: a logger that throws on it must
   * not skip the listeners after it (the history, the alarms) nor the rest of the poll.
   */
  readonly #listenerErrors: RateLimitedLog;
  /** Lines of what bounds leave (no WARNING stage): a logger that throws never stops an inventory. */
  readonly #quietLog: Logger;
  #running = false;
  /** Set by detachProviders(): no provider reaches the cache any more (#isCurrent). */
  #providersDetached = false;
  /** Set by stop() and detachProviders(); start() clears it unless detached (pollsEnded). */
  #pollsEnded = false;
  /**
   * Set by abandonPolls() (a stop that went on without the polls in flight): no poll's outcome is
   * taken any more, until start() polls again.
   */
  #pollsAbandoned = false;
  #intervalMs: number;
  #staleness: StalenessBounds;
  /** Answers applied (#applySamples): tells a signal an answer repeats (SignalSlot.answer). */
  #answers = 0;
  /** Bumped whenever any signal's stale bound may have changed (readers cache the bound). */
  #boundsVersion = 0;
  /**
   * Origin of the poll grid every loop shares (PollLoop): set when polling starts, so the cycles
   * of all providers, also of one a reload adds, start at the same instants.
   */
  #gridOriginMs: number | null = null;
  /**
   * Provider id -> the latest date of a device_availability of its devices that left: no longer
   * listed at a rediscovery (a restart whose discovery leaves a device out: unplugged, its host
   * check unmet), or removed with it by a reload. A device its inventory takes up (a later
   * rediscovery listing it again, the provider configured again under the id) is dated no earlier
   * (#applyInventory), so its return never comes before its loss, whenever the wall clock steps
   * back (NTP). One number per provider id with a host here (the clock may step back at any
   * time); a removed one's moves to #removedAvailabilityAt (#removeHost).
   */
  readonly #departedAvailabilityAt = new Map<string, number>();
  /**
   * Provider id -> device id -> the no-WARNING-stage figures said of a device a rediscovery left
   * out (a restart listing nothing, its host check unmet): said once under the same entry, so the
   * restart that lists it again says nothing new (noWarningStageNews). Forgotten when the host is
   * removed (#removeHost; a host is registered under an id only once its predecessor was taken
   * out, so a provider a reload configures again is said again), at most
   * NO_WARNING_STAGE_DEPARTED_DEVICES per provider.
   */
  readonly #departedNoStageTold = new Map<string, Map<string, string>>();
  /**
   * Provider id -> device id -> the signals of a device a rediscovery left out (a restart whose
   * discovery leaves it out: unplugged, its host check unmet), as the cache held them then: all
   * UNAVAILABLE since its provider went down, as stream clients were told -- or, for a device of
   * a reload's successor that gave no sample before it, the told-OK marks its slots hold
   * (SignalSlot.toldOk) of what clients were told before the reload. Listed again, its
   * signals carry on from them as a device's listed throughout do (#applyInventory), so its first
   * answer is told as the quality change it is; and whether it was told its availability (told
   * lost, so told its removal too: #removeHost). Kept if told or holding a sample or a told-OK
   * mark. Forgotten when listed again; when the host is removed (#removeHost), they move to
   * #removedSignals. At most DEPARTED_SIGNALS_DEVICES per provider.
   */
  readonly #departedSignals = new Map<
    string,
    Map<string, LeftDevice>
  >();
  /**
   * Provider id -> the latest device_availability date of a provider a reload removed, for the
   * provider configured again under the id (#applyInventory takes it): kept however many times
   * the wall clock steps back meanwhile, at most MAX_REMOVED_AVAILABILITY_DATES ids, the one
   * removed longest ago let go of first (DepartedDates).
   */
  readonly #removedAvailabilityAt = new DepartedDates(MAX_REMOVED_AVAILABILITY_DATES);
  /**
   * Provider id -> device id -> the signals of a provider a reload removed or restarted
   * (#removeHost), with their declarations: what stream clients were last told of them (UNAVAILABLE
   * since a crash, FAULT, STALE; OK as a told-OK mark of its slot, SignalSlot.toldOk, without its
   * value), for the provider configured again under the id, whose devices carry on from them as
   * from a rediscovery (#applyInventory takes them into #departedSignals): its first answer is
   * told as the quality change it is (from OK too: a first FAULT or STALE answer). At most
   * MAX_REMOVED_SIGNALS_PROVIDERS ids, DEPARTED_SIGNALS_DEVICES devices each, the one removed
   * longest ago let go of first.
   */
  readonly #removedSignals = new Map<
    string,
    Map<string, LeftDevice>
  >();
  /**
   * The ids a reload removed (ProviderRegistry.onUnconfigured), oldest first, at most
   * MAX_REMOVED_PROVIDER_IDS: readFresh says a removed provider's read so. One configured again
   * reads as configured (ProviderRegistry.configured) whatever this holds.
   */
  readonly #removedIds = new Set<string>();
  /**
   * Host -> device id -> its fresh reads running on past their caller's bound (readFresh), each
   * count at most MAX_FRESH_READS_LEFT_RUNNING_PER_DEVICE; an entry goes when its last read ends
   * (within the provider's timeout_ms, or when its session ends).
   */
  readonly #freshReadsLeftRunning = new Map<ProviderHost, Map<string, number>>();

  constructor(opts: StateCacheOptions) {
    this.#opts = opts;
    this.#log = opts.log.child("state");
    this.#listenerErrors = new RateLimitedLog(neverThrowing(this.#log), {
      lines: DATA_FAULT_LOG_LINES,
      windowMs: DATA_FAULT_LOG_WINDOW_MS,
      monoMs: () => opts.clock.monoMs(),
    });
    this.#quietLog = neverThrowing(this.#log);
    this.#intervalMs = opts.intervalMs;
    this.#staleness = opts.staleness ?? { warnAfterMs: 0, staleAfterMs: 0 };
    opts.registry.eachHost((host) => this.#addHost(host));
    opts.registry.onHostRemoved((host) => this.#removeHost(host));
    opts.registry.onUnconfigured((id) => this.#noteRemovedId(id));
  }

  /** Keeps `id` among #removedIds, the newest, within MAX_REMOVED_PROVIDER_IDS. */
  #noteRemovedId(id: string): void {
    this.#removedIds.delete(id);
    this.#removedIds.add(id);
    for (const oldest of this.#removedIds) {
      if (this.#removedIds.size <= MAX_REMOVED_PROVIDER_IDS) break;
      this.#removedIds.delete(oldest);
    }
  }

  /** polling.interval_ms now in use. */
  get intervalMs(): number {
    return this.#intervalMs;
  }

  /**
   * Changes polling.interval_ms (configuration reload): every poll loop's next cycle is scheduled
   * with the new interval; a cycle in flight finishes first.
   */
  setIntervalMs(intervalMs: number): void {
    this.#intervalMs = intervalMs;
    for (const loop of this.#loops.values()) loop.setInterval(intervalMs);
    this.#restale();
  }

  /** health.staleness now in use. */
  get staleness(): StalenessBounds {
    return this.#staleness;
  }

  /** Changes health.staleness (configuration reload); applies to every cached sample at once. */
  setStaleness(staleness: StalenessBounds): void {
    this.#staleness = staleness;
    this.#restale();
  }

  /**
   * Says each device that the bounds now in force newly leave no WARNING stage (staleness.ts
   * noWarningStage; one WARN line each, once per figures). An inventory says it itself; a reload
   * calls this once all its sections applied, not setIntervalMs or setStaleness: a reload of both
   * applies one after the other, and the new interval under the old stale bound between them is
   * no configuration's.
   */
  tellNoWarningStage(): void {
    for (const [providerId, devices] of this.#byProvider) {
      const host = this.#opts.registry.host(providerId);
      if (host) this.#tellNoWarningStage(host, devices);
    }
  }

  /**
   * Age (ms, on the monotonic clock) past which the cached sample of a signal is stale: its
   * declared stale_after_ms raised to a floor, else its device's liveness stale bound
   * (staleness.ts, signalStaleAfterMs). Infinity for a signal the cache does not hold.
   */
  staleAfterMs(providerId: string, deviceId: string, signalId: string): number {
    return this.#byProvider.get(providerId)?.get(deviceId)?.slots.get(signalId)?.staleAfterMs ??
      Infinity;
  }

  /**
   * When a sample received at `receivedMono` went stale (monotonic ms): as its age passed the
   * signal's bound, but not before that bound was in force -- one a reload tightened makes a
   * sample usable until then stale from the reload on, and one stale under the bound before
   * since that bound ran out. Infinity for a signal the cache does not hold. Allocates nothing.
   */
  staleSinceMono(
    providerId: string,
    deviceId: string,
    signalId: string,
    receivedMono: number,
  ): number {
    const slot = this.#byProvider.get(providerId)?.get(deviceId)?.slots.get(signalId);
    return slot === undefined ? Infinity : slotStaleSince(slot, receivedMono);
  }

  /**
   * How often the poll loop polls a device (ms): a whole number of polling intervals, longer than
   * one when all its polled signals hint slower (staleness.ts, devicePollPeriodMs). Undefined for a
   * device the cache does not hold.
   */
  pollPeriodMs(providerId: string, deviceId: string): number | undefined {
    return this.#byProvider.get(providerId)?.get(deviceId)?.pollPeriodMs;
  }

  /** A device's liveness bounds (health view); undefined for a device the cache does not hold. */
  livenessBounds(providerId: string, deviceId: string): StalenessBounds | undefined {
    return this.#byProvider.get(providerId)?.get(deviceId)?.bounds;
  }

  /**
   * Changes whenever a signal's stale bound may have changed (inventory, interval, staleness): a
   * reader that keeps a bound (staleAfterMs) re-reads it when this differs from what it saw.
   */
  get boundsVersion(): number {
    return this.#boundsVersion;
  }

  /** How old a cached sample is now (ms since the runtime received it; monotonic). */
  ageMs(s: SignalState): number {
    return Math.max(0, this.#opts.clock.monoMs() - s.receivedMono);
  }

  /**
   * The quality a reader sees: the sample's own, except STALE for an OK sample older than the
   * signal's staleness bound (a provider that stopped answering a signal must not keep it OK).
   */
  qualityNow(providerId: string, deviceId: string, signalId: string, s: SignalState): Quality {
    if (s.quality !== "OK") return s.quality;
    return this.ageMs(s) > this.staleAfterMs(providerId, deviceId, signalId) ? "STALE" : "OK";
  }

  /** Provider timestamps flagged as far off the runtime's clock (a copy). */
  timestampSkew(providerId: string): TimestampSkew {
    const f = this.#faults.get(providerId);
    return f ? { ...f.skew } : { samples_total: 0, last_skew_ms: null, last_at_epoch_ms: null };
  }

  /** Recomputes every slot's staleness bound (interval, staleness or inventory changed). */
  #restale(): void {
    for (const [providerId, devices] of this.#byProvider) {
      const host = this.#opts.registry.host(providerId);
      if (host) this.#boundSlots(host, devices);
    }
  }

  /** Recomputes the poll period, liveness bounds and every signal's stale bound of each device. */
  #boundSlots(host: ProviderHost, devices: ReadonlyMap<string, MutableDeviceState>): void {
    this.#boundsVersion++;
    const interval = this.#intervalMs;
    const count = host.devices.length;
    const nowMono = this.#opts.clock.monoMs();
    for (const caps of host.devices) {
      const dev = devices.get(caps.device.deviceId);
      if (!dev) continue;
      const rules = deviceStaleness(this.#staleness, interval, caps.signals, count);
      dev.pollPeriodMs = rules.pollPeriodMs;
      dev.bounds = rules.bounds;
      // A device with no polled signal has no liveness stage at all (health UNKNOWN): none to lose.
      dev.noWarningStage = dev.pollable.length > 0 ? rules.noWarningStage : null;
      // A reload to a longer interval must not leave a skip count of the shorter one.
      dev.skipCycles = Math.min(dev.skipCycles, skipCyclesAfterPoll(rules.pollPeriodMs, interval));
      for (const spec of caps.signals) {
        const slot = dev.slots.get(spec.signalId);
        if (!slot) continue;
        const bound = rules.signalStaleAfterMs(spec.staleAfterMs);
        // Tightened (a reload of health.staleness or polling.interval_ms): noted for the
        // samples it makes stale (staleSinceMono); a slot just declared has no bound before.
        // The bound before is the held sample's as dated until now (a tightening before this
        // one included): a sample the first made stale stays stale from then, not earlier.
        if (bound < slot.staleAfterMs && slot.staleAfterMs !== Infinity) {
          const r = slot.last?.receivedMono ?? slot.toldOk?.receivedMono;
          slot.looserMs = r === undefined ? slot.staleAfterMs : slotStaleSince(slot, r) - r;
          slot.tightenedAtMono = nowMono;
        }
        slot.staleAfterMs = bound;
      }
    }
  }

  /**
   * One WARN line per device of `host` its bounds newly leave no WARNING stage (#boundSlots), at
   * most NO_WARNING_STAGE_LOG_DEVICES named, the rest counted in one more line.
   */
  #tellNoWarningStage(host: ProviderHost, devices: ReadonlyMap<string, MutableDeviceState>): void {
    let told = 0;
    let untold = 0;
    for (const caps of host.devices) {
      const dev = devices.get(caps.device.deviceId);
      if (!dev) continue;
      const none = dev.noWarningStage;
      if (!noWarningStageNews(dev, none) || none === null) continue;
      if (told < NO_WARNING_STAGE_LOG_DEVICES) {
        told++;
        this.#quietLog.warn(noWarningStageLine(dev, none));
      } else untold++;
    }
    if (untold > 0) {
      this.#quietLog.warn(
        `${untold} more device(s) of provider ${host.id} have no WARNING stage as above ` +
          `(${NO_WARNING_STAGE_LOG_DEVICES} named, NO_WARNING_STAGE_LOG_DEVICES); each device's ` +
          "poll_period_ms is in GET /v0/providers/health",
      );
    }
  }

  /**
   * Where `staleness` in place of the bounds in use would find samples stale later, for the
   * inventory and interval in use: one text per device whose liveness bound or one of whose
   * signals' bounds would grow, naming the longest growth (`"sim0/tempctl0": stale after 5000 ->
   * 20000 ms`, `"sim0/tempctl0" signal "tc1_temp": ...`): the device and signal ids (a provider's
   * text) quoted and cut as the cache's log lines quote them, since the text is a reload's answer
   * and its log line. Empty when nothing would be found later (a reload's weakening,
   * app/run_gate.ts). `from`: compared with the bounds `from`'s staleness and interval give the
   * inventory in use instead of those in use (a reload judges its health section against the
   * bounds at its start, not against those its polling section left in between).
   */
  longerStaleBounds(
    staleness: StalenessBounds,
    from?: { readonly staleness: StalenessBounds; readonly intervalMs: number },
  ): string[] {
    const out: string[] = [];
    for (const d of this.#boundsUnder(staleness, this.#intervalMs, from)) {
      if (d.stale !== null) out.push(`${d.device}${d.stale.signal}: ${d.stale.text}`);
    }
    return out;
  }

  /**
   * Where `intervalMs` and `staleness` in place of those in use would poll a device less often:
   * its poll period is the most whole intervals within what its poll hints and half the
   * configured staleness bounds allow (staleness.ts devicePollPeriodMs), so a shorter interval
   * may (5 Hz hints: every 110 ms at 110 ms, every 200 ms at 100 ms), and so may a laxer
   * warn_after_ms though no stale bound grows. One text per device whose poll period would grow
   * (`"sim0/motorctl0" every 110 -> 200 ms`), with the longest growth of its stale bounds when
   * they grow with it (`, stale after 5000 -> 8000 ms`), quoted and cut as longerStaleBounds
   * quotes them. Empty when no device would be polled less often (a reload's weakening,
   * app/run_gate.ts). `from`: compared with the poll periods and bounds `from`'s staleness and
   * interval give the inventory in use, as longerStaleBounds: a reload judges its health section
   * against the periods at its start, not those its polling section left in between (a shorter
   * interval under a warn_after_ms below it polls every interval: a laxer bound of the file then
   * polls less often than that state, no file's, yet no less often than at the start).
   */
  slowerPolls(
    intervalMs: number,
    staleness: StalenessBounds,
    from?: { readonly staleness: StalenessBounds; readonly intervalMs: number },
  ): string[] {
    const out: string[] = [];
    for (const d of this.#boundsUnder(staleness, intervalMs, from)) {
      if (d.periodTo <= d.periodFrom) continue;
      const stale = d.stale === null ? "" : `,${d.stale.signal} ${d.stale.text}`;
      out.push(`${d.device} every ${d.periodFrom} -> ${d.periodTo} ms${stale}`);
    }
    return out;
  }

  /**
   * Each device of the inventory under `staleness` and `intervalMs` in place of those in use: its
   * poll period now and then, and the longest growth of its stale bounds (`signal`: empty for its
   * liveness bound, else ` signal "<id>"`; `text`: `stale after <from> -> <to> ms`), null when
   * none grows; `from`: the period and bounds under its staleness and interval, not those in use.
   * Asking applies nothing.
   */
  *#boundsUnder(
    staleness: StalenessBounds,
    intervalMs: number,
    from?: { readonly staleness: StalenessBounds; readonly intervalMs: number },
  ): Generator<{
    device: string;
    periodFrom: number;
    periodTo: number;
    stale: { signal: string; text: string } | null;
  }> {
    for (const [providerId, devices] of this.#byProvider) {
      const host = this.#opts.registry.host(providerId);
      if (!host) continue;
      for (const caps of host.devices) {
        const dev = devices.get(caps.device.deviceId);
        if (!dev) continue;
        const rules = deviceStaleness(staleness, intervalMs, caps.signals, host.devices.length);
        const was = from === undefined
          ? null
          : deviceStaleness(from.staleness, from.intervalMs, caps.signals, host.devices.length);
        const device = quoteDeviceHandle(providerId, caps.device.deviceId);
        let signal = "";
        let grownFrom = was?.bounds.staleAfterMs ?? dev.bounds.staleAfterMs;
        let to = rules.bounds.staleAfterMs;
        for (const spec of caps.signals) {
          const slot = dev.slots.get(spec.signalId);
          if (!slot) continue;
          const before = was?.signalStaleAfterMs(spec.staleAfterMs) ?? slot.staleAfterMs;
          const next = rules.signalStaleAfterMs(spec.staleAfterMs);
          if (next - before > to - grownFrom) {
            [signal, grownFrom, to] = [` signal ${quoteId(spec.signalId)}`, before, next];
          }
        }
        yield {
          device,
          periodFrom: was?.pollPeriodMs ?? dev.pollPeriodMs,
          periodTo: rules.pollPeriodMs,
          stale: to > grownFrom ? { signal, text: `stale after ${grownFrom} -> ${to} ms` } : null,
        };
      }
    }
  }

  /** Per-provider state for a host (at construction, or added by a reload). */
  #addHost(host: ProviderHost): void {
    const opts = this.#opts;
    const limited = () =>
      new RateLimitedLog(this.#log, {
        lines: DATA_FAULT_LOG_LINES,
        windowMs: DATA_FAULT_LOG_WINDOW_MS,
        monoMs: () => opts.clock.monoMs(),
      });
    this.#faults.set(host.id, {
      counts: { type_mismatch: 0, non_finite: 0, undeclared_signal: 0 },
      log: {
        type_mismatch: limited(),
        non_finite: limited(),
        undeclared_signal: limited(),
        skew: limited(),
        duplicate: limited(),
        other_device: limited(),
      },
      skew: { samples_total: 0, last_skew_ms: null, last_at_epoch_ms: null },
    });
    this.#pollMetrics.set(host.id, { duration: new Histogram(), errors: 0 });
    // A host that left the registry (removed or replaced by a reload) no longer reaches the
    // cache: its id may already belong to its successor.
    const current = () => this.#isCurrent(host);
    host.onInventory((devices) => {
      if (!current()) return;
      this.#applyInventory(host, devices);
      this.#notifyInventory(host.id);
    });
    host.onAvailability((up) => {
      if (!current()) return;
      if (!up) {
        // What the dead process last reported is not the provider's word while it is down: the
        // health view shows none (the provider is UNAVAILABLE, its devices too).
        this.#reported.delete(host.id);
        // Its passes take nothing more: an outcome still held, or still to come, is older than
        // these marks (an answer held behind a hung read is the dead process's word).
        this.#cutPasses(host.id);
        this.#markProviderDown(host.id);
      } else {
        // What the previous process reported of its devices says nothing of the new one's (a
        // device it called UNREACHABLE would count as failing): the new one is asked at once.
        this.#reported.delete(host.id);
        this.#loops.get(host.id)?.wake();
      }
    });
    // Nothing of a predecessor under its id is left to clear: #removeHost dropped its devices
    // and its GetHealth word, and a retired host's later answers are not stored (#isCurrent).
    this.#applyInventory(host, host.devices); // none yet unless the host is already up
    this.#notifyInventory(host.id);
    if (this.#running) this.#loops.set(host.id, this.#newLoop(host));
  }

  /**
   * Whether `host` still reaches the cache: the registered one of its id (a reload may remove or
   * replace it), and the providers not detached (detachProviders).
   */
  #isCurrent(host: ProviderHost): boolean {
    return !this.#providersDetached && this.#opts.registry.host(host.id) === host;
  }

  /**
   * From now on nothing a provider does reaches the cache: no poll answered or failed (the ones
   * in flight included), no availability flip, no inventory is stored, published or told to the
   * poll listeners. For a failed start about to stop the providers already up, on purpose
   * (Kernel #failedStartStopsProviders): their going is not the devices' (no UNAVAILABLE sample,
   * no device_availability of it on the bus, so none in telemetry, the history or the incident
   * records). The cache keeps what it held; polls still run until stop(). Idempotent; never
   * undone (the runtime is stopping).
   */
  detachProviders(): void {
    this.#providersDetached = true;
    this.#pollsEnded = true;
  }

  /** Whether detachProviders() was called (a failed start-up's stop; pollsEnded says it too). */
  get providersDetached(): boolean {
    return this.#providersDetached;
  }

  /**
   * Whether no poll refreshes what the cache holds any more: stop() began (the runtime's stop, its
   * "state cache" stage) or the providers were detached, until a start() polls again. The
   * interlock gate refuses the calls it would judge on it (alarms/alarm_engine.ts gate).
   */
  get pollsEnded(): boolean {
    return this.#pollsEnded;
  }

  /** Drops a removed host's state and stops its poll loop (a poll in flight finishes alone). */
  #removeHost(host: ProviderHost): void {
    const id = host.id;
    const loop = this.#loops.get(id);
    this.#loops.delete(id);
    void loop?.stop();
    // Stream clients hold the devices' last values: tell them the devices are gone (as a removal,
    // not a loss: no incident, no alarm), those already unavailable too (a crash, a failed poll):
    // a client told they were lost learns they are gone for good. A changed provider's devices
    // come back with its successor's first answered poll.
    const now = this.#opts.clock.nowMs();
    let latest = this.#departedAvailabilityAt.get(id) ?? 0;
    this.#departedAvailabilityAt.delete(id);
    // Those a rediscovery left out were told lost at their provider's crash: gone for good too.
    for (const [deviceId, left] of this.#departedSignals.get(id) ?? []) {
      if (left.toldAt === null) continue;
      const dev = { providerId: id, deviceId, availabilityAt: left.toldAt, availabilityTold: true };
      this.#publishAvailability(dev, false, now, "removed");
      latest = Math.max(latest, dev.availabilityAt);
    }
    for (const dev of this.#byProvider.get(id)?.values() ?? []) {
      if (dev.availabilityTold) { // else never said available nor lost: nothing to take back
        dev.available = false;
        this.#publishAvailability(dev, false, now, "removed");
      }
      latest = Math.max(latest, dev.availabilityAt);
    }
    // Kept for the provider configured again (a changed one is, at once).
    if (latest > 0) this.#removedAvailabilityAt.keep(id, latest);
    this.#keepRemovedSignals(id);
    this.#byProvider.delete(id);
    this.#departedNoStageTold.delete(id);
    this.#departedSignals.delete(id);
    this.#polledDevices.delete(id);
    this.#reported.delete(id);
    this.#faults.delete(id);
    this.#pollMetrics.delete(id);
    this.#discoveryWarnings.delete(id);
    this.#pollQueues.delete(id);
  }

  /**
   * Keeps what stream clients were last told of removed host `id`'s devices' signals, those a
   * rediscovery left out too (#departedSignals), in #removedSignals for the provider configured
   * again under the id: a signal not `OK` as it is, an `OK` one as a told-OK mark of its slot
   * (SignalSlot.toldOk: its dates, not its value), and a mark the host held (a successor removed
   * before its first answer) as it is. Kept in slots of their own: the host's are left as they
   * are. A reload's removal only: nothing per poll.
   */
  #keepRemovedSignals(id: string): void {
    const kept = new Map<string, LeftDevice>();
    const devices = [
      ...this.#departedSignals.get(id) ?? [], // the ones left out longest ago first
      ...[...this.#byProvider.get(id)?.values() ?? []].map((d) => [d.deviceId, d] as const),
    ];
    for (const [deviceId, dev] of devices) {
      const slots = new Map<string, SignalSlot>();
      const signals = new Map<string, SignalState>();
      let told = false;
      for (const [signalId, slot] of dev.slots) {
        const s = dev.signals.get(signalId);
        let toldOk = slot.toldOk;
        if (s?.quality === "OK") {
          toldOk = { timestampMs: s.timestampMs, receivedMono: s.receivedMono };
        } else if (s !== undefined) signals.set(signalId, s);
        told ||= s !== undefined || toldOk !== null;
        slots.set(signalId, { ...slot, last: signals.get(signalId), toldOk });
      }
      if (!told) continue;
      // Told its removal (#removeHost): its successor's listing says nothing more of it till then.
      kept.set(deviceId, { slots, signals, leftSlots: toldOkLeft(dev.leftSlots), toldAt: null });
      if (kept.size > DEPARTED_SIGNALS_DEVICES) kept.delete(kept.keys().next().value!);
    }
    this.#removedSignals.delete(id); // re-inserted last: the newest
    if (kept.size === 0) return;
    this.#removedSignals.set(id, kept);
    for (const oldest of this.#removedSignals.keys()) {
      if (this.#removedSignals.size <= MAX_REMOVED_SIGNALS_PROVIDERS) break;
      this.#removedSignals.delete(oldest);
    }
  }

  /** Primes the cache with one poll pass of every provider, then starts the poll loops. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    this.#pollsEnded = this.#providersDetached;
    this.#pollsAbandoned = false;
    await Promise.all(this.#opts.registry.hosts.map((h) => this.#pollProvider(h, true)));
    // One grid for every loop: cycles of all providers start at the same instants, so the
    // process wakes once per interval for all of them, not once per provider at drifting phases.
    this.#gridOriginMs ??= this.#opts.clock.monoMs();
    for (const host of this.#opts.registry.hosts) this.#loops.set(host.id, this.#newLoop(host));
  }

  #newLoop(host: ProviderHost): PollLoop {
    this.#loopClock ??= sharedInstantTimers(this.#opts.clock);
    this.#gridOriginMs ??= this.#loopClock.monoMs();
    // A cycle: one poll pass, then the provider's own health when due. Both closures made once
    // per loop: a cycle allocates one promise for them, not a coroutine.
    const afterPass = () => this.#healthIfDue(host);
    return new PollLoop(
      this.#intervalMs,
      () => this.#pollProvider(host).then(afterPass),
      this.#loopClock,
      this.#gridOriginMs,
      () => this.#releasePass(host),
    );
  }

  /**
   * Stops polling and waits for polls in flight (start() makes new loops). A caller that cannot
   * wait for one (a provider that does not answer: the runtime's stop) goes on without it:
   * abandonPolls.
   */
  async stop(): Promise<void> {
    this.#running = false;
    this.#pollsEnded = true;
    this.#gridOriginMs = null; // start() lays a new grid
    // The reads a cycle ended without (#releasePass) are polls in flight too.
    const released: Promise<void>[] = [];
    for (const q of this.#pollQueues.values()) {
      for (const pass of q.released) {
        released.push(
          new Promise<void>((resolve) => {
            const before = pass.onEnded;
            pass.onEnded = () => {
              before();
              resolve();
            };
          }),
        );
      }
    }
    await Promise.all([...[...this.#loops.values()].map((l) => l.stop()), ...released]);
  }

  /**
   * After stop(), for a caller that goes on without the polls still in flight (the runtime's
   * stop, whose providers' stop they would hold until their provider's timeout_ms): from now on
   * no poll's outcome is taken -- no sample stored, no device marked, no event, no poll listener
   * told, no liveness noted, no GetHealth answer kept -- however late it ends (the journals and
   * telemetry it would feed may be closed by then), until start() polls again. Returns the ids
   * of the providers whose poll cycle was still in flight, in registration order.
   */
  abandonPolls(): string[] {
    this.#pollsAbandoned = true;
    return this.pollsInFlight();
  }

  /**
   * The ids of the providers whose poll cycle is in flight (its poll pass or GetHealth), or with
   * reads out that a cycle ended without (#releasePass), in registration order.
   */
  pollsInFlight(): string[] {
    const inFlight: string[] = [];
    for (const [id, loop] of this.#loops) {
      if (loop.cycling || (this.#pollQueues.get(id)?.released.size ?? 0) > 0) inFlight.push(id);
    }
    return inFlight;
  }

  /**
   * Subscribes to every poll of every device (see DevicePolledListener); returns the
   * unsubscribe function. Listeners run in subscription order, synchronously, right after the
   * poll's samples (and their events) are stored: those subscribed when the poll's telling began
   * (one that unsubscribes, or subscribes another, while told changes nothing of it).
   */
  onDevicePolled(listener: DevicePolledListener): () => void {
    this.#polledListeners = [...this.#polledListeners, listener];
    return () => {
      const i = this.#polledListeners.indexOf(listener);
      if (i >= 0) this.#polledListeners = this.#polledListeners.toSpliced(i, 1);
    };
  }

  /**
   * Subscribes to each inventory the cache takes up (a provider's host registered, or up with its
   * devices), told once the cache holds it: a listener reading the cache's devices of that
   * provider finds them, whatever order the host tells its own inventory listeners in (the device
   * outages judge by them). Listeners run in subscription order, synchronously. Returns the
   * unsubscribe function.
   */
  onInventoryApplied(listener: InventoryAppliedListener): () => void {
    this.#inventoryListeners.push(listener);
    return () => {
      const i = this.#inventoryListeners.indexOf(listener);
      if (i >= 0) this.#inventoryListeners.splice(i, 1);
    };
  }

  /**
   * Subscribes to changes of which devices a provider's own health reports UNREACHABLE (a
   * GetHealth answer that differs in that from the one before it): a device's condition depends
   * on it (device_outage.ts) and must not wait for the device's next poll, which may be a poll
   * period away. Listeners run in subscription order, synchronously, once the answer is stored.
   * Returns the unsubscribe function.
   */
  onReportedUnreachable(listener: ReportedUnreachableListener): () => void {
    this.#unreachableListeners.push(listener);
    return () => {
      const i = this.#unreachableListeners.indexOf(listener);
      if (i >= 0) this.#unreachableListeners.splice(i, 1);
    };
  }

  /**
   * Subscribes to fresh reads its provider answered with an error status, or did not answer
   * within its whole timeout_ms (see FreshReadFailedListener): a device that did not answer the
   * e-stop's read-back though no poll found it failing (its outage fell between two polls).
   * Listeners run in subscription order, synchronously, before readFresh answers -- or, for a read
   * left running past its caller's bound, when its request ends (up to the provider's timeout_ms
   * after it was sent). Returns the unsubscribe function.
   */
  onFreshReadFailed(listener: FreshReadFailedListener): () => void {
    this.#freshReadFailedListeners.push(listener);
    return () => {
      const i = this.#freshReadFailedListeners.indexOf(listener);
      if (i >= 0) this.#freshReadFailedListeners.splice(i, 1);
    };
  }

  device(providerId: string, deviceId: string): DeviceState | undefined {
    return this.#byProvider.get(providerId)?.get(deviceId);
  }

  /** Every device with cached state entries, in discovery order. */
  devices(): DeviceState[] {
    return [...this.#byProvider.values()].flatMap((m) => [...m.values()]);
  }

  /** Devices of one provider. */
  providerDevices(providerId: string): DeviceState[] {
    return [...(this.#byProvider.get(providerId)?.values() ?? [])];
  }

  signal(providerId: string, deviceId: string, signalId: string): SignalState | undefined {
    return this.device(providerId, deviceId)?.signals.get(signalId);
  }

  /**
   * The value type a signal is declared with now: null when the provider left it unspecified,
   * undefined for a signal (or device) the cache does not hold.
   */
  declaredType(
    providerId: string,
    deviceId: string,
    signalId: string,
  ): ValueType | null | undefined {
    return this.#byProvider.get(providerId)?.get(deviceId)?.slots.get(signalId)?.type;
  }

  /**
   * The unit a signal is declared with now (SignalSpec.unit; "" for none), undefined for a signal
   * (or device) the cache does not hold.
   */
  declaredUnit(providerId: string, deviceId: string, signalId: string): string | undefined {
    return this.#byProvider.get(providerId)?.get(deviceId)?.slots.get(signalId)?.unit;
  }

  /** Worst signal quality; UNAVAILABLE when the device is unavailable. */
  deviceQuality(state: DeviceState): Quality {
    if (!state.available) return "UNAVAILABLE";
    return worstQuality([...state.signals.values()].map((s) => s.quality));
  }

  reportedHealth(providerId: string): ReportedHealthEntry | undefined {
    return this.#reported.get(providerId);
  }

  /** Whether the provider's last stored health answer reports the device UNREACHABLE. */
  reportedUnreachable(providerId: string, deviceId: string): boolean {
    const entry = this.#reported.get(providerId);
    return entry !== undefined && this.#unreachableOf(entry).has(deviceId);
  }

  /** The devices `entry` reports UNREACHABLE, each by its first entry (computed once). */
  #unreachableOf(entry: ReportedHealthEntry): ReadonlySet<string> {
    let set = this.#unreachableIn.get(entry);
    if (set === undefined) {
      set = unreachableDevices(entry);
      this.#unreachableIn.set(entry, set);
    }
    return set;
  }

  /** Samples of one provider not stored as good values, since start (a copy). */
  dataFaults(providerId: string): DataFaultCounts {
    const f = this.#faults.get(providerId);
    return f ? { ...f.counts } : { type_mismatch: 0, non_finite: 0, undeclared_signal: 0 };
  }

  /** Poll duration and errors of one provider since start (live, not a copy). */
  pollMetrics(providerId: string): Readonly<PollMetrics> | undefined {
    return this.#pollMetrics.get(providerId);
  }

  /** What the provider's last discovery refused (devices skipped, and why); kept while down. */
  discoveryWarnings(providerId: string): readonly string[] {
    return this.#discoveryWarnings.get(providerId) ?? [];
  }

  /**
   * Polls one device now (best effort; used right after a successful call so the cache reflects
   * the effect). It waits for a poll of the same provider in flight instead of running beside it,
   * and joins a poll of the same device that is queued and not started yet. Resolves when done;
   * never throws.
   */
  pollDevice(providerId: string, deviceId: string): Promise<void> {
    const host = this.#opts.registry.host(providerId);
    const known = this.#byProvider.get(providerId)?.get(deviceId);
    if (!host || !known || known.pollable.length === 0 || !host.available) {
      return Promise.resolve();
    }
    if (known.queuedPoll) return known.queuedPoll;
    let started = false;
    let pass: PollPass | null = null;
    // A queued poll polls the device it was given: the inventory changes only on a restart, and
    // the session end before it fails the poll ahead in the queue, so a queued poll starts while
    // the provider is down (its request then fails harmlessly), never after rediscovery.
    const run = this.#serial(providerId, async () => {
      started = true; // from now on a new pollDevice must poll again, not join this one
      known.queuedPoll = null;
      // Its read of a cycle that ended without it is still out (#releasePass): not sent another.
      if (known.batchHeld) return;
      const q = this.#queueOf(providerId);
      q.post = pass = this.#newPass(host, [known], q);
      pass.postCall = true;
      try {
        await this.#runPass(pass);
      } finally {
        if (q.post === pass) q.post = null;
      }
    });
    // The loop's cycle may end it with its read still out (#releasePass): the caller waits for
    // that read's outcome all the same.
    const polled = run.then(() => pass === null ? undefined : this.#passEnded(pass));
    if (!started) known.queuedPoll = polled; // it waits behind another poll
    return polled;
  }

  /** Resolves once `pass` has ended: at once unless its cycle ended without it (#releasePass). */
  #passEnded(pass: PollPass): Promise<void> | undefined {
    if (!this.#pollQueues.get(pass.host.id)?.released.has(pass)) return undefined;
    return new Promise<void>((resolve) => {
      const before = pass.onEnded;
      pass.onEnded = () => {
        before();
        resolve();
      };
    });
  }

  /**
   * Reads signals fresh from their provider (FreshReader), bounded by `timeoutMs` and the
   * provider's own timeout_ms; the answer is not stored (the cache keeps its polled samples).
   * Never rejects: a provider or device that is down, a failed or late read is an answer too. A
   * request `timeoutMs` cut may run on to its provider's timeout_ms (#withinBound).
   */
  async readFresh(
    providerId: string,
    deviceId: string,
    signalIds: readonly string[],
    timeoutMs: number,
  ): Promise<FreshRead> {
    const host = this.#opts.registry.host(providerId);
    if (!host) {
      // One a reload restarts or starts anew is configured, its host not registered yet: read
      // again, the new host may answer. One not configured stays down (only a reload could add
      // it): said as removed when a reload removed it.
      if (this.#opts.registry.configured(providerId)) {
        return { ok: false, reason: `provider not found: ${providerId}` };
      }
      return this.#removedIds.has(providerId)
        ? {
          ok: false,
          reason: `provider removed by a configuration reload: ${providerId}`,
          staysDown: true,
          removed: true,
        }
        : { ok: false, reason: `provider not found: ${providerId}`, staysDown: true };
    }
    if (!host.available) {
      const phase = host.state.phase;
      // Stopped: by the runtime's stop (one that failed once it had begun is not restarted:
      // ProviderHost.endRestarts) or by a reload's -- nothing brings it back either.
      return {
        ok: false,
        reason: `provider unavailable: ${providerId}`,
        ...(phase === "CIRCUIT_OPEN" || phase === "STOPPED" ? { staysDown: true } : {}),
      };
    }
    const device = host.devices.find((d) => d.device.deviceId === deviceId);
    if (!device) {
      return { ok: false, reason: `device not found: ${deviceHandle(providerId, deviceId)}` };
    }
    const declared = signalIds.every((id) => device.signals.some((g) => g.signalId === id));
    const bound = Math.max(1, Math.ceil(timeoutMs));
    // A caller's bound shorter than the provider's timeout_ms (verify_timeout_ms, near its end)
    // would cut the read before it could say the device does not answer: the request is given the
    // whole timeout_ms and runs on past the caller's answer at its bound (#leaveRunning), so a
    // device that hangs during a stop is found out by it -- not left to its next poll, which the
    // stop may hold back. At most MAX_FRESH_READS_LEFT_RUNNING_PER_DEVICE such reads; past that
    // the request is cut at the caller's bound, as it was before.
    const runsOn = bound < host.config.timeoutMs && this.#leaveRunning(host, deviceId);
    const timeout = runsOn
      ? host.config.timeoutMs
      : Math.max(1, Math.min(host.config.timeoutMs, bound));
    let cut = false;
    try {
      const request = host.request(
        "read_signals",
        { device_id: deviceId, signal_ids: [...signalIds] },
        timeout,
      );
      const r = runsOn
        ? await this.#withinBound(host, deviceId, request, bound, declared, () => (cut = true))
        : await request;
      // An answer for another device holds that device's values: nothing in it is this one's.
      const answered = r.device_id ?? "";
      if (isOtherDeviceAnswer(deviceId, answered)) {
        return {
          ok: false,
          reason: `read failed: ${new OtherDeviceAnswerError(deviceId, answered).message}`,
        };
      }
      // Keyed by signal id as answered; only the ones asked for are ever looked up. A signal the
      // answer repeats is taken at its first sample, as a poll stores it (#applySamples).
      const samples = new Map<string | undefined, FreshSample>();
      // Judged as a poll judges it (#applySamples): a value its Value.type or the signal's
      // declaration denies, or a non-finite double, is FAULT -- never a good value to verify by.
      // A signal the device does not declare (renamed at a rediscovery, say) is dropped, as a
      // poll drops it: its value means nothing the runtime knows of.
      r.values?.forEach((sv) => {
        if (samples.has(sv.signal_id)) return;
        const spec = device.signals.find((g) => g.signalId === sv.signal_id);
        if (spec === undefined) return;
        const value = typedValueFromWire(sv.value);
        const declared = spec.valueType;
        const faulty = value !== null && (
          (declared !== null && declared !== value.type) ||
          !wireTypeAgrees(sv.value?.type ?? WireValueType.UNSPECIFIED, value.type) ||
          (value.type === "double" && value.non_finite !== undefined)
        );
        samples.set(sv.signal_id, {
          value,
          quality: faulty ? "FAULT" : qualityFromWire(sv.quality),
        });
      });
      const undeclared = new Set(
        signalIds.filter((id) => !device.signals.some((g) => g.signalId === id)),
      );
      return { ok: true, samples, ...(undeclared.size > 0 ? { undeclared } : {}) };
    } catch (err) {
      const e = toRuntimeError(err);
      const timedOut = e.code === "DEADLINE_EXCEEDED";
      const cutByStop = !timedOut && host.state.phase === "STOPPED" &&
        !(err instanceof ProviderStatusError);
      // The device did not answer (a read of signals it declares, as a poll's): its provider
      // answered so, or gave no answer within its whole timeout_ms -- as a call that timed out
      // says (DeviceOutages.noteCallFailed). Told as a failed poll is, though no poll may fall in
      // that outage. A read the caller's shorter bound cut (verify_timeout_ms) says nothing yet:
      // one left running tells it when its request ends (#withinBound), a cut request never.
      if (
        !cut && declared &&
        (err instanceof ProviderStatusError || (timeout >= host.config.timeoutMs && noAnswer(err)))
      ) {
        this.#notifyFreshReadFailed(providerId, deviceId);
      }
      return {
        ok: false,
        reason: `read failed: ${e.code}: ${e.message}`,
        timedOut,
        ...(cutByStop ? { cutByStop } : {}),
      };
    }
  }

  /**
   * Takes one of `deviceId`'s MAX_FRESH_READS_LEFT_RUNNING_PER_DEVICE places for a fresh read
   * left running past its caller's bound; false when they are all taken. #withinBound gives it
   * back when the request ends.
   */
  #leaveRunning(host: ProviderHost, deviceId: string): boolean {
    let devices = this.#freshReadsLeftRunning.get(host);
    const n = devices?.get(deviceId) ?? 0;
    if (n >= MAX_FRESH_READS_LEFT_RUNNING_PER_DEVICE) return false;
    if (devices === undefined) this.#freshReadsLeftRunning.set(host, devices = new Map());
    devices.set(deviceId, n + 1);
    return true;
  }

  /**
   * `request`'s answer, or at `boundMs` (the caller's bound, on the cache's clock) a
   * DEADLINE_EXCEEDED as a request given that bound gets (`onCut` called first); the timer is
   * cleared when the request ends first. The request runs on either way to its provider's
   * timeout_ms; when the caller was answered without it and it ends unanswered (no answer within
   * timeout_ms) or with the provider's error status, a read of `declared` signals tells its device
   * did not answer (onFreshReadFailed), as a read given the whole timeout does -- unless its host
   * is no longer the provider's (a reload replaced it, the providers detached), the provider is
   * down or stopped, or its session is not the one the read was sent on. An answer that comes
   * late says nothing (a fresh read is never stored). Gives back its #leaveRunning place.
   */
  #withinBound<T>(
    host: ProviderHost,
    deviceId: string,
    request: Promise<T>,
    boundMs: number,
    declared: boolean,
    onCut: () => void,
  ): Promise<T> {
    const clock = this.#opts.clock;
    const session = host.session;
    return new Promise<T>((resolve, reject) => {
      let answered = false;
      let timer: TimerId | null = null;
      /** Gives back its place; whether the caller was answered before the request ended. */
      const ended = () => {
        const devices = this.#freshReadsLeftRunning.get(host);
        const n = (devices?.get(deviceId) ?? 1) - 1;
        if (n > 0) devices!.set(deviceId, n);
        else devices?.delete(deviceId);
        if (devices?.size === 0) this.#freshReadsLeftRunning.delete(host);
        if (answered) return true;
        answered = true;
        if (timer !== null) clock.clearTimer(timer);
        return false;
      };
      // Taken before the timer is set: a clock that throws there (the caller answered with its
      // error) still leaves the request handled and its place given back.
      request.then(
        (r) => {
          if (!ended()) resolve(r);
        },
        (err) => {
          if (!ended()) return reject(err);
          if (
            declared && (err instanceof ProviderStatusError || noAnswer(err)) &&
            this.#isCurrent(host) && host.available && host.session === session
          ) {
            this.#notifyFreshReadFailed(host.id, deviceId);
          }
        },
      );
      timer = clock.setTimer(() => {
        answered = true;
        onCut();
        reject(
          new RuntimeError("DEADLINE_EXCEEDED", `read_signals got no answer within ${boundMs} ms`),
        );
      }, boundMs);
    });
  }

  /**
   * A live GetHealth round-trip to one provider (not the cached view). Stores the answer for the
   * health view. Resolves null when the provider is down or does not implement GetHealth.
   * It is a liveness check as a poll is: a provider whose devices all poll slowly (hints of a
   * minute) is still found hung within two of these (every 5 s by default), not two polls.
   */
  async fetchReportedHealth(host: ProviderHost): Promise<ReportedHealthEntry | null> {
    const session = host.session; // there is one exactly while the provider is up
    if (!session || session.supportsGetHealth === false) return null;
    try {
      const response = await host.request("get_health", {});
      session.supportsGetHealth = true;
      // The process died since it answered: its word is not kept.
      if (host.session !== session) return null;
      // Answered after a stop went on without it (abandonPolls): nothing of it taken.
      if (this.#pollsAbandoned) return null;
      host.noteLiveness(true);
      // A host a reload took out meanwhile (its successor may hold the id by now): its word is
      // not the provider's -- never stored, so a successor starts with none (#addHost).
      if (!this.#isCurrent(host)) return null;
      const clock = this.#opts.clock;
      const entry = { atMs: clock.nowMs(), atMono: clock.monoMs(), response };
      const before = this.#reported.get(host.id);
      this.#reported.set(host.id, entry);
      const now = this.#unreachableOf(entry);
      const was = before === undefined ? EMPTY_IDS : this.#unreachableOf(before);
      if (now.size !== was.size || [...now].some((id) => !was.has(id))) {
        this.#notifyUnreachable(host.id);
      }
      return entry;
    } catch (err) {
      const answered = livenessOf(err); // as a poll pass counts it
      if (host.session === session && answered !== null && !this.#pollsAbandoned) {
        host.noteLiveness(answered);
      }
      if (err instanceof RuntimeError && err.details?.provider_code === 14) {
        session.supportsGetHealth = false; // UNIMPLEMENTED: do not ask this session again
      }
      return null;
    }
  }

  // ---- polling ----

  /**
   * After a cycle's poll pass: the provider's own health when due (skipping a provider that is
   * down); undefined when not due.
   */
  #healthIfDue(host: ProviderHost): Promise<unknown> | undefined {
    const every = this.#opts.reportedHealthIntervalMs ?? 5000;
    // While reads a cycle ended without (#releasePass) have heard nothing, the provider may be
    // silent: its health waits for them, as it waited for the pass before (one liveness check
    // at a time, not two within one timeout_ms).
    const q = this.#pollQueues.get(host.id);
    if (q !== undefined && q.released.size > 0) {
      for (const pass of q.released) if (!pass.answered && !pass.setAside) return undefined;
    }
    const last = this.#reported.get(host.id)?.atMono ?? -Infinity;
    if (this.#opts.clock.monoMs() - last >= every) return this.fetchReportedHealth(host);
    return undefined;
  }

  /**
   * Polls every device of `host` that is due: a device with a poll period (pollPeriodMs) of k
   * intervals is polled every k-th cycle of the shared grid (counted, not timed: a cycle that
   * overran delays every device alike). A cycle with no device due sends nothing: a provider
   * whose devices all hint slowly is asked (and its liveness checked) at that pace. A device
   * whose last read failed, or carried none of its polled signals or none OK (readsAnswered), is
   * polled every cycle until one answers well.
   * `everyDevice`: the priming pass of start(), which polls each device once whatever is due.
   */
  #pollProvider(host: ProviderHost, everyDevice = false): Promise<void> {
    const devices = this.#polledDevices.get(host.id) ?? NO_DEVICES;
    if (devices.length === 0) return this.#heartbeat(host);
    // The provider's own list while every device is due (each cycle at the polling interval:
    // nothing allocated per pass), a new one from the first device skipped.
    let due: MutableDeviceState[] | null = null;
    for (let i = 0; i < devices.length; i++) {
      const dev = devices[i]!;
      // Its read is still out (a cycle ended without it: #releasePass): not sent another; its
      // outcome is applied when it comes or times out.
      if (dev.batchHeld) {
        // Due now (as below): its next read goes out when this one's answer is in.
        if (dueThisCycle(dev, everyDevice)) dev.lateDue = true;
        due ??= devices.slice(0, i);
        continue;
      }
      // A device whose last read failed, or was answered with none of its polled signals or
      // none of them OK, is polled every cycle until it answers well: its outage is judged on
      // consecutive failing reads (device_outage.ts), as fast as for any device.
      if (!dueThisCycle(dev, everyDevice)) {
        dev.skipCycles--; // not due this cycle
        due ??= devices.slice(0, i);
        continue;
      }
      dev.skipCycles = skipCyclesAfterPoll(dev.pollPeriodMs, this.#intervalMs);
      due?.push(dev);
    }
    const batch = due ?? devices;
    if (batch.length === 0 || !host.available) return DONE;
    // The loop's pass of the last cycle, reused once it has settled with every reply in (a loop
    // starts no cycle before its last one ended; a pass that failed is never reused).
    const q = this.#queueOf(host.id);
    let pass = q.pass;
    if (pass === null || pass.dead || !pass.settled || pass.waiting > 0 || pass.host !== host) {
      pass = q.pass = this.#newPass(host, batch, q);
    }
    pass.due = batch;
    return q.run(pass.start);
  }

  /** Nothing to poll: a heartbeat keeps liveness checks running. */
  async #heartbeat(host: ProviderHost): Promise<void> {
    const answered = await host.request("get_health", {}).then(() => true, livenessOf);
    // (A provider that is down has no session to kill.) Nothing once abandoned (abandonPolls).
    if (answered !== null && !this.#pollsAbandoned) host.noteLiveness(answered);
  }

  /**
   * Polls the due devices of one provider with their ReadSignals sent together (one write, one
   * wake-up of the provider: ADPP matches answers by request id), the answers applied in the
   * order the requests were made, each as it arrives (once the loop's cycle ended without a read
   * still out, each as it comes: #releasePass). A provider that does not answer in time
   * counts once for the pass in its liveness checks. A post-call poll (pollDevice) is a pass of
   * one device. A pass over `due` (its reply per device and its promise executor made once, here).
   */
  #newPass(host: ProviderHost, due: readonly MutableDeviceState[], queue: PollQueue): PollPass {
    const pass = new PollPass(host, due, queue);
    pass.start = () => this.#runPass(pass);
    return pass;
  }

  /**
   * Starts `pass`: each due device's ReadSignals sent, decoded into its batch. Replies, not
   * promises: one promise per pass, none per device, and no closure (the pass's replies are
   * made once per device index and kept with the pass, which the provider's loop reuses).
   * As many as the session takes poll reads now (ProviderHost.readRoom: 64 less what is in
   * flight) go out at once; the rest as answers free places (#sendMore).
   */
  #runPass(pass: PollPass): Promise<void> {
    const n = pass.due.length;
    if (n === 0) return Promise.resolve();
    pass.metrics = this.#pollMetrics.get(pass.host.id) ?? DETACHED_POLL_METRICS;
    pass.queue.running = pass;
    pass.next = 0;
    pass.settled = false;
    pass.released = false;
    pass.overdue = false;
    pass.setAside = false;
    pass.replied = 0;
    pass.answered = false;
    pass.timedOut = false;
    pass.heard = false;
    pass.sinceMs = this.#opts.clock.monoMs();
    const promise = new Promise<void>(pass.executor);
    try {
      const room = pass.host.readRoom;
      const end = n <= room ? n : room;
      for (let i = 0; i < end; i++) this.#sendRead(pass, i);
      pass.sent = end;
      if (end < n) {
        this.#sendMore(pass, false);
        if (pass.waiting === 0) this.#applyPass(pass); // none sent: every device deferred
      }
    } catch (thrown) {
      this.#failPass(pass, thrown);
    }
    return promise;
  }

  /** Sends device `i`'s ReadSignals of `pass`. */
  #sendRead(pass: PollPass, i: number): void {
    const dev = pass.due[i]!;
    // Its own batch unless an earlier request still holds it (a pass that failed): one each.
    const into = dev.batchHeld ? new SampleBatch(dev.pollable.length) : dev.readBatch;
    if (into === dev.readBatch) dev.batchHeld = true;
    pass.intos[i] = into;
    pass.waiting++;
    pass.host.sendRead(dev.readRequest, into, pass.replies[i] ??= this.#replyOf(pass, i));
  }

  /**
   * Sends the reads of `pass` not sent yet that the session takes now (an answer freed its
   * place): those of one turn (a chunk of answers) go out in one write. What it cannot send
   * while none of the pass is in flight (the session's room held by other requests), or after
   * a read of the pass got no answer in time before any got one (`silent`: the provider is not
   * reading; sent, each would wait out its own timeout, and the pass, liveness check included,
   * would last one timeout per 64 devices), is deferred to the next pass (#deferRest). The
   * caller applies the outcomes (#applyPass).
   */
  #sendMore(pass: PollPass, silent: boolean): void {
    const n = pass.due.length;
    if (!silent) {
      const room = pass.host.readRoom;
      const end = n - pass.sent <= room ? n : pass.sent + room;
      for (let i = pass.sent; i < end; i++) this.#sendRead(pass, i);
      pass.sent = end;
      if (end === n || pass.waiting > 0) return;
    }
    this.#deferRest(pass);
  }

  /**
   * The devices of `pass` not sent yet are not polled in it: each due again at the next cycle,
   * and no failed read (nothing marked, no poll error, no liveness miss: #applyPass).
   */
  #deferRest(pass: PollPass): void {
    const n = pass.due.length;
    for (let i = pass.sent; i < n; i++) pass.outcomes[i] = DEFERRED;
    pass.sent = n;
  }

  #replyOf(pass: PollPass, i: number): ReadReply {
    return (err, batch) => this.#onPassReply(pass, i, err, batch);
  }

  /** Device `i`'s outcome: stored, and every outcome due in request order applied. */
  #onPassReply(pass: PollPass, i: number, err: Error | null, batch: SampleBatch | undefined): void {
    pass.waiting--;
    pass.replied++;
    const dev = pass.due[i]!;
    // An error, or an answer nobody applies: the batch is free again.
    if ((err !== null || pass.settled) && pass.intos[i] === dev.readBatch) dev.batchHeld = false;
    if (pass.settled) return;
    pass.outcomes[i] = err ?? batch!;
    // Its samples, or its failure, are dated by their arrival, not by when they are applied: an
    // outcome held behind an earlier device's read (applied in request order) is that much older
    // then.
    const clock = this.#opts.clock;
    pass.arrivedMono[i] = clock.monoMs();
    pass.arrivedMs[i] = clock.nowMs();
    try {
      if (pass.released) {
        // Its cycle ended without it (#releasePass): applied as it comes.
        this.#applyOutcome(pass, i);
        if (pass.waiting === 0) this.#settlePass(pass);
        return;
      }
      if (pass.sent < pass.due.length) {
        // Any answer, even an error status, says the provider reads; a refusal says nothing.
        if (err === null || livenessOf(err) === true) pass.heard = true;
        this.#sendMore(pass, !pass.heard && noAnswer(err));
      }
      this.#applyPass(pass);
      // Its cycle came due before this first reply (#releasePass): it ends now.
      if (pass.overdue && !pass.settled && !pass.released) this.#releasePass(pass.host);
    } catch (thrown) {
      this.#failPass(pass, thrown);
    }
  }

  /** The pass failed: it applies nothing more, and is not reused (replies may still come). */
  #failPass(pass: PollPass, thrown: unknown): void {
    pass.settled = true;
    pass.dead = true;
    // The answers it leaves unapplied hold their batches no more.
    for (let k = pass.next; k < pass.due.length; k++) {
      if (pass.outcomes[k] === pass.due[k]!.readBatch) pass.due[k]!.batchHeld = false;
      pass.outcomes[k] = undefined;
    }
    const reject = pass.reject;
    pass.resolve = pass.reject = noop;
    if (pass.released) this.#endReleased(pass); // its cycle has ended: the error ends with it
    reject(thrown);
  }

  /**
   * Applies the outcomes of `pass` that are due in request order; the last one settles it. A
   * provider that does not answer in time counts once for the pass in its liveness checks.
   */
  #applyPass(pass: PollPass): void {
    const { due, outcomes } = pass;
    const n = due.length;
    while (pass.next < n && outcomes[pass.next] !== undefined) {
      this.#applyOutcome(pass, pass.next++);
    }
    if (pass.next < n) return;
    this.#settlePass(pass);
  }

  /** Applies device `i`'s outcome of `pass` (arrived: not undefined). */
  #applyOutcome(pass: PollPass, i: number): void {
    const { host, due, outcomes, metrics } = pass;
    const dev = due[i]!;
    const outcome = outcomes[i]!;
    outcomes[i] = undefined;
    if (outcome === DEFERRED) {
      // Not sent in this pass (#sendMore): polled at the next cycle, not a failed read.
      dev.skipCycles = 0;
      return;
    }
    if (outcome === dev.readBatch) dev.batchHeld = false; // read below, before any other
    // A device's poll time: from the answer before it (the provider answers in turn).
    const now = this.#opts.clock.monoMs();
    metrics.duration.observe((now - pass.sinceMs) / 1000);
    pass.sinceMs = now;
    if (!(outcome instanceof Error)) {
      pass.answered = true;
      // Removed by a reload meanwhile, or a stop went on without it (abandonPolls): not stored.
      if (this.#pollsAbandoned || !this.#isCurrent(host)) return;
      this.#applySamples(dev, outcome, pass.arrivedMs[i]!, pass.arrivedMono[i]!);
      // A cycle went without it while this read was out: polled again now, unless this was a
      // post-call poll (its answer stands for that cycle's).
      if (dev.lateDue) {
        if (pass.postCall) dev.lateDue = false;
        else this.#resendLate(host, dev);
      }
      return;
    }
    dev.lateDue = false; // failed: polled at the next cycle, as every failing device
    metrics.errors++;
    const alive = livenessOf(outcome); // a status is still an answer
    if (alive === false) pass.timedOut = true;
    else if (alive === true) pass.answered = true;
    // (A provider that went down has its devices marked already: marking again changes
    // nothing.) Removed by a reload meanwhile, or abandoned (abandonPolls): not marked.
    if (this.#pollsAbandoned || !this.#isCurrent(host)) return;
    if (outcome instanceof OtherDeviceAnswerError) {
      // Not a transient failure: the provider mixes its devices up (said where it is seen).
      this.#faults.get(dev.providerId)!.log.other_device.warn(
        `${quoteDeviceHandle(dev.providerId, dev.deviceId)}: ${outcome.message}; its samples are ` +
          `not stored, the device is marked unavailable`,
      );
    } else {
      this.#log.debug(
        `poll ${quoteDeviceHandle(dev.providerId, dev.deviceId)} failed: ${
          quoteProviderTextWithin(outcome.message, QUOTED_POLL_ERROR_CHARS)
        }`,
      );
    }
    this.#markDeviceUnavailable(dev, pass.arrivedMs[i]!, pass.arrivedMono[i]!);
  }

  /** Every outcome of `pass` is applied: its liveness verdict, and its end. */
  #settlePass(pass: PollPass): void {
    pass.settled = true;
    // Abandoned (abandonPolls): its provider is being stopped, no liveness verdict of it.
    if (!this.#pollsAbandoned) {
      if (pass.answered) pass.host.noteLiveness(true);
      else if (pass.timedOut && !pass.setAside) pass.host.noteLiveness(false);
    }
    if (pass.released) this.#endReleased(pass);
    const resolve = pass.resolve;
    pass.resolve = pass.reject = noop; // the pass keeps no settled promise alive
    resolve();
  }

  /**
   * The loop's next cycle of `host` is due while its pass still waits for reads, some of them
   * back (PollLoop's overdue: a device's read hangs, up to timeout_ms, while the provider answers
   * the others): the cycle ends without them, so the provider's other devices are polled at their
   * period. The outcomes that arrived are applied now (each dated by its arrival), each read
   * still out as it comes or times out, its device sent no other read meanwhile (#pollProvider,
   * pollDevice); the devices not sent yet are deferred to the next cycle. The pass's liveness
   * verdict comes when its last read is in. Nothing is allocated unless a cycle overran: the
   * next cycle makes a pass of its own.
   */
  #releasePass(host: ProviderHost): void {
    const q = this.#pollQueues.get(host.id);
    if (q === undefined) return;
    const post = q.post;
    if (post !== null && !post.settled && !post.released && post.host === host) {
      // A post-call poll (pollDevice) holds the queue, the cycle waits behind it: it ends now,
      // its read out (one device: nothing of it back). Had the provider heard nothing of it, its
      // timeout is no liveness failure: the cycle's reads, sent beside it, are the check.
      post.setAside = post.replied === 0;
      this.#release(q, post);
    }
    const pass = q.pass;
    if (!pass || pass.settled || pass.released || pass.host !== host) return;
    // Nothing came back yet (a slow or silent provider): released at its first reply
    // (#onPassReply), so siblings answered just after this instant are not held to the slowest
    // read's timeout_ms; one that never answers keeps the cycle waiting as before.
    if (pass.replied === 0) {
      pass.overdue = true;
      return;
    }
    this.#release(q, pass);
  }

  /** Ends the cycle of `pass` without its reads still out (#releasePass). */
  #release(q: PollQueue, pass: PollPass): void {
    try {
      if (pass.sent < pass.due.length) this.#deferRest(pass);
      pass.released = true;
      q.released.add(pass);
      const { due, outcomes } = pass;
      for (let i = pass.next; i < due.length; i++) {
        if (outcomes[i] !== undefined) this.#applyOutcome(pass, i);
      }
      pass.next = due.length;
      const resolve = pass.resolve;
      pass.resolve = pass.reject = noop;
      resolve(); // the cycle goes on (its GetHealth), then the next one
      if (pass.waiting === 0) this.#settlePass(pass);
    } catch (thrown) {
      this.#failPass(pass, thrown);
    }
  }

  /**
   * A device that answers slower than the interval: a cycle it was due in went without it (its
   * read still out, #pollProvider), so its next read goes out now that the answer is in, in a
   * pass of its own released at once (#release: applied as it comes; stop() waits for it) --
   * polled at the pace it answers, not every other interval, one read out at a time. Beside the
   * loop's cycle: its timeout is no liveness failure, nor does GetHealth wait for it (setAside).
   * Allocates a pass only then (a device answering within the interval never gets here).
   */
  #resendLate(host: ProviderHost, dev: MutableDeviceState): void {
    dev.lateDue = false;
    if (!this.#running || !this.#loops.has(host.id) || !host.available || dev.batchHeld) return;
    dev.skipCycles = skipCyclesAfterPoll(dev.pollPeriodMs, this.#intervalMs);
    const q = this.#queueOf(host.id);
    const pass = this.#newPass(host, [dev], q);
    this.#runPass(pass).catch((err) =>
      this.#log.warn(
        `poll of late device ${quoteDeviceHandle(dev.providerId, dev.deviceId)} failed: ${
          errorMessage(err)
        }`,
      )
    );
    if (pass.settled || pass.released) return; // refused at once (no room): the next cycle polls it
    pass.setAside = true;
    this.#release(q, pass);
  }

  /**
   * Its provider went down (its process exited, or its session ended): the passes of `providerId`
   * in flight -- the one running in its queue, and those released (#releasePass) -- apply none of
   * the outcomes they hold, nor any still to come. Each arrived before the down marks that follow
   * (#markProviderDown), so none is newer than they are: applied after them in request order
   * (behind a read the process's end fails only later, or at its timeout_ms when its stdout
   * outlives it), an answer would tell its device available again while its provider is down.
   * No liveness verdict of them (the provider is down). At a provider's loss only.
   */
  #cutPasses(providerId: string): void {
    const q = this.#pollQueues.get(providerId);
    if (q === undefined) return;
    // The loop's pass, a post-call poll's, the one started last (a late device's, #resendLate):
    // each at most once.
    for (const pass of new Set([q.running, q.pass, q.post, ...q.released])) {
      if (pass !== null && pass !== undefined && !pass.settled) this.#cutPass(pass);
    }
  }

  /** Settles `pass` without applying what it holds (#cutPasses); its late replies are dropped. */
  #cutPass(pass: PollPass): void {
    pass.settled = true;
    // The answers it leaves unapplied hold their batches no more.
    for (let k = pass.next; k < pass.due.length; k++) {
      if (pass.outcomes[k] === pass.due[k]!.readBatch) pass.due[k]!.batchHeld = false;
      pass.outcomes[k] = undefined;
    }
    pass.next = pass.due.length;
    const resolve = pass.resolve;
    pass.resolve = pass.reject = noop;
    if (pass.released) this.#endReleased(pass);
    resolve(); // the cycle (or the post-call poll) goes on
  }

  /** A released pass settled (or failed): no longer among its provider's, and stop() told. */
  #endReleased(pass: PollPass): void {
    this.#pollQueues.get(pass.host.id)?.released.delete(pass);
    const ended = pass.onEnded;
    pass.onEnded = noop;
    ended();
  }

  /** Runs `poll` once every poll of this provider queued before it has ended (one at a time). */
  #serial<T>(providerId: string, poll: () => Promise<T>): Promise<T> {
    return this.#queueOf(providerId).run(poll);
  }

  #queueOf(providerId: string): PollQueue {
    let q = this.#pollQueues.get(providerId);
    if (!q) this.#pollQueues.set(providerId, q = new PollQueue());
    return q;
  }

  /** Stores an answer of `dev` that arrived at `now` (wall) and `mono` (monotonic). */
  #applySamples(dev: MutableDeviceState, batch: SampleBatch, now: number, mono: number): void {
    dev.lastPollMs = now;
    dev.lastPollMono = mono;
    const slots = dev.slots;
    const answer = ++this.#answers;
    for (let i = 0; i < batch.count; i++) {
      const signalId = batch.signalIds[i]!;
      const slot = slots.get(signalId);
      if (slot === undefined) {
        this.#undeclared(dev, signalId);
        continue;
      }
      if (!slot.polled) continue; // declared without a poll hint: never requested, not cached
      // One sample per signal and answer, the first (as discovery keeps a signal's first
      // declaration): taking each in turn would store, and publish, every one of them at every
      // poll -- a value flapping between them though the answers do not change.
      if (slot.answer === answer) {
        this.#duplicate(dev, signalId);
        continue;
      }
      slot.answer = answer;
      const kept = slot.last;
      const last = kept?.value;
      const value = batch.repeats(i, last) ? last! : batch.typedValue(i);
      const stamped = batch.timestampMs(i);
      const timestampMs = stamped ?? now;
      if (stamped !== null && Math.abs(stamped - now) > TIMESTAMP_SKEW_LIMIT_MS) {
        this.#skewed(dev, signalId, stamped - now, now);
      }
      let next: SignalState;
      if (value === null) {
        next = withoutValue(slot.last, qualityFromWire(batch.qualities[i]), timestampMs, mono);
      } else if (
        (slot.type !== null && slot.type !== value.type) || !batch.typeAgrees(i, value.type)
      ) {
        this.#typeMismatch(dev, signalId, slot.type, value.type, batch.valueTypes[i]!);
        next = withoutValue(slot.last, "FAULT", timestampMs, mono);
      } else if (value.type === "double" && value.non_finite !== undefined) {
        this.#nonFinite(dev, signalId, value.non_finite);
        next = new SignalSample(value, "FAULT", timestampMs, mono);
      } else {
        const quality = qualityFromWire(batch.qualities[i]);
        if (value === last && quality === kept!.quality) {
          // The same value at the same quality (most samples of most polls): only its times
          // move, set on the kept sample itself -- nothing allocated, nothing published (#store
          // would publish nothing for it). Readers take the cache's current sample, never keep one.
          (kept as MutableSignalState).timestampMs = timestampMs;
          (kept as MutableSignalState).receivedMono = mono;
          continue;
        }
        next = new SignalSample(value, quality, timestampMs, mono);
      }
      this.#store(dev, signalId, slot, next, now);
    }
    // A polled signal this answer left out keeps its last sample; an OK one past its bound is
    // STALE (as qualityNow reads it), stored so and published as the quality change it is.
    const pollable = dev.pollable;
    for (let i = 0; i < pollable.length; i++) {
      const slot = slots.get(pollable[i]!)!;
      const kept = slot.last;
      if (kept === undefined) {
        // No sample yet; a told-OK mark goes STALE as a kept OK sample does, from its receipt.
        const told = slot.toldOk;
        if (told !== null && mono - told.receivedMono > slot.staleAfterMs) {
          const stale = new SignalSample(null, "STALE", told.timestampMs, told.receivedMono);
          this.#store(dev, pollable[i]!, slot, stale, now);
        }
        continue;
      }
      if (kept.quality !== "OK" || kept.receivedMono === mono) continue;
      if (mono - kept.receivedMono <= slot.staleAfterMs) continue;
      const stale = new SignalSample(kept.value, "STALE", kept.timestampMs, kept.receivedMono);
      this.#store(dev, pollable[i]!, slot, stale, now);
    }
    dev.readsAnswered = readsAnswered(dev);
    if (!dev.available) {
      dev.available = true;
      this.#publishAvailability(dev, true, now);
    }
    this.#notifyPolled(dev);
  }

  #notifyPolled(dev: MutableDeviceState): void {
    const listeners = this.#polledListeners;
    for (let i = 0; i < listeners.length; i++) {
      try {
        listeners[i]!(dev);
      } catch (err) {
        this.#listenerErrors.warn(
          `device poll listener failed for ${quoteDeviceHandle(dev.providerId, dev.deviceId)}: ${
            errorMessage(err)
          }`,
        );
      }
    }
  }

  #notifyInventory(providerId: string): void {
    tellEach(this.#inventoryListeners, [providerId], (err) =>
      this.#listenerErrors.warn(
        `inventory listener failed for provider ${providerId}: ${errorMessage(err)}`,
      ));
  }

  #notifyFreshReadFailed(providerId: string, deviceId: string): void {
    tellEach(
      this.#freshReadFailedListeners,
      [providerId, deviceId],
      (err) =>
        this.#listenerErrors.warn(
          `fresh read listener failed for device ${quoteDeviceHandle(providerId, deviceId)}: ${
            errorMessage(err)
          }`,
        ),
    );
  }

  #notifyUnreachable(providerId: string): void {
    tellEach(this.#unreachableListeners, [providerId], (err) =>
      this.#listenerErrors.warn(
        `reported health listener failed for provider ${providerId}: ${errorMessage(err)}`,
      ));
  }

  #undeclared(dev: MutableDeviceState, signalId: string): void {
    const f = this.#faults.get(dev.providerId)!;
    f.counts.undeclared_signal++;
    f.log.undeclared_signal.warn(
      `${quoteDeviceHandle(dev.providerId, dev.deviceId)}: dropped a sample of undeclared signal ${
        quoteId(signalId)
      } (${f.counts.undeclared_signal} so far)`,
    );
  }

  #duplicate(dev: MutableDeviceState, signalId: string): void {
    this.#faults.get(dev.providerId)!.log.duplicate.warn(
      `${quoteDeviceHandle(dev.providerId, dev.deviceId)}: dropped a second sample of signal ${
        quoteId(signalId)
      } in one answer; the first is kept`,
    );
  }

  #skewed(dev: MutableDeviceState, signalId: string, skewMs: number, now: number): void {
    const f = this.#faults.get(dev.providerId)!;
    f.skew.samples_total++;
    f.skew.last_skew_ms = skewMs;
    f.skew.last_at_epoch_ms = now;
    f.log.skew.warn(
      `${quoteDeviceHandle(dev.providerId, dev.deviceId)} signal ${
        quoteId(signalId)
      }: provider timestamp ${Math.abs(skewMs)} ms ${
        skewMs > 0 ? "ahead of" : "behind"
      } the runtime's clock; reported as given, ages are measured from receipt (${f.skew.samples_total} so far)`,
    );
  }

  #typeMismatch(
    dev: MutableDeviceState,
    signalId: string,
    declared: ValueType | null,
    member: ValueType,
    wireType: number,
  ): void {
    const f = this.#faults.get(dev.providerId)!;
    f.counts.type_mismatch++;
    const why = declared !== null && declared !== member
      ? `a ${member} value on a signal declared ${declared}`
      : `a ${member} value in a Value of type ${wireType}`;
    f.log.type_mismatch.warn(
      `${quoteDeviceHandle(dev.providerId, dev.deviceId)} signal ${
        quoteId(signalId)
      }: ${why}; stored as FAULT (${f.counts.type_mismatch} so far)`,
    );
  }

  #nonFinite(dev: MutableDeviceState, signalId: string, what: string): void {
    const f = this.#faults.get(dev.providerId)!;
    f.counts.non_finite++;
    f.log.non_finite.warn(
      `${quoteDeviceHandle(dev.providerId, dev.deviceId)} signal ${
        quoteId(signalId)
      }: non-finite double ${what}; stored as FAULT (${f.counts.non_finite} so far)`,
    );
  }

  #store(
    dev: MutableDeviceState,
    signalId: string,
    slot: SignalSlot,
    next: SignalState,
    now: number,
  ): void {
    const prev = slot.last;
    // Before a first sample, the quality stream clients were told: a told-OK mark's, else none.
    let was = prev?.quality;
    if (prev === undefined && slot.toldOk !== null) {
      was = "OK";
      slot.toldOk = null;
    }
    slot.last = next;
    dev.signals.set(signalId, next);
    const qualityChanged = was !== undefined && was !== next.quality;
    // state_update carries a value: a signal that never had one shows in quality_change only.
    if (
      next.value !== null &&
      (!prev?.value || qualityChanged ||
        (prev.value !== next.value && !sameValue(prev.value, next.value)))
    ) {
      this.#opts.bus.publish({
        kind: "state_update",
        provider_id: dev.providerId,
        device_id: dev.deviceId,
        signal_id: signalId,
        value: next.value,
        quality: next.quality,
        timestamp_ms: now,
      });
    }
    if (qualityChanged) {
      this.#opts.bus.publish({
        kind: "quality_change",
        provider_id: dev.providerId,
        device_id: dev.deviceId,
        signal_id: signalId,
        old_quality: was!,
        new_quality: next.quality,
        timestamp_ms: now,
      });
    }
  }

  /**
   * Keeps the last values but marks every signal UNAVAILABLE, a told-OK mark too (without a
   * value), and says so once: storing the same sample again publishes nothing. A device told its
   * removal (a predecessor's, #keepRemovedSignals) and nothing since keeps what it holds: nothing
   * is told of it until its return (its first answer: device_availability, then the changes from
   * what clients were told before the removal). Dated `now` (wall) and `mono`: a failed read's
   * arrival (#applyOutcome), else the marking's own time (its provider down).
   */
  #markDeviceUnavailable(
    dev: MutableDeviceState,
    now = this.#opts.clock.nowMs(),
    mono = this.#opts.clock.monoMs(),
  ): void {
    dev.lastFailMs = now;
    dev.lastFailMono = mono;
    if (dev.availabilityTold) {
      for (const [id, s] of dev.signals) {
        // A SignalSample, not a spread literal: a literal's allocation site may be pretenured
        // (tests/state/pretenure_test.ts), and a failing device is marked on every pass.
        const down = new SignalSample(s.value, "UNAVAILABLE", s.timestampMs, s.receivedMono);
        this.#store(dev, id, dev.slots.get(id)!, down, now);
      }
      if (dev.toldOkHeld) this.#markToldOkUnavailable(dev, now);
    }
    dev.readsAnswered = false;
    if (dev.available) {
      dev.available = false;
      this.#publishAvailability(dev, false, now);
    }
    this.#notifyPolled(dev);
  }

  /**
   * Makes each told-OK mark of `dev` an UNAVAILABLE sample without a value (#store tells the
   * change from OK), once: none is left after (dev.toldOkHeld cleared).
   */
  #markToldOkUnavailable(dev: MutableDeviceState, now: number): void {
    dev.toldOkHeld = false;
    for (const [id, slot] of dev.slots) {
      const told = slot.toldOk;
      if (told === null) continue;
      const down = new SignalSample(null, "UNAVAILABLE", told.timestampMs, told.receivedMono);
      this.#store(dev, id, slot, down, now);
    }
  }

  #markProviderDown(providerId: string): void {
    for (const dev of this.#byProvider.get(providerId)?.values() ?? []) {
      this.#markDeviceUnavailable(dev);
    }
  }

  /**
   * Publishes a device's availability flip dated no earlier than its flip before it
   * (dev.availabilityAt): a step back of the wall clock (NTP) must not date a return before the
   * loss it ends, as ProviderHost dates a provider's. Only a flip does the max(), never a poll.
   */
  #publishAvailability(
    dev: Pick<
      MutableDeviceState,
      "providerId" | "deviceId" | "availabilityAt" | "availabilityTold"
    >,
    available: boolean,
    now: number,
    reason?: "removed",
  ): void {
    const at = transitionDate(now, dev.availabilityAt);
    dev.availabilityAt = at;
    dev.availabilityTold = true;
    this.#opts.bus.publish({
      kind: "device_availability",
      provider_id: dev.providerId,
      device_id: dev.deviceId,
      available,
      ...(reason === undefined ? {} : { reason }),
      timestamp_ms: at,
    });
  }

  /** #removedSignals' entry for `providerId`, let go of (undefined: none). */
  #takeRemovedSignals(
    providerId: string,
  ): Map<string, LeftDevice> | undefined {
    const kept = this.#removedSignals.get(providerId);
    this.#removedSignals.delete(providerId);
    return kept;
  }

  /** New inventory after (re)discovery: keep known devices' samples, rebuild the poll plan. */
  #applyInventory(host: ProviderHost, devices: readonly DeviceCapabilities[]): void {
    const providerId = host.id;
    this.#discoveryWarnings.set(providerId, host.session?.discoveryWarnings ?? []);
    const old = this.#byProvider.get(providerId) ?? new Map<string, MutableDeviceState>();
    // A device taken up (a provider a reload removed and configured again, a device listed again
    // after a rediscovery without it): no earlier than the flips of the devices that left.
    let departedAt = this.#departedAvailabilityAt.get(providerId) ??
      this.#removedAvailabilityAt.take(providerId) ?? 0;
    const next = new Map<string, MutableDeviceState>();
    const departedTold = this.#departedNoStageTold.get(providerId);
    // A provider configured again under its id (a reload restarted it, or removed it and a later
    // one added it): its devices carry on from the signals its predecessor left (#removedSignals).
    const departedSignals = this.#departedSignals.get(providerId) ??
      this.#takeRemovedSignals(providerId);
    for (const caps of devices) {
      const id = caps.device.deviceId;
      const slots = new Map<string, SignalSlot>();
      const pollable: string[] = [];
      const prev = old.get(id);
      // Its signals as the cache holds them, or held them when a rediscovery left it out: a
      // device listed again carries on from them as one listed throughout does; and so does a
      // signal declared again after a rediscovery that listed the device without it.
      const left = prev === undefined ? departedSignals?.get(id) : undefined;
      const carried = prev ?? left;
      const carriedLeft = carried?.leftSlots ?? null;
      let toldOkHeld = false;
      for (const s of caps.signals) {
        const polled = s.pollHintHz > 0;
        if (polled) pollable.push(s.signalId);
        // A signal declared before keeps its bound (#boundSlots notes a tightening by the new
        // declaration) and a tightening's record: a sample kept usable until then stays stale
        // from then, not earlier. One declaration per signal id: discovery keeps the first.
        const before = carried?.slots.get(s.signalId) ?? carriedLeft?.get(s.signalId);
        // A told-OK mark carries on for a signal still polled (it has no value to be typed).
        const toldOk = polled ? before?.toldOk ?? null : null;
        if (toldOk !== null) toldOkHeld = true;
        slots.set(s.signalId, {
          type: s.valueType,
          unit: s.unit,
          polled,
          staleAfterMs: before?.staleAfterMs ?? Infinity,
          tightenedAtMono: before?.tightenedAtMono ?? -Infinity,
          looserMs: before?.looserMs ?? Infinity,
          last: undefined,
          toldOk,
          answer: 0,
        });
      }
      const signals = new Map<string, SignalState>();
      for (const sid of pollable) {
        const beforeSlot = carried?.slots.get(sid) ?? carriedLeft?.get(sid);
        const s = carried?.signals.get(sid) ?? carriedLeft?.get(sid)?.last;
        const slot = slots.get(sid)!;
        // A value kept across rediscovery must still have the declared type, and its unit: GET
        // /v0/state and a DBIRTH label it with the unit declared now (20 degC is no 20 K).
        const sameUnit = beforeSlot?.unit === slot.unit;
        if (
          s &&
          (s.value === null || (sameUnit && (slot.type === null || s.value.type === slot.type)))
        ) {
          signals.set(sid, s);
          slot.last = s;
        }
      }
      next.set(id, {
        providerId,
        deviceId: id,
        pollable,
        readRequest: new PreparedRead({ device_id: id, signal_ids: pollable }),
        readBatch: new SampleBatch(pollable.length),
        batchHeld: false,
        slots,
        signals,
        leftSlots: leftSignals(carried, slots),
        lastPollMs: prev?.lastPollMs ?? 0,
        lastPollMono: prev?.lastPollMono ?? 0,
        lastFailMs: prev?.lastFailMs ?? 0,
        lastFailMono: prev?.lastFailMono ?? 0,
        available: prev?.available ?? false,
        availabilityAt: prev?.availabilityAt ?? departedAt,
        // Left out at a rediscovery: told its loss then if it was told anything before; taken
        // from a predecessor a reload removed: told its removal, nothing to take back.
        availabilityTold: prev?.availabilityTold ?? (left !== undefined && left.toldAt !== null),
        toldOkHeld,
        pollPeriodMs: this.#intervalMs, // set by #boundSlots below
        bounds: { warnAfterMs: 0, staleAfterMs: 0 },
        noWarningStage: null, // set by #boundSlots below
        noWarningStageTold: prev?.noWarningStageTold ?? departedTold?.get(id) ?? "",
        skipCycles: 0,
        lateDue: false,
        readsAnswered: prev?.readsAnswered ?? false,
        queuedPoll: null,
      });
    }
    // A device gone from the new inventory needs no notice: rediscovery follows a restart, and
    // every device was marked unavailable when the provider went down. Its last flip's date is
    // kept: should a later rediscovery list it again after the wall clock stepped back, its
    // return is dated no earlier than that loss. So are its signals, for its return.
    const told = departedTold ?? new Map<string, string>();
    const leftOut = departedSignals ??
      new Map<string, LeftDevice>();
    for (const id of next.keys()) {
      told.delete(id);
      leftOut.delete(id);
    }
    for (const [id, dev] of old) {
      if (next.has(id)) continue;
      departedAt = Math.max(departedAt, dev.availabilityAt);
      // Kept if told anything (its removal is said), or holding a sample or a told-OK mark (its
      // return's first answer is told as the change it is).
      if (
        dev.availabilityTold ||
        [...dev.slots.values()].some((slot) => slot.last !== undefined || slot.toldOk !== null)
      ) {
        leftOut.delete(id); // re-inserted last: the newest
        leftOut.set(id, {
          slots: dev.slots,
          signals: dev.signals,
          leftSlots: dev.leftSlots,
          toldAt: dev.availabilityTold ? dev.availabilityAt : null,
        });
        if (leftOut.size > DEPARTED_SIGNALS_DEVICES) leftOut.delete(leftOut.keys().next().value!);
      }
      if (dev.noWarningStageTold === "") continue;
      told.delete(id); // re-inserted last: the newest
      told.set(id, dev.noWarningStageTold);
      if (told.size > NO_WARNING_STAGE_DEPARTED_DEVICES) told.delete(told.keys().next().value!);
    }
    if (told.size > 0) this.#departedNoStageTold.set(providerId, told);
    else this.#departedNoStageTold.delete(providerId);
    if (leftOut.size > 0) this.#departedSignals.set(providerId, leftOut);
    else this.#departedSignals.delete(providerId);
    if (departedAt > 0) this.#departedAvailabilityAt.set(providerId, departedAt);
    this.#byProvider.set(providerId, next);
    this.#polledDevices.set(providerId, [...next.values()].filter((d) => d.pollable.length > 0));
    this.#boundSlots(host, next);
    this.#tellNoWarningStage(host, next);
  }
}

/**
 * Whether a device's bounds newly leave it no WARNING stage (staleness.ts noWarningStage), with
 * figures not said of it before; notes them (and forgets them when it has a stage again).
 */
function noWarningStageNews(dev: MutableDeviceState, none: NoWarningStage | null): boolean {
  const key = none === null ? "" : `${none.staleAfterMs}/${none.derivedWarnMs}`;
  if (key === dev.noWarningStageTold) return false;
  dev.noWarningStageTold = key;
  return none !== null;
}

/**
 * The slots of the signals `carried` (a device's state before this inventory, or kept since a
 * rediscovery left it out) had, with a sample, that `slots` (its declaration now) no longer
 * declares, those it kept already included: the newest last, at most LEFT_SIGNALS_PER_DEVICE.
 * Null when none. At inventory time only.
 */
function leftSignals(
  carried: Pick<LeftDevice, "slots" | "leftSlots"> | undefined,
  slots: ReadonlyMap<string, SignalSlot>,
): Map<string, SignalSlot> | null {
  if (carried === undefined) return null;
  let left: Map<string, SignalSlot> | null = null;
  const keep = (sid: string, slot: SignalSlot) => {
    left ??= new Map();
    left.delete(sid); // re-inserted last: the newest
    left.set(sid, slot);
    if (left.size > LEFT_SIGNALS_PER_DEVICE) left.delete(left.keys().next().value!);
  };
  for (const [sid, slot] of carried.leftSlots ?? []) if (!slots.has(sid)) keep(sid, slot);
  for (const [sid, slot] of carried.slots) {
    // Its last sample, or its told-OK mark (a removed provider's kept device holds an OK one so,
    // #keepRemovedSignals: never the killed process's value).
    if (slots.has(sid) || (slot.last === undefined && slot.toldOk === null)) continue;
    keep(sid, slot);
  }
  return left;
}

/**
 * The left slots (MutableDeviceState.leftSlots) of a device whose provider a reload took out, as
 * #keepRemovedSignals keeps them: an `OK` sample as its told-OK mark (SignalSlot.toldOk), never the
 * killed process's value; others as they are. A reload's removal only.
 */
function toldOkLeft(leftSlots: Map<string, SignalSlot> | null): Map<string, SignalSlot> | null {
  if (leftSlots === null) return null;
  const kept = new Map<string, SignalSlot>();
  for (const [sid, slot] of leftSlots) {
    const s = slot.last;
    kept.set(
      sid,
      s?.quality === "OK"
        ? {
          ...slot,
          last: undefined,
          toldOk: { timestampMs: s.timestampMs, receivedMono: s.receivedMono },
        }
        : slot,
    );
  }
  return kept;
}

/** The line naming a device with no WARNING stage, its stale bound and its derived warn bound. */
function noWarningStageLine(dev: MutableDeviceState, none: NoWarningStage): string {
  return `${quoteDeviceHandle(dev.providerId, dev.deviceId)} has no WARNING stage: ` +
    `health.staleness.stale_after_ms is ${none.staleAfterMs} and warn_after_ms 0 derives its ` +
    `warn bound as max(${DERIVED_WARN_CYCLES} x its poll cycle, ${DERIVED_WARN_MIN_MS}) = ` +
    `${none.derivedWarnMs} ms, not below it (its cycle is ${none.cycleMs} ms: its provider's ` +
    "devices x polling.interval_ms, or its own poll period), so its health goes from OK to " +
    "STALE without WARNING; " + noWarningStageFix(none);
}

/**
 * How to keep the stage: a warn bound above the device's cycle (one below it reads WARNING
 * between two polls) and below the stale bound -- or, with no room between them, a stale bound
 * above its cycle.
 */
function noWarningStageFix(none: NoWarningStage): string {
  return none.cycleMs + 1 < none.staleAfterMs
    ? `set health.staleness.warn_after_ms above its cycle (${none.cycleMs} ms) and below ` +
      `${none.staleAfterMs} to keep one`
    : `raise health.staleness.stale_after_ms above its cycle (${none.cycleMs} ms) and set ` +
      "warn_after_ms between them to keep one";
}

/** Where a poll of a host removed meanwhile records its figures (read by nobody). */
const DETACHED_POLL_METRICS: PollMetrics = { duration: new Histogram(), errors: 0 };

/**
 * What a failed liveness check says: false, no answer in time (a miss); true, the provider
 * answered with a status (even DEADLINE_EXCEEDED); null, neither (the request was refused before
 * it was sent, e.g. too many in flight: it proves nothing either way).
 */
function livenessOf(err: unknown): boolean | null {
  if (noAnswer(err)) return false;
  return err instanceof ProviderStatusError || err instanceof OtherDeviceAnswerError ? true : null;
}

/**
 * A request that got no answer in time (a liveness miss). A provider answering with a status,
 * even DEADLINE_EXCEEDED, did answer.
 */
function noAnswer(err: unknown): boolean {
  return err instanceof RuntimeError && err.code === "DEADLINE_EXCEEDED" &&
    !(err instanceof ProviderStatusError);
}

const EMPTY_IDS: ReadonlySet<string> = new Set();

/** The ids of the devices a health answer reports UNREACHABLE, each by its first entry. */
function unreachableDevices(entry: ReportedHealthEntry): ReadonlySet<string> {
  const seen = new Set<string>();
  const ids = new Set<string>();
  for (const d of entry.response.devices ?? []) {
    const id = d.device_id ?? "";
    if (seen.has(id)) continue;
    seen.add(id);
    if (d.state === WireDeviceState.UNREACHABLE) ids.add(id);
  }
  return ids.size === 0 ? EMPTY_IDS : ids;
}

/**
 * Whether a device's last answered read vouches for it: it carried one of its polled signals
 * (received at that read) and one of its polled signals is OK -- the reads DeviceOutages does not
 * count as failing (the same tests: _answers.ts). Allocates nothing.
 */
function readsAnswered(dev: MutableDeviceState): boolean {
  return !noneAnswered(dev) && !signalsFail(dev);
}

/**
 * The poll-loop cycles a device polled now skips before its next poll: its poll period in whole
 * intervals, less the cycle it is polled in (0: polled every cycle). One expression for the loop's
 * poll, a late device's resend (StateCache.#resendLate) and a reload's cap of the count, so they
 * keep one pace.
 */
function skipCyclesAfterPoll(pollPeriodMs: number, intervalMs: number): number {
  return Math.max(0, Math.round(pollPeriodMs / intervalMs) - 1);
}

/**
 * Whether `dev` is due in this poll cycle: its skipped cycles are used up, the cycle is start()'s
 * priming pass (`everyDevice`), or its last read did not answer well (MutableDeviceState
 * readsAnswered: polled every cycle until it does). One test for a device polled now and one whose
 * read is still out (lateDue), so the two never disagree.
 */
function dueThisCycle(dev: MutableDeviceState, everyDevice: boolean): boolean {
  return dev.skipCycles <= 0 || everyDevice || !dev.readsAnswered;
}

/**
 * A sample without a usable value: the last good value (with its time) stays, or none. It takes
 * the sample's quality, except OK, which cannot vouch for a value it did not carry: a kept OK value
 * stays OK (it goes stale from its own receipt, as a signal left out of an answer does), a kept
 * value that was not OK (FAULT, UNAVAILABLE, STALE: it predates what made it so) is STALE, never
 * good again until a value comes. Without a value to keep, OK vouches for nothing: UNAVAILABLE.
 */
function withoutValue(
  last: SignalState | undefined,
  quality: Quality,
  timestampMs: number,
  receivedMono: number,
): SignalState {
  if (last?.value) {
    const kept = quality !== "OK" ? quality : last.quality === "OK" ? "OK" : "STALE";
    return new SignalSample(last.value, kept, last.timestampMs, last.receivedMono);
  }
  const q = quality === "OK" ? "UNAVAILABLE" : quality;
  return new SignalSample(null, q, timestampMs, receivedMono);
}

/**
 * A sample as the cache keeps it: a plain object (its prototype is Object.prototype) made by a
 * constructor, not by an object literal, which V8 may pretenure: a sample lives for its device's
 * poll period, and once V8 judged the literal's objects long-lived it allocated every sample of
 * every poll in old space (src/common/typed_value.ts; bench/README.md, "Where history's RSS goes").
 */
const SignalSample = plainObjectConstructor<
  [value: TypedValue | null, quality: Quality, timestampMs: number, receivedMono: number],
  SignalState
>(function (value, quality, timestampMs, receivedMono) {
  this.value = value;
  this.quality = quality;
  this.timestampMs = timestampMs;
  this.receivedMono = receivedMono;
});

/** A cache sample made as the poll path makes it (for tests of how it is allocated). */
export function signalSample(
  value: TypedValue | null,
  quality: Quality,
  timestampMs: number,
  receivedMono: number,
): SignalState {
  return new SignalSample(value, quality, timestampMs, receivedMono);
}

/** Longest signal id a log line of the cache quotes (longer is cut, marked with an ellipsis). */
export const QUOTED_SIGNAL_ID_CHARS = 64;

/**
 * Longest poll error a debug line of the cache quotes: the error's text carries a provider's
 * status message.
 */
export const QUOTED_POLL_ERROR_CHARS = 200;

/** An id in a log line: quoted and cut, so a hostile id cannot forge or flood lines. */
function quoteId(id: string): string {
  return quoteProviderTextWithin(id, QUOTED_SIGNAL_ID_CHARS);
}

const NO_DEVICES: readonly MutableDeviceState[] = Object.freeze([]);
/** What a poll pass with nothing to send returns (one settled promise, not one per pass). */
const DONE: Promise<void> = Promise.resolve();

/**
 * The outcome of a device whose read a poll pass did not send: past the session's room for poll
 * reads (DEFAULT_MAX_IN_FLIGHT) with none of the pass in flight, or after the provider answered
 * none of its reads in time (StateCache.#sendMore). The device is due at the next cycle.
 */
const DEFERRED: unique symbol = Symbol("deferred");

/** A no-op resolver (a settled pass keeps no promise's resolving functions). */
function noop(): void {}

/**
 * One poll pass over a provider's due devices and where it stands: what StateCache.#runPass sends
 * and #applyPass applies. Made once per provider for its poll loop and reused pass after pass
 * (a post-call poll makes its own), so a pass allocates its promise and little else: its replies
 * per device index and its promise executor are made with it.
 */
class PollPass {
  host: ProviderHost;
  due: readonly MutableDeviceState[];
  /** Its provider's poll queue (the pass runs as its job: PollQueue.running). */
  readonly queue: PollQueue;
  metrics: PollMetrics = DETACHED_POLL_METRICS;
  /**
   * Each device's outcome as it arrives (its samples, why it has none, or DEFERRED: its read was
   * not sent in this pass), until applied.
   */
  readonly outcomes: (SampleBatch | Error | typeof DEFERRED | undefined)[] = [];
  /** The batch each device's request decodes into. */
  readonly intos: SampleBatch[] = [];
  /**
   * When each device's outcome arrived (wall and monotonic ms), until applied: its samples are
   * dated so (architecture.md: `receivedMono`, the time a sample arrived), and so is a failed
   * read (its UNAVAILABLE marks, device_availability: DeviceState.lastFailMs).
   */
  readonly arrivedMs: number[] = [];
  readonly arrivedMono: number[] = [];
  /** The reply of each device index (made once). */
  readonly replies: ReadReply[] = [];
  /** Replies still to come. */
  waiting = 0;
  /** Devices whose read was sent (or deferred): the next one to send. */
  sent = 0;
  /** A read of this pass was answered (before it was applied): the provider reads. */
  heard = false;
  /** Replies come in (answers and errors): a pass none came back to is not released. */
  replied = 0;
  /** The next outcome to apply (request order). */
  next = 0;
  /** Every outcome applied, or the pass failed: later replies change nothing. */
  settled = true;
  /** Failed (an apply threw): never reused. */
  dead = false;
  /**
   * Its cycle ended without the reads still out (StateCache.#releasePass): each outcome is applied
   * as it comes, the last one settles it.
   */
  released = false;
  /**
   * Its loop's next cycle came due while none of its reads was back yet (#releasePass): it is
   * released at its first reply, not left to its slowest read's timeout_ms.
   */
  overdue = false;
  /**
   * Sent beside its loop's cycle, whose reads are the provider's liveness check: a post-call pass
   * (StateCache.pollDevice) released before any reply came back, or a late device's next read
   * (StateCache.#resendLate). Its timeout is no liveness failure; GetHealth does not wait for it.
   */
  setAside = false;
  /** A post-call poll's pass (StateCache.pollDevice): its answer stands for a cycle's. */
  postCall = false;
  /** Told when a released pass settles (StateCache.stop waits for it; set only then). */
  onEnded: () => void = noop;
  sinceMs = 0;
  answered = false;
  timedOut = false;
  resolve: () => void = noop;
  reject: (err: unknown) => void = noop;
  readonly executor = (resolve: () => void, reject: (err: unknown) => void): void => {
    this.resolve = resolve;
    this.reject = reject;
  };
  /** Runs this pass (the poll queue's job; set with the pass). */
  start: () => Promise<void> = () => Promise.resolve();

  constructor(host: ProviderHost, due: readonly MutableDeviceState[], queue: PollQueue) {
    this.host = host;
    this.due = due;
    this.queue = queue;
  }
}

/**
 * Runs polls one at a time, in arrival order. Bounded: the poll loop waits for its own poll, and
 * pollDevice joins a queued poll of the same device, so at most one poll per device waits.
 */
class PollQueue {
  /** The poll loop's pass, reused cycle after cycle (StateCache.#pollProvider). */
  pass: PollPass | null = null;
  /**
   * The pass started last (StateCache.#runPass: the loop's, a post-call poll's or a late device's); running until
   * it settles or is released. The queue runs one at a time: the only one that may hold outcomes
   * behind a read still out, besides the released ones. Cut when its provider goes down.
   */
  running: PollPass | null = null;
  /**
   * The loop's passes whose cycle ended with reads still out (StateCache.#releasePass), until
   * each settles. Bounded by the provider's devices: each holds a read no other pass sends.
   */
  readonly released = new Set<PollPass>();
  /**
   * The post-call poll's pass (StateCache.pollDevice) while it runs in the queue: a loop cycle
   * due behind it ends it without its read (StateCache.#releasePass).
   */
  post: PollPass | null = null;
  #busy = false;
  readonly #waiting: Array<() => void> = [];

  run<T>(poll: () => Promise<T>): Promise<T> {
    if (!this.#busy) {
      this.#busy = true;
      return this.#start(poll);
    }
    return new Promise<void>((resolve) => this.#waiting.push(resolve)).then(() =>
      this.#start(poll)
    );
  }

  /** `poll` is an async function: it never throws, it rejects. */
  #start<T>(poll: () => Promise<T>): Promise<T> {
    const p = poll();
    p.then(this.#release, this.#release);
    return p;
  }

  /** Hands the queue to the next waiting poll (it stays busy), or frees it. */
  readonly #release = (): void => {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#busy = false;
  };
}

/**
 * A fixed-cadence loop (running from construction) that never overlaps itself and stops promptly.
 * Cycles start on a grid (`gridOriginMs + k x intervalMs`), shared by every loop of the cache: a
 * cycle that ends within its interval waits for the next grid instant (no drift from timer
 * lateness, and loops stay in step), one that overran starts the next at once.
 *
 * The next cycle's timer is set as a cycle starts (one timer per cycle, as when it was set at its
 * end). When it fires while the cycle is still in flight, the cycle overran: `overdue` is called
 * (the cache lets the cycle end without the reads still out: StateCache.#releasePass) and the
 * next cycle starts as soon as this one ends.
 *
 * Each timer aims at a grid instant (its due time), and the next cycle is the grid instant after
 * the later of that due time and the cycle's start. Timers may fire up to a millisecond early
 * (a fractional delay is truncated): timed from the start alone, a cycle that began just before
 * its grid instant would aim at that same instant and poll twice within a few milliseconds.
 */
export class PollLoop {
  #intervalMs: number;
  readonly #body: () => Promise<unknown>;
  readonly #clock: Clock;
  readonly #gridOriginMs: number;
  #timer: TimerId | undefined;
  /** The instant the pending timer aims at: a grid instant, or when it was set for "at once". */
  #dueMs: number;
  #running = true;
  #current: Promise<void> | null = null;
  /** Called when the next cycle is due while one is still in flight (see the class comment). */
  readonly #overdue: () => void;
  /** The next cycle's timer fired while this one was in flight: it starts when this one ends. */
  #late = false;

  constructor(
    intervalMs: number,
    body: () => Promise<unknown>,
    clock: Clock,
    gridOriginMs: number,
    overdue: () => void = noop,
  ) {
    this.#intervalMs = intervalMs;
    this.#body = body;
    this.#clock = clock;
    this.#gridOriginMs = gridOriginMs;
    this.#overdue = overdue;
    this.#dueMs = this.#scheduleAt(this.#nextGridInstant(clock.monoMs()));
  }

  /**
   * Uses `intervalMs` from the next cycle on (a waiting cycle, or the timer of the cycle after the
   * one in flight, is rescheduled at once onto the new grid when the interval got shorter).
   */
  setInterval(intervalMs: number): void {
    const previous = this.#intervalMs;
    this.#intervalMs = intervalMs;
    if (!this.#running || this.#late || intervalMs >= previous) return;
    this.#clock.clearTimer(this.#timer); // a shorter interval must not wait out the longer one
    this.#dueMs = this.#scheduleAt(this.#nextGridInstant(this.#clock.monoMs()));
  }

  /** Runs the next cycle now (e.g. a provider just came back) unless one is in flight. */
  wake(): void {
    if (!this.#running || this.#current) return;
    this.#clock.clearTimer(this.#timer);
    this.#dueMs = this.#scheduleAt(this.#clock.monoMs());
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#clock.clearTimer(this.#timer);
    await this.#current;
  }

  /** Whether a cycle is in flight (its poll pass or GetHealth not ended yet). */
  get cycling(): boolean {
    return this.#current !== null;
  }

  /** Sets the timer for `dueMs` (at once if that has passed) and returns `dueMs`. */
  #scheduleAt(dueMs: number): number {
    this.#timer = this.#clock.setTimer(this.#onTimer, Math.max(0, dueMs - this.#clock.monoMs()));
    return dueMs;
  }

  /** The first grid instant after `fromMs` (common/grid.ts). */
  #nextGridInstant(fromMs: number): number {
    return nextGridInstant(this.#gridOriginMs, this.#intervalMs, fromMs);
  }

  /**
   * Runs a cycle; only from its timer, which stop() clears: never after stop(). Its end is a
   * promise reaction, not a coroutine per cycle.
   */
  readonly #onTimer = (): void => {
    if (this.#current !== null) {
      // The cycle in flight overran its interval: the next one starts when it ends.
      this.#late = true;
      try {
        this.#overdue();
      } catch {
        // (StateCache's never throws) the cycle in flight ends as it would have
      }
      return;
    }
    const started = this.#clock.monoMs();
    // The next cycle's grid instant, set now (the same instant as when it was set at the end).
    this.#dueMs = this.#scheduleAt(this.#nextGridInstant(Math.max(this.#dueMs, started)));
    let body: Promise<unknown>;
    try {
      body = this.#body();
    } catch {
      body = DONE; // as a cycle that failed: the next one is scheduled all the same
    }
    this.#current = body.then(this.#afterCycle, this.#afterCycle);
  };

  /**
   * A cycle ended (answered or failed): the next one at once if its timer fired meanwhile (the
   * cycle overran), else its timer set at the start waits for its grid instant; none once stopped.
   */
  readonly #afterCycle = (): void => {
    this.#current = null;
    if (!this.#running || !this.#late) return;
    this.#late = false;
    this.#dueMs = this.#scheduleAt(this.#clock.monoMs());
  };
}
