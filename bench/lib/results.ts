/** Collects figures per metric and runtime, and renders the markdown table and the JSON record. */
import { summarize, type Summary } from "./stats.ts";

/** Which runtime a figure belongs to: A (--runtime-cmd) or B (--compare). */
export type RuntimeLabel = "A" | "B";

/** Identity of one metric row. */
export interface MetricKey {
  /** Workload number 1-7 as in the issue. */
  readonly workload: number;
  readonly name: string;
  readonly unit: string;
}

/** One metric in the result file: every repetition's value and their summary per runtime. */
export interface MetricRecord extends MetricKey {
  readonly runtimes: Partial<Record<RuntimeLabel, { values: number[] } & Summary>>;
  /** median(B) / median(A) when both ran. */
  readonly ratioBA?: number;
}

/** Accumulates values; row order is first-seen order, which follows the workload order. */
export class Recorder {
  readonly #rows = new Map<string, { key: MetricKey; values: Map<RuntimeLabel, number[]> }>();

  /** Adds one repetition's value. Non-finite values are dropped (e.g. no samples in a window). */
  add(label: RuntimeLabel, key: MetricKey, value: number): void {
    if (!Number.isFinite(value)) return;
    const id = `${key.workload}\u0000${key.name}\u0000${key.unit}`;
    let row = this.#rows.get(id);
    if (!row) {
      row = { key, values: new Map() };
      this.#rows.set(id, row);
    }
    const list = row.values.get(label);
    if (list) list.push(value);
    else row.values.set(label, [value]);
  }

  /** Rows sorted by workload, each with per-runtime summaries. */
  records(): MetricRecord[] {
    const out: MetricRecord[] = [];
    for (const { key, values } of this.#rows.values()) {
      const runtimes: MetricRecord["runtimes"] = {};
      for (const [label, list] of values) {
        runtimes[label] = { values: list.map(round), ...roundSummary(summarize(list)) };
      }
      const a = runtimes.A?.median;
      const b = runtimes.B?.median;
      const rec: MetricRecord = a !== undefined && b !== undefined && a !== 0
        ? { ...key, runtimes, ratioBA: round(b / a) }
        : { ...key, runtimes };
      out.push(rec);
    }
    return out.sort((x, y) => x.workload - y.workload);
  }
}

/** Rounds to 4 significant digits: keeps the JSON small and honest about precision. */
export function round(v: number): number {
  if (!Number.isFinite(v) || v === 0) return v;
  return Number(v.toPrecision(4));
}

function roundSummary(s: Summary): Summary {
  return { min: round(s.min), median: round(s.median), max: round(s.max), n: s.n };
}

/** Human formatting: 3 significant digits, no exponent for the magnitudes a benchmark sees. */
export function fmt(v: number | undefined): string {
  if (v === undefined || !Number.isFinite(v)) return "–";
  const a = Math.abs(v);
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(2);
}

/** Short workload titles for the table. */
export const WORKLOAD_TITLES: Record<number, string> = {
  1: "call round trip",
  2: "state reads",
  3: "polling scale",
  4: "SSE fan-out",
  5: "start-up",
  6: "e-stop",
  7: "memory",
  8: "behavior tree",
};

/** The markdown table: one row per metric; with two runtimes, A, B and the B/A ratio. */
export function markdownTable(records: readonly MetricRecord[], compare: boolean): string {
  const cell = (s: (Summary & { values: number[] }) | undefined) =>
    s ? (s.n > 1 ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : fmt(s.median)) : "–";
  const lines = compare
    ? [
      "| # | workload | metric | unit | A median (min–max) | B median (min–max) | B/A |",
      "|---|---|---|---|---|---|---|",
    ]
    : [
      "| # | workload | metric | unit | median (min–max) | n |",
      "|---|---|---|---|---|---|",
    ];
  for (const r of records) {
    const title = WORKLOAD_TITLES[r.workload] ?? "";
    if (compare) {
      const ratio = r.ratioBA === undefined ? "–" : r.ratioBA.toFixed(2);
      lines.push(
        `| ${r.workload} | ${title} | ${r.name} | ${r.unit} | ${cell(r.runtimes.A)} | ${
          cell(r.runtimes.B)
        } | ${ratio} |`,
      );
    } else {
      const a = r.runtimes.A;
      lines.push(
        `| ${r.workload} | ${title} | ${r.name} | ${r.unit} | ${cell(a)} | ${a?.n ?? 0} |`,
      );
    }
  }
  return lines.join("\n");
}
