/**
 * Buckets: min, max, last, count and the worst quality of the samples of one signal over one
 * step. The disk tier keeps one per signal per `history.step_ms`; a history answer with a step
 * folds full-rate samples (or disk buckets) into them.
 */
import type { TypedValue } from "../common/mod.ts";

/** A typed value as an answer carries it: a number (bool 0/1), a bigint, or a string. */
export function typedValueScalar(v: TypedValue): number | bigint | string {
  switch (v.type) {
    case "double":
      return v.double;
    case "bool":
      return v.bool ? 1 : 0;
    case "int64":
      return v.int64;
    case "uint64":
      return v.uint64;
    case "string":
      return v.string;
    case "bytes":
      return v.base64;
  }
}

/** One bucket as a history answer and the disk tier carry it. */
export interface HistoryPoint {
  /** Start of the bucket (epoch ms; a multiple of its step), or the sample's time at full rate. */
  t_ms: number;
  /** Smallest value (numbers and bools as 0/1); null when none is a number. */
  min: number | null;
  max: number | null;
  /** The last value: a number (bool 0/1), a string (strings, bytes as base64), or null. */
  last: number | bigint | string | null;
  /** Samples in the bucket (1 at full rate). */
  count: number;
  /** Worst quality code (QUALITY_BY_CODE order). */
  quality: number;
}

/** An accumulator of one signal's bucket (one object per signal, reused bucket after bucket). */
export class BucketAcc {
  min = Infinity;
  max = -Infinity;
  lastNum = NaN;
  lastRef: TypedValue | null = null;
  hasLast = false;
  count = 0;
  worst = 0;

  reset(): void {
    this.min = Infinity;
    this.max = -Infinity;
    this.lastNum = NaN;
    this.lastRef = null;
    this.hasLast = false;
    this.count = 0;
    this.worst = 0;
  }

  /** Adds a sample: its value as an exact double (else `ref`), or none. */
  add(hasValue: boolean, num: number, ref: TypedValue | null, quality: number): void {
    this.count++;
    if (quality > this.worst) this.worst = quality;
    if (!hasValue) return;
    this.hasLast = true;
    if (ref === null) {
      if (num < this.min) this.min = num;
      if (num > this.max) this.max = num;
      this.lastNum = num;
      this.lastRef = null;
    } else {
      this.lastRef = ref;
    }
  }

  /** Folds a whole bucket in (taken as later than what is in). */
  merge(p: HistoryPoint): void {
    this.count += p.count;
    if (p.quality > this.worst) this.worst = p.quality;
    if (p.min !== null && p.min < this.min) this.min = p.min;
    if (p.max !== null && p.max > this.max) this.max = p.max;
    if (p.last !== null) {
      this.hasLast = true;
      if (typeof p.last === "number") {
        this.lastNum = p.last;
        this.lastRef = null;
      } else {
        this.lastRef = typeof p.last === "bigint"
          ? { type: "int64", int64: p.last }
          : { type: "string", string: p.last };
      }
    }
  }

  /** The bucket as a point starting at `tMs`. */
  point(tMs: number): HistoryPoint {
    return {
      t_ms: tMs,
      min: this.min === Infinity ? null : this.min,
      max: this.max === -Infinity ? null : this.max,
      last: !this.hasLast
        ? null
        : this.lastRef !== null
        ? typedValueScalar(this.lastRef)
        : this.lastNum,
      count: this.count,
      quality: this.worst,
    };
  }
}

/** Start of the bucket of `tMs` for a step (epoch multiples). */
export function bucketStart(tMs: number, stepMs: number): number {
  return tMs - (((tMs % stepMs) + stepMs) % stepMs);
}
