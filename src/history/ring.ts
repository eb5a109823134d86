/**
 * The full-rate ring: every polled sample of every signal (value, quality, time) for the last
 * `history.memory_seconds`, in typed arrays -- never an object per sample.
 *
 * Layout, per device: a ring of poll times (Float64Array, one entry per poll of the device, all of
 * its signals share it), and per signal a ring of *changes* (poll sequence number, value as a
 * double, a flag byte with the quality and whether there is a value). A poll whose sample equals
 * the signal's previous one (same value, same quality) adds nothing to that signal's ring: the
 * sample of every poll is still exact (the value in effect at that poll), and a signal that does
 * not move costs one entry whatever the poll rate. Values that a double cannot hold exactly (a
 * string, bytes, an integer beyond 2^53) are kept by reference in a side array of that signal
 * only (the cache's own value object: nothing is copied); one too large for `maxBytes` even alone
 * is not kept (record returns false).
 *
 * Bounds: poll times older than `memorySeconds` are dropped at the next poll of the device; a
 * signal's change that no kept poll needs any more goes with them. Rings grow by half again while
 * the bytes of every ring together stay within `maxBytes` (MEMORY bound: `history.memory_max_bytes`);
 * a ring that may not grow drops its oldest entry instead, so the reach shortens and the memory
 * does not grow. A ring is made with its first entries only when they fit the budget too; else it
 * starts with none (`roomless`, counted in RingBudget.roomless) and keeps nothing -- a device's
 * polls are numbered, not kept; a signal's changes are seen (its open disk bucket gets them), not
 * kept -- until the budget has room for it to grow. `bytes` and `reachMs` are the metrics of its
 * use.
 */
import {
  boolValue,
  doubleValue,
  int64Value,
  type Quality,
  QUALITY_RANK,
  sameValue,
  type TypedValue,
  uint64Value,
  type ValueType,
} from "../common/mod.ts";
import { BucketAcc } from "./buckets.ts";

/** Quality by its rank (QUALITY_RANK): the code kept in a flag byte and in disk rows. */
export const QUALITY_BY_CODE: readonly Quality[] = ["OK", "STALE", "FAULT", "UNAVAILABLE"];
const QUALITY_MASK = 0x03;
const HAS_VALUE = 0x04;
const BY_REF = 0x08;
/**
 * The type of a value kept as a double, in bits 4-5 of the flags (NUM_TYPES[code]): a signal's
 * declared type may change at a rediscovery (a provider restarted by a reload or its supervisor),
 * and each sample is given back as the type it was polled with, not the signal's newest one.
 */
const NUM_TYPE_SHIFT = 4;
const NUM_TYPES: readonly ValueType[] = ["double", "bool", "int64", "uint64"];
const NUM_TYPE_CODE: Readonly<Partial<Record<ValueType, number>>> = {
  double: 0,
  bool: 1,
  int64: 2,
  uint64: 3,
};
/** First capacity of a ring (entries), when the budget has room for it (else none). */
export const FIRST_CAPACITY = 16;
/** Bytes per entry of a signal's ring (poll sequence number, value, flags). */
export const SIGNAL_ENTRY_BYTES = 13;
/** Bytes per entry of a device's ring (the poll's time). */
export const POLL_ENTRY_BYTES = 8;
/** Bytes counted per value kept by reference, beside its text (the object holding it). */
export const REF_OVERHEAD_BYTES = 32;

/**
 * The bytes a value kept by reference is counted as: its text (a string's UTF-16 units, the
 * base64 of bytes, an exact integer's 8 bytes) and REF_OVERHEAD_BYTES.
 */
export function refBytes(v: TypedValue): number {
  switch (v.type) {
    case "string":
      return REF_OVERHEAD_BYTES + 2 * v.string.length;
    case "bytes":
      return REF_OVERHEAD_BYTES + v.base64.length;
    default:
      return REF_OVERHEAD_BYTES + 8;
  }
}

