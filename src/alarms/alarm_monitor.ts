/**
 * One alarm's state machine, on typed inputs only (a value, its quality, whether it is usable,
 * the time): limits with hysteresis, the raise delay, the bad-quality rule, ack and shelve. It
 * touches nothing else; the engine (alarm_engine.ts) feeds it readings and publishes what it
 * returns. docs/alarms.md describes the rules; in short:
 *
 * - a limit raises when the value is strictly past it (`> hi`, `< lo`): hi and lo raise MINOR,
 *   hihi and lolo MAJOR; an `alarm_when` alarm raises its `level` when the value equals it;
 * - a bad input (stale, unavailable, faulty, missing, of the wrong type) raises MAJOR with cause
 *   `bad_quality` unless `on_bad_quality: ignore` (then it neither raises nor clears, and a
 *   pending raise starts over: the value was not seen to hold meanwhile);
 * - a raise needs its condition to hold for `delay_ms` (measured on the monotonic clock from the
 *   first reading that showed it, reset by any reading that does not; for a bad input from the
 *   moment the input became unusable, whatever made it so); a higher level while active is a new
 *   raise after the same delay, and needs a new ack. The engine re-evaluates when a pending
 *   raise falls due (pendingDueMono), so the delay ends on time whether or not anything polls;
 * - an active alarm clears only when no limit holds any more with hysteresis: the value is below
 *   `hi - hysteresis` (or `hihi - hysteresis` without hi) and above `lo + hysteresis`; clearing
 *   has no delay. Its level stays the highest reached until it clears;
 * - while shelved, the condition is still tracked but no raise or clear is published; unshelving
 *   (expiry or request) shows it active (unacknowledged) or normal, whichever it is then.
 *
 * Evaluating a reading that changes nothing allocates nothing.
 */
import {
  failedPrecondition,
  invalidArgument,
  latestDate,
  numericOf,
  type Quality,
  transitionDate,
  type TypedValue,
  type ValueType,
} from "../common/mod.ts";
import type { AlarmConfig, AlarmLevel } from "../config/mod.ts";
import type { AlarmCause, AlarmState, AlarmTransition } from "../events/mod.ts";

/** Recent transitions kept per alarm (GET /v0/alarms `transitions`), oldest dropped first. */
export const MAX_ALARM_TRANSITIONS = 20;
/** Longest shelve (8 hours): a shelved alarm always comes back. */
export const MAX_SHELVE_MS = 8 * 60 * 60 * 1000;

/** One transition as recorded and published. */
export interface AlarmTransitionRecord {
  readonly transition: AlarmTransition;
  /** The state after it. */
  readonly state: AlarmState;
  readonly level: AlarmLevel | null;
  readonly cause: AlarmCause | null;
  readonly limit: number | boolean | string | null;
  /** The signal's value then (null: none). */
  readonly value: TypedValue | null;
  readonly quality: Quality | null;
  readonly at_epoch_ms: number;
}

const RANK: Readonly<Record<AlarmLevel, number>> = { MINOR: 1, MAJOR: 2 };

/** Whether `v` is of a type this alarm can judge (numbers for limits, alarm_when's type else). */
export function alarmAccepts(config: AlarmConfig, v: TypedValue): boolean {
  return alarmAcceptsType(config, v.type);
}

/**
 * Whether this alarm can judge values of type `t` (numbers for limits, alarm_when's type else):
 * of a sample (alarmAccepts) or of a signal's declared type (its bad_input and ERROR line).
 */
export function alarmAcceptsType(config: AlarmConfig, t: ValueType): boolean {
  if (config.alarmWhen === undefined) return t === "double" || t === "int64" || t === "uint64";
  return typeof config.alarmWhen === "boolean" ? t === "bool" : t === "string";
}

/** One alarm's state (see the module comment). */
export class AlarmMonitor {
  readonly config: AlarmConfig;
  /** Level, cause and limit of the raised condition; level null = not raised. */
  #level: AlarmLevel | null = null;
  #cause: AlarmCause | null = null;
  #limit: number | boolean | string | null = null;
  #acked = false;
  #shelvedUntilMono: number | null = null;
  #shelvedUntilWall: number | null = null;
  /** Since when (monotonic) a raise beyond the current level has been wanted; null: not. */
  #pendingSinceMono: number | null = null;
  #sinceWall: number | null = null;
  /**
   * The latest date of the alarm of this id a reload changed, this one replacing it (#follow):
   * this one's transitions come after its under the same id, so none is dated earlier.
   */
  #replacedUntilWall: number | null = null;
  #lastValue: TypedValue | null = null;
  #lastQuality: Quality | null = null;
  readonly #transitions: AlarmTransitionRecord[] = [];

  constructor(config: AlarmConfig) {
    this.config = config;
  }

