// Charts of signals over time (the Trend view and the incident pages), drawn by uPlot
// (console/uplot.js, vendored). One y axis per distinct unit, labelled with it; a sample whose
// quality is not OK is a gap in its line (null in the chart's data) and its span is shaded, and
// an optional mark (an incident's trigger) is a vertical line.

import { h } from "./dom.js";
import uPlot from "./uplot.js";

/** Line colours, in turn (distinct with the page's colours, readable on white). */
export const SERIES_COLOURS = [
  "#0b4a82",
  "#b00000",
  "#14591a",
  "#7d3500",
  "#6a1b9a",
  "#00695c",
  "#5d4037",
  "#c2185b",
];
/** Height of a chart's plot (px). */
export const CHART_HEIGHT_PX = 320;
/** Shade of a span where a signal's quality is not OK. */
const GAP_FILL = "rgba(176, 0, 0, 0.12)";
const MARK_STROKE = "#b00000";

/**
 * A typed value (`{type, <member>}`, as the API writes it) as a number to chart: bools 0/1,
 * 64-bit integers (digit strings beyond 2^53) rounded, non-finite doubles null; undefined for
 * what cannot be charted (strings, bytes, unknown).
 */
export function chartNumber(v) {
  if (v === null || v === undefined || typeof v !== "object") return undefined;
  switch (v.type) {
    case "double":
      return typeof v.double === "number" ? v.double : null;
    case "int64":
      return Number(v.int64);
    case "uint64":
      return Number(v.uint64);
    case "bool":
      return v.bool ? 1 : 0;
    default:
      return undefined;
  }
}

/** True for value types a chart can draw. */
export function isChartable(valueType) {
  return ["double", "int64", "uint64", "bool"].includes(valueType);
}

/**
 * A signal's samples as a chart line: times (epoch ms, ascending), values (null: a gap) and
 * qualities.
 */
export class Series {
  /**
   * @param {{key: string, name: string, unit: string}} info `name` as the legend shows it
   */
  constructor(info) {
    this.key = info.key;
    this.name = info.name;
    this.unit = info.unit;
    /** @type {number[]} */
    this.ts = [];
    /** @type {(number | null)[]} */
    this.vs = [];
    /** @type {string[]} */
    this.qs = [];
  }

  /**
   * Appends a sample. One at the last one's time replaces it (two polls in one millisecond: the
   * later wins); an older one is dropped (the line's times ascend).
   */
  push(t, v, quality) {
    const n = this.ts.length;
    if (n > 0 && t < this.ts[n - 1]) return false;
    if (n > 0 && t === this.ts[n - 1]) {
      this.vs[n - 1] = quality === "OK" ? v : null;
      this.qs[n - 1] = quality;
      return true;
    }
    this.ts.push(t);
    this.vs.push(quality === "OK" ? v : null);
    this.qs.push(quality);
    return true;
  }

  /** Drops the samples before `t`, and the oldest beyond `max`. */
  trim(t, max) {
    let i = 0;
    while (i < this.ts.length && this.ts[i] < t) i++;
    i = Math.max(i, this.ts.length - max);
    if (i > 0) {
      this.ts.splice(0, i);
      this.vs.splice(0, i);
      this.qs.splice(0, i);
    }
  }

  /**
   * The spans whose quality is not OK: `[from, to, quality]` (epoch ms; `to` is the next sample's
   * time, or `end` for the last one).
   */
  gaps(end) {
    const out = [];
    for (let i = 0; i < this.ts.length; i++) {
      if (this.qs[i] === "OK") continue;
      const from = this.ts[i];
      const q = this.qs[i];
      while (i + 1 < this.ts.length && this.qs[i + 1] !== "OK") i++;
      out.push([from, i + 1 < this.ts.length ? this.ts[i + 1] : Math.max(end, this.ts[i]), q]);
    }
    return out;
  }
}

/** The units of these series, in first-seen order ("" for none). */
function unitsOf(series) {
  return [...new Set(series.map((s) => s.unit))];
}

/**
 * A chart of `series` in `box` (which it fills). `xRange()` gives the x range in epoch ms, or
 * null to fit the data; `mark` a time to draw a vertical line at (null: none).
 */