/**
 * The next capacity of a full ring: half again as large (doubling would leave up to half of a
 * ring at its steady size unused: 2048 entries for 1200 polls of 120 s at 10 Hz; this, 1369); a
 * ring made without room gets its first entries.
 */
function grown(cap: number): number {
  return cap === 0 ? FIRST_CAPACITY : Math.ceil(cap * 1.5);
}

/** One sample as the ring gives it back (a reused cursor: read it before the next step). */
export interface RingSample {
  /** Wall time of the poll (epoch ms, the runtime's clock). */
  timeMs: number;
  /** Quality code (QUALITY_BY_CODE). */
  quality: number;
  /** The value as a double (bool 0/1); NaN when `ref` holds it or there is none. */
  num: number;
  /** The type `num` was polled as (double, bool, int64 or uint64); meaningless otherwise. */
  numType: ValueType;
  /** A value a double cannot hold exactly; null otherwise. */
  ref: TypedValue | null;
  /** False for a sample without a value (the signal never had one). */
  hasValue: boolean;
  /** Sequence number of the poll (DeviceRing.nextSeq). */
  seq: number;
}

/** The value of a typed value as a double when that is exact; null when it is not. */
export function exactDouble(v: TypedValue): number | null {
  switch (v.type) {
    case "double":
      return v.double;
    case "bool":
      return v.bool ? 1 : 0;
    case "int64":
      return typeof v.int64 === "number" ? v.int64 : null;
    case "uint64":
      return typeof v.uint64 === "number" ? v.uint64 : null;
    default:
      return null;
  }
}

/** Byte accounting shared by every ring of one history. */
export class RingBudget {
  bytes = 0;
  /** Rings that hold no entry because the budget had no room for their first ones (yet). */
  roomless = 0;
  /**
   * Signal rings whose latest value is one too large to keep (SignalRing.record false): they hold
   * none of the signal's changes up to it, until a sample that is kept.
   */
  notKept = 0;
  constructor(readonly maxBytes: number) {}
  /** Whether `more` bytes may be allocated now. */
  allows(more: number): boolean {
    return this.bytes + more <= this.maxBytes;
  }
  /**
   * The first capacity of a ring whose entries take `entryBytes`: FIRST_CAPACITY, counted now,
   * when it fits the budget; else 0 (the ring is counted in `roomless`).
   */
  firstCapacity(entryBytes: number): number {
    if (!this.allows(FIRST_CAPACITY * entryBytes)) {
      this.roomless++;
      return 0;
    }
    this.bytes += FIRST_CAPACITY * entryBytes;
    return FIRST_CAPACITY;
  }
}

/**
 * The changes of one signal, and its open disk bucket (it is its own BucketAcc). The last entry
 * is mirrored in fields of this object: a poll that changes nothing (most polls of most signals)
 * touches this one object and none of the arrays, which matters more than the instructions do on
 * the poll path of a busy runtime, where the rings are cold in the CPU's caches between polls.
 */
export class SignalRing extends BucketAcc {
  readonly signalId: string;
  /** The value type of the last value (null before the first). */
  type: ValueType | null = null;
  /** The last entry's flags (-1: none), value and reference. */
  #lastFlags = -1;
  #lastNum = NaN;
  #lastRef: TypedValue | null = null;
  #seq: Uint32Array;
  #num: Float64Array;
  #flags: Uint8Array;
  #refs: (TypedValue | null)[] | null = null;
  /** Bytes of the values kept by reference (refBytes), counted in the budget too. */
  #refBytes = 0;
  #head = 0;
  #len = 0;
  /**
   * Sequence number of the oldest change kept after the byte bound last dropped one, or of the
   * first poll after a retype dropped the old type's series (-1: never): what this signal did
   * before that poll is gone although the device's polls may still be kept.
   */
  trimmedToSeq = -1;
  /**
   * For a signal declared again after a rediscovery left it out: the device's first poll without
   * it (`absentFromSeq`) and the first with it again (`seq`, its trimmedToSeq then). The polls
   * between never had it: a window from one of them lost nothing of it (null: not so made).
   */
  declaredAgain: { readonly absentFromSeq: number; readonly seq: number } | null = null;
  /**
   * Sequence number of the newest change dropped (by either bound; -1: none): a walk whose cursor
   * had not passed it lost that change (ChangeWalk.overtaken).
   */
  droppedSeq = -1;
  /** Its latest value was too large to keep (counted in RingBudget.notKept until one is kept). */
  #notKept = false;
  readonly #budget: RingBudget;

