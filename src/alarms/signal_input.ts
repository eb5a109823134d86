/**
 * A signal an alarm or an interlock reads, and whether its cached sample is usable. What the
 * configuration names but the providers do not have (an unknown device or signal, a signal
 * declared without a poll hint) can only be known at run time: it is a bad input like a stale or
 * faulty one, so the alarm raises and the interlock blocks (fail safe), and the binding says why.
 *
 * Time is the runtime's monotonic clock: a sample is stale when the runtime received it longer
 * ago than the signal's bound (the provider's timestamp is never trusted for an age), and each
 * input remembers since when it has been unusable, whatever made it so, so an alarm's delay runs
 * from that moment whether or not anything polls (a provider that is down is not polled).
 */
import type { Quality, TypedValue, ValueType } from "../common/mod.ts";
import {
  type DeviceOutages,
  outcomeArrivedMono,
  type SignalState,
  type StateCache,
} from "../state/mod.ts";

/** What an input is judged against: the cache, and (in the runtime) device conditions. */
export interface InputContext {
  readonly cache: StateCache;
  /**
   * Whether a device is failing or down (state/device_outage.ts): an input of such a device is
   * unusable, with the device's reason. Absent: only the signal's own sample is judged.
   */
  readonly outages?: Pick<DeviceOutages, "condition">;
}

/** Why an input is not usable; GOOD when it is. Numbers, so classifying allocates nothing. */
export const InputProblem = {
  GOOD: 0,
  /** The device is not in the provider's inventory (or the provider never listed it). */
  NO_DEVICE: 1,
  /** The device has no cached sample of the signal: not declared, not polled, or not answered. */
  NO_SAMPLE: 2,
  /** The last sample has no value. */
  NO_VALUE: 3,
  /** The sample's quality is not OK (STALE, FAULT, UNAVAILABLE). */
  QUALITY: 4,
  /** The sample is older than the signal's staleness bound. */
  AGE: 5,
  /** The device is failing or down (provider down, reads failing, reported unreachable). */
  DEVICE_DOWN: 6,
} as const;
/** One of {@link InputProblem}'s values. */
export type InputProblem = typeof InputProblem[keyof typeof InputProblem];

/** What binding found out about a signal from the inventory (refreshed on every change). */
export interface SignalBinding {
  /** Declared value type; null when the provider left it unspecified; undefined: not declared. */
  readonly declaredType: ValueType | null | undefined;
  /** Why the inventory cannot serve this signal; null when it can. */
  readonly problem: string | null;
}

/** One `provider/device/signal` read by alarms or interlocks (shared by all of them). */
export class SignalInput {
  readonly handle: string;
  readonly providerId: string;
  readonly deviceId: string;
  readonly signalId: string;
  binding: SignalBinding = { declaredType: undefined, problem: null };
  /**
   * Since when (monotonic ms) the input has been unusable: the first classification that found
   * it bad, or for a stale sample the moment it went stale; null while it is usable.
   */
  #badSinceMono: number | null = null;
  /**
   * When the sample last found usable goes stale (monotonic ms: strictly past its bound); null
   * while the input is unusable. The engine wakes then, whether or not anything polls.
   */
  #staleAtMono: number | null = null;
  /** The signal's stale bound as last read from the cache, and the cache's boundsVersion then. */
  #staleAfterMs = Infinity;
  #boundsVersion = -1;

  constructor(handle: string, providerId: string, deviceId: string, signalId: string) {
    this.handle = handle;
    this.providerId = providerId;
    this.deviceId = deviceId;
    this.signalId = signalId;
  }

  /** Since when the input has been unusable (as last classified); null while it is usable. */
  get badSinceMono(): number | null {
    return this.#badSinceMono;
  }

  /** When the usable sample goes stale (as last classified); null while unusable. */
  get staleAtMono(): number | null {
    return this.#staleAtMono;
  }

