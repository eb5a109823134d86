// Charts of signals over time (the Trend view and the incident pages), drawn by uPlot
// (console/uplot.js, vendored). One y axis per distinct unit, labelled with it; a sample whose
// quality is not OK is a gap in its line (null in the chart's data) and its span is shaded; a
// line of buckets (a long range's history) is drawn through each bucket's last value with its
// min–max as a light band around it; an optional mark (an incident's trigger) is a vertical line.

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
 * A sample this much older than a line's last one (ms) is the runtime's wall clock stepped back
 * (NTP, an operator; a Raspberry Pi has no real-time clock), not a sample out of order: the line
 * goes on from it (see Series.push). Far beyond how late a streamed sample can be that a history
 * answer already holds.
 */
export const LINE_STEP_BACK_MS = 60_000;

/**
 * The quality a line's break is listed with where it has no samples at all (the runtime was down:
 * Series.breakLine), unlike a quality gap, whose samples the runtime sent.
 */
export const NO_DATA = "no data";

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
    /** @type {(number | null)[]} each bucket's min and max (null: a single sample, or a gap) */
    this.lo = [];
    /** @type {(number | null)[]} */
    this.hi = [];
    /** The last point is no sample: the last sample's value held to a later time (holdTo). */
    this.held = false;
  }

  /**
   * Holds the last sample's value up to `t`: a live line's samples are changes only (the runtime
   * streams a `state_update` when a value or its quality changes, not at every poll), so an OK
   * value unchanged since is still that value -- drawn on to `t`, not ended at its sample (nor
   * trimmed away once that is older than the range). One point at the end, moved by each call;
   * none after a sample that is not OK (its gap already spans to the end). False when nothing is
   * held (an empty line, a gap, `t` not after the last sample).
   * @param {number} t
   */
  holdTo(t) {
    this.unhold(false);
    const n = this.ts.length;
    if (n === 0 || this.qs[n - 1] !== "OK" || this.vs[n - 1] === null || t <= this.ts[n - 1]) {
      return false;
    }
    this.push(t, this.vs[n - 1], "OK");
    this.held = true;
    return true;
  }

  /**
   * Ends a hold (holdTo): its point is dropped, or, with `keep`, kept as a sample of the value
   * held (what was known up to then).
   */
  unhold(keep) {
    if (!this.held) return;
    this.held = false;
    if (!keep) { for (const a of [this.ts, this.vs, this.qs, this.lo, this.hi]) a.length--; }
  }

  /**
   * Appends a sample, or a bucket with its min and max. One at the last one's time replaces it
   * (two polls in one millisecond: the later wins); an older one is dropped (the line's times
   * ascend) -- unless it is LINE_STEP_BACK_MS or more older: the runtime's clock stepped back,
   * and every later sample will be older too. Then the samples at or after its time (ahead of
   * the clock now) are dropped and the line goes on from it, rather than freezing until the
   * clock is back where it was.
   * @param {number} t
   * @param {number | null} v
   * @param {string} quality
   * @param {number | null} [lo]
   * @param {number | null} [hi]
   */
  push(t, v, quality, lo = null, hi = null) {
    // A held value (holdTo) held until this sample changed it: a step at `t`, not a slope from
    // the last sample to it.
    const wasHeld = this.held;
    this.unhold(false);
    let n = this.ts.length;
    if (wasHeld && n > 0 && t - 1 > this.ts[n - 1]) {
      this.push(t - 1, this.vs[n - 1], this.qs[n - 1]);
      n = this.ts.length;
    }
    if (n > 0 && t < this.ts[n - 1]) {
      if (this.ts[n - 1] - t < LINE_STEP_BACK_MS) return false;
      let keep = n;
      while (keep > 0 && this.ts[keep - 1] >= t) keep--;
      for (const a of [this.ts, this.vs, this.qs, this.lo, this.hi]) a.length = keep;
      n = keep;
    }
    const ok = quality === "OK";
    const band = ok && typeof lo === "number" && typeof hi === "number" && lo < hi;
    const i = n > 0 && t === this.ts[n - 1] ? n - 1 : n;
    this.ts[i] = t;
    this.vs[i] = ok ? v : null;
    this.qs[i] = quality;
    this.lo[i] = band ? lo : null;
    this.hi[i] = band ? hi : null;
    return true;
  }

  /**
   * Breaks the line after its last sample: nothing is known from then until the next one (the
   * runtime restarted), so the line must not join the two as if the signal had been read all
   * along. A gap (NO_DATA) 1 ms after the last sample; none on an empty line or one already
   * broken there.
   */
  breakLine() {
    // A held value was known up to the hold (the stream was live until then).
    this.unhold(true);
    const n = this.ts.length;
    if (n === 0 || this.qs[n - 1] === NO_DATA) return false;
    return this.push(this.ts[n - 1] + 1, null, NO_DATA);
  }

  /** True when some bucket has a min below its max (the line has a band). */
  hasBand() {
    return this.lo.some((x) => x !== null);
  }

  /**
   * Drops the samples before `t`, and the oldest beyond `max`; a held line (holdTo) keeps the
   * sample its value is held from.
   */
  trim(t, max) {
    let i = 0;
    while (i < this.ts.length && this.ts[i] < t) i++;
    if (this.held) i = Math.min(i, this.ts.length - 2);
    i = Math.max(i, this.ts.length - max);
    if (i > 0) {
      this.ts.splice(0, i);
      this.vs.splice(0, i);
      this.qs.splice(0, i);
      this.lo.splice(0, i);
      this.hi.splice(0, i);
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
 * A chart of `series` in `box` (which it fills). `xRange()` gives the x range in epoch ms (a live
 * chart's moves); `mark` a time to draw a vertical line at (null: none). Dragging across the
 * chart zooms in (the range then stays put, a live chart too); a double click returns to
 * `xRange()`.
 */
export class Chart {
  /**
   * @param {HTMLElement} box
   * @param {Series[]} series
   * @param {{xRange: () => [number, number], mark?: number | null, markLabel?: string}} options
   */
  constructor(box, series, options) {
    this.box = box;
    this.series = series;
    this.xRange = options.xRange;
    /** The operator zoomed in: the x range is theirs until a double click. */
    this.zoomed = false;
    this.mark = options.mark ?? null;
    this.markLabel = options.markLabel ?? "";
    /** @type {[number, number][]} shaded spans (epoch ms) */
    this.shaded = [];
    const units = unitsOf(series);
    this.units = units;
    const scaleOf = (unit) => `u:${unit}`;
    /** @type {Record<string, any>} */
    const scales = {
      // Not fitted to the data: set from xRange() (applyRange), or by a zoom.
      x: { time: true, auto: false },
    };
    // A unit's y range holds its lines and their min–max bands.
    for (const unit of units) {
      scales[scaleOf(unit)] = {
        auto: true,
        range: (_u, dataMin, dataMax) => {
          let lo = dataMin ?? Infinity;
          let hi = dataMax ?? -Infinity;
          for (const s of this.series) {
            if (s.unit !== unit) continue;
            for (let k = 0; k < s.lo.length; k++) {
              if (s.lo[k] !== null) lo = Math.min(lo, s.lo[k]);
              if (s.hi[k] !== null) hi = Math.max(hi, s.hi[k]);
            }
          }
          return lo > hi ? [0, 1] : uPlot.rangeNum(lo, hi, 0.1, true);
        },
      };
    }
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
      hooks: {
        drawClear: [(u) => this.drawUnder(u)],
        draw: [(u) => this.drawOverlay(u)],
        setSelect: [(u) => {
          if (u.select.width > 0) this.setZoomed(true);
        }],
      },
    };
    this.plot = new uPlot(opts, this.data(), box);
    // After uPlot's own double-click handler (which fits the data): back to the range.
    this.plot.over.addEventListener("dblclick", () => {
      this.setZoomed(false);
      this.applyRange();
    });
    this.applyRange();
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
    this.applyRange();
    this.box.setAttribute(
      "data-points",
      String(this.series.reduce((n, s) => n + s.ts.length, 0)),
    );
    this.box.setAttribute("data-bands", String(this.series.filter((s) => s.hasBand()).length));
    // Where each line ends (epoch ms, a held value's too; "" for none), as a test hook.
    this.box.setAttribute("data-reach", this.series.map((s) => s.ts.at(-1) ?? "").join("|"));
  }

  setZoomed(on) {
    this.zoomed = on;
    this.box.setAttribute("data-zoomed", String(on));
  }

  /** Shows xRange() unless the operator zoomed in. */
  applyRange() {
    if (this.zoomed) return;
    const [from, to] = this.xRange();
    this.plot.setScale("x", { min: from / 1000, max: Math.max(to, from + 1) / 1000 });
  }

  /** Under the lines: the shaded quality gaps and each line's min–max band. */
  drawUnder(u) {
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
    this.series.forEach((s, i) => {
      if (!u.series[i + 1]?.show || !s.hasBand()) return;
      ctx.fillStyle = `${SERIES_COLOURS[i % SERIES_COLOURS.length]}33`; // 20 % opacity
      const scale = `u:${s.unit}`;
      const x = (k) => u.valToPos(s.ts[k] / 1000, "x", true);
      // One polygon per run of buckets with a band: along the maxima, back along the minima.
      for (let a = 0; a < s.ts.length; a++) {
        if (s.lo[a] === null) continue;
        let b = a;
        while (b + 1 < s.ts.length && s.lo[b + 1] !== null) b++;
        ctx.beginPath();
        ctx.moveTo(x(a), u.valToPos(s.hi[a], scale, true));
        for (let k = a + 1; k <= b; k++) ctx.lineTo(x(k), u.valToPos(s.hi[k], scale, true));
        if (a === b) ctx.lineTo(x(a) + 2 * uPlot.pxRatio, u.valToPos(s.hi[a], scale, true));
        for (let k = b; k >= a; k--) ctx.lineTo(x(k), u.valToPos(s.lo[k], scale, true));
        ctx.closePath();
        ctx.fill();
        a = b;
      }
    });
    ctx.restore();
  }

  /** Over the lines: the mark. */
  drawOverlay(u) {
    const ctx = u.ctx;
    const { top, height, left, width } = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
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
