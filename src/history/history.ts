/**
 * The machine's memory (docs/history.md): every polled sample of every signal in the full-rate
 * ring (ring.ts), folded into `history.step_ms` buckets for the disk tier (disk_tier.ts), and the
 * query behind GET /v0/history: the ring where it reaches, the disk tier beyond.
 *
 * Fed by StateCache.onDevicePolled (synchronous, right after each poll's samples are stored): the
 * listener appends to typed arrays and, when a poll crosses into a new bucket, hands the device's
 * finished bucket to the disk writer (which never makes the poll wait). Time is the injected
 * clock's wall time at the poll (the runtime's clock, not a provider's); a failed read's is its
 * arrival (DeviceState.lastFailMs, as the cache dates it), not before the open bucket.
 */
import {
  type Clock,
  invalidArgument,
  type Logger,
  neverThrowing,
  type Quality,
  quoteProviderTextWithin,
  raceTimeout,
  type TypedValue,
  type ValueType,
  WALL_STEP_MS,
} from "../common/mod.ts";
import type { HistoryConfig } from "../config/mod.ts";
import type { JournalFiles } from "../journal/mod.ts";
import type { DeviceState, StateCache } from "../state/mod.ts";
import { BucketAcc, bucketStart, type HistoryPoint, typedValueScalar } from "./buckets.ts";
import {
  DiskTier,
  type DiskTierStatus,
  rowPoint,
  rowRing,
  rowText,
  rowType,
  rowTypeIs,
} from "./disk_tier.ts";
import {
  ChangeWalk,
  DeviceRing,
  exactDouble,
  QUALITY_BY_CODE,
  refBytes,
  RingBudget,
  type RingSample,
  SignalRing,
} from "./ring.ts";

/**
 * How often (the history's wall time, at a poll) the rings of devices the cache no longer has
 * (a reload removed their provider, or rediscovery their device) are looked for: once all they
 * hold is older than memory_seconds they are let go, their bytes back in the shared budget.
 */
export const HISTORY_SWEEP_EVERY_MS = 10_000;
/**
 * Devices let go by the sweep whose newest row History remembers at most (the oldest forgotten
 * past it): a device picked up again reads the disk as far as its own earlier rings' rows reach
 * (a forgotten one's, as far as the newest of the forgotten: #sweptFloorMs).
 */
export const HISTORY_SWEPT_DEVICES_KEPT = 4096;

/**
 * How long a history question whose range reaches before the ring waits for the rows still queued
 * for the disk (buckets closed but not yet written) before it reads the disk tier. A disk slower
 * than this answers without them rather than holding the question.
 */
export const HISTORY_QUERY_DISK_WAIT_MS = 2_000;

/**
 * How many times a history question is split between the tiers at most. The ring's first bucket
 * may be open (not written: a step_ms longer than the ring's reach, the first bucket after a
 * restart), its earlier runs' rows read from the disk; when the polls cross into the next bucket
 * while the disk is read, the ring writes that bucket, and the read may have had this run's row of
 * it too (its samples twice, the ring's and the row's): the question is split again, the bucket
 * then written. Once more is enough but for a read longer than memory_seconds; past this many, the
 * answer is given as read.
 */
export const HISTORY_QUERY_SPLITS_MAX = 4;

/** Points one history answer may hold at most (all signals together); beyond it: 400. */
export const MAX_HISTORY_POINTS = 20_000;

/**
 * Buckets one history answer holds at most, all signals together, of the types a signal only on
 * disk has besides its newest rows' (History.query keeps them apart until the newest is known: only
 * that type's are answered and counted in MAX_HISTORY_POINTS); beyond it: 400. One type's beyond
 * MAX_HISTORY_POINTS are let go (they could not be answered). A 400 of its own naming it: the client
 * narrows the question to lift it (tooManyTypedHeld).
 */
export const MAX_HISTORY_TYPED_HELD = 2 * MAX_HISTORY_POINTS;

/**
 * Signal ids a device's entry remembers of those a rediscovery removed (their rows are on disk
 * only; a question without signal_id names them): the oldest forgotten beyond it.
 */
export const MAX_RELEASED_SIGNAL_IDS = 256;

/**
 * Changes of its declared unit a signal's entry remembers (GET /v0/history's `unit_changes`): the
 * oldest forgotten beyond it.
 */
export const MAX_UNIT_CHANGES = 8;

/**
 * Longest `provider/device/signal` a log line of the history or the incident recorder quotes
 * (longer is cut).
 */
export const HISTORY_QUOTED_SIGNAL_CHARS = 160;

/**
 * How long (monotonic) a shortage of history.memory_max_bytes (rings made without room, values
 * too large to keep) must have been over before its episode ends with an INFO: one that comes back
 * within it is the same episode, so a shortage that comes and goes logs at most one WARN and one
 * INFO per this long.
 */
export const HISTORY_SHORTAGE_QUIET_MS = 300_000;

/** Where an answer's points came from. */
export type HistorySource = "memory" | "disk" | "memory+disk" | "none";

/**
 * Why an answer may lack points of its range (null: it does not): `disk_unreadable`, the disk tier
 * failed while it was read (what was read is given); `disk_pending`, rows queued for the disk were
 * not written within HISTORY_QUERY_DISK_WAIT_MS, or are kept through a disk outage (they are in
 * neither tier until written).
 */
export const HISTORY_INCOMPLETE = ["disk_unreadable", "disk_pending"] as const;
export type HistoryIncomplete = typeof HISTORY_INCOMPLETE[number];

/** A history question (GET /v0/history/{provider_id}/{device_id}). */
export interface HistoryQuery {
  readonly providerId: string;
  readonly deviceId: string;
  /** Signals asked for; empty: every signal the history holds for the device. */
  readonly signalIds: readonly string[];
  /** Default: untilMs - memory_seconds. */
  readonly sinceMs?: number | undefined;
  /** Default: now. */
  readonly untilMs?: number | undefined;
  /** 0 or absent: full rate from the ring (the disk part in its own buckets). */
  readonly stepMs?: number | undefined;
}

/**
 * A change of a signal's declared unit, seen while the runtime ran (its provider restarted, or a
 * rediscovery, declaring another SignalSpec.unit): the points before `at_ms` are in `unit_before`.
 */
export interface HistoryUnitChange {
  /**
   * The time of the device's first poll in the new unit (epoch ms); once the wall clock stepped
   * back behind it, the time of the device's first poll after the step.
   */
  readonly at_ms: number;
  /** The unit declared before ("" for none). */
  readonly unit_before: string;
  /** The unit declared from then on ("" for none). */
  readonly unit: string;
}

/**
 * The signals of a device a rediscovery declared anew (History.onRedeclare): those declared with
 * another type (retyped: their old series is released) and those of the same type declared with
 * another unit than their samples were polled in (their samples kept). Bounded by the device's
 * signals.
 */
export interface HistoryRedeclared {
  readonly retyped: readonly string[];
  readonly unitChanged: readonly string[];
}

/** One signal of an answer. */
export interface HistorySeries {
  readonly signal_id: string;
  readonly value_type: ValueType | "unknown";
  /**
   * The changes of its unit after the answer's `since_ms` that the runtime saw (oldest first; at
   * most MAX_UNIT_CHANGES): a point is in the `unit_before` of the first change after its time,
   * else in the unit declared now.
   */
  readonly unit_changes: readonly HistoryUnitChange[];
  readonly points: readonly HistoryPoint[];
}

/** The answer (the JSON body without `status`; quality codes are spelled out by the route). */
export interface HistoryAnswer {
  readonly provider_id: string;
  readonly device_id: string;
  readonly since_ms: number;
  readonly until_ms: number;
  readonly step_ms: number;
  /** Which tier answered: points before `memory_from_ms` come from the disk tier. */
  readonly source: HistorySource;
  /** Where the ring's part begins (epoch ms); null when the ring holds nothing of the device. */
  readonly memory_from_ms: number | null;
  /** The disk tier's bucket (its points have at least this step); null without a disk tier. */
  readonly disk_step_ms: number | null;
  /** Null when the answer holds every point the tiers have of the range (HistoryIncomplete). */
  readonly incomplete: HistoryIncomplete | null;
  readonly signals: readonly HistorySeries[];
}

/** Figures of the history (GET /metrics). */
export interface HistoryStatus {
  readonly memoryBytes: number;
  readonly memoryMaxBytes: number;
  /**
   * Seconds the ring reaches back now (the device it reaches least far for); a forward step of the
   * wall clock since its oldest poll is not counted, nor a device whose polls all lie ahead of the
   * clock (not polled since it stepped back: its provider down).
   */
  readonly memoryReachSeconds: number;
  /**
   * Rings (a device's polls, a signal's changes) that keep nothing now: memory_max_bytes had no
   * room for their first entries when they were made, nor since (ring.ts, roomless).
   */
  readonly memoryRoomlessRings: number;
  /**
   * Values not kept in the ring since start because they are too large for memory_max_bytes even
   * alone (SignalRing.record false: a long string or bytes value; a repeat of one is not counted).
   */
  readonly memoryValuesNotKept: number;
  readonly devices: number;
  readonly disk: DiskTierStatus;
}