export class Chart {
  /**
   * @param {HTMLElement} box
   * @param {Series[]} series
   * @param {{xRange?: () => [number, number] | null, mark?: number | null, markLabel?: string}} [options]
   */
  constructor(box, series, options = {}) {
    this.box = box;
    this.series = series;
    this.xRange = options.xRange ?? (() => null);
    this.mark = options.mark ?? null;
    this.markLabel = options.markLabel ?? "";
    /** @type {[number, number][]} shaded spans (epoch ms) */
    this.shaded = [];
    const units = unitsOf(series);
    this.units = units;
    const scaleOf = (unit) => `u:${unit}`;
    /** @type {Record<string, any>} */
    const scales = {
      x: {
        time: true,
        range: (_u, min, max) => {
          const r = this.xRange();
          return r === null ? [min, max] : [r[0] / 1000, r[1] / 1000];
        },
      },
    };
    for (const unit of units) scales[scaleOf(unit)] = { auto: true };
    const opts = {
      width: Math.max(320, box.clientWidth || 800),
      height: CHART_HEIGHT_PX,
      scales,
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      series: [
        {},
        ...series.map((s, i) => ({
          label: s.unit ? `${s.name} (${s.unit})` : s.name,
          scale: scaleOf(s.unit),
          stroke: SERIES_COLOURS[i % SERIES_COLOURS.length],
          width: 1.5,
          spanGaps: false,
          points: { show: false },
        })),
      ],
      axes: [
        {},
        ...units.map((unit, i) => ({
          scale: scaleOf(unit),
          label: unit === "" ? "(no unit)" : unit,
          side: i % 2 === 0 ? 3 : 1,
          grid: { show: i === 0 },
          size: 60,
        })),
      ],
      hooks: { draw: [(u) => this.drawOverlay(u)] },
    };
    this.plot = new uPlot(opts, this.data(), box);
    // The units of the axes, for reading (and as a test hook): the axes are drawn on the canvas.
    box.setAttribute("data-axes", units.join("|"));
    this.resize = new ResizeObserver(() => {
      const w = Math.max(320, this.box.clientWidth);
      if (w !== this.plot.width) this.plot.setSize({ width: w, height: CHART_HEIGHT_PX });
    });
    this.resize.observe(box);
  }

  /** The series as uPlot's aligned data (seconds on x). */
  data() {
    const tables = this.series.map((s) => [s.ts.map((t) => t / 1000), s.vs.slice()]);
    if (tables.length === 0) return [[]];
    if (tables.length === 1) return tables[0];
    return uPlot.join(tables);
  }

  /** Draws the series again (after they changed), and the shaded gaps up to `end` (epoch ms). */
  update(end) {
    this.shaded = this.series.flatMap((s) => s.gaps(end).map((g) => [g[0], g[1]]));
    this.plot.setData(this.data());
    this.box.setAttribute(
      "data-points",
      String(this.series.reduce((n, s) => n + s.ts.length, 0)),
    );
  }

  drawOverlay(u) {
    const ctx = u.ctx;
    const { top, height, left, width } = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    ctx.fillStyle = GAP_FILL;
    for (const [from, to] of this.shaded) {
      const x0 = u.valToPos(from / 1000, "x", true);
      const x1 = u.valToPos(to / 1000, "x", true);
      ctx.fillRect(x0, top, Math.max(2, x1 - x0), height);
    }
    if (this.mark !== null) {
      const x = u.valToPos(this.mark / 1000, "x", true);
      ctx.strokeStyle = MARK_STROKE;
      ctx.lineWidth = 2 * uPlot.pxRatio;
      ctx.setLineDash([6 * uPlot.pxRatio, 4 * uPlot.pxRatio]);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      if (this.markLabel) {
        ctx.fillStyle = MARK_STROKE;
        ctx.font = `${12 * uPlot.pxRatio}px system-ui, sans-serif`;
        ctx.fillText(this.markLabel, x + 4 * uPlot.pxRatio, top + 14 * uPlot.pxRatio);
      }
    }
    ctx.restore();
  }

  destroy() {
    this.resize.disconnect();
    this.plot.destroy();
  }
}

/**
 * The list of quality gaps under a chart: one item per signal that has any, with its spans.
 * @param {Series[]} series
 * @param {number} end
 */
export function gapList(series, end) {
  const items = [];
  for (const s of series) {
    const gaps = s.gaps(end);
    if (gaps.length === 0) continue;
    const kinds = [...new Set(gaps.map((g) => g[2]))].join(", ");
    const spans = gaps.slice(-3).map(([a, b]) =>
      `${new Date(a).toLocaleTimeString()}–${new Date(b).toLocaleTimeString()}`
    );
    items.push(
      h(
        "li",
        { "data-signal": s.key },
        `${s.name}: ${gaps.length} gap${gaps.length === 1 ? "" : "s"} (${kinds})`,
        h("span", {
          class: "muted",
          text: ` ${gaps.length > 3 ? "last: " : ""}${spans.join(", ")}`,
        }),
      ),
    );
  }
  return items.length === 0
    ? h("p", { class: "muted gaps", text: "No quality gaps in this range." })
    : h("ul", { class: "gaps", "aria-label": "Quality gaps" }, ...items);
}
