/**
 * Metric primitives and the Prometheus text exposition writer (format 0.0.4,
 * https://prometheus.io/docs/instrumenting/exposition_formats/). Recording is allocation-free:
 * a histogram is one preallocated Float64Array; the text is built only when scraped.
 */

/**
 * Latency buckets in seconds (upper bounds, +Inf implied): 1 ms to 10 s, fine below 100 ms
 * where polls and calls of a healthy provider land.
 */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];

/**
 * A fixed-bucket histogram. `observe` writes into a preallocated array: nothing is allocated,
 * so it may sit on the poll path.
 */
export class Histogram {
  /** Upper bounds, ascending (the +Inf bucket is implied). */
  readonly bounds: readonly number[];
  /** Per-bucket (not cumulative) counts, then +Inf's, then the sum, then the count. */
  readonly #data: Float64Array;

  constructor(bounds: readonly number[] = LATENCY_BUCKETS_SECONDS) {
    for (let i = 1; i < bounds.length; i++) {
      if (!(bounds[i]! > bounds[i - 1]!)) {
        throw new RangeError(`histogram bounds must be ascending: ${bounds.join(", ")}`);
      }
    }
    this.bounds = bounds;
    this.#data = new Float64Array(bounds.length + 3);
  }

  /** Records one observation. */
  observe(value: number): void {
    const bounds = this.bounds;
    const n = bounds.length;
    let i = 0;
    while (i < n && value > bounds[i]!) i++;
    const d = this.#data;
    d[i]!++;
    d[n + 1]! += value;
    d[n + 2]!++;
  }

  /** Observations so far. */
  get count(): number {
    return this.#data[this.bounds.length + 2]!;
  }

  /** Sum of the observed values. */
  get sum(): number {
    return this.#data[this.bounds.length + 1]!;
  }

  /** Observations in bucket i alone (above bounds[i-1], at most bounds[i]); bounds.length: +Inf. */
  bucket(i: number): number {
    return this.#data[i]!;
  }
}

export type MetricType = "counter" | "gauge" | "histogram";

/** Label name -> value; values are escaped by the writer. */
export type MetricLabels = Readonly<Record<string, string>>;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Escapes a label value: backslash, double quote and line feed (the format's three). */
export function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === "\\" ? "\\\\" : c === '"' ? '\\"' : "\\n"));
}

/** Escapes HELP text: backslash and line feed. */
export function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => (c === "\\" ? "\\\\" : "\\n"));
}

/** A sample value as the format writes it (Go float syntax: +Inf, -Inf, NaN). */
export function formatMetricValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

/**
 * Builds one exposition. Every family is declared once (`family`) before its samples; a name
 * or label name outside the format's syntax, a family declared twice or a sample of an
 * undeclared family is a programmer error (TypeError).
 */
export class ExpositionWriter {
  readonly #lines: string[] = [];
  readonly #families = new Map<string, MetricType>();

  /** Declares a family: `# HELP` and `# TYPE` lines. */
  family(name: string, type: MetricType, help: string): this {
    if (!METRIC_NAME.test(name)) throw new TypeError(`invalid metric name: ${name}`);
    if (this.#families.has(name)) throw new TypeError(`metric family declared twice: ${name}`);
    if (type === "counter" && !name.endsWith("_total")) {
      throw new TypeError(`counter name must end in _total: ${name}`);
    }
    this.#families.set(name, type);
    this.#lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
    return this;
  }

  /** One sample of a counter or gauge family. */
  sample(name: string, value: number, labels: MetricLabels = {}): this {
    const type = this.#families.get(name);
    if (type === undefined || type === "histogram") {
      throw new TypeError(`sample of undeclared counter/gauge family: ${name}`);
    }
    this.#lines.push(`${name}${labelText(labels)} ${formatMetricValue(value)}`);
    return this;
  }

  /** The `_bucket` (cumulative, `le`), `_sum` and `_count` samples of one histogram series. */
  histogram(name: string, h: Histogram, labels: MetricLabels = {}): this {
    if (this.#families.get(name) !== "histogram") {
      throw new TypeError(`histogram of undeclared histogram family: ${name}`);
    }
    const base = labelText(labels);
    const prefix = base === "" ? "{" : `${base.slice(0, -1)},`;
    let total = 0;
    for (let i = 0; i <= h.bounds.length; i++) {
      total += h.bucket(i);
      const le = i < h.bounds.length ? formatMetricValue(h.bounds[i]!) : "+Inf";
      this.#lines.push(`${name}_bucket${prefix}le="${le}"} ${formatMetricValue(total)}`);
    }
    this.#lines.push(`${name}_sum${base} ${formatMetricValue(h.sum)}`);
    this.#lines.push(`${name}_count${base} ${formatMetricValue(h.count)}`);
    return this;
  }

  /** The exposition text (ends with a line feed). */
  text(): string {
    return this.#lines.length === 0 ? "" : `${this.#lines.join("\n")}\n`;
  }
}

function labelText(labels: MetricLabels): string {
  let out = "";
  for (const name in labels) {
    if (!LABEL_NAME.test(name) || name.startsWith("__") || name === "le") {
      throw new TypeError(`invalid label name: ${name}`);
    }
    out += `${out === "" ? "" : ","}${name}="${escapeLabelValue(labels[name]!)}"`;
  }
  return out === "" ? "" : `{${out}}`;
}