  constructor(signalId: string, budget: RingBudget) {
    super();
    this.signalId = signalId;
    this.#budget = budget;
    const cap = budget.firstCapacity(SIGNAL_ENTRY_BYTES);
    this.#seq = new Uint32Array(cap);
    this.#num = new Float64Array(cap);
    this.#flags = new Uint8Array(cap);
  }

  /** Whether this ring has no room for any entry (the budget had none for its first ones). */
  get roomless(): boolean {
    return this.#seq.length === 0;
  }

  get length(): number {
    return this.#len;
  }

  /** Bytes this ring holds: its typed arrays and the values it keeps by reference. */
  get bytes(): number {
    return this.#seq.length * SIGNAL_ENTRY_BYTES + this.#refBytes;
  }

  /** Frees this ring's bytes from the budget (the signal or device is gone). */
  release(): void {
    this.#budget.bytes -= this.bytes;
    if (this.roomless) this.#budget.roomless--;
    this.#setNotKept(false);
  }

  /** Whether its latest value was too large to keep (none kept since). */
  get notKept(): boolean {
    return this.#notKept;
  }

  #setNotKept(on: boolean): void {
    if (this.#notKept === on) return;
    this.#notKept = on;
    this.#budget.notKept += on ? 1 : -1;
  }

  /** Whether a sample was ever recorded (its last entry is mirrored in this object). */
  get recorded(): boolean {
    return this.#lastFlags !== -1;
  }

  /** Sequence number of the oldest change kept (the signal is known from that poll on). */
  firstSeq(): number {
    return this.#len === 0 ? Infinity : this.#seq[this.#head]!;
  }