/** One device's ring and its open bucket. */
interface DeviceEntry {
  readonly ring: DeviceRing;
  /** The cache's pollable list this entry's arrays were built for (rebuilt when it changes). */
  pollable: readonly string[] | null;
  /** The rings of `pollable`, in its order (each also its signal's open disk bucket). */
  signals: SignalRing[];
  /**
   * Start of the open bucket; null before the first poll and once written. When set, it is
   * History's #bucketNow (one open bucket for every device); the disk tier's judgement of a step
   * back still pending does not rely on it (#nextRowBucketMs).
   */
  bucketStart: number | null;
  /**
   * Monotonic time of its last poll: a device the cache no longer has is let go once
   * memory_seconds have passed since, also when the wall clock stepped back since (#sweepRemoved).
   */
  polledMono: number;
  /**
   * Start of the bucket of this entry's last row handed to the disk tier (null: none yet). A
   * bucket written and open again (a rediscovery or a wall clock step wrote it early) has rows of
   * samples the ring still holds.
   */
  writtenBucket: number | null;
  /** The ring's next poll number when that row was handed over: the polls before it are in rows. */
  writtenSeq: number;
  /**
   * A step back of the wall clock crossed into an earlier bucket since this entry's last poll
   * (#crossBucket: whichever device's poll saw it; never without a disk tier). It wrote every open
   * bucket, so each poll the ring holds is in a row the disk tier reads as before that step
   * (DiskTier.read's beforeStepBack), also the polls the ring counts as ascending since its own
   * last step back: until its next poll the disk answers the device (#answer), and that poll
   * begins a new run of the ring as a step back it saw itself would (#onPolled). Else the disk
   * took those rows as the repeated times before the step, and the ring its polls of them too.
   */
  filesSteppedBack: boolean;
  /**
   * The device's first poll in each period of the disk tier it was polled in (`no`: History's
   * #stepBacks at that poll), oldest first, from the one of the ring's oldest kept poll on (at
   * most one per poll the ring keeps): after several step backs of the wall clock, the disk rows
   * of the periods before that one hold no poll the ring keeps (#answer, olderAfter).
   */
  readonly periods: { seq: number; no: number }[];
  /**
   * Signals a rediscovery removed while this entry lived (null: none), oldest first, at most
   * MAX_RELEASED_SIGNAL_IDS, each with the device's first poll without it (the ring's nextSeq
   * then): a question without signal_id asks the disk tier for them; an incident whose window
   * held polls before that says its record has no line of it (releasedSince).
   */
  released: Map<string, number> | null;
  /**
   * Signal id -> its declared unit and the changes of it seen (#rebuild, at a rediscovery: never
   * per poll), for the signals polled or released.
   */
  readonly units: Map<string, SignalUnits>;
  /**
   * The newest `at_ms` of its signals' unit changes (-Infinity: none): a poll before it (the wall
   * clock stepped back) dates them at that poll (#unitChangesBack).
   */
  unitChangedMs: number;
  /**
   * Bucket start of the newest disk row of the time before the last step back of the wall clock
   * behind its polls (in this run, or behind the disk tier's last row at its first poll), or
   * -Infinity: the disk rows of those repeated times written before the step, up to it, hold
   * samples the ring may no longer have (#answer).
   */
  priorBucketMs: number;
  /**
   * Bucket start of the wall time the entry was made at: begun behind the rows an earlier run
   * wrote when the files' last row at open is after it -- also when the disk tier's open worked
   * only later, at its retry (#priorBucketMs).
   */
  readonly madeBucketMs: number;
  /**
   * Bucket start of the newest row the device's earlier rings of this run (those the sweep let go:
   * rowRing below ring.startSeq) handed to the disk tier, or -Infinity: their rows lie at or
   * before it (#answer reads the disk that far, not to another device's newest row). Past
   * HISTORY_SWEPT_DEVICES_KEPT devices let go, a forgotten one's is #sweptFloorMs.
   */
  readonly ringsBeforeMs: number;
  /** Bucket start of the newest row (by time) this entry's ring handed to the disk tier. */
  newestRowMs: number;
  /**
   * The least stale bound (StateCache.staleAfterMs, ms) of `pollable`'s signals, as read at the
   * cache's boundsVersion `boundsVersion` (-1: not read yet; read again when it changes or the
   * entry is rebuilt, never per poll). An answer recorded longer than it after its arrival (held
   * behind another device's hung read) may bring a sample stale already: its samples are read
   * then as GET /v0/state reads them (#onPolled).
   */
  leastStaleMs: number;
  boundsVersion: number;
}

/**
 * A signal's declared unit and type (null: unspecified) and its unit changes seen in this run (at
 * most MAX_UNIT_CHANGES).
 */
interface SignalUnits {
  unit: string;
  type: ValueType | null;
  readonly changes: HistoryUnitChange[];
  /** Each change's first poll in the new unit (its sequence number), as `changes`. */
  readonly seqs: number[];
  /** The first poll of the oldest change forgotten (-Infinity: none): the units before, unknown. */
  knownFromSeq: number;
}

export interface HistoryOptions {
  readonly config: HistoryConfig;
  /** runtime.data_dir: the disk tier lives in `<data_dir>/history`. */
  readonly dataDir: string;
  readonly files: JournalFiles;
  readonly clock: Clock;
  readonly log: Logger;
  readonly cache: Pick<
    StateCache,
    | "onDevicePolled"
    | "device"
    | "qualityNow"
    | "staleAfterMs"
    | "boundsVersion"
    | "declaredType"
    | "declaredUnit"
  >;
}

/** Forward steps of the wall clock History remembers at once (the oldest is forgotten first). */
export const MAX_WALL_STEPS = 8;

/** The ring, the disk tier and their query. */
export class History {
  readonly #o: HistoryOptions;
  readonly #budget: RingBudget;
  /** provider id -> device id -> entry (two lookups per poll, no key string made). */
  readonly #devices = new Map<string, Map<string, DeviceEntry>>();
  readonly #disk: DiskTier | null;
  #unsubscribe: (() => void) | null = null;
  readonly #memoryMs: number;
  /** Wall time of the last sweep for removed devices (HISTORY_SWEEP_EVERY_MS). */
  #sweptAtMs = -Infinity;
  /** The bucket the newest poll fell in (null before the first): every older one is written. */
  #bucketNow: number | null = null;
  /**
   * Steps back of the wall clock the polls crossed into an earlier bucket at, with a disk tier
   * (#crossBucket), in this run: each begins a period of the disk tier (a new file, once its first
   * row is written: #periodRowHanded).
   */
  #stepBacks = 0;
  /**
   * Whether a row was handed to the disk tier since the last of #stepBacks (true before any): the
   * file that begins its period is begun only with that row (DiskTier.read's stepBacksAfter).
   */
  #periodRowHanded = true;
  /** Forward steps of the wall clock within the last memory_seconds (see #horizon), oldest first. */
  readonly #steps: { atMono: number; atWall: number; deltaMs: number }[] = [];
  /** The sum of #steps' deltas. */
  #stepShift = 0;
  /** Wall minus monotonic time at the last poll (null before the first). */
  #lastOffset: number | null = null;
  /** Monotonic time of the last poll (#horizon). */
  #monoNow = 0;
  /**
   * One-shot watches of a device's next recorded poll (onNextPoll), by `provider/device`: at most
   * one per device (a new one replaces it), so bounded by the devices.
   */
  readonly #nextPollWatches = new Map<string, (mono: number) => void>();
  /**
   * Told when a rediscovery declares signals with another type or unit (onRedeclare), before it
   * releases a retyped signal's old series: the incident recorder reads its waiting records'
   * windows while they still hold them, and before a sample of the new declaration. One listener.
   */
  #redeclareWatch: ((providerId: string, deviceId: string, r: HistoryRedeclared) => void) | null =
    null;
  /** Stops so far: a start under way when one came subscribes to no poll (start). */
  #stops = 0;
  /**
   * Where a new device ring's poll numbers begin: past every number a ring let go by the sweep
   * gave, so a device declared again never repeats its old ring's numbers (a reader holding one,
   * Sparkplug's replay, learns those polls are gone). One number, not one per device.
   */
  #seqBase = 0;
  /**
   * Of each device the sweep let go (provider and device id, JSON), the bucket start of the newest
   * row its rings of this run handed to the disk tier: a ring made again for it takes it as its
   * ringsBeforeMs. At most HISTORY_SWEPT_DEVICES_KEPT, the longest let go forgotten first.
   */
  readonly #sweptRowsMs = new Map<string, number>();
  /** The newest of the forgotten devices' rows (-Infinity: none forgotten): theirs lie before it. */
  #sweptFloorMs = -Infinity;
  /** Rings made without room: one WARN when the episode begins, one INFO when it ends. */
  readonly #roomlessEpisode: ShortageEpisode;
  /** Values too large to keep: one WARN when the episode begins, one INFO when it ends. */
  readonly #tooLargeEpisode: ShortageEpisode;
  /** Values not kept in the ring for being too large, since start (HistoryStatus). */
  #valuesNotKept = 0;

