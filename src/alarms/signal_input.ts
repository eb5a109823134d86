/**
 * A signal an alarm or an interlock reads, and whether its cached sample is usable. What the
 * configuration names but the providers do not have (an unknown device or signal, a signal
 * declared without a poll hint) can only be known at run time: it is a bad input like a stale or
 * faulty one, so the alarm raises and the interlock blocks (fail safe), and the binding says why.
 */
import type { Quality, TypedValue, ValueType } from "../common/mod.ts";
import type { SignalState, StateCache } from "../state/mod.ts";

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
} as const;
/** One of {@link InputProblem}'s values. */
export type InputProblem = typeof InputProblem[keyof typeof InputProblem];

/** What binding found out about a signal from the inventory (refreshed on every change). */
export interface SignalBinding {
  /** Declared value type; null when the provider left it unspecified; undefined: not declared. */
  readonly declaredType: ValueType | null | undefined;
  /** Age past which a sample counts as stale (ms). */
  readonly staleAfterMs: number;
  /** Why the inventory cannot serve this signal; null when it can. */
  readonly problem: string | null;
}

/** One `provider/device/signal` read by alarms or interlocks (shared by all of them). */
export class SignalInput {
  readonly handle: string;
  readonly providerId: string;
  readonly deviceId: string;
  readonly signalId: string;
  binding: SignalBinding = { declaredType: undefined, staleAfterMs: Infinity, problem: null };

  constructor(handle: string, providerId: string, deviceId: string, signalId: string) {
    this.handle = handle;
    this.providerId = providerId;
    this.deviceId = deviceId;
    this.signalId = signalId;
  }

  /** The cached sample; undefined when there is none. */
  sample(cache: StateCache): SignalState | undefined {
    return cache.device(this.providerId, this.deviceId)?.signals.get(this.signalId);
  }

  /** Whether the cached sample is usable now (GOOD), else why not. */
  classify(cache: StateCache, nowWall: number): InputProblem {
    const dev = cache.device(this.providerId, this.deviceId);
    if (dev === undefined) return InputProblem.NO_DEVICE;
    const s = dev.signals.get(this.signalId);
    if (s === undefined) return InputProblem.NO_SAMPLE;
    if (s.quality !== "OK") return InputProblem.QUALITY;
    if (s.value === null) return InputProblem.NO_VALUE;
    if (nowWall - s.timestampMs > this.binding.staleAfterMs) return InputProblem.AGE;
    return InputProblem.GOOD;
  }

  /** One line saying why the input is bad (for reasons and logs; allocates). */
  describe(problem: InputProblem, cache: StateCache, nowWall: number): string {
    const s = this.sample(cache);
    switch (problem) {
      case InputProblem.GOOD:
        return `${this.handle} = ${valueText(s?.value ?? null)}`;
      case InputProblem.NO_DEVICE:
        return `${this.handle}: ${
          this.binding.problem ?? `device ${this.providerId}/${this.deviceId} is not known`
        }`;
      case InputProblem.NO_SAMPLE:
        return `${this.handle}: ${this.binding.problem ?? "no sample in the cache"}`;
      case InputProblem.NO_VALUE:
        return `${this.handle}: no value (quality ${s?.quality ?? "UNAVAILABLE"})`;
      case InputProblem.QUALITY:
        return `${this.handle} is ${s?.quality ?? "UNAVAILABLE"}`;
      case InputProblem.AGE:
        return `${this.handle} is stale: its sample is ${
          s ? nowWall - s.timestampMs : "?"
        } ms old (stale after ${this.binding.staleAfterMs} ms)`;
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

/** The quality a view shows for an input (null when nothing is cached). */
export function sampleQuality(s: SignalState | undefined): Quality | null {
  return s?.quality ?? null;
}