  /**
   * Records the sample of poll `seq` (`exact`: the value as an exact double, exactDouble(), else
   * null); `oldestSeq` is the device's oldest kept poll (changes before the one in effect there
   * are dropped). False when its value kept by reference does not fit the budget even with none
   * of this signal's other changes: it is not kept, and the ring holds none of this signal's
   * changes up to it (as a ring made without room) -- the caller says so.
   */
  record(
    seq: number,
    value: TypedValue | null,
    exact: number | null,
    quality: Quality,
    oldestSeq: number,
  ): boolean {
    let flags = QUALITY_RANK[quality];
    let num = NaN;
    let ref: TypedValue | null = null;
    if (value !== null) {
      flags |= HAS_VALUE;
      this.type = value.type;
      if (exact === null) {
        flags |= BY_REF;
        ref = value;
      } else {
        num = exact;
        flags |= (NUM_TYPE_CODE[value.type] ?? 0) << NUM_TYPE_SHIFT;
      }
    }
    if (
      this.#lastFlags === flags &&
      ((flags & BY_REF) !== 0 ? sameValue(this.#lastRef!, ref!) : Object.is(this.#lastNum, num))
    ) {
      return true; // the same sample as the poll before: nothing new
    }
    if (this.#seq.length === 0 && !this.#growOrDrop()) {
      // No room at all (roomless): the sample is not kept, nor mirrored (the next poll offers it
      // again, kept once there is room); a walk that had not passed it lost it, and the ring
      // holds every change from the next poll on only.
      this.droppedSeq = seq;
      this.trimmedToSeq = seq + 1;
      return true;
    }
    this.#lastFlags = flags;
    this.#lastNum = num;
    this.#lastRef = ref;
    const cap = this.#seq.length;
    // Changes no kept poll needs: the one in effect at the oldest kept poll stays.
    while (this.#len >= 2 && this.#seq[(this.#head + 1) % cap]! <= oldestSeq) this.#dropHead();
    if (ref !== null && !this.#makeRoom(seq, refBytes(ref))) {
      // Too large for the whole budget: not kept (its older changes went to make room, and no
      // longer hold at this poll). It stays mirrored, so its repeats add nothing; a walk that had
      // not passed it lost it, and the ring holds every change from the next poll on only.
      this.droppedSeq = seq;
      this.trimmedToSeq = seq + 1;
      this.#setNotKept(true);
      return false;
    }
    if (this.#notKept) this.#setNotKept(false);
    if (this.#len === this.#seq.length) this.#growOrDrop();
    const at = (this.#head + this.#len) % this.#seq.length;
    this.#seq[at] = seq;
    this.#num[at] = num;
    this.#flags[at] = flags;
    if (ref !== null) {
      (this.#refs ??= new Array(this.#seq.length).fill(null))[at] = ref;
      const size = refBytes(ref);
      this.#refBytes += size;
      this.#budget.bytes += size;
    } else if (this.#refs !== null) this.#refs[at] = null;
    this.#len++;
    return true;
  }

  /**
   * Drops this signal's oldest changes until a value of `size` bytes kept by reference fits the
   * budget; false when it does not fit even once all of them are gone (the budget is never
   * passed: the caller does not keep it).
   */
  #makeRoom(seq: number, size: number): boolean {
    if (this.#budget.allows(size)) return true;
    while (this.#len > 0 && !this.#budget.allows(size)) this.#dropHead();
    if (!this.#budget.allows(size)) return false;
    this.trimmedToSeq = this.#len > 0 ? this.#seq[this.#head]! : seq;
    return true;
  }

  #dropHead(): void {
    this.droppedSeq = this.#seq[this.#head]!;
    const ref = this.#refs?.[this.#head] ?? null;
    if (ref !== null) {
      const size = refBytes(ref);
      this.#refBytes -= size;
      this.#budget.bytes -= size;
      this.#refs![this.#head] = null;
    }
    this.#head = (this.#head + 1) % this.#seq.length;
    this.#len--;
  }

  /** Makes room for one entry; false when the ring has none and may not get any. */
  #growOrDrop(): boolean {
    const cap = this.#seq.length;
    const next = grown(cap);
    if (!this.#budget.allows((next - cap) * SIGNAL_ENTRY_BYTES)) {
      if (cap === 0) return false;
      this.#dropHead();
      this.trimmedToSeq = this.#seq[this.#head]!;
      return true;
    }
    if (cap === 0) this.#budget.roomless--;
    const seq = new Uint32Array(next);
    const num = new Float64Array(next);
    const flags = new Uint8Array(next);
    const refs = this.#refs === null ? null : new Array<TypedValue | null>(next).fill(null);
    for (let i = 0; i < this.#len; i++) {
      const from = (this.#head + i) % cap;
      seq[i] = this.#seq[from]!;
      num[i] = this.#num[from]!;
      flags[i] = this.#flags[from]!;
      if (refs !== null) refs[i] = this.#refs![from]!;
    }
    this.#budget.bytes += (next - cap) * SIGNAL_ENTRY_BYTES;
    this.#seq = seq;
    this.#num = num;
    this.#flags = flags;
    this.#refs = refs;
    this.#head = 0;
    return true;
  }

  /**
   * Index (0 = oldest kept) of the change in effect at poll `seq`: the last one with a sequence
   * number at or before it; -1 when the signal has none that early.
   */
  indexAt(seq: number): number {
    let lo = 0;
    let hi = this.#len - 1;
    let found = -1;
    const cap = this.#seq.length;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.#seq[(this.#head + mid) % cap]! <= seq) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /** Sequence number of change `i` (0 = oldest kept). */
  seqAt(i: number): number {
    return this.#seq[(this.#head + i) % this.#seq.length]!;
  }

  /** Fills `out` with change `i` (its time is the caller's). */
  read(i: number, out: RingSample): void {
    const at = (this.#head + i) % this.#seq.length;
    const f = this.#flags[at]!;
    out.quality = f & QUALITY_MASK;
    out.hasValue = (f & HAS_VALUE) !== 0;
    out.num = this.#num[at]!;
    out.numType = NUM_TYPES[(f >> NUM_TYPE_SHIFT) & 0x03]!;
    out.ref = (f & BY_REF) !== 0 ? this.#refs![at]! : null;
  }
}

/** The polls of one device and the rings of its signals. */
export class DeviceRing {
  readonly providerId: string;
  readonly deviceId: string;
  readonly signals = new Map<string, SignalRing>();
  #times: Float64Array;
  #head = 0;
  #len = 0;
  /** Sequence number of the oldest kept poll. */
  #firstSeq: number;
  /**
   * Sequence number of this ring's first poll: above 0 when it goes on from the numbers of a ring
   * let go before (History: a device declared again), whose polls are not in this one.
   */
  readonly startSeq: number;
  /**
   * Sequence number of the first poll since the wall clock last stepped back: the polls from it on
   * ascend in time, and the time searches look at them only (the polls before it are kept, in
   * order, for the walks by sequence: Sparkplug's replay).
   */
  #runSeq: number;
  readonly #budget: RingBudget;

  constructor(providerId: string, deviceId: string, budget: RingBudget, startSeq = 0) {
    this.providerId = providerId;
    this.deviceId = deviceId;
    this.#firstSeq = startSeq;
    this.#runSeq = startSeq;
    this.startSeq = startSeq;
    this.#budget = budget;
    this.#times = new Float64Array(budget.firstCapacity(POLL_ENTRY_BYTES));
  }

  /** Whether this ring has no room for any poll (the budget had none for its first ones). */
  get roomless(): boolean {
    return this.#times.length === 0;
  }

  get polls(): number {
    return this.#len;
  }

  get firstSeq(): number {
    return this.#firstSeq;
  }

  /** The first kept poll the time searches look at (see #runSeq): firstSeq, or a later one. */
  get timeFirstSeq(): number {
    return Math.max(this.#firstSeq, this.#runSeq);
  }

  /** Sequence number the next poll gets. */
  get nextSeq(): number {
    return this.#firstSeq + this.#len;
  }

  get bytes(): number {
    let n = this.#times.length * POLL_ENTRY_BYTES;
    for (const s of this.signals.values()) n += s.bytes;
    return n;
  }

  /** Frees every byte of this device from the budget. */
  release(): void {
    this.#budget.bytes -= this.#times.length * POLL_ENTRY_BYTES;
    if (this.roomless) this.#budget.roomless--;
    for (const s of this.signals.values()) s.release();
  }

  /** Time of the oldest kept poll the time searches look at (timeFirstSeq), or null. */
  oldestMs(): number | null {
    return this.#len === 0 ? null : this.timeOf(this.timeFirstSeq);
  }

  /** Time of the newest kept poll, or null. */
  newestMs(): number | null {
    return this.#len === 0 ? null : this.#times[(this.#head + this.#len - 1) % this.#times.length]!;
  }

  /** Time of poll `seq` (must be kept). */
  timeOf(seq: number): number {
    return this.#times[(this.#head + (seq - this.#firstSeq)) % this.#times.length]!;
  }

  /**
   * Records a poll at `timeMs`, dropping polls older than `horizonMs`; returns its sequence.
   * `steppedBack`: the wall clock stepped back since the last poll though this one is not before
   * it (History: another device's poll saw the step, and the disk rows of every poll so far are of
   * the period before it): a new run begins here all the same.
   */
  addPoll(timeMs: number, horizonMs: number, steppedBack = false): number {
    // The polls before a step back go once the first poll after it is past the horizon (their own
    // times are ahead of the clock): every one of them is older than that one.
    while (
      this.#len > 0 &&
      (this.#times[this.#head]! < horizonMs ||
        (this.#firstSeq < this.#runSeq && this.timeOf(this.#runSeq) < horizonMs))
    ) this.#dropHead();
    const newest = this.newestMs();
    if (this.#len === this.#times.length && !this.#growOrDrop()) {
      // No room at all: the poll is numbered (its signals' changes are, by it) but not kept.
      return this.#firstSeq++;
    }
    this.#times[(this.#head + this.#len) % this.#times.length] = timeMs;
    this.#len++;
    const seq = this.#firstSeq + this.#len - 1;
    // The wall clock stepped back.
    if (newest !== null && (timeMs < newest || steppedBack)) this.#runSeq = seq;
    return seq;
  }

  #dropHead(): void {
    this.#head = (this.#head + 1) % this.#times.length;
    this.#len--;
    this.#firstSeq++;
  }

  /** Makes room for one poll; false when the ring has none and may not get any. */
  #growOrDrop(): boolean {
    const cap = this.#times.length;
    const next = grown(cap);
    if (!this.#budget.allows((next - cap) * POLL_ENTRY_BYTES)) {
      if (cap === 0) return false;
      this.#dropHead();
      return true;
    }
    if (cap === 0) this.#budget.roomless--;
    const times = new Float64Array(next);
    for (let i = 0; i < this.#len; i++) times[i] = this.#times[(this.#head + i) % cap]!;
    this.#budget.bytes += (next - cap) * POLL_ENTRY_BYTES;
    this.#times = times;
    this.#head = 0;
    return true;
  }

  /**
   * The first kept poll at or after `sinceMs` (its sequence number), or nextSeq when none. From
   * timeFirstSeq on: those ascend.
   */
  seqAtOrAfter(sinceMs: number): number {
    let lo = this.timeFirstSeq - this.#firstSeq;
    let hi = this.#len;
    const cap = this.#times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#times[(this.#head + mid) % cap]! < sinceMs) lo = mid + 1;
      else hi = mid;
    }
    return this.#firstSeq + lo;
  }

  /** The first kept poll after `ms` (its sequence number), or nextSeq when none. */
  seqAfter(ms: number): number {
    let lo = this.timeFirstSeq - this.#firstSeq;
    let hi = this.#len;
    const cap = this.#times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#times[(this.#head + mid) % cap]! <= ms) lo = mid + 1;
      else hi = mid;
    }
    return this.#firstSeq + lo;
  }

  /**
   * The kept polls taken in the `spanMs` before poll `untilSeq` (an incident's trigger at `atMs`:
   * its polls before it) by the time that passed, not by their wall times, and their dates: the
   * first one's sequence number, and each one's date from it on (`dates[seq - fromSeq]`). Walking
   * back from the last poll before `untilSeq` (dated no later than `atMs`), a poll is dated as much
   * before the one after it as their times say; across a step back of the wall clock (a poll's
   * time after the next one's) the gap is unknown and counted as none, so the polls before the
   * step are taken as far back as the rest of the span reaches. The dates never fall in poll order
   * and are the polls' own times when the clock did not step back.
   */
  datesBefore(
    untilSeq: number,
    atMs: number,
    spanMs: number,
  ): { fromSeq: number; dates: number[] } {
    const last = Math.min(untilSeq, this.nextSeq) - 1;
    const sinceMs = atMs - spanMs;
    const dates: number[] = [];
    let fromSeq = last + 1;
    let date = last < this.#firstSeq ? -Infinity : Math.min(this.timeOf(last), atMs);
    for (let seq = last; seq >= this.#firstSeq && date >= sinceMs; seq--) {
      dates.push(date);
      fromSeq = seq;
      if (seq === this.#firstSeq) break;
      const t = this.timeOf(seq - 1);
      const next = this.timeOf(seq);
      if (t <= next) date -= next - t;
    }
    return { fromSeq: Math.max(fromSeq, this.#firstSeq), dates: dates.reverse() };
  }

  /**
   * Calls `each` for every sample of `signal` at a kept poll whose time is in [sinceMs, untilMs],
   * in poll order (the cursor is reused between calls). While polls from before a step back of
   * the wall clock are kept (their times lie ahead of the later polls'), every kept poll is
   * looked at, not only those the time searches see (timeFirstSeq): a window that lies before the
   * step -- an incident's, open while the clock stepped -- has its samples there. The polls from
   * `anyTimeFromSeq` on are taken whatever their times (an incident's polls after its trigger: a
   * step back of the wall clock stamps them before it).
   */
  samplesBetween(
    signal: SignalRing,
    sinceMs: number,
    untilMs: number,
    each: (s: RingSample) => void,
    anyTimeFromSeq = Infinity,
  ): void {
    const take = (s: RingSample) => {
      each(s);
      return true;
    };
    if (this.#runSeq <= this.#firstSeq && anyTimeFromSeq === Infinity) {
      this.samples(signal, this.seqAtOrAfter(sinceMs), untilMs, take);
    } else {
      const from = this.#runSeq <= this.#firstSeq
        ? Math.min(this.seqAtOrAfter(sinceMs), anyTimeFromSeq)
        : this.#firstSeq;
      this.samples(signal, from, untilMs, take, sinceMs, false, anyTimeFromSeq);
    }
  }

  /**
   * Calls `each` for every sample of `signal` from poll `fromSeq` while its time is at most
   * `untilMs` (the cursor is reused between calls); stops early when `each` returns false.
   * `ordered` false (polls from before a step back of the wall clock among them): a poll past
   * `untilMs` is passed over, not the end, and one before `sinceMs` too; the polls from
   * `anyTimeFromSeq` on are passed whatever their times.
   */
  samples(
    signal: SignalRing,
    fromSeq: number,
    untilMs: number,
    each: (s: RingSample) => boolean,
    sinceMs = -Infinity,
    ordered = true,
    anyTimeFromSeq = Infinity,
  ): void {
    const out = blankSample();
    const start = Math.max(fromSeq, this.#firstSeq);
    let i = signal.indexAt(start);
    if (i < 0) {
      // No change this early: begin at the signal's first one.
      if (signal.length === 0) return;
      i = 0;
    }
    let nextSeq = i + 1 < signal.length ? signal.seqAt(i + 1) : Infinity;
    const end = this.nextSeq;
    for (let seq = Math.max(start, signal.seqAt(i)); seq < end; seq++) {
      const t = this.timeOf(seq);
      if (t > untilMs && ordered) return;
      while (seq >= nextSeq) {
        i++;
        nextSeq = i + 1 < signal.length ? signal.seqAt(i + 1) : Infinity;
      }
      if (seq < anyTimeFromSeq && (t > untilMs || t < sinceMs)) continue;
      signal.read(i, out);
      out.timeMs = t;
      out.seq = seq;
      if (!each(out)) return;
    }
  }
}

/** A sample to read ring entries into (one per walk, reused for every entry). */
function blankSample(): RingSample {
  return {
    timeMs: 0,
    quality: 0,
    num: NaN,
    numType: "double",
    ref: null,
    hasValue: false,
    seq: 0,
  };
}

/** The value of a ring sample as a typed value of the type it was polled as (null: none). */
export function ringValue(s: RingSample): TypedValue | null {
  if (!s.hasValue) return null;
  if (s.ref !== null) return s.ref;
  switch (s.numType) {
    case "bool":
      return boolValue(s.num !== 0);
    case "int64":
      return int64Value(s.num);
    case "uint64":
      return uint64Value(s.num);
    default:
      return doubleValue(s.num);
  }
}

/**
 * A walk over the *changes* of some signals of one device at its polls [fromSeq, untilSeq) (poll
 * sequence numbers, DeviceRing.nextSeq) that the ring held when the walk was made (polls recorded
 * later are not part of it), one poll at a time in poll order. Keyed on poll order, not time: a
 * wall clock stepped back meanwhile misplaces no poll. The walk keeps a cursor, not a copy, so it
 * can be continued later while the ring goes on recording. When the ring drops polls the cursor
 * has not reached (a walk slower than `memory_seconds`), the walk goes on from the oldest kept
 * poll and says so (`overtaken`).
 */
export class ChangeWalk {
  readonly #ring: DeviceRing;
  readonly #signals: readonly SignalRing[];
  #cursor: number;
  readonly #endSeq: number;
  readonly #out: RingSample = blankSample();
  /**
   * From which poll the ring holds every change of these signals (a sequence number): its oldest
   * kept poll once it has dropped polls (time or byte bound), later when the byte bound trimmed a
   * signal's changes; -Infinity while it holds everything since the device's first poll. Later
   * than the walk's `fromSeq`: the polls between were lost.
   */
  readonly reachFromSeq: number;
  /**
   * The time of the poll `reachFromSeq` (epoch ms), for messages: -Infinity with it, Infinity
   * when the ring keeps no poll of the device.
   */
  readonly reachFromMs: number;
  /**
   * Changes the cursor had not reached were dropped meanwhile (not walked): with the device's
   * polls (time or byte bound), or by the byte bound trimming a signal's ring alone.
   */
  overtaken = false;
  /** Each signal's droppedSeq as last looked at (drops before the walk are in reachFromSeq). */
  readonly #droppedSeen: number[];
  /** The sequence number of the poll `next` returned last (-1 before the first). */
  seq = -1;

  constructor(ring: DeviceRing, signals: readonly SignalRing[], fromSeq: number, untilSeq: number) {
    this.#ring = ring;
    this.#signals = signals;
    this.#cursor = Math.max(fromSeq, ring.firstSeq);
    this.#endSeq = Math.min(untilSeq, ring.nextSeq);
    // Polls before the ring's first (a ring let go before held them) are lost too.
    let reach = ring.firstSeq > ring.startSeq || fromSeq < ring.startSeq
      ? ring.firstSeq
      : -Infinity;
    for (const sig of signals) {
      const t = sig.trimmedToSeq;
      // (nextSeq itself: the signal's ring kept none of its changes up to now, roomless.)
      if (t >= ring.firstSeq && t <= ring.nextSeq) reach = Math.max(reach, t);
    }
    this.reachFromSeq = reach;
    this.#droppedSeen = signals.map((sig) => sig.droppedSeq);
    this.reachFromMs = reach === -Infinity
      ? -Infinity
      : reach < ring.nextSeq
      ? ring.timeOf(reach)
      : Infinity; // nothing kept
  }

  /**
   * The next poll with at least one change: calls `each` per changed signal (in the order the
   * signals were given) and returns the poll's time; null when the walk is done.
   */
  next(each: (signalId: string, s: RingSample, type: ValueType | null) => void): number | null {
    const ring = this.#ring;
    // A change dropped since the last step that the cursor had not passed is lost to the walk.
    for (let k = 0; k < this.#signals.length; k++) {
      const dropped = this.#signals[k]!.droppedSeq;
      if (dropped === this.#droppedSeen[k]) continue;
      this.#droppedSeen[k] = dropped;
      if (dropped >= this.#cursor && dropped < this.#endSeq) this.overtaken = true;
    }
    if (this.#cursor < ring.firstSeq) {
      this.overtaken = true;
      this.#cursor = ring.firstSeq;
    }
    let min = Infinity;
    for (const sig of this.#signals) {
      const i = sig.indexAt(this.#cursor - 1) + 1;
      if (i < sig.length) min = Math.min(min, sig.seqAt(i));
    }
    if (min >= this.#endSeq) {
      this.#cursor = this.#endSeq;
      return null;
    }
    const out = this.#out;
    out.timeMs = ring.timeOf(min);
    out.seq = min;
    for (const sig of this.#signals) {
      const i = sig.indexAt(min);
      if (i < 0 || sig.seqAt(i) !== min) continue;
      sig.read(i, out);
      each(sig.signalId, out, sig.type);
    }
    this.#cursor = min + 1;
    this.seq = min;
    return out.timeMs;
  }
}
