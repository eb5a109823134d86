/** Small statistics helpers for the benchmark harness (pure, no I/O). */

/** min / median / max of a series of repetition values. */
export interface Summary {
  readonly min: number;
  readonly median: number;
  readonly max: number;
  readonly n: number;
}

/**
 * Nearest-rank percentile (p in 0..100) of unsorted samples: the smallest sample such that at
 * least p % of the samples are <= it. Nearest-rank never invents a value between two samples, so
 * a p99 is always a latency that really happened. NaN for an empty series.
 */
export function percentile(samples: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile: p must be in 0..100, got ${p}`);
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

/** Median with the usual mean-of-two-middles rule for even counts. NaN for an empty series. */
export function median(samples: readonly number[]): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** min / median / max of the values (NaN fields for an empty series). */
export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) return { min: NaN, median: NaN, max: NaN, n: 0 };
  return {
    min: Math.min(...values),
    median: median(values),
    max: Math.max(...values),
    n: values.length,
  };
}

/**
 * Least-squares slope of y over x (units of y per unit of x). NaN with fewer than two distinct x.
 * Used for memory growth: RSS samples over time -> MB per hour.
 */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  if (xs.length !== ys.length) throw new RangeError("slope: xs and ys differ in length");
  const n = xs.length;
  if (n < 2) return NaN;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

/** Differences between consecutive values of a sorted series (e.g. event timestamps -> periods). */
export function intervals(times: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 1; i < times.length; i++) out.push(times[i]! - times[i - 1]!);
  return out;
}