  /**
   * The quality a reader sees of the sample classified as `problem`: STALE for one past its bound
   * (AGE: stored OK, as GET /v0/state reads it), else its own; null without a sample.
   */
  static qualityOf(problem: InputProblem, s: SignalState | undefined): Quality | null {
    return problem === InputProblem.AGE ? "STALE" : s?.quality ?? null;
  }

  /** The cached sample; undefined when there is none. */
  sample(ctx: InputContext): SignalState | undefined {
    return ctx.cache.device(this.providerId, this.deviceId)?.signals.get(this.signalId);
  }

  /**
   * Whether the cached sample is usable now (GOOD), else why not; remembers since when it has
   * been unusable (badSinceMono) and when a usable one goes stale (staleAtMono). Allocates
   * nothing.
   */
  classify(ctx: InputContext, nowMono: number): InputProblem {
    const problem = this.#judge(ctx, nowMono);
    if (problem === InputProblem.GOOD) {
      this.#badSinceMono = null;
    } else {
      // Usable at the last classification (a usable sample's stale time was noted then).
      const wasUsable = this.#staleAtMono !== null;
      this.#staleAtMono = null;
      if (this.#badSinceMono === null) {
        // A stale sample went bad the moment its age passed the bound, not when it was seen --
        // nor before that bound was in force (usable until a tightened bound made it stale: the
        // cache's record, #staleSince). So did one the cache already marked STALE for its age (an
        // answer left it out past its bound) when this input first reads it (an alarm a reload
        // adds on a signal nothing read before).
        const byAge = problem === InputProblem.AGE ||
          (problem === InputProblem.QUALITY &&
            this.#markedStaleByAge(this.sample(ctx), ctx, nowMono));
        // A quality the device's last poll brought (a failed read's UNAVAILABLE, a FAULT answered)
        // is bad since that outcome arrived: one held behind another device's hung read is
        // applied, and first seen here, later. An input seen bad first is so from now.
        this.#badSinceMono = byAge
          ? this.#staleSince(ctx)
          : problem === InputProblem.QUALITY && wasUsable
          ? this.#outcomeArrived(ctx, nowMono)
          : nowMono;
      }
    }
    return problem;
  }

  #judge(ctx: InputContext, nowMono: number): InputProblem {
    const cache = ctx.cache;
    const dev = cache.device(this.providerId, this.deviceId);
    if (dev === undefined) return InputProblem.NO_DEVICE;
    const s = dev.signals.get(this.signalId);
    if (s === undefined) return InputProblem.NO_SAMPLE;
    if (s.quality !== "OK") return InputProblem.QUALITY;
    if (s.value === null) return InputProblem.NO_VALUE;
    const staleAfter = this.#staleBound(cache);
    if (nowMono - s.receivedMono > staleAfter) return InputProblem.AGE;
    if (ctx.outages !== undefined) {
      if (ctx.outages.condition(this.providerId, this.deviceId).kind !== "up") {
        return InputProblem.DEVICE_DOWN;
      }
    }
    this.#staleAtMono = s.receivedMono + staleAfter + 1;
    return InputProblem.GOOD;
  }