  constructor(options: HistoryOptions) {
    // Lines that never throw (a custom sink that fails loses its line only): the disk tier says a
    // failed write before it keeps the write's rows for the retry, where a logger that threw lost
    // them uncounted and rejected the write (an unhandled rejection ends the runtime).
    const o: HistoryOptions = { ...options, log: neverThrowing(options.log) };
    this.#o = o;
    this.#budget = new RingBudget(o.config.memoryMaxBytes);
    const max = o.config.memoryMaxBytes;
    this.#roomlessEpisode = new ShortageEpisode(
      o.log,
      (n) =>
        `history: every ring has room in history.memory_max_bytes (${max}) again (${n} ring(s) ` +
        `were made without room since the WARN)`,
    );
    this.#tooLargeEpisode = new ShortageEpisode(
      o.log,
      (n) =>
        `history: every signal's latest value fits history.memory_max_bytes (${max}) again ` +
        `(${n} value(s) too large were not kept since the WARN)`,
    );
    this.#memoryMs = o.config.memorySeconds * 1000;
    this.#disk = o.config.diskMaxBytes > 0
      ? new DiskTier({
        files: o.files,
        dir: `${o.dataDir}/history`,
        maxBytes: o.config.diskMaxBytes,
        clock: o.clock,
        log: o.log,
      })
      : null;
  }

  get config(): HistoryConfig {
    return this.#o.config;
  }

  /**
   * Opens the disk tier and subscribes to every poll (before the providers start). A stop while
   * the tier opens (a start abandoned on a hung mount that answers after the stop) ends it there:
   * the stopped history records no poll.
   */
  async start(): Promise<void> {
    const stops = this.#stops;
    await this.#disk?.open();
    if (this.#stops !== stops) return;
    this.#unsubscribe ??= this.#o.cache.onDevicePolled(this.#onPolled);
  }

  /** Records no poll from now on (the runtime stops: its providers' going is not recorded). */
  detach(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
  }

  /** Unsubscribes, writes every open bucket and closes the disk tier. */
  async stop(): Promise<void> {
    this.#stops++;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#nextPollWatches.clear();
    for (const devices of this.#devices.values()) {
      for (const e of devices.values()) this.#flushBucket(e);
    }
    await this.#disk?.close();
  }

  /** Rows handed to the disk tier neither written nor dropped yet (DiskTier.rowsPending). */
  get diskRowsPending(): number {
    return this.#disk?.rowsPending ?? 0;
  }

  /** Rows the disk tier has written so far (DiskTier.rowsWritten; 0 without one). */
  get diskRowsWritten(): number {
    return this.#disk?.rowsWritten ?? 0;
  }

  /** Resolves once every row handed to the disk tier so far was written or dropped. */
  async flushDisk(): Promise<void> {
    await this.#disk?.flush();
  }

  status(): HistoryStatus {
    const now = this.#o.clock.nowMs();
    let reach = Infinity;
    let devices = 0;
    for (const m of this.#devices.values()) {
      for (const e of m.values()) {
        devices++;
        const oldest = e.ring.oldestMs();
        // A device polled with no poll kept (roomless) reaches back none. One not polled since a
        // step back of the wall clock (its provider down) holds polls dated ahead of the clock: no
        // reach to say, the rest's is.
        if (oldest === null) reach = 0;
        else if (oldest <= now) reach = Math.min(reach, now - oldest - this.#stepsSince(oldest));
      }
    }
    return {
      memoryBytes: this.#budget.bytes,
      memoryMaxBytes: this.#budget.maxBytes,
      memoryReachSeconds: reach === Infinity ? 0 : Math.max(0, reach / 1000),
      memoryRoomlessRings: this.#budget.roomless,
      memoryValuesNotKept: this.#valuesNotKept,
      devices,
      disk: this.#disk?.status() ?? {
        state: "off",
        rowsWritten: 0,
        rowsDropped: 0,
        rowsHeld: 0,
        writeErrors: 0,
        rowsUnreadable: 0,
        readErrors: 0,
        lastError: null,
      },
    };
  }

  /**
   * The forward steps of the wall clock (those #horizon remembers) since a poll recorded at
   * `timeMs`: how much older than it really is its time makes it look.
   */
  #stepsSince(timeMs: number): number {
    let shift = 0;
    for (const step of this.#steps) if (step.atWall > timeMs) shift += step.deltaMs;
    return shift;
  }

  // ---- the poll path ---------------------------------------------------------------------------

  readonly #onPolled = (dev: DeviceState): void => {
    const now = this.#o.clock.nowMs();
    // The poll's time: a failed read's is its arrival, as the cache dates its UNAVAILABLE marks
    // and device_availability (one held behind another device's hung read is applied later); an
    // answer's stays its apply (its samples are recorded as GET /v0/state reads them then).
    const at = dev.available ? now : this.#failedReadAt(dev, now);
    let byDevice = this.#devices.get(dev.providerId);
    if (byDevice === undefined) this.#devices.set(dev.providerId, byDevice = new Map());
    let e = byDevice.get(dev.deviceId);
    if (e === undefined) {
      const seqBase = this.#seqBase;
      const key = sweptKey(dev.providerId, dev.deviceId);
      const ringsBeforeMs = this.#sweptRowsMs.get(key) ?? this.#sweptFloorMs;
      this.#sweptRowsMs.delete(key); // (the new entry carries it, and gives it back when let go)
      e = {
        ring: new DeviceRing(dev.providerId, dev.deviceId, this.#budget, seqBase),
        pollable: null,
        signals: [],
        bucketStart: null,
        polledMono: 0,
        writtenBucket: null,
        writtenSeq: 0,
        filesSteppedBack: false,
        periods: [],
        released: null,
        units: new Map(),
        unitChangedMs: -Infinity,
        priorBucketMs: this.#filesAheadMs(now, ringsBeforeMs),
        madeBucketMs: bucketStart(now, this.#o.config.stepMs),
        ringsBeforeMs,
        newestRowMs: -Infinity,
        leastStaleMs: Infinity,
        boundsVersion: -1,
      };
      byDevice.set(dev.deviceId, e);
      if (e.ring.roomless) this.#warnRoomless(dev.providerId, dev.deviceId, null);
    }
    if (at < e.unitChangedMs) this.#unitChangesBack(e, at);
    if (e.pollable !== dev.pollable) this.#rebuild(e, dev, at);
    const step = this.#o.config.stepMs;
    const b = bucketStart(at, step);
    if (b !== this.#bucketNow) this.#crossBucket(b);
    if (e.bucketStart !== b) {
      if (e.bucketStart !== null) this.#flushBucket(e);
      e.bucketStart = b;
    }
    const ring = e.ring;
    const horizon = this.#horizon(now);
    e.polledMono = this.#monoNow;
    const newestPoll = ring.newestMs();
    // (A step back this device's poll did not see, as its rows did: filesSteppedBack.)
    const steppedBack = e.filesSteppedBack;
    e.filesSteppedBack = false;
    if (newestPoll !== null && (at < newestPoll || steppedBack)) {
      e.priorBucketMs = Math.max(e.priorBucketMs, bucketStart(newestPoll, step));
    }
    const seq = ring.addPoll(at, horizon, steppedBack);
    const periods = e.periods;
    if (periods.at(-1)?.no !== this.#stepBacks) periods.push({ seq, no: this.#stepBacks });
    // (The ring's oldest kept poll is in the first period kept: those before it hold none.)
    while (periods.length > 1 && periods[1]!.seq <= ring.firstSeq) periods.shift();
    if (this.#nextPollWatches.size !== 0) this.#tellNextPoll(dev.providerId, dev.deviceId);
    const oldest = ring.firstSeq;
    const pollable = dev.pollable;
    const signals = dev.signals;
    const cache = this.#o.cache;
    // The samples this poll brought are dated by its answer's arrival (lastPollMono): an answer
    // applied later than the least stale bound after it (held behind another device's hung read)
    // may be stale already, and is then read as GET /v0/state reads it now, not as stored.
    if (e.boundsVersion !== cache.boundsVersion) this.#readLeastStale(e, dev);
    const late = this.#monoNow - dev.lastPollMono > e.leastStaleMs;
    for (let i = 0; i < pollable.length; i++) {
      const s = signals.get(pollable[i]!);
      const sig = e.signals[i]!;
      if (s === undefined) {
        // The cache has no sample of it: a device described afresh (its provider replaced by a
        // reload) until the new process reports the signal. GET /v0/state has none: no value,
        // UNAVAILABLE -- never the ring's last change (the old process's) read as this poll's.
        if (sig.recorded) {
          sig.record(seq, null, null, "UNAVAILABLE", oldest);
          sig.add(false, NaN, null, CODES.UNAVAILABLE);
        }
        continue;
      }
      const value = s.value;
      const d = value === null ? null : exactDouble(value);
      // The quality a reader saw at this poll: an OK sample this poll did not bring (the provider
      // left the signal out of its answer), or one it brought late, is STALE past its bound, as
      // GET /v0/state reads it.
      const quality = s.quality !== "OK" || (s.receivedMono === dev.lastPollMono && !late)
        ? s.quality
        : cache.qualityNow(dev.providerId, dev.deviceId, pollable[i]!, s);
      if (!sig.record(seq, value, d, quality, oldest)) {
        this.#valuesNotKept++;
        this.#warnTooLarge(dev.providerId, dev.deviceId, pollable[i]!, value!);
      }
      sig.add(value !== null, d ?? NaN, d === null ? value : null, qualityCode(quality));
    }
    // (A wall clock stepped back sweeps at once and starts the count again.)
    if (now - this.#sweptAtMs >= HISTORY_SWEEP_EVERY_MS || now < this.#sweptAtMs) {
      this.#sweptAtMs = now;
      this.#sweepRemoved(horizon);
      // A shortage over (and quiet for HISTORY_SHORTAGE_QUIET_MS) ends its episode: said once.
      const mono = this.#o.clock.monoMs();
      this.#roomlessEpisode.sweep(mono, this.#budget.roomless === 0);
      this.#tooLargeEpisode.sweep(mono, this.#budget.notKept === 0);
    }
  };

  /**
   * The time a failed read of `dev` is recorded at (`now`: the wall clock at its apply): its
   * arrival (DeviceState.lastFailMs), but not before the open bucket (#bucketNow) -- a bucket
   * written since it arrived is not written again (the disk tier's rows ascend within a file), so
   * a failure held across a bucket's end is dated at the next one's start, the nearest to its
   * arrival the disk can hold -- and never after `now` (its arrival read before a step back of
   * the wall clock: the poll is recorded as that step's, as before). The same device's outcomes
   * are applied in request order, so it is not before the device's polls recorded before it.
   * Only for a failed read (the OK path does not come here).
   */
  #failedReadAt(dev: DeviceState, now: number): number {
    const arrived = dev.lastFailMs ?? 0;
    if (arrived <= 0 || arrived >= now) return now;
    const open = this.#bucketNow;
    return open === null || arrived >= open ? arrived : Math.min(open, now);
  }

  /**
   * Reads the least stale bound of the device's polled signals into its entry (leastStaleMs), at
   * the cache's boundsVersion now: when the bounds changed (inventory, reload), not per poll.
   */
  #readLeastStale(e: DeviceEntry, dev: DeviceState): void {
    const cache = this.#o.cache;
    let least = Infinity;
    for (const id of dev.pollable) {
      least = Math.min(least, cache.staleAfterMs(dev.providerId, dev.deviceId, id));
    }
    e.leastStaleMs = least;
    e.boundsVersion = cache.boundsVersion;
  }

  /**
   * The wall time before which a ring drops its polls: memory_seconds before `now`, and earlier by
   * every forward step of the wall clock within the last memory_seconds of monotonic time. A poll
   * recorded before such a step carries a time from before it, so without the shift a step longer
   * than memory_seconds (the first NTP synchronisation of a board without a real-time clock) would
   * drop every poll from before it at once -- the store and forward of the plant link and the
   * pre-trigger samples of incidents with them -- though none is older than memory_seconds. With
   * it, a poll goes once memory_seconds have really passed since it. (A step back keeps the polls
   * recorded ahead of it: ring.ts, addPoll.) Steps within WALL_STEP_MS (common) between two polls
   * are the clock's slewing, not steps; at most MAX_WALL_STEPS are remembered.
   */
  #horizon(now: number): number {
    const mono = this.#o.clock.monoMs();
    this.#monoNow = mono;
    const offset = now - mono;
    const last = this.#lastOffset;
    this.#lastOffset = offset;
    const steps = this.#steps;
    if (last !== null && offset - last > WALL_STEP_MS) {
      if (steps.length === MAX_WALL_STEPS) this.#stepShift -= steps.shift()!.deltaMs;
      steps.push({ atMono: mono, atWall: now, deltaMs: offset - last });
      this.#stepShift += offset - last;
    }
    while (steps.length > 0 && mono - steps[0]!.atMono > this.#memoryMs) {
      this.#stepShift -= steps.shift()!.deltaMs;
    }
    return now - this.#memoryMs - this.#stepShift;
  }

  /**
   * Lets go of the rings of devices the cache no longer has once everything they hold is older
   * than memory_seconds (no poll will come to drop it): their open bucket goes to the disk tier,
   * their bytes back to the shared budget (else every reload that removes a device would shorten
   * the reach of the rest for good). A device of a provider that is down is still the cache's:
   * its last minutes stay. "Older" is by `horizon` (#horizon), as for the rings still polled: a
   * forward step of the wall clock does not make a removed device's last polls look old.
   */
  #sweepRemoved(horizon: number): void {
    for (const [providerId, byDevice] of this.#devices) {
      for (const [deviceId, e] of byDevice) {
        if (this.#o.cache.device(providerId, deviceId) !== undefined) continue;
        // Its polls from before a step back of the wall clock carry times ahead of it: as the
        // polled rings' (ring.ts, addPoll), they go once memory_seconds have really passed.
        const newest = e.ring.newestMs();
        const recent = this.#monoNow - e.polledMono <= this.#memoryMs;
        if (newest !== null && newest >= horizon && recent) continue;
        this.#flushBucket(e);
        e.ring.release();
        this.#seqBase = Math.max(this.#seqBase, e.ring.nextSeq);
        this.#rememberSwept(providerId, deviceId, Math.max(e.ringsBeforeMs, e.newestRowMs));
        byDevice.delete(deviceId);
      }
      if (byDevice.size === 0) this.#devices.delete(providerId);
    }
  }

  /**
   * Keeps where the rows of a device let go end (its ringsBeforeMs when picked up again); past
   * HISTORY_SWEPT_DEVICES_KEPT the longest let go is forgotten into #sweptFloorMs.
   */
  #rememberSwept(providerId: string, deviceId: string, newestRowMs: number): void {
    if (newestRowMs === -Infinity) return; // no row: nothing to read of it
    const key = sweptKey(providerId, deviceId);
    this.#sweptRowsMs.delete(key); // (set again: the last let go is the last forgotten)
    this.#sweptRowsMs.set(key, newestRowMs);
    if (this.#sweptRowsMs.size <= HISTORY_SWEPT_DEVICES_KEPT) return;
    const [oldest, t] = this.#sweptRowsMs.entries().next().value!;
    this.#sweptRowsMs.delete(oldest);
    this.#sweptFloorMs = Math.max(this.#sweptFloorMs, t);
  }

  /**
   * The polls crossed into bucket `b`: every device's open bucket before it goes to the disk tier
   * now, oldest first -- not at that device's own next poll, which for a device polled each minute
   * or whose provider is down comes after later rows of the others (the disk tier's reader relies
   * on rows ascending within a file). A wall clock stepped back writes every open bucket (the disk
   * tier begins a new file for the rows after them).
   */
  #crossBucket(b: number): void {
    const back = this.#bucketNow !== null && b < this.#bucketNow;
    this.#bucketNow = b;
    const open: DeviceEntry[] = [];
    // (Every device's rows so far are before the step: filesSteppedBack. No disk tier, no rows.)
    const filesBack = back && this.#disk !== null;
    for (const byDevice of this.#devices.values()) {
      for (const e of byDevice.values()) {
        if (filesBack) e.filesSteppedBack = true;
        if (e.bucketStart !== null && (back || e.bucketStart < b)) open.push(e);
      }
    }
    open.sort((x, y) => x.bucketStart! - y.bucketStart!);
    for (const e of open) {
      this.#flushBucket(e);
      e.bucketStart = null;
    }
    // (After the rows of the period before: the next row begins the new one's file.)
    if (filesBack) {
      this.#stepBacks++;
      this.#periodRowHanded = false;
    }
  }

  /**
   * For a ring made at wall time `now`: the bucket start of the newest row of the device's in the
   * files when it is ahead of `now`'s bucket, else -Infinity. Begun behind rows an earlier run
   * wrote (a board without a real-time clock) or an earlier ring of this run (a device the sweep
   * let go, picked up again after the wall clock stepped back): no ring holds their samples, the
   * disk answers them (#answer). Its earlier rings' rows lie at or before `ringsBeforeMs` (the
   * device's, not another device's newer rows: a question over it reads no further), an earlier
   * run's at or before the files' last row at open (of any device: which is not known).
   */
  #filesAheadMs(now: number, ringsBeforeMs: number): number {
    const newest = Math.max(ringsBeforeMs, this.#disk?.lastRowAtOpen ?? -Infinity);
    return newest > bucketStart(now, this.#o.config.stepMs) ? newest : -Infinity;
  }

  /**
   * The entry's priorBucketMs as known now: the disk tier's open may have worked only at its retry
   * (a full or read-only disk at start), after the entry was made, and the files' last row at
   * open, learnt then, is ahead of the entry's first bucket: begun behind it, as #filesAheadMs
   * would have said at an open that worked.
   */
  #priorBucketMs(e: DeviceEntry): number {
    const atOpen = this.#disk?.lastRowAtOpen ?? -Infinity;
    return atOpen > e.madeBucketMs ? Math.max(e.priorBucketMs, atOpen) : e.priorBucketMs;
  }

  /** The period of the disk tier (#stepBacks) the device's kept poll `seq` was recorded in. */
  #periodOf(e: DeviceEntry, seq: number): number {
    let no = e.periods[0]?.no ?? this.#stepBacks;
    for (const p of e.periods) if (p.seq <= seq) no = p.no;
    return no;
  }

  /**
   * How many files begin a period of the disk tier after the rows of period `no` (#stepBacks at
   * their polls), as DiskTier.read counts them (stepBacksAfter): one per step back since, but
   * for the last one while no row of its period was handed to the disk yet (its file is not
   * begun).
   */
  #periodsBegunAfter(no: number): number {
    const after = this.#stepBacks - no;
    return after > 0 && !this.#periodRowHanded ? after - 1 : after;
  }

  /**
   * Start of the bucket of the next row any device hands to the disk tier (Infinity: none is
   * open): the earliest open bucket, as #crossBucket writes them oldest first. Every open bucket is
   * #bucketNow today (a crossing writes each one before it, a step back every one), but the disk
   * tier's judgement of a step back still pending (DiskTier.read's openBucketMs) is of the files,
   * not of one device: it is taken from every device here, whichever device is asked of -- one the
   * ring holds nothing of, or one not polled in the open bucket, too -- and not from the asking
   * device's entry, so a device with an open bucket of its own (say a per-device bucket) would
   * not silently change the answer for the others. Bounded by the devices held.
   */
  #nextRowBucketMs(): number {
    let min = Infinity;
    for (const byDevice of this.#devices.values()) {
      for (const e of byDevice.values()) {
        if (e.bucketStart !== null && e.bucketStart < min) min = e.bucketStart;
      }
    }
    return min;
  }

  /**
   * The device's signals changed (rediscovery): rings of signals kept, others released. A signal
   * declared now with another type than its ring's values (retyped) starts a new series: its old
   * samples are released, as a removed signal's, so no answer mixes the two types (the disk tier's
   * rows name their type: query drops the old type's), and its ring is marked trimmed to the next
   * poll. A signal declared with another unit keeps its samples: the change is noted, at `now`
   * and this poll's number (the first in the new unit), for the answers to say and for store and
   * forward's replay to tell the samples' units apart (unitAt).
   */
  #rebuild(e: DeviceEntry, dev: DeviceState, now: number): void {
    if (e.bucketStart !== null) this.#flushBucket(e);
    e.bucketStart = null;
    const pollable = dev.pollable;
    // Rings kept, and (null) the signals given a new one: made once the rings let go of (removed,
    // retyped) gave their bytes back, so the budget has them for the new ones.
    const kept = new Map<string, SignalRing | null>();
    const retyped = new Set<string>();
    // Signals of the same type declared in another unit than their samples so far were polled in.
    const unitChanged: string[] = [];
    for (const id of pollable) {
      const old = e.ring.signals.get(id);
      const declared = this.#o.cache.declaredType(dev.providerId, dev.deviceId, id) ?? null;
      if (old !== undefined && old.type !== null && declared !== null && declared !== old.type) {
        retyped.add(id);
        kept.set(id, null);
        continue;
      }
      const known = e.units.get(id);
      const unit = this.#o.cache.declaredUnit(dev.providerId, dev.deviceId, id) ?? "";
      if (known !== undefined && known.unit !== unit) unitChanged.push(id);
      kept.set(id, old ?? null);
    }
    // Incidents waiting for their window read it now, with the old series (their lead-up), before
    // this poll records a sample of the new declaration.
    if (retyped.size > 0 || unitChanged.length > 0) {
      this.#redeclareWatch?.(dev.providerId, dev.deviceId, { retyped: [...retyped], unitChanged });
    }
    for (const [id, s] of e.ring.signals) {
      if (kept.get(id) === s) continue;
      s.release(); // a removed signal's, or a retyped one's old series
      if (retyped.has(id)) continue;
      const released = e.released ??= new Map();
      released.set(id, e.ring.nextSeq);
      if (released.size > MAX_RELEASED_SIGNAL_IDS) released.delete(released.keys().next().value!);
    }
    for (const [id, s] of kept) {
      if (s !== null) continue;
      const fresh = new SignalRing(id, this.#budget);
      if (fresh.roomless) this.#warnRoomless(dev.providerId, dev.deviceId, id);
      // A retyped signal's changes are kept from the next poll on only: a walk from before says
      // the old type's were lost (ChangeWalk.reachFromSeq), as when the byte bound trims them. So
      // are those of one declared again after a rediscovery left it out (its old ring released).
      const absentFromSeq = e.released?.get(id);
      if (retyped.has(id) || absentFromSeq !== undefined) fresh.trimmedToSeq = e.ring.nextSeq;
      if (absentFromSeq !== undefined && !retyped.has(id)) {
        fresh.declaredAgain = { absentFromSeq, seq: e.ring.nextSeq };
      }
      kept.set(id, fresh);
    }
    for (const id of pollable) e.released?.delete(id);
    for (const id of pollable) {
      const unit = this.#o.cache.declaredUnit(dev.providerId, dev.deviceId, id) ?? "";
      const type = this.#o.cache.declaredType(dev.providerId, dev.deviceId, id) ?? null;
      const known = e.units.get(id);
      if (known === undefined) {
        e.units.set(id, { unit, type, changes: [], seqs: [], knownFromSeq: -Infinity });
        continue;
      }
      known.type = type;
      if (known.unit !== unit) {
        known.changes.push({ at_ms: now, unit_before: known.unit, unit });
        known.seqs.push(e.ring.nextSeq);
        if (known.changes.length > MAX_UNIT_CHANGES) {
          known.changes.shift();
          known.knownFromSeq = known.seqs.shift()!;
        }
        known.unit = unit;
        e.unitChangedMs = now;
      }
    }
    // Those of signals neither polled nor remembered as released are forgotten (bounded).
    for (const id of e.units.keys()) {
      if (!kept.has(id) && !(e.released?.has(id) ?? false)) e.units.delete(id);
    }
    e.ring.signals.clear();
    for (const [id, s] of kept) e.ring.signals.set(id, s!);
    e.signals = pollable.map((id) => kept.get(id)!);
    e.pollable = pollable;
    e.boundsVersion = -1; // its least stale bound read again, of the signals polled now
  }

  /**
   * The wall clock stepped back behind the device's unit changes (their `at_ms`): they are dated at
   * this poll, the first after the step. Every poll since the step is in the new unit, and the
   * ring's time searches begin at the step (ring.ts, addPoll); dated at their wall time, ahead of
   * the clock, those polls would read as before the change. The disk buckets of the repeated times
   * hold both periods' samples, as a bucket spanning a change, and so may the ring's part of an
   * answer over them (its polls from before the step: #answer), labelled by their times too.
   */
  #unitChangesBack(e: DeviceEntry, now: number): void {
    for (const { changes } of e.units.values()) {
      for (let i = 0; i < changes.length; i++) {
        if (changes[i]!.at_ms > now) changes[i] = { ...changes[i]!, at_ms: now };
      }
    }
    e.unitChangedMs = now;
  }

  /**
   * A ring was made without room (memory_max_bytes is full): one WARN per episode (the rings of
   * every provider share the budget), naming the ring that began it (the metric counts them all);
   * one INFO once every ring has room again (ShortageEpisode).
   */
  #warnRoomless(providerId: string, deviceId: string, signalId: string | null): void {
    this.#roomlessEpisode.occurred(
      this.#o.clock.monoMs(),
      () => this.#roomlessLine(providerId, deviceId, signalId),
    );
  }

  #roomlessLine(providerId: string, deviceId: string, signalId: string | null): string {
    const what = signalId === null
      ? `the polls of device ${
        quoteProviderTextWithin(`${providerId}/${deviceId}`, HISTORY_QUOTED_SIGNAL_CHARS)
      }`
      : `signal ${
        quoteProviderTextWithin(
          `${providerId}/${deviceId}/${signalId}`,
          HISTORY_QUOTED_SIGNAL_CHARS,
        )
      }`;
    return `history: memory_max_bytes (${this.#budget.maxBytes}) has no room for the ring of ` +
      `${what}: it keeps nothing until the rings have room (the disk tier still gets its ` +
      `buckets); ${this.#budget.roomless} ring(s) keep nothing now ` +
      `(runtime_history_memory_roomless_rings), the next ones are not logged until every ring ` +
      `has room again (an INFO says so); raise history.memory_max_bytes`;
  }

  /**
   * A value too large for memory_max_bytes was not kept in the ring (SignalRing.record): one WARN
   * per episode (every provider's signals share the budget), naming the signal that began it; one
   * INFO once every signal's latest value is kept again (ShortageEpisode).
   */
  #warnTooLarge(providerId: string, deviceId: string, signalId: string, value: TypedValue): void {
    this.#tooLargeEpisode.occurred(
      this.#o.clock.monoMs(),
      () => this.#tooLargeLine(providerId, deviceId, signalId, value),
    );
  }

  #tooLargeLine(providerId: string, deviceId: string, signalId: string, value: TypedValue): string {
    const signal = quoteProviderTextWithin(
      `${providerId}/${deviceId}/${signalId}`,
      HISTORY_QUOTED_SIGNAL_CHARS,
    );
    return `history: a ${value.type} value of signal ${signal} (${refBytes(value)} bytes) is ` +
      `too large for history.memory_max_bytes (${this.#budget.maxBytes}): the ring does not keep ` +
      `it (the disk tier still gets its buckets; GET /v0/history answers the signal from there ` +
      `until a value that fits); the next ones are not logged until every signal's latest value ` +
      `fits again (an INFO says so; runtime_history_memory_values_not_kept_total counts them); ` +
      `raise history.memory_max_bytes or send shorter values`;
  }

  /** Hands the device's open bucket to the disk tier and resets it. */
  #flushBucket(e: DeviceEntry): void {
    const t = e.bucketStart;
    if (t === null) return;
    const parts: [string, HistoryPoint, ValueType | null][] = [];
    for (const sig of e.signals) {
      if (sig.count > 0) parts.push([sig.signalId, sig.point(t), sig.type]);
      sig.reset();
    }
    if (parts.length > 0) {
      if (this.#disk !== null) {
        // (Named by its ring's first poll number: an earlier ring's rows of the same times are
        // told apart by it, #answer.)
        this.#disk.write(
          rowText(t, e.ring.providerId, e.ring.deviceId, parts, e.ring.startSeq),
          t,
        );
        if (t > e.newestRowMs) e.newestRowMs = t;
        this.#periodRowHanded = true;
      }
      e.writtenBucket = t;
      e.writtenSeq = e.ring.nextSeq;
    }
  }

  // ---- reading -------------------------------------------------------------------------------

  /** Whether the ring holds anything of the device. */
  knows(providerId: string, deviceId: string): boolean {
    return this.#devices.get(providerId)?.has(deviceId) ?? false;
  }

  /** The wall time of the oldest poll the ring holds of a device (null: none). */
  oldestPollMs(providerId: string, deviceId: string): number | null {
    return this.#devices.get(providerId)?.get(deviceId)?.ring.oldestMs() ?? null;
  }

  /** The signal ids the ring holds for a device (in poll order). */
  signalIds(providerId: string, deviceId: string): string[] {
    return this.#devices.get(providerId)?.get(deviceId)?.signals.map((s) => s.signalId) ?? [];
  }

  /**
   * A signal's declared type (null: unspecified; undefined: not known): as its device declares it
   * now, or, while no provider lists the device (a reload restarting its provider, or failing to
   * start it), as declared at its last discovery (declaredUnits).
   */
  #declaredType(
    providerId: string,
    deviceId: string,
    signalId: string,
    e: DeviceEntry | undefined,
  ): ValueType | null | undefined {
    const now = this.#o.cache.declaredType(providerId, deviceId, signalId);
    return now !== undefined ? now : e?.units.get(signalId)?.type;
  }

  /**
   * The units a device's polls were recorded in (as declared at its last discovery, "" for none)
   * and the signals' types declared then (null: unspecified), by signal, a copy; undefined when
   * the ring holds no such device. Kept while no provider lists the device (a reload restarting
   * its provider, or failing to start it).
   */
  declaredUnits(
    providerId: string,
    deviceId: string,
  ): { signalId: string; unit: string; valueType: ValueType | null }[] | undefined {
    const e = this.#devices.get(providerId)?.get(deviceId);
    return e === undefined
      ? undefined
      : [...e.units].map(([signalId, u]) => ({ signalId, unit: u.unit, valueType: u.type }));
  }

  /**
   * The unit a signal's sample of the device's poll `seq` was polled in, as its device declared
   * it then ("" for none; store and forward's replay): null when not known (a signal the entry
   * notes no units of, or a poll before the oldest change it remembers, MAX_UNIT_CHANGES).
   */
  unitAt(providerId: string, deviceId: string, signalId: string, seq: number): string | null {
    const u = this.#devices.get(providerId)?.get(deviceId)?.units.get(signalId);
    if (u === undefined || seq < u.knownFromSeq) return null;
    for (let i = 0; i < u.seqs.length; i++) if (seq < u.seqs[i]!) return u.changes[i]!.unit_before;
    return u.unit;
  }

  /**
   * The device's first poll in the unit a signal is declared in now (its newest unit change seen:
   * the polls before it were in another unit); -1 when none was seen (incidents: a line has one
   * unit, so it begins there). The newest change is never forgotten (MAX_UNIT_CHANGES).
   */
  unitSinceSeq(providerId: string, deviceId: string, signalId: string): number {
    const u = this.#devices.get(providerId)?.get(deviceId)?.units.get(signalId);
    return u === undefined || u.seqs.length === 0 ? -1 : u.seqs[u.seqs.length - 1]!;
  }

  /**
   * The full-rate samples of one signal in [sinceMs, untilMs] from the ring (incidents), in poll
   * order, those kept from before a step back of the wall clock included, and those of the polls
   * from `anyTimeFromSeq` on (see nextPollSeq) whatever their times; `each` gets a reused cursor.
   */
  eachSample(
    providerId: string,
    deviceId: string,
    signalId: string,
    sinceMs: number,
    untilMs: number,
    each: (s: RingSample) => void,
    anyTimeFromSeq = Infinity,
  ): ValueType | null {
    const e = this.#devices.get(providerId)?.get(deviceId);
    const sig = e?.ring.signals.get(signalId);
    if (e === undefined || sig === undefined) return null;
    e.ring.samplesBetween(sig, sinceMs, untilMs, each, anyTimeFromSeq);
    return sig.type;
  }

  /**
   * The full-rate samples of one signal at the device's kept polls from `fromSeq` on, whatever
   * their times (incidents), in poll order; `each` gets a reused cursor.
   */
  eachSampleFrom(
    providerId: string,
    deviceId: string,
    signalId: string,
    fromSeq: number,
    each: (s: RingSample) => void,
  ): ValueType | null {
    const e = this.#devices.get(providerId)?.get(deviceId);
    const sig = e?.ring.signals.get(signalId);
    if (e === undefined || sig === undefined) return null;
    e.ring.samples(sig, fromSeq, Infinity, (s) => {
      each(s);
      return true;
    });
    return sig.type;
  }

  /**
   * The signals of a device a rediscovery removed (their samples released) after its poll
   * `seq` was taken, oldest first (at most MAX_RELEASED_SIGNAL_IDS are remembered): a window from
   * that poll on had samples of them the ring no longer holds (incidents).
   */
  releasedSince(providerId: string, deviceId: string, seq: number): string[] {
    const released = this.#devices.get(providerId)?.get(deviceId)?.released;
    const out: string[] = [];
    for (const [id, at] of released ?? []) if (at > seq) out.push(id);
    return out;
  }

  /**
   * The poll before which the ring lost changes of one signal that the device's polls may still
   * have (SignalRing.trimmedToSeq: memory_max_bytes trimmed it alone, its ring was made without
   * room, a value too large was not kept, a retype, declared again after a rediscovery left it
   * out); -1 when it lost none of the polls from `fromSeq` on (incidents): one declared again
   * whose device no longer declared it at `fromSeq` had nothing there to lose.
   */
  signalLostBeforeSeq(
    providerId: string,
    deviceId: string,
    signalId: string,
    fromSeq: number,
  ): number {
    const sig = this.#devices.get(providerId)?.get(deviceId)?.ring.signals.get(signalId);
    if (sig === undefined) return -1;
    const again = sig.declaredAgain;
    if (again !== null && again.absentFromSeq <= fromSeq && sig.trimmedToSeq <= again.seq) {
      return -1;
    }
    return sig.trimmedToSeq;
  }

  /**
   * The device's kept polls in the `spanMs` before poll `untilSeq` by the time that passed, and
   * their dates (DeviceRing.datesBefore); none for a device the ring does not hold.
   */
  datesBefore(
    providerId: string,
    deviceId: string,
    untilSeq: number,
    atMs: number,
    spanMs: number,
  ): { fromSeq: number; dates: number[] } {
    const ring = this.#devices.get(providerId)?.get(deviceId)?.ring;
    return ring === undefined
      ? { fromSeq: untilSeq, dates: [] }
      : ring.datesBefore(untilSeq, atMs, spanMs);
  }

  /**
   * The sequence number of the device's first kept poll at or after `ms` (among those since the
   * wall clock last stepped back), else the number its next poll gets (nextPollSeq).
   */
  pollSeqAtOrAfter(providerId: string, deviceId: string, ms: number): number {
    const ring = this.#devices.get(providerId)?.get(deviceId)?.ring;
    return ring === undefined ? this.#seqBase : ring.seqAtOrAfter(ms);
  }

  /**
   * The sequence number of the device's first kept poll after `ms` (among those since the wall
   * clock last stepped back), else the number its next poll gets (nextPollSeq).
   */
  pollSeqAfter(providerId: string, deviceId: string, ms: number): number {
    const ring = this.#devices.get(providerId)?.get(deviceId)?.ring;
    return ring === undefined ? this.#seqBase : ring.seqAfter(ms);
  }

  /** The wall time the ring stamped the device's poll `seq` with; null when it keeps no such poll. */
  pollTimeMs(providerId: string, deviceId: string, seq: number): number | null {
    const ring = this.#devices.get(providerId)?.get(deviceId)?.ring;
    if (ring === undefined || seq < ring.firstSeq || seq >= ring.nextSeq) return null;
    return ring.timeOf(seq);
  }

  /**
   * The sequence number the device's next recorded poll gets (DeviceRing.nextSeq): where a
   * reader that must miss none of the polls from now on starts. For a device the ring does not
   * hold, the number its first poll will get (#seqBase).
   */
  nextPollSeq(providerId: string, deviceId: string): number {
    return this.#devices.get(providerId)?.get(deviceId)?.ring.nextSeq ?? this.#seqBase;
  }

  /**
   * The sequence number the first poll of a device the ring does not hold yet gets (#seqBase):
   * every poll of a device it takes up from now on is numbered from there on, none below it.
   */
  newDevicePollSeq(): number {
    return this.#seqBase;
  }

  /**
   * Calls `fn` once, with the monotonic time it was recorded at, when the device's next poll
   * (nextPollSeq) is recorded: incidents time the window of a device failing as it comes back
   * from that poll, its first failed read. One watch per device (a new one replaces the last);
   * the function returned cancels it. A stop drops every watch.
   */
  onNextPoll(providerId: string, deviceId: string, fn: (mono: number) => void): () => void {
    const key = `${providerId}/${deviceId}`;
    this.#nextPollWatches.set(key, fn);
    return () => {
      if (this.#nextPollWatches.get(key) === fn) this.#nextPollWatches.delete(key);
    };
  }

  /**
   * Calls `fn` when a rediscovery declares signals of a device with another type (their old series
   * about to be released: #rebuild) or another unit than their samples were polled in, before it
   * releases them and before the poll that found it is recorded. One listener (a new one replaces
   * it); the function returned removes it.
   */
  onRedeclare(
    fn: (providerId: string, deviceId: string, r: HistoryRedeclared) => void,
  ): () => void {
    this.#redeclareWatch = fn;
    return () => {
      if (this.#redeclareWatch === fn) this.#redeclareWatch = null;
    };
  }

  /** Tells the device's watch of its next poll (onNextPoll), just recorded, and drops it. */
  #tellNextPoll(providerId: string, deviceId: string): void {
    const key = `${providerId}/${deviceId}`;
    const fn = this.#nextPollWatches.get(key);
    if (fn === undefined) return;
    this.#nextPollWatches.delete(key);
    fn(this.#monoNow);
  }

  /**
   * A walk over the changes of `signalIds` of one device at its polls [fromSeq, untilSeq) (see
   * nextPollSeq), in poll order; null when the ring holds nothing of the device.
   */
  changes(
    providerId: string,
    deviceId: string,
    signalIds: Iterable<string>,
    fromSeq: number,
    untilSeq: number,
  ): ChangeWalk | null {
    const e = this.#devices.get(providerId)?.get(deviceId);
    if (e === undefined) return null;
    const rings: SignalRing[] = [];
    for (const id of signalIds) {
      const sig = e.ring.signals.get(id);
      if (sig !== undefined) rings.push(sig);
    }
    return new ChangeWalk(e.ring, rings, fromSeq, untilSeq);
  }

  /** Every device the ring holds: `[providerId, deviceId]`. */
  devices(): [string, string][] {
    const out: [string, string][] = [];
    for (const [p, m] of this.#devices) for (const d of m.keys()) out.push([p, d]);
    return out;
  }

  /**
   * Answers a history question: the ring from where it reaches, the disk tier before (see
   * memory_from_ms). Throws INVALID_ARGUMENT past MAX_HISTORY_POINTS.
   */
  async query(q: HistoryQuery): Promise<HistoryAnswer> {
    for (let split = 1;; split++) {
      const answer = await this.#answer(q, split === HISTORY_QUERY_SPLITS_MAX);
      if (answer !== null) return answer;
    }
  }

  /**
   * Where the ring's part of an answer begins (a poll number) when this ring wrote the bucket of
   * its oldest poll early (a rediscovery: #rebuild) while it is still open, and that bucket's rows
   * hold samples the ring does not: an earlier run wrote a row of it too (a restart within it), or
   * the ring dropped its first polls (a step_ms longer than its reach). The disk tier then answers
   * the bucket, every row of it, and the ring the polls since this ring's row. Null otherwise.
   */
  #openRowFromSeq(e: DeviceEntry | undefined): number | null {
    const oldest = e?.ring.oldestMs() ?? null;
    if (e === undefined || oldest === null || this.#disk === null || e.bucketStart === null) {
      return null;
    }
    const first = bucketStart(oldest, this.#o.config.stepMs);
    if (first < e.bucketStart || e.writtenBucket !== first) return null;
    const trimmed = e.ring.timeFirstSeq > e.ring.startSeq;
    if (first > this.#disk.lastRowAtOpen && !trimmed) return null;
    return Math.max(e.writtenSeq, e.ring.timeFirstSeq);
  }

  /**
   * query's answer, split between the tiers once; null (not `last`) when the ring wrote its open
   * bucket whose earlier rows the disk part read while it was read (HISTORY_QUERY_SPLITS_MAX).
   */
  async #answer(q: HistoryQuery, last: boolean): Promise<HistoryAnswer | null> {
    const now = this.#o.clock.nowMs();
    const untilMs = q.untilMs ?? now;
    const sinceMs = q.sinceMs ?? untilMs - this.#memoryMs;
    if (untilMs < sinceMs) {
      // Without until_ms (now), the key at fault is the one the client sent.
      throw invalidArgument(
        q.untilMs === undefined
          ? `since_ms: ${sinceMs} is after now (${untilMs}); give an earlier since_ms or until_ms`
          : `until_ms: ${untilMs} is before since_ms (${sinceMs})`,
      );
    }
    const stepMs = q.stepMs ?? 0;
    // Where the earlier runs' rows end (lastRowAtOpen, below): learnt now when a failed first
    // open could not list the files (else the disk tier gives no row: disk_unreadable).
    await this.#disk?.learnEnd();
    let e = this.#devices.get(q.providerId)?.get(q.deviceId);
    const diskStep = this.#disk === null ? null : this.#o.config.stepMs;
    // Signals asked for that the ring holds nothing of (a rediscovery removed them: their ring was
    // released, their buckets are on disk): the disk tier answers their whole range. Without
    // signal_id the signals are the ring's and those the disk rows read hold (a signal or a
    // device the runtime no longer has), the latter ringless too. A signal whose ring keeps
    // nothing (made without room: memory_max_bytes was full) is answered as one without a ring.
    const allSignals = q.signalIds.length === 0;
    let incomplete: HistoryIncomplete | null = null;
    const holdsNothing = (id: string) => (e?.ring.signals.get(id)?.length ?? 0) === 0;
    const ringless = new Set(
      allSignals
        ? [
          ...e?.released?.keys() ?? [],
          ...this.signalIds(q.providerId, q.deviceId).filter(holdsNothing),
        ]
        : q.signalIds.filter(holdsNothing),
    );
    const asked = allSignals ? this.signalIds(q.providerId, q.deviceId) : q.signalIds;
    // A range too fine is refused before any work, the wait for the disk below too (again once
    // the signals are known: the disk rows may name more).
    refuseTooFine(new Set([...asked, ...ringless]).size, sinceMs, untilMs, stepMs);
    if (
      this.#disk !== null &&
      (ringless.size > 0 || sinceMs < (e?.ring.oldestMs() ?? Infinity) ||
        this.#openRowFromSeq(e) !== null || e?.filesSteppedBack === true ||
        asked.some((id) => sinceMs < (signalRingStartMs(e?.ring, id) ?? Infinity)))
    ) {
      // The range reaches before the ring: the buckets closed but still queued for the disk are
      // part of the answer (else they would be in neither tier).
      const flushed = await raceTimeout(
        this.#o.clock,
        this.#disk.flush().then(() => true),
        HISTORY_QUERY_DISK_WAIT_MS,
        false,
      );
      // Rows kept through a disk outage are in neither tier until it works again.
      if (!flushed || this.#disk.status().rowsHeld > 0) incomplete = "disk_pending";
      e = this.#devices.get(q.providerId)?.get(q.deviceId);
    }
    const oldest = e?.ring.oldestMs() ?? null;
    const writtenSeqAtSplit = e?.writtenSeq;
    // Where the ring's part begins: its oldest poll while it still holds everything since the
    // device's first poll; once it has dropped samples (or the wall clock stepped back: its time
    // searches begin at the step), or when its first bucket is one an earlier run wrote a row of
    // too (a restart within a bucket), the next disk bucket (the disk tier has every bucket before
    // it, of every run), so no sample is counted twice. But while the bucket of its oldest poll is
    // still open (not written: a step_ms longer than the ring's reach, or the first bucket after a
    // restart), the ring answers from its oldest poll, and the disk tier up to that bucket -- with
    // it when its rows there are all of earlier runs (the stopped run's last seconds), not when
    // this ring wrote one of them early (a rediscovery, a wall clock step: the ring holds those).
    const trimmed = e !== undefined && e.ring.timeFirstSeq > e.ring.startSeq;
    const first = oldest === null || diskStep === null ? null : bucketStart(oldest, diskStep);
    const inOpenBucket = first !== null && e !== undefined && e.bucketStart !== null &&
      first >= e.bucketStart;
    // This ring wrote that open bucket early (a rediscovery), and its rows hold samples the ring
    // does not (an earlier run's, or polls the ring dropped): the disk answers it, every row of
    // it, and the ring the polls since this ring's row (#openRowFromSeq).
    const openRowFromSeq = this.#openRowFromSeq(e);
    // Since a step back of the wall clock, the open bucket may be one this ring wrote before the
    // step (writtenBucket is the newest row, of another bucket): while the ring keeps its polls
    // from before the step back to that bucket's start, it holds every sample of this run there
    // (written or still open), and its part answers them.
    const preStepHeld = e !== undefined && first !== null && openRowFromSeq === null &&
      e.ring.timeFirstSeq > e.ring.firstSeq && e.ring.timeOf(e.ring.firstSeq) <= first;
    // The disk rows of that open bucket are of earlier runs only (or this ring's too, when its
    // part begins after them: openRowFromSeq): the answer takes them.
    const openFromDisk = inOpenBucket && !preStepHeld &&
        (e?.writtenBucket !== first || openRowFromSeq !== null)
      ? first
      : null;
    const shared = first !== null && first <= (this.#disk?.lastRowAtOpen ?? -Infinity);
    // Every poll the ring holds is in a row read as before a step back it was not polled since
    // (filesSteppedBack): the disk answers them all, the ring none (memoryFrom null).
    const memoryFrom = oldest === null || e!.filesSteppedBack
      ? null
      : openRowFromSeq !== null
      ? openRowFromSeq < e!.ring.nextSeq ? e!.ring.timeOf(openRowFromSeq) : null
      : diskStep === null || inOpenBucket || !(trimmed || shared)
      ? oldest
      : bucketStart(oldest + diskStep - 1, diskStep);
    // The disk part ends before the bucket the ring's part begins in (with it, when it is open).
    const diskEnd = memoryFrom === null
      ? untilMs + 1
      : diskStep === null
      ? memoryFrom
      : openFromDisk !== null
      ? openFromDisk + 1
      : bucketStart(memoryFrom, diskStep);
    const ids = allSignals
      ? [...new Set([...this.signalIds(q.providerId, q.deviceId), ...ringless])]
      : [...q.signalIds];
    // A signal whose ring lost changes the device's polls still have (the byte bound trimmed it
    // alone, or it was made without room and got some later) begins its ring part later, as the
    // device's does once its polls were dropped: from the next disk bucket after its oldest kept
    // change (from that change while its bucket is open, on no disk yet), and the disk tier
    // answers it up to there. Else the stretch between would be in neither part.
    const ownMemoryFrom = new Map<string, number>();
    const ownDiskEnd = new Map<string, number>();
    if (e !== undefined && memoryFrom !== null) {
      for (const id of ids) {
        const start = signalRingStartMs(e.ring, id, memoryFrom);
        if (start === null) continue;
        const open = diskStep !== null && e.bucketStart !== null &&
          bucketStart(start, diskStep) >= e.bucketStart;
        const from = diskStep === null || open
          ? start
          : bucketStart(start + diskStep - 1, diskStep);
        ownMemoryFrom.set(id, from);
        if (diskStep !== null) ownDiskEnd.set(id, Math.max(diskEnd, bucketStart(from, diskStep)));
      }
    }
    const series = new Map<string, { type: ValueType | null; points: HistoryPoint[] }>();
    for (const id of ids) series.set(id, { type: null, points: [] });
    let total = 0;
    const count = (n = 1) => {
      total += n;
      if (total > MAX_HISTORY_POINTS) throw tooManyPoints();
    };
    refuseTooFine(ids.length, sinceMs, untilMs, stepMs);
    // The ring's part: [max(sinceMs, memoryFrom), untilMs], taken now, before the disk tier is
    // read: the polls go on while it is (a slow card, a long range) and the ring drops its oldest
    // as they pass memory_seconds, so read after it the ring's part would begin later than
    // memoryFrom, and the samples between would be in neither part (the disk's ends before it).
    const ringPoints = new Map<string, HistoryPoint[]>();
    // Polls kept from before the last step back of the wall clock (ring.ts, #runSeq; not when this
    // ring wrote its open bucket early: openRowFromSeq) whose times fall after the disk's part:
    // the repeated times of the period before the step, which the disk part ends before. Taken
    // too, so a question over the repeated times gets both periods.
    const preStepUntil = e === undefined || openRowFromSeq !== null
      ? -Infinity
      : e.ring.timeFirstSeq;
    const preStep = e !== undefined && preStepUntil > e.ring.firstSeq;
    // The disk rows of the repeated times written before the last step back of the wall clock
    // (DiskTier.read's beforeStepBack), after the disk part's end: the ring dropped the earlier
    // period's polls of them (or never had them: a run begun behind the files' last row), so the
    // disk answers them, up to the bucket after the ring's oldest kept poll from before the step
    // (the ring answers its polls from there on). Else they would be in neither part.
    // A ring that has written no row yet (a step back within the bucket of its first poll) has no
    // rows from before the step on disk: it answers every poll it kept from before the step.
    const preCut = !preStep || diskStep === null
      ? Infinity
      : e!.writtenBucket === null
      ? -Infinity
      : bucketStart(e!.ring.timeOf(e!.ring.firstSeq) + diskStep - 1, diskStep);
    const priorUntil = e === undefined || diskStep === null || memoryFrom === null
      ? -Infinity
      : Math.min(preCut, this.#priorBucketMs(e) + 1);
    // That cut holds for the period of the ring's oldest kept poll and those after it (the ring
    // keeps every poll of them from there on). After several steps back, the rows of a period
    // before that one (their file has more periods begun after it: DiskTier.read's
    // stepBacksAfter) hold no poll the ring keeps, whatever their times: the disk answers them
    // all, read as far as the device's rows before a step back reach (priorBucketMs). Else they
    // would be in neither part.
    const olderAfter = !preStep || priorUntil === -Infinity
      ? Infinity
      : this.#periodsBegunAfter(this.#periodOf(e!, e!.ring.firstSeq));
    // The rows of a run before this one (DiskTier.read's ofEarlierRun), and those of the device's
    // earlier rings of this run (rowRing below its ring's: the sweep let its old ring go and it
    // was picked up again), after the disk part's end: this ring begun behind them (a board without
    // a real-time clock, a wall clock stepped back while the device was away), or stepped back past
    // them. No ring holds their samples, whatever the steps since (a second step back within the
    // ring's reach makes this ring's rows before it beforeStepBack too, and the ring answers those
    // of the periods it keeps polls of from preCut on: olderAfter): the disk answers them all.
    // They lie up to the files' last row at open, or the newest row handed to the disk before
    // this ring was made (ringsBeforeMs), and, past the disk part's end, up to priorBucketMs (set
    // at the first poll behind them, or at the step back past them): the disk is read that far.
    const earlierUntil = e === undefined || diskStep === null || memoryFrom === null
      ? -Infinity
      : Math.min(
        this.#priorBucketMs(e),
        Math.max(this.#disk?.lastRowAtOpen ?? -Infinity, e.ringsBeforeMs),
      );
    // (Of the device's rings of this run, this one's number: rows naming a lower one are earlier
    // rings', told by the rows themselves -- no place in the files is known to part them.)
    const ringNo = e?.ring.startSeq ?? 0;
    // Where the ring's part begins as answered: its polls from before the step may lie before
    // memoryFrom (every one without a disk tier), and points before memory_from_ms are the disk's.
    let ringFrom = memoryFrom;
    if (e !== undefined && memoryFrom !== null && (untilMs >= memoryFrom || preStep)) {
      const ring = e.ring;
      // (Not the polls of a row this ring wrote of its open bucket: the disk answers them.)
      const fromSeqAtLeast = openRowFromSeq ?? -Infinity;
      const deviceFromSeq = Math.max(
        ring.seqAtOrAfter(Math.max(sinceMs, memoryFrom)),
        fromSeqAtLeast,
      );
      for (const id of ids) {
        const sig = ring.signals.get(id);
        if (sig === undefined) continue;
        series.get(id)!.type = sig.type;
        const points: HistoryPoint[] = [];
        ringPoints.set(id, points);
        const own = ownMemoryFrom.get(id);
        const fromSeq = own === undefined
          ? deviceFromSeq
          : Math.max(ring.seqAtOrAfter(Math.max(sinceMs, own)), fromSeqAtLeast);
        // The polls before the step from where this signal's disk part ends (every one without
        // a disk tier), in poll order; then those since the step.
        const preFrom = Math.max(
          sinceMs,
          diskStep === null ? -Infinity : ownDiskEnd.get(id) ?? diskEnd,
          priorUntil === -Infinity ? -Infinity : preCut,
        );
        const each = (take: (s: RingSample) => void) => {
          if (preStep) {
            ring.samples(
              sig,
              ring.firstSeq,
              untilMs,
              (s) => {
                if (s.seq >= preStepUntil) return false;
                if (s.timeMs < ringFrom!) ringFrom = s.timeMs;
                take(s);
                return true;
              },
              preFrom,
              false,
            );
          }
          if (untilMs < memoryFrom) return;
          ring.samples(sig, fromSeq, untilMs, (s) => {
            take(s);
            return true;
          });
        };
        if (stepMs <= 0) {
          each((s) => {
            count();
            points.push(samplePoint(s));
          });
          // (Stable: a repeated time's poll before the step comes first.)
          if (preStep) points.sort((a, b) => a.t_ms - b.t_ms);
          continue;
        }
        // Its first point is counted once the disk's part is in (it may fold into the disk's last).
        if (preStep) {
          // Two periods' polls, out of time order: folded by bucket.
          const accs = new Map<number, BucketAcc>();
          each((s) => {
            const b = bucketStart(s.timeMs, stepMs);
            let acc = accs.get(b);
            if (acc === undefined) {
              if (accs.size > 0) count();
              accs.set(b, acc = new BucketAcc());
            }
            acc.add(s.hasValue, s.num, s.ref, s.quality);
          });
          for (const b of [...accs.keys()].sort((x, y) => x - y)) {
            points.push(accs.get(b)!.point(b));
          }
          continue;
        }
        const acc = new BucketAcc();
        let t: number | null = null;
        each((s) => {
          const b = bucketStart(s.timeMs, stepMs);
          if (t !== null && b !== t) {
            if (points.length > 0) count();
            points.push(acc.point(t));
            acc.reset();
          }
          t = b;
          acc.add(s.hasValue, s.num, s.ref, s.quality);
        });
        if (t !== null) {
          if (points.length > 0) count();
          points.push(acc.point(t));
        }
      }
    }
    let fromDisk = false;
    let fromMemory = false;
    // The disk part: [sinceMs, diskEnd) (a trimmed signal's own end: ownDiskEnd); up to untilMs
    // for the signals the ring holds nothing of.
    // The open bucket's rows of earlier runs are the disk's, every one of it: a run that wrote
    // them in buckets of a shorter step_ms (a restart raised it) has rows after its start too.
    // (This run's rows are at the starts of its buckets: the ones after are no sample of it.)
    const openDiskEnd = openFromDisk === null ? -Infinity : openFromDisk + diskStep!;
    const diskUntil = Math.min(untilMs, Math.max(diskEnd, openDiskEnd) - 1);
    const ownDiskUntil = Math.min(
      untilMs,
      Math.max(diskEnd, openDiskEnd, ...ownDiskEnd.values()) - 1,
    );
    // Without signal_id, a disk read (the range reaches before the ring) goes on to untilMs for
    // the signals only the disk holds; a question within the ring's reach reads no disk.
    // (A bucket from its start: one that since_ms is inside of is in the range, the open bucket
    // the disk answers for its earlier runs' rows too.)
    const readFrom = diskStep === null ? sinceMs : bucketStart(sinceMs, diskStep);
    const readUntil = ringless.size > 0 || (allSignals && readFrom <= diskUntil)
      ? untilMs
      : Math.max(
        ownDiskUntil,
        Math.min(
          untilMs,
          Math.max(
            priorUntil - 1,
            earlierUntil,
            olderAfter === Infinity ? -Infinity : this.#priorBucketMs(e!),
          ),
        ),
      );
    if (this.#disk !== null && diskStep !== null && readFrom <= readUntil) {
      const outStep = Math.max(stepMs, diskStep);
      // Per signal, its buckets by start: the files overlap in time after a wall clock stepped
      // back, so a bucket may get rows from two of them.
      const buckets = new Map<string, Map<number, BucketAcc>>();
      for (const id of ids) buckets.set(id, new Map());
      // A signal's series is of the type it has now (its ring's values, else its declaration):
      // rows of another type are from before a retype, another series (#rebuild).
      const types = new Map<string, ValueType | null>();
      // A signal whose declaration is not known (only on disk: its device listed by no provider,
      // its ring let go or never made in this run) is of its newest row's type: its rows naming a
      // type are kept apart by type (at most VALUE_TYPES' count) until the newest is known, then
      // that type's join the rest. One declared of any type takes rows of any.
      const undeclared = new Set<string>();
      const typeOf = (id: string) => {
        const type = e?.ring.signals.get(id)?.type ??
          this.#declaredType(q.providerId, q.deviceId, id, e);
        if (type === undefined) undeclared.add(id);
        return type ?? null;
      };
      for (const id of ids) types.set(id, typeOf(id));
      const byType = new Map<string, Map<ValueType, Map<number, BucketAcc>>>();
      const newest = new Map<string, { t: number; type: ValueType }>();
      // Of a signal, its types whose buckets were let go (more than MAX_HISTORY_POINTS); the
      // buckets held in byType (MAX_HISTORY_TYPED_HELD).
      const letGo = new Map<string, Set<ValueType>>();
      let held = 0;
      const read = await this.#disk.read(
        q.providerId,
        q.deviceId,
        readFrom,
        readUntil,
        (row, beforeStepBack, ofEarlierRun, stepBacksAfter) => {
          if (allSignals) {
            // A signal the ring does not hold: one series more, answered from the disk alone.
            for (const id of Object.keys(row.s)) {
              if (buckets.has(id)) continue;
              ids.push(id);
              ringless.add(id);
              series.set(id, { type: null, points: [] });
              buckets.set(id, new Map());
              types.set(id, typeOf(id));
            }
          }
          for (const id of ids) {
            const end = Math.max(ownDiskEnd.get(id) ?? diskEnd, openDiskEnd);
            if (
              !ringless.has(id) && row.t >= end && !(beforeStepBack && row.t < priorUntil) &&
              !ofEarlierRun && rowRing(row) >= ringNo && stepBacksAfter <= olderAfter
            ) continue;
            // Its own entry only: a signal id such as "constructor" is no key of a row without it.
            if (!Object.hasOwn(row.s, id)) continue;
            const entry = row.s[id];
            const type = types.get(id)!;
            if (type !== null && !rowTypeIs(entry, type)) continue;
            const p = rowPoint(row.t, entry);
            if (p === null) continue;
            const t = bucketStart(row.t, outStep);
            const named = undeclared.has(id) ? rowType(entry) : null;
            let mine = buckets.get(id)!;
            if (named !== null) {
              if ((newest.get(id)?.t ?? -Infinity) <= row.t) {
                newest.set(id, { t: row.t, type: named });
              }
              if (letGo.get(id)?.has(named)) continue;
              let typed = byType.get(id);
              if (typed === undefined) byType.set(id, typed = new Map());
              let ofType = typed.get(named);
              if (ofType === undefined) typed.set(named, ofType = new Map());
              mine = ofType;
            }
            let acc = mine.get(t);
            if (acc === undefined) {
              // A bucket of the answer is counted when it is known to be kept: untyped rows' (and
              // a declared signal's) now, a type's when it is the newest (below).
              if (named === null) count();
              else if (mine.size >= MAX_HISTORY_POINTS) {
                // This type's answer could not fit (its buckets and the untyped rows' together).
                held -= mine.size;
                byType.get(id)!.delete(named);
                let gone = letGo.get(id);
                if (gone === undefined) letGo.set(id, gone = new Set());
                gone.add(named);
                continue;
              } else if (++held > MAX_HISTORY_TYPED_HELD) throw tooManyTypedHeld();
              mine.set(t, acc = new BucketAcc());
            }
            acc.merge(p);
          }
        },
        diskStep,
        // (The open bucket's row is still to come: one behind the files' newest row begins a new
        // file, so every row read now is of the period before it. Judged by the open bucket of
        // every device, not only the asked one's: #nextRowBucketMs. For a device the ring holds
        // nothing of, the judgement changes no answer -- memoryFrom is null, so the disk part
        // takes every row of the range, beforeStepBack or not -- but it is the files' own.)
        this.#nextRowBucketMs(),
      );
      if (!read) incomplete = "disk_unreadable";
      // The ring's open bucket, read from the disk for its earlier runs' rows, was written while
      // the disk was read (the polls crossed into the next): the read may have had this run's row
      // of it as well as the ring's samples of it. Split again: the bucket is written now.
      if (
        openFromDisk !== null && e?.writtenBucket === openFromDisk &&
        e.writtenSeq !== writtenSeqAtSplit && !last
      ) return null;
      for (const [id, { type }] of newest) {
        if (letGo.get(id)?.has(type)) throw tooManyPoints();
        const mine = buckets.get(id)!;
        for (const [t, acc] of byType.get(id)!.get(type)!) {
          const had = mine.get(t);
          if (had === undefined) {
            count();
            mine.set(t, acc);
          } else had.merge(acc.point(t));
        }
        series.get(id)!.type = type;
      }
      for (const [id, mine] of buckets) {
        const points = series.get(id)!.points;
        for (const t of [...mine.keys()].sort((a, b) => a - b)) {
          points.push(mine.get(t)!.point(t));
          fromDisk = true;
        }
      }
    }
    // The ring's part after the disk's. When the seam falls inside a bucket of this step (a step
    // wider than the disk's, or not a multiple of it), the disk part's last point and the ring's
    // first are one bucket: folded into one point, not two at the same time.
    for (const [id, points] of ringPoints) {
      if (points.length === 0) continue;
      fromMemory = true;
      const out = series.get(id)!.points;
      const diskLast = out.at(-1);
      if (diskLast !== undefined && diskLast.t_ms > points[0]!.t_ms) {
        // Disk rows of the repeated times from before a step back lie among the ring's points:
        // in time order (a disk bucket before the ring's samples of its time), a bucket of this
        // step both hold one point.
        const { points: all, folded } = interleave(out, points, stepMs);
        series.get(id)!.points = all;
        // (The ring's part counted all its points but the first when folded by step_ms.)
        if (stepMs > 0) {
          if (folded === 0) count();
          else total -= folded - 1;
        }
        continue;
      }
      if (stepMs > 0 && diskLast !== undefined && diskLast.t_ms === points[0]!.t_ms) {
        const acc = new BucketAcc();
        acc.merge(diskLast);
        acc.merge(points[0]!);
        out[out.length - 1] = acc.point(diskLast.t_ms);
        points.shift();
      } else if (stepMs > 0) count(); // its first point, one of its own
      for (const p of points) out.push(p);
    }
    return {
      provider_id: q.providerId,
      device_id: q.deviceId,
      since_ms: sinceMs,
      until_ms: untilMs,
      step_ms: stepMs,
      source: fromDisk && fromMemory
        ? "memory+disk"
        : fromDisk
        ? "disk"
        : fromMemory
        ? "memory"
        : "none",
      memory_from_ms: ringFrom,
      disk_step_ms: diskStep,
      incomplete,
      // Without signal_id, a signal only the disk could hold is listed when the range has rows of it.
      signals: ids.filter((id) =>
        !allSignals || !ringless.has(id) || series.get(id)!.points.length > 0 ||
        e?.ring.signals.has(id)
      ).map((id) => {
        const s = series.get(id)!;
        return {
          signal_id: id,
          // Its samples' type; one the ring holds no value of (never reported, or only on
          // disk): its type as declared, "unknown" for one of any type or not known.
          value_type: s.type ?? e?.ring.signals.get(id)?.type ??
            (this.#declaredType(q.providerId, q.deviceId, id, e) ?? "unknown"),
          unit_changes: e?.units.get(id)?.changes.filter((c) => c.at_ms > sinceMs) ?? [],
          points: s.points,
        };
      }),
    };
  }
}

/**
 * The time of the oldest change a signal's ring holds when it lost changes the device's polls
 * from `fromMs` on still have (SignalRing.trimmedToSeq: the byte bound trimmed it alone, it was
 * made without room, a value too large was not kept); null when it holds every change of them
 * (or nothing: it is answered as ringless). Without `fromMs`, from the device's oldest poll.
 */
function signalRingStartMs(
  ring: DeviceRing | undefined,
  signalId: string,
  fromMs?: number,
): number | null {
  const sig = ring?.signals.get(signalId);
  if (ring === undefined || sig === undefined || sig.length === 0) return null;
  const oldest = ring.oldestMs();
  if (oldest === null) return null;
  const fromSeq = ring.seqAtOrAfter(fromMs ?? oldest);
  if (sig.trimmedToSeq <= fromSeq) return null;
  const seq = Math.max(sig.trimmedToSeq, sig.firstSeq());
  return seq < ring.nextSeq ? ring.timeOf(seq) : null;
}

/**
 * The disk part's points and the ring's, each in time order, as one series in time order: at a
 * time both have, the disk's first; with a step (`stepMs` > 0), a bucket both have is one point
 * holding both (`folded` counts them).
 */
function interleave(
  disk: readonly HistoryPoint[],
  ring: readonly HistoryPoint[],
  stepMs: number,
): { points: HistoryPoint[]; folded: number } {
  const points: HistoryPoint[] = [];
  let folded = 0;
  let i = 0;
  let j = 0;
  while (i < disk.length || j < ring.length) {
    const d = disk[i];
    const r = ring[j];
    if (r === undefined || (d !== undefined && d.t_ms < r.t_ms)) {
      points.push(d!);
      i++;
    } else if (d === undefined || r.t_ms < d.t_ms || stepMs <= 0) {
      if (d !== undefined && d.t_ms === r.t_ms) {
        points.push(d);
        i++;
        continue;
      }
      points.push(r);
      j++;
    } else {
      const acc = new BucketAcc();
      acc.merge(d);
      acc.merge(r);
      points.push(acc.point(d.t_ms));
      folded++;
      i++;
      j++;
    }
  }
  return { points, folded };
}

/** The answer would hold more than MAX_HISTORY_POINTS points (400). */
function tooManyPoints(): Error {
  return invalidArgument(
    `the answer would hold more than ${MAX_HISTORY_POINTS} points (MAX_HISTORY_POINTS); ` +
      `ask for a larger step_ms, a shorter range or fewer signal_id`,
  );
}

/**
 * MAX_HISTORY_TYPED_HELD passed: a bound on the server's work, not on the answer (which may hold
 * a few points), yet still the client's to lift -- a narrower question holds fewer buckets (a
 * small enough one always fits), and the same one asked again would fail the same: 400, not 5xx.
 */
function tooManyTypedHeld(): Error {
  return invalidArgument(
    `the disk holds more than ${MAX_HISTORY_TYPED_HELD} buckets (MAX_HISTORY_TYPED_HELD) of ` +
      `this answer's signals in the types they had before their newest (held apart while the ` +
      `disk is read, then left out of the answer); ask for a larger step_ms, a shorter range or ` +
      `fewer signal_id`,
  );
}

/**
 * Throws tooManyPoints when `signals` series of buckets of `stepMs` over [sinceMs, untilMs] pass
 * MAX_HISTORY_POINTS: they are known beforehand. They start at multiples of the step, from
 * since_ms's to until_ms's (one more than the range over the step when since_ms is inside a
 * bucket); the disk part's (max of the step and the disk's) are no more.
 */
function refuseTooFine(signals: number, sinceMs: number, untilMs: number, stepMs: number): void {
  if (stepMs <= 0) return;
  const buckets = (bucketStart(untilMs, stepMs) - bucketStart(sinceMs, stepMs)) / stepMs + 1;
  if (signals * buckets > MAX_HISTORY_POINTS) throw tooManyPoints();
}

/** A full-rate sample as a point (count 1). */
function samplePoint(s: RingSample): HistoryPoint {
  const v = !s.hasValue ? null : s.ref !== null ? typedValueScalar(s.ref) : s.num;
  const n = typeof v === "number" ? v : null;
  return { t_ms: s.timeMs, min: n, max: n, last: v, count: 1, quality: s.quality };
}

/** The key of a device in #sweptRowsMs (ids may hold any character: JSON keeps them apart). */
function sweptKey(providerId: string, deviceId: string): string {
  return JSON.stringify([providerId, deviceId]);
}

const CODES: Readonly<Record<Quality, number>> = { OK: 0, STALE: 1, FAULT: 2, UNAVAILABLE: 3 };

/** The code of a quality (QUALITY_BY_CODE). */
export function qualityCode(q: Quality): number {
  return CODES[q];
}

/** The name of a quality code. */
export function qualityName(code: number): Quality {
  return QUALITY_BY_CODE[code] ?? "UNAVAILABLE";
}

/**
 * One kind of shortage of the shared ring budget (rings made without room, values too large to
 * keep), logged per episode: its first occurrence is one WARN (the line made only then), the rest
 * are counted; it ends at a sweep that finds none left (no ring in that state) and none new for
 * HISTORY_SHORTAGE_QUIET_MS, with one INFO naming how many it had. Then the next is news again.
 */
class ShortageEpisode {
  readonly #log: Logger;
  readonly #ended: (occurrences: number) => string;
  /** Occurrences of the episode under way (0: none). */
  #count = 0;
  /** Monotonic time of its latest occurrence. */
  #lastMono = 0;

  constructor(log: Logger, ended: (occurrences: number) => string) {
    this.#log = log;
    this.#ended = ended;
  }

  /** One more occurrence, at `mono`: the episode's first logs `warn()`. */
  occurred(mono: number, warn: () => string): void {
    this.#lastMono = mono;
    if (this.#count++ === 0) this.#log.warn(warn());
  }

  /** At a sweep (`over`: no ring is in the shortage now): ends the episode once quiet enough. */
  sweep(mono: number, over: boolean): void {
    if (this.#count === 0 || !over || mono - this.#lastMono < HISTORY_SHORTAGE_QUIET_MS) return;
    this.#log.info(this.#ended(this.#count));
    this.#count = 0;
  }
}
