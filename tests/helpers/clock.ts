/**
 * Clocks for tests. A component takes a Clock (src/common/host.ts) for the time and its timers;
 * a test passes a {@link ManualClock} and moves time by hand, so it never sleeps to wait for
 * time to pass, or {@link withRealTimers} around its own time source when the component must run
 * against real processes.
 */
import type { Clock, TimerId } from "../../src/common/mod.ts";
import { waitFor } from "./kernel.ts";
import { macrotask } from "./turns.ts";

/** The host's timers, for a test clock whose time it sets but whose timers run for real. */
export const realSetTimer = (fn: () => void, ms: number): TimerId => setTimeout(fn, ms);
/** See {@link realSetTimer}. */
export const realClearTimer = (id: TimerId): void =>
  clearTimeout(id as ReturnType<typeof setTimeout> | undefined);

/** A clock reading `time` with real timers (the time the test sets; the delays real). */
export function withRealTimers(time: Pick<Clock, "nowMs" | "monoMs">): Clock {
  return {
    nowMs: () => time.nowMs(),
    monoMs: () => time.monoMs(),
    setTimer: realSetTimer,
    clearTimer: realClearTimer,
  };
}

/**
 * The host's clock, moved forward by hand on top of real time ({@link skip}): for a runtime over
 * real processes whose test waits for seconds to pass with nothing else to do (a sample ageing
 * while the provider's reads hang, an alarm's delay). Timers are real, due on this clock: a skip
 * fires at once those it makes due (in due order) and re-arms the others for what is left.
 */
export class SkippingClock implements Clock {
  #skippedMs = 0;
  #nextId = 1;
  readonly #timers = new Map<
    number,
    { dueMs: number; fn: () => void; real: ReturnType<typeof setTimeout> }
  >();

  nowMs(): number {
    return Date.now() + this.#skippedMs;
  }

  monoMs(): number {
    return performance.now() + this.#skippedMs;
  }

  setTimer(fn: () => void, ms: number): TimerId {
    const id = this.#nextId++;
    const dueMs = this.monoMs() + Math.max(0, ms);
    this.#timers.set(id, { dueMs, fn, real: this.#arm(id, dueMs) });
    return id;
  }

  clearTimer(id: TimerId): void {
    const t = this.#timers.get(id as number);
    if (t === undefined) return;
    clearTimeout(t.real);
    this.#timers.delete(id as number);
  }

  /** Moves time forward `ms`: the timers now due fire, in due order; the others are re-armed. */
  skip(ms: number): void {
    if (!(ms >= 0)) throw new Error(`SkippingClock.skip: ${ms} ms is no forward step`);
    this.#skippedMs += ms;
    const now = this.monoMs();
    const due = [...this.#timers].filter(([, t]) => t.dueMs <= now)
      .sort(([, a], [, b]) => a.dueMs - b.dueMs);
    for (const [id, t] of this.#timers) {
      clearTimeout(t.real);
      if (t.dueMs > now) t.real = this.#arm(id, t.dueMs);
    }
    for (const [id, t] of due) {
      if (this.#timers.delete(id)) t.fn();
    }
  }

  #arm(id: number, dueMs: number): ReturnType<typeof setTimeout> {
    return setTimeout(() => {
      const t = this.#timers.get(id);
      if (t === undefined) return;
      this.#timers.delete(id);
      t.fn();
    }, Math.max(0, dueMs - this.monoMs()));
  }
}

interface ManualTimer {
  readonly id: number;
  readonly dueMs: number;
  /** The delay as given to setTimer. */
  readonly delayMs: number;
  readonly fn: () => void;
  /** Set from code matching the clock's background pattern (see ManualClock.background). */
  readonly background: boolean;
}

/**
 * The ADPP session's one deadline timer (src/adpp/client.ts): armed while requests are in
 * flight and left armed until the earliest deadline passes, whoever else uses the clock.
 */
export const ADPP_DEADLINE_TIMER = /#armDeadlineTimer/;

/**
 * A clock moved by hand: `mono` and `wall` advance together with {@link advance}; timers fire
 * only when time is advanced past their due time, in due order (then in the order they were
 * set), each seeing the clock at its own due time. `wall` can also step on its own
 * ({@link stepWall}), as a host clock does under NTP. A host timer that fires late or a little
 * early is {@link fireNext} at the time it fires.
 */
export class ManualClock implements Clock {
  mono: number;
  wall: number;
  #nextId = 1;
  readonly #timers = new Map<number, ManualTimer>();
  #background: RegExp | null = null;