  /** When the outcome of the device's last poll arrived (outcomeArrivedMono), never after now. */
  #outcomeArrived(ctx: InputContext, nowMono: number): number {
    const dev = ctx.cache.device(this.providerId, this.deviceId);
    return dev === undefined ? nowMono : outcomeArrivedMono(dev, nowMono);
  }

  #staleSince(ctx: InputContext): number {
    const s = this.sample(ctx)!;
    // Not before a bound a reload tightened was in force, also for an input that first reads
    // it after that reload (an alarm the same reload adds): the cache noted when (state_cache.ts).
    const since = ctx.cache.staleSinceMono(
      this.providerId,
      this.deviceId,
      this.signalId,
      s.receivedMono,
    );
    // A slot the cache no longer holds (never "never": the delay would never run out): the age
    // rule with the bound this input read.
    return since === Infinity ? s.receivedMono + this.#staleBound(ctx.cache) : since;
  }

  /** The signal's stale bound, re-read from the cache only when it may have changed. */
  #staleBound(cache: StateCache): number {
    const version = cache.boundsVersion;
    if (version !== this.#boundsVersion) {
      this.#staleAfterMs = cache.staleAfterMs(this.providerId, this.deviceId, this.signalId);
      this.#boundsVersion = version;
    }
    return this.#staleAfterMs;
  }

  #ageText(s: SignalState | undefined, ctx: InputContext, nowMono: number): string {
    return `${this.handle} is stale: its sample is ${
      s ? Math.round(nowMono - s.receivedMono) : "?"
    } ms old (stale after ${
      ctx.cache.staleAfterMs(this.providerId, this.deviceId, this.signalId)
    } ms)`;
  }

  /**
   * The kind of reason a `problem` classify found is told as (an interlock tells another reason
   * on a new kind, not on new values of the same): a sample marked STALE -- by the cache for its
   * age, or by its provider, received fresh at every poll while it goes stale by age between polls
   * (a bound shorter than its poll period) -- is stale by age (AGE): the two take turns on one
   * input while it stays bad; another quality not OK (FAULT, UNAVAILABLE) stays a kind of its own.
   * No sample of a device failing or down (no binding problem) is the device's condition
   * (DEVICE_DOWN). Allocates nothing.
   */
  reasonKind(problem: InputProblem, ctx: InputContext): InputProblem {
    if (problem === InputProblem.QUALITY && this.sample(ctx)?.quality === "STALE") {
      return InputProblem.AGE;
    }
    if (problem === InputProblem.NO_SAMPLE && this.binding.problem === null) {
      const c = ctx.outages?.condition(this.providerId, this.deviceId);
      return c !== undefined && c.kind !== "up" ? InputProblem.DEVICE_DOWN : problem;
    }
    return problem;
  }

  /**
   * The problem an interlock names for `problem` classify found: a sample stale by age (AGE), or
   * the kept one the cache marked STALE for its age at an answer that left it out (QUALITY: one
   * kind with AGE, see reasonKind), of a device failing or down is the device's condition
   * (DEVICE_DOWN). That holds across its polls; the age and the mark come and go with each fresh
   * answer when the stale bound is shorter than the poll period (a device reported UNREACHABLE
   * that still answers, the signal only at some of its answers), and each turn would be another
   * reason told. A STALE its provider reported (received at the device's last answer) stays its
   * own: that quality is what failed (a device whose every signal is so is failing for it).
   * Allocates nothing.
   */
  problemOfDevice(problem: InputProblem, ctx: InputContext): InputProblem {
    if (ctx.outages === undefined) return problem;
    if (problem !== InputProblem.AGE && !this.#keptMarkedStale(problem, ctx)) return problem;
    return ctx.outages.condition(this.providerId, this.deviceId).kind !== "up"
      ? InputProblem.DEVICE_DOWN
      : problem;
  }

  /** A QUALITY problem of a kept sample the cache marked STALE (not received at the last answer). */
  #keptMarkedStale(problem: InputProblem, ctx: InputContext): boolean {
    if (problem !== InputProblem.QUALITY) return false;
    const dev = ctx.cache.device(this.providerId, this.deviceId);
    const s = dev?.signals.get(this.signalId);
    return s !== undefined && s.quality === "STALE" && s.value !== null &&
      s.receivedMono !== dev!.lastPollMono;
  }

  /** A sample the cache marked STALE for its age: past its bound, with the value it kept. */
  #markedStaleByAge(s: SignalState | undefined, ctx: InputContext, nowMono: number): boolean {
    return s !== undefined && s.quality === "STALE" && s.value !== null &&
      nowMono - s.receivedMono > this.#staleBound(ctx.cache);
  }

  /**
   * Why an input with no sample (NO_SAMPLE) stays bad once samples come, when its reader cannot
   * judge the type the signal is declared with (a restart retyped it, dropping the value of the old
   * type): `<handle> is declared <type>; <why>`, as the rebinding's ERROR line says it. `why`
   * says what the reader wants of a declared type, null when it can judge it. Null for any other
   * problem, while the inventory cannot serve the signal (binding.problem says why first), or for
   * a type unspecified or not declared (judged by the value when one comes). Allocates.
   */
  describeDeclared(problem: InputProblem, why: (t: ValueType) => string | null): string | null {
    if (problem !== InputProblem.NO_SAMPLE || this.binding.problem !== null) return null;
    const t = this.binding.declaredType;
    if (t === undefined || t === null) return null;
    const wants = why(t);
    return wants === null ? null : `${this.handle} is declared ${t}; ${wants}`;
  }

  /** One line saying why the input is bad (for reasons and logs; allocates). */
  describe(problem: InputProblem, ctx: InputContext, nowMono: number): string {
    const s = this.sample(ctx);
    switch (problem) {
      case InputProblem.GOOD:
        return `${this.handle} = ${valueText(s?.value ?? null)}`;
      case InputProblem.NO_DEVICE: {
        if (this.binding.problem !== null) return `${this.handle}: ${this.binding.problem}`;
        // Its provider is not up: why the device is down, as the device conditions say it.
        const c = ctx.outages?.condition(this.providerId, this.deviceId);
        return `${this.handle}: device ${this.providerId}/${this.deviceId} is ${
          c !== undefined && c.kind !== "up" ? `down (${c.reason})` : "not known"
        }`;
      }
      case InputProblem.NO_SAMPLE: {
        if (this.binding.problem !== null) return `${this.handle}: ${this.binding.problem}`;
        // A device failing or down before its first answer has no sample: that is why.
        const c = ctx.outages?.condition(this.providerId, this.deviceId);
        return c !== undefined && c.kind !== "up"
          ? `${this.handle}: device ${this.providerId}/${this.deviceId} is ${c.kind} (${c.reason})`
          : `${this.handle}: no sample in the cache`;
      }
      case InputProblem.NO_VALUE:
        return `${this.handle}: no value (quality ${s?.quality ?? "UNAVAILABLE"})`;
      case InputProblem.QUALITY:
        // A sample the cache marked STALE for its age reads as the age rule says it, whichever of
        // the two saw it first; a provider's own STALE (a fresh receipt) reads as the quality.
        return this.#markedStaleByAge(s, ctx, nowMono)
          ? this.#ageText(s, ctx, nowMono)
          : `${this.handle} is ${s?.quality ?? "UNAVAILABLE"}`;
      case InputProblem.AGE:
        return this.#ageText(s, ctx, nowMono);
      case InputProblem.DEVICE_DOWN: {
        const c = ctx.outages?.condition(this.providerId, this.deviceId);
        return `${this.handle}: device ${this.providerId}/${this.deviceId} is ${
          c?.kind === "down" ? "down" : "failing"
        } (${c?.reason ?? "unknown"})`;
      }
    }
  }
}

/** A typed value as an operator reads it: `82.5`, `true`, `"open"`. */
export function valueText(v: TypedValue | null): string {
  if (v === null) return "no value";
  switch (v.type) {
    case "double":
      return v.non_finite ?? String(v.double);
    case "int64":
      return String(v.int64);
    case "uint64":
      return String(v.uint64);
    case "bool":
      return String(v.bool);
    case "string":
      return JSON.stringify(v.string);
    case "bytes":
      return `bytes ${v.base64}`;
  }
}

/** Whether a value of this type is a number for comparisons. */
export function isNumericType(t: ValueType): boolean {
  return t === "double" || t === "int64" || t === "uint64";
}