  /**
   * A monitor of `config` that carries on with `previous`'s state: level, cause, limit, ack,
   * shelve, a pending raise, the last reading and the transitions (a reload kept the alarm).
   */
  static carriedOn(config: AlarmConfig, previous: AlarmMonitor): AlarmMonitor {
    const m = new AlarmMonitor(config);
    m.#level = previous.#level;
    m.#cause = previous.#cause;
    m.#limit = previous.#limit;
    m.#acked = previous.#acked;
    m.#shelvedUntilMono = previous.#shelvedUntilMono;
    m.#shelvedUntilWall = previous.#shelvedUntilWall;
    m.#pendingSinceMono = previous.#pendingSinceMono;
    m.#sinceWall = previous.#sinceWall;
    m.#replacedUntilWall = previous.#replacedUntilWall;
    m.#lastValue = previous.#lastValue;
    m.#lastQuality = previous.#lastQuality;
    m.#transitions.push(...previous.#transitions);
    return m;
  }

  /**
   * The date its transitions must not come before: its latest one's, or that of the alarm of its
   * id it replaced (follow) when later; null when neither recorded any. A successor under the id
   * follows it.
   */
  get lastAtWall(): number | null {
    return latestDate(this.#sinceWall, this.#replacedUntilWall);
  }

  /**
   * Makes this alarm follow the alarm of its id it replaces, retired, whose lastAtWall is `at`: a
   * reload's change of it, or a later reload's adding it back after one removed it. Its
   * transitions are dated no earlier than `at`, as they would be had the alarm carried on -- a
   * step back of the wall clock (NTP) must not date its raise before the clear of the alarm it
   * replaces. Its own view (since_epoch_ms) starts from normal all the same.
   */
  follow(at: number | null): void {
    this.#replacedUntilWall = latestDate(this.#replacedUntilWall, at);
  }

  /** The state an operator sees. */
  get state(): AlarmState {
    if (this.#shelvedUntilMono !== null) return "shelved";
    if (this.#level === null) return "normal";
    return this.#acked ? "active_acked" : "active";
  }

  /** Whether the condition is raised (also while shelved). */
  get raised(): boolean {
    return this.#level !== null;
  }

  get level(): AlarmLevel | null {
    return this.#level;
  }

  get cause(): AlarmCause | null {
    return this.#cause;
  }

  get limit(): number | boolean | string | null {
    return this.#limit;
  }

  /** Wall time the current state was entered; null while normal since start. */
  get sinceEpochMs(): number | null {
    return this.#sinceWall;
  }

  get shelvedUntilEpochMs(): number | null {
    return this.#shelvedUntilWall;
  }

  /** Monotonic time the shelve ends; null when not shelved. */
  get shelvedUntilMono(): number | null {
    return this.#shelvedUntilMono;
  }

  /** When the pending raise falls due (monotonic ms); null when none is pending. */
  get pendingDueMono(): number | null {
    return this.#pendingSinceMono === null ? null : this.#pendingSinceMono + this.config.delayMs;
  }

  /** The last quality evaluated (null before the first). */
  get lastQuality(): Quality | null {
    return this.#lastQuality;
  }

  /** Recent transitions, oldest first (a copy). */
  transitions(): AlarmTransitionRecord[] {
    return [...this.#transitions];
  }

  /**
   * Evaluates one reading. `usable` false means the input is bad (its quality is not OK, it is
   * stale, missing or of a type this alarm cannot judge); when true, `value` is non-null and
   * accepted by {@link alarmAccepts}. `badSinceMono` (a bad input) is when the input became
   * unusable: the raise delay runs from there. Returns the transition to publish (a raise or a
   * clear), or null. `raise.level` and `.cause` say what raised.
   */
  evaluate(
    value: TypedValue | null,
    quality: Quality | null,
    usable: boolean,
    nowMono: number,
    nowWall: number,
    badSinceMono: number | null = null,
  ): AlarmTransitionRecord | null {
    this.#lastValue = value;
    this.#lastQuality = quality;
    const c = this.config;
    let want: AlarmLevel | null = null;
    let cause: AlarmCause | null = null;
    let limit: number | boolean | string | null = null;
    let hold: boolean;
    if (!usable) {
      if (c.onBadQuality === "ignore") {
        // No information: nothing raises or clears on it, and a pending raise starts over.
        this.#pendingSinceMono = null;
        return null;
      }
      want = "MAJOR";
      cause = "bad_quality";
      hold = true;
      // The delay of a bad input runs from when it became unusable, not from this reading.
      if (badSinceMono !== null && badSinceMono < (this.#pendingSinceMono ?? Infinity)) {
        const current = this.#level;
        if (current === null || RANK.MAJOR > RANK[current]) this.#pendingSinceMono = badSinceMono;
      }
    } else if (c.alarmWhen !== undefined) {
      const v = value!;
      hold = v.type === "bool" ? v.bool === c.alarmWhen : v.type === "string" &&
        v.string === c.alarmWhen;
      if (hold) {
        want = c.level;
        cause = "alarm_when";
        limit = c.alarmWhen;
      }
    } else {
      const v = numericOf(value!) ?? NaN;
      const { hihi, hi, lo, lolo } = c.limits;
      const h = c.hysteresis;
      if (hihi !== undefined && v > hihi) {
        want = "MAJOR";
        cause = "hihi";
        limit = hihi;
      } else if (lolo !== undefined && v < lolo) {
        want = "MAJOR";
        cause = "lolo";
        limit = lolo;
      } else if (hi !== undefined && v > hi) {
        want = "MINOR";
        cause = "hi";
        limit = hi;
      } else if (lo !== undefined && v < lo) {
        want = "MINOR";
        cause = "lo";
        limit = lo;
      }
      hold = (hi !== undefined && v >= hi - h) || (hihi !== undefined && v >= hihi - h) ||
        (lo !== undefined && v <= lo + h) || (lolo !== undefined && v <= lolo + h);
    }
    const current = this.#level;
    if (current !== null && want === null && !hold) {
      this.#pendingSinceMono = null;
      return this.#change(null, null, null, "clear", nowWall);
    }
    if (want === null || (current !== null && RANK[want] <= RANK[current])) {
      this.#pendingSinceMono = null;
      return null;
    }
    this.#pendingSinceMono ??= nowMono;
    if (nowMono - this.#pendingSinceMono < c.delayMs) return null;
    this.#pendingSinceMono = null;
    this.#acked = false;
    return this.#change(want, cause, limit, "raise", nowWall);
  }

  /** Acknowledges an active alarm; null when it is already acknowledged (nothing changes). */
  ack(nowWall: number): AlarmTransitionRecord | null {
    const state = this.state;
    if (state === "active_acked") return null;
    if (state !== "active") {
      throw failedPrecondition(
        `Alarm ${this.config.id} is ${state}: only an active alarm is acknowledged`,
      );
    }
    this.#acked = true;
    return this.#record("ack", nowWall);
  }

  /**
   * Shelves the alarm for `durationMs` (1 ms to MAX_SHELVE_MS; again while shelved: a new
   * expiry). Refused for an alarm whose action faults or stops the machine.
   */
  shelve(durationMs: number, nowMono: number, nowWall: number): AlarmTransitionRecord {
    if (this.config.action !== "none") {
      throw failedPrecondition(
        `Alarm ${this.config.id} has action ${this.config.action}: an alarm that ${
          this.config.action === "estop" ? "stops" : "faults"
        } the machine cannot be shelved`,
      );
    }
    if (!Number.isInteger(durationMs) || durationMs < 1 || durationMs > MAX_SHELVE_MS) {
      throw invalidArgument(
        `duration_ms: must be an integer from 1 to ${MAX_SHELVE_MS} (8 h), got ${durationMs}`,
      );
    }
    this.#shelvedUntilMono = nowMono + durationMs;
    this.#shelvedUntilWall = nowWall + durationMs;
    this.#acked = false;
    return this.#record("shelve", nowWall);
  }

  /** Ends a shelve now; the alarm shows active (unacknowledged) or normal, as it is. */
  unshelve(nowWall: number): AlarmTransitionRecord {
    if (this.#shelvedUntilMono === null) {
      throw failedPrecondition(`Alarm ${this.config.id} is not shelved`);
    }
    this.#shelvedUntilMono = null;
    this.#shelvedUntilWall = null;
    this.#acked = false;
    return this.#record("unshelve", nowWall);
  }

  /**
   * Ends the alarm as a reload removes or replaces it: back to normal (not raised, not shelved,
   * nothing pending) with a clear; null when it was normal already.
   */
  retire(nowWall: number): AlarmTransitionRecord | null {
    if (this.state === "normal") return null;
    this.#level = null;
    this.#cause = null;
    this.#limit = null;
    this.#acked = false;
    this.#shelvedUntilMono = null;
    this.#shelvedUntilWall = null;
    this.#pendingSinceMono = null;
    return this.#record("clear", nowWall);
  }

  /** Unshelves when the shelve has run out; null otherwise. */
  expireShelve(nowMono: number, nowWall: number): AlarmTransitionRecord | null {
    if (this.#shelvedUntilMono === null || nowMono < this.#shelvedUntilMono) return null;
    return this.unshelve(nowWall);
  }

  /** A raise or clear: published unless shelved (then only the condition changes). */
  #change(
    level: AlarmLevel | null,
    cause: AlarmCause | null,
    limit: number | boolean | string | null,
    transition: "raise" | "clear",
    nowWall: number,
  ): AlarmTransitionRecord | null {
    this.#level = level;
    this.#cause = cause;
    this.#limit = limit;
    if (this.#shelvedUntilMono !== null) return null;
    return this.#record(transition, nowWall);
  }

  /**
   * Records a transition, dated no earlier than the one before it (the latest time this alarm
   * recorded is #sinceWall): a step back of the wall clock (NTP) must not date an ack or a clear
   * before the raise it follows.
   */
  #record(transition: AlarmTransition, nowWall: number): AlarmTransitionRecord {
    const at = transitionDate(nowWall, latestDate(this.#sinceWall, this.#replacedUntilWall));
    this.#sinceWall = at;
    const record: AlarmTransitionRecord = {
      transition,
      state: this.state,
      level: this.#level,
      cause: this.#cause,
      limit: this.#limit,
      value: this.#lastValue,
      quality: this.#lastQuality,
      at_epoch_ms: at,
    };
    this.#transitions.push(record);
    if (this.#transitions.length > MAX_ALARM_TRANSITIONS) this.#transitions.shift();
    return record;
  }
}