  constructor(mono = 1_000, wall = 1_700_000_000_000) {
    this.mono = mono;
    this.wall = wall;
  }

  nowMs(): number {
    return this.wall;
  }

  monoMs(): number {
    return this.mono;
  }

  /**
   * Timers set from code whose stack matches `pattern` (e.g. ADPP_DEADLINE_TIMER) are background
   * from now on: they fire as time moves (advance, runUntil) but are not counted or listed
   * (pendingTimers, pendingDueTimes, pendingDelays) and fireNext passes them by, so a test of
   * one component's timers is not about another's on the same clock.
   */
  background(pattern: RegExp): this {
    this.#background = pattern;
    return this;
  }

  setTimer(fn: () => void, ms: number): TimerId {
    const id = this.#nextId++;
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const background = this.#background !== null &&
      this.#background.test(new Error().stack ?? "");
    this.#timers.set(id, { id, dueMs: this.mono + delay, delayMs: ms, fn, background });
    return id;
  }

  clearTimer(id: TimerId): void {
    if (typeof id === "number") this.#timers.delete(id);
  }

  /** Timers set and neither fired nor cleared. */
  get pendingTimers(): number {
    return this.#foreground().length;
  }

  #foreground(): ManualTimer[] {
    return [...this.#timers.values()].filter((t) => !t.background);
  }

  /** Due times (monotonic) of the pending timers, soonest first. */
  pendingDueTimes(): number[] {
    return this.#foreground().map((t) => t.dueMs).sort((a, b) => a - b);
  }

  /** Delays of the pending timers as they were asked for (ms), in the order they were set. */
  pendingDelays(): number[] {
    return this.#foreground().map((t) => t.delayMs);
  }

  /**
   * Fires the soonest pending timer with the clock moved to `atMs` (monotonic; default its due
   * time), as a host timer that fires late, or a fraction of a millisecond early, does. The wall
   * clock moves with it; time never moves back. False when no timer is pending. Background
   * timers (see background) only with `includeBackground`.
   */
  fireNext(atMs?: number, includeBackground = false): boolean {
    const next = this.#nextDue(Infinity, includeBackground);
    if (next === undefined) return false;
    const at = atMs ?? next.dueMs;
    if (at < this.mono) throw new RangeError(`fireNext(${at}): the clock is at ${this.mono}`);
    this.#timers.delete(next.id);
    this.wall += at - this.mono;
    this.mono = at;
    next.fn();
    return true;
  }

  /** Steps the wall clock alone (the monotonic clock does not move). */
  stepWall(deltaMs: number): void {
    this.wall += deltaMs;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way (synchronously,
   * also those a callback sets within the span).
   */
  advance(ms: number): void {
    const end = this.mono + ms;
    for (let t = this.#nextDue(end); t !== undefined; t = this.#nextDue(end)) this.#fire(t);
    this.#moveTo(end);
  }

  /**
   * As {@link advance}, but lets promise callbacks run after each timer (a timer whose
   * callback starts async work sees that work progress before the next timer fires).
   */
  async advanceAsync(ms: number): Promise<void> {
    const end = this.mono + ms;
    await flushMicrotasks();
    for (let t = this.#nextDue(end); t !== undefined; t = this.#nextDue(end)) {
      this.#fire(t);
      await flushMicrotasks();
    }
    this.#moveTo(end);
    await flushMicrotasks();
  }

  /** Moves both clocks to `end`, never back (a callback may have moved them past it). */
  #moveTo(end: number): void {
    if (end <= this.mono) return;
    this.wall += end - this.mono;
    this.mono = end;
  }

  #nextDue(end: number, background = true): ManualTimer | undefined {
    let next: ManualTimer | undefined;
    for (const t of this.#timers.values()) {
      if (t.background && !background) continue;
      if (t.dueMs <= end && (next === undefined || t.dueMs < next.dueMs)) next = t;
    }
    return next;
  }

  #fire(t: ManualTimer): void {
    this.#timers.delete(t.id);
    this.wall += t.dueMs - this.mono;
    this.mono = Math.max(this.mono, t.dueMs);
    t.fn();
  }
}

/** Lets every queued promise callback run (a few macrotask turns' worth). */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/**
 * Waits until `done()` holds, firing the manual clock's timers that are due meanwhile without
 * moving time: for work that takes 0 ms timers on the clock (a spawn's turn in the registry's
 * queue, a restart without backoff) while real I/O (an in-process provider's answer) completes.
 */
export function runDueUntil<T>(
  clock: ManualClock,
  what: string,
  done: () => T | Promise<T>,
  timeoutMs = 10_000,
): Promise<NonNullable<T>> {
  return waitFor(what, () => {
    clock.advance(0);
    return done();
  }, timeoutMs);
}

/** `p`'s outcome, the clock's due timers fired meanwhile as runDueUntil does. */
export async function settleOn<T>(clock: ManualClock, p: Promise<T>, what = "a start"): Promise<T> {
  let settled = false;
  const watched = p.finally(() => (settled = true));
  watched.catch(() => {}); // the rejection is for the caller, below
  await runDueUntil(clock, what, () => settled);
  return await watched;
}

/** `p`'s outcome, the clock moved a second every 10 ms meanwhile (a real process ends on it). */
export async function settleMovingTime<T>(clock: ManualClock, p: Promise<T>): Promise<T> {
  let settled = false;
  const watched = p.finally(() => settled = true);
  watched.catch(() => {}); // the rejection is for the caller, below
  while (!settled) {
    clock.advance(1000);
    await new Promise((r) => setTimeout(r, 10));
  }
  return await watched;
}

/** Waits until a timer of `ms` is armed (timers due now fire meanwhile), then lets it fire. */
export async function elapseOn(clock: ManualClock, ms: number, what: string): Promise<void> {
  await waitFor(what, () => {
    clock.advance(0);
    return clock.pendingDelays().includes(ms);
  });
  clock.advance(ms);
}

/** Bound on the timers runUntil fires (a loop that re-arms a timer forever fails, not hangs). */
export const RUN_UNTIL_MAX_TIMERS = 100_000;

/**
 * Runs virtual time until `done()` holds: lets the work under way run (a few turns of the host's
 * event loop) and, when `done()` does not hold yet, fires the clock's next timer, moving time to
 * its due time. Time moves only when the code under test waits for it, so a run takes no real
 * time for what takes seconds of virtual time.
 *
 * Sound only when every piece of work under test is promise callbacks in this isolate (in-process
 * providers with their sleeps on this clock, memory journal files): real I/O under way would see
 * time jump past it. Fails after `realTimeoutMs` of real time without `done()`.
 */
export async function runUntil<T>(
  clock: ManualClock,
  what: string,
  done: () => T | Promise<T>,
  realTimeoutMs = 10_000,
): Promise<NonNullable<T>> {
  const deadline = performance.now() + realTimeoutMs;
  for (let fired = 0;;) {
    for (let i = 0; i < 3; i++) await macrotask();
    const v = await done();
    if (v) return v as NonNullable<T>;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    if (clock.fireNext(undefined, true) && ++fired > RUN_UNTIL_MAX_TIMERS) {
      throw new Error(`${what}: ${RUN_UNTIL_MAX_TIMERS} timers fired and still not done`);
    }
  }
}

/** `p`'s outcome, virtual time run meanwhile as runUntil does. */
export async function runToSettle<T>(clock: ManualClock, p: Promise<T>, what: string): Promise<T> {
  let settled = false;
  const watched = p.finally(() => (settled = true));
  watched.catch(() => {}); // the rejection is for the caller, below
  await runUntil(clock, what, () => settled);
  return await watched;
}
