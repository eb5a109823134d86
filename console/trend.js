// The Trend view: signals of any devices on one chart. A range relative to now (the last 5 min,
// 1 h, 24 h, 7 d) is seeded from GET /v0/history and then follows the event stream live,
// scrolling; a custom from–to range is read once. The runtime answers from its memory ring where
// it reaches and from its disk tier before it: the view says which answered. The URL names what
// is shown: `#trend?s=<provider>/<device>/<signal>&s=…&r=<range>[&from=<ms>&to=<ms>]`.

import { Chart, chartNumber, gapList, isChartable, Series } from "./chart.js";
import { byId, fill, formatNumber, formatTime, h, setText } from "./dom.js";
import { signalKey } from "./keys.js";

/** The ranges the picker offers (`ms` of a range relative to now; custom has none). */
export const TREND_RANGES = [
  { id: "5m", label: "Last 5 min", ms: 5 * 60_000 },
  { id: "1h", label: "Last hour", ms: 3_600_000 },
  { id: "24h", label: "Last 24 h", ms: 86_400_000 },
  { id: "7d", label: "Last 7 days", ms: 7 * 86_400_000 },
  { id: "custom", label: "From … to …", ms: 0 },
];
/**
 * Points per signal a history question asks for at most (its step is the range over this): with
 * MAX_TREND_SIGNALS of one device in one question, 8 × 1,501 stays under the runtime's 20,000
 * (MAX_HISTORY_POINTS).
 */
export const TREND_POINTS_PER_SIGNAL = 1500;
/** Signals one chart holds at most. */
export const MAX_TREND_SIGNALS = 8;
/** How often a live chart scrolls and draws what arrived. */
export const TREND_TICK_MS = 1000;
/** Samples a live chart keeps per signal at most (the oldest go first). */
export const MAX_TREND_POINTS = 20_000;
/**
 * A history answer records no restart of the runtime (nor where a run began): two of its points
 * further apart than this many sample spacings had no poll between them, and the line breaks there
 * (no data) instead of joining them; so does a live seed whose last point is that far before the
 * end of the range asked. A spacing is told from the points themselves (TREND_SPACING_INTERVALS),
 * not from today's poll interval: rows from before a reload that changed it, or the disk tier's
 * buckets before the ring's polls, are spaced as they were recorded.
 */
export const TREND_GAP_INTERVALS = 3;
/**
 * The least gap that breaks a seeded line, whatever the spacing: a runtime under load (a Pi busy
 * with other work) may poll a 250 ms signal a second late without anything being down; a restart
 * takes seconds. Below it, points are joined.
 */
export const TREND_GAP_MIN_MS = 2000;
/**
 * Intervals of a seeded line on each side of a gap whose median is that side's sample spacing
 * (the larger side's counts): one outage among them does not move it.
 */
export const TREND_SPACING_INTERVALS = 5;

/** The median of a few numbers (the upper one of an even count); null for none. */
function median(xs) {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/**
 * The points of one signal of a history answer as a line: broken (no data) where two points are
 * further apart than TREND_GAP_INTERVALS sample spacings (at least TREND_GAP_MIN_MS), and after the
 * last one when it is that far before `until` (a live range: the runtime polls up to its end). A
 * gap's spacing is the larger of the median of the TREND_SPACING_INTERVALS intervals before it and
 * of those after it, at least the answer's `step`. A line with no interval to tell it from (one
 * point) falls back to `pollMs` (the runtime's poll interval now; 0 when not known) for the ring's
 * points and `diskStep` for the disk tier's; neither known: it is not broken.
 * @param {import("./chart.js").Series} line
 * @param {any[]} points the answer's points of the signal, ascending
 * @param {{step: number, pollMs: number, memoryFrom: number | null, diskStep: number | null,
 *   until: number | null}} o
 */
export function seedLine(line, points, o) {
  // gaps[i]: from point i to point i + 1 (points of one time again are not a spacing).
  const gaps = [];
  for (let i = 1; i < points.length; i++) gaps.push(points[i].t_ms - points[i - 1].t_ms);
  const sideMedian = (from, to) => {
    const xs = [];
    for (let j = Math.max(0, from); j < Math.min(gaps.length, to); j++) {
      if (gaps[j] > 0) xs.push(gaps[j]);
    }
    return median(xs);
  };
  const onDisk = (t) => o.memoryFrom === null || t < o.memoryFrom;
  const fallback = (t) => {
    const known = onDisk(t) ? (o.diskStep ?? 0) : o.pollMs > 0 ? o.pollMs : 0;
    return known > 0 ? Math.max(o.step, known) : null;
  };
  /** The bound of a gap after point `i` (to `until` when i is the last), or null: not told. */
  const bound = (i) => {
    const before = sideMedian(i - TREND_SPACING_INTERVALS, i);
    const after = sideMedian(i + 1, i + 1 + TREND_SPACING_INTERVALS);
    const spacing = before === null && after === null
      ? fallback(points[i].t_ms)
      : Math.max(o.step, before ?? 0, after ?? 0);
    return spacing === null ? null : Math.max(TREND_GAP_MIN_MS, TREND_GAP_INTERVALS * spacing);
  };
  for (let i = 0; i < points.length; i++) {
    const pt = points[i];
    if (i > 0 && gaps[i - 1] > 0) {
      const b = bound(i - 1);
      if (b !== null && gaps[i - 1] > b) line.breakLine();
    }
    const v = typeof pt.last === "number"
      ? pt.last
      : typeof pt.last === "string" && /^-?\d+$/.test(pt.last)
      ? Number(pt.last)
      : null;
    line.push(pt.t_ms, v, pt.quality, pt.min, pt.max);
  }
  const last = points.length - 1;
  if (last >= 0 && o.until !== null) {
    const b = bound(last);
    if (b !== null && o.until - points[last].t_ms > b) line.breakLine();
  }
}

/** The step (ms) a history question over `rangeMs` asks for. */
export function stepFor(rangeMs) {
  return Math.max(1, Math.ceil(rangeMs / TREND_POINTS_PER_SIGNAL));
}

/** The ids of a `provider/device/signal` handle (as keys.js reads it), or null. */
export function parseHandle(handle) {
  const m = /^([^/]+)\/(.+)\/([^/]+)$/.exec(handle);
  return m === null ? null : { p: m[1], d: m[2], s: m[3] };
}

/** The URL fragment of a trend of these handles over this range. */
export function trendHash(handles, rangeId = "5m", from = 0, to = 0) {
  const q = new URLSearchParams();
  for (const hd of handles) q.append("s", hd);
  if (rangeId !== "5m") q.set("r", rangeId);
  if (rangeId === "custom") {
    q.set("from", String(from));
    q.set("to", String(to));
  }
  return `#trend?${q}`;
}

/** A time for a datetime-local input (local time, to the second). */
function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 19);
}

/**
 * The points of one signal of a history answer that are in the unit it declares now, the unit
 * the chart's axis names: those from its last unit change on (GET /v0/history's `unit_changes`; a
 * point before a change is in that change's `unit_before`). `changed`: that last change, for the
 * view to say the points before it are not drawn; null when the answer names none.
 * @param {{
 *   points?: any[],
 *   unit_changes?: {at_ms: number, unit_before: string, unit: string}[],
 * }} sig
 */
export function pointsInUnitNow(sig) {
  const points = sig.points ?? [];
  const changed = sig.unit_changes?.at(-1) ?? null;
  if (changed === null) return { points, changed };
  return { points: points.filter((p) => p.t_ms >= changed.at_ms), changed };
}

function spanText(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${formatNumber(ms / 1000)} s`;
  if (ms < 7_200_000) return `${formatNumber(ms / 60_000)} min`;
  return `${formatNumber(ms / 3_600_000)} h`;
}

/**
 * A time or a span of a history answer (`memory_from_ms`, `disk_step_ms`): null when absent or not
 * a finite number (an older runtime's answer, a proxy's), so that no view shows "Invalid Date".
 * @param {unknown} v
 * @returns {number | null}
 */
export function finiteMs(v) {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/**
 * Which tier answered history answers (GET /v0/history) asked with `step`: `source` (`memory`,
 * `disk`, `memory+disk` or `none`) and the text of each tier, the ring's from where it begins.
 * @param {any[]} answers
 * @param {number} step
 * @returns {{source: string, parts: string[]}}
 */
export function answeredBy(answers, step) {
  let memory = false;
  let disk = false;
  let memoryFrom = null;
  let diskStep = null;
  for (const a of answers) {
    if (a.source === "memory" || a.source === "memory+disk") memory = true;
    if (a.source === "disk" || a.source === "memory+disk") disk = true;
    const from = finiteMs(a.memory_from_ms);
    if (from !== null) memoryFrom = Math.max(memoryFrom ?? from, from);
    diskStep = finiteMs(a.disk_step_ms) ?? diskStep;
  }
  const source = memory && disk ? "memory+disk" : memory ? "memory" : disk ? "disk" : "none";
  const parts = [];
  if (disk) parts.push(`disk tier (buckets of ${spanText(Math.max(step, diskStep ?? 0))})`);
  if (memory) {
    parts.push(
      `memory ring (buckets of ${spanText(step)}${
        memoryFrom === null ? "" : `, from ${new Date(memoryFrom).toLocaleString()}`
      })`,
    );
  }
  return { source, parts };
}

/** The Trend view. */
export class TrendView {
  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>},
   *   errorText: (err: unknown) => string,
   *   devices: () => any[],
   *   unitOf: (sk: string) => string,
   *   serverNow: () => number,
   *   isVisible: () => boolean,
   *   inventoryKnown?: () => boolean,
   *   onSelection?: (handles: string[]) => void,
   *   pollIntervalMs?: () => number,
   *   streamLive?: () => boolean,
   * }} options `devices` the devices with their capabilities; `inventoryKnown`: whether they
   *   were read (default: some are known); `onSelection` is told when the signals on the chart
   *   change; `pollIntervalMs`: the runtime's poll interval (0 while not known); `streamLive`:
   *   whether the event stream is live now (default: it is), as a live line's last value is held
   *   to now only while it is (Series.holdTo)
   */
  constructor(options) {
    this.o = options;
    /** @type {string[]} handles on the chart */
    this.handles = [];
    this.rangeId = "5m";
    this.from = 0;
    this.to = 0;
    /** @type {Map<string, Series>} signalKey -> its line */
    this.series = new Map();
    /**
     * The lines whose last value is held to now (Series.holdTo): of chartable signals of devices
     * the inventory lists (a device removed by a reload is told by no sample: its line ends).
     * @type {Set<string>}
     */
    this.holdable = new Set();
    /** @type {Chart | null} */
    this.chart = null;
    /** What the chart was drawn for (signalsKey at its reload): an inventory change redraws it. */
    this.shownSignals = "";
    /** Answers of an older question are dropped. */
    this.generation = 0;
    /** While a seed is read: samples that arrived meanwhile, appended after it. */
    this.seeding = false;
    /** @type {[string, number, number | null, string][]} */
    this.early = [];
    this.dirty = false;
    this.built = false;
    this.status = h("p", { class: "trend-source", role: "status" });
    this.error = h("p", { class: "error", role: "alert", hidden: true });
    this.gapsBox = h("div", { class: "trend-gaps" });
    this.chartBox = h("div", { class: "chart", "data-points": "0" });
    this.chips = h("ul", { class: "chips", "aria-label": "Signals on the chart" });
    setInterval(() => this.tick(), TREND_TICK_MS);
  }

  /** The range picked, or undefined for custom. */
  range() {
    return TREND_RANGES.find((r) => r.id === this.rangeId) ?? TREND_RANGES[0];
  }

  live() {
    return this.rangeId !== "custom";
  }

  /** [since, until] (epoch ms, the runtime's clock). */
  window() {
    if (!this.live()) return [this.from, this.to];
    const now = this.o.serverNow();
    return [now - this.range().ms, now];
  }

  /** Shows what the fragment's parameters name (called when the view is shown). */
  open(params) {
    this.build();
    const handles = params.getAll("s").filter((x) => parseHandle(x) !== null);
    const rangeId = TREND_RANGES.some((r) => r.id === params.get("r")) ? params.get("r") : "5m";
    const from = Number(params.get("from") ?? 0);
    const to = Number(params.get("to") ?? 0);
    // `#trend` alone (the tab) shows what was there.
    if (!params.has("s") && !params.has("r")) {
      this.renderControls();
      if (this.handles.length > 0) {
        history.replaceState(null, "", trendHash(this.handles, this.rangeId, this.from, this.to));
      }
      if (this.chart === null && this.handles.length > 0) this.reload();
      return;
    }
    const same = JSON.stringify([handles, rangeId, from, to]) ===
      JSON.stringify([this.handles, this.rangeId, this.from, this.to]);
    this.handles = [...new Set(handles)].slice(0, MAX_TREND_SIGNALS);
    this.rangeId = rangeId;
    this.from = Number.isSafeInteger(from) ? from : 0;
    this.to = Number.isSafeInteger(to) ? to : 0;
    this.renderControls();
    if (!same || this.chart === null) this.reload();
    this.o.onSelection?.(this.handles);
  }

  /** Goes to the trend of these handles (the fragment changes; the view follows it). */
  navigate(handles, rangeId = this.rangeId, from = this.from, to = this.to) {
    location.hash = trendHash(handles, rangeId, from, to);
  }

  /** Adds a signal to the chart (from the Devices view's + button): no navigation. */
  add(handle) {
    if (this.handles.includes(handle) || this.handles.length >= MAX_TREND_SIGNALS) return;
    this.handles = [...this.handles, handle];
    this.chartFor();
    this.o.onSelection?.(this.handles);
  }

  /** Removes a signal from the chart (no navigation). */
  remove(handle) {
    this.handles = this.handles.filter((x) => x !== handle);
    this.chartFor();
    this.o.onSelection?.(this.handles);
  }

  /** After the selection changed outside the view: shown at the next opening. */
  chartFor() {
    this.destroyChart();
    if (this.o.isVisible()) this.navigate(this.handles);
  }

  has(handle) {
    return this.handles.includes(handle);
  }

  build() {
    if (this.built) return;
    this.built = true;
    fill(
      byId("trend"),
      h("div", { class: "trend-controls" }, ...this.rangeControls(), ...this.addControls()),
      this.chips,
      this.error,
      this.chartBox,
      this.status,
      this.gapsBox,
    );
  }

  rangeControls() {
    const select = h(
      "select",
      {
        id: "trend-range",
        onchange: () => {
          if (select.value === "custom") {
            const [a, b] = this.window();
            this.navigate(this.handles, "custom", Math.round(a), Math.round(b));
          } else this.navigate(this.handles, select.value, 0, 0);
        },
      },
      ...TREND_RANGES.map((r) => h("option", { value: r.id, text: r.label })),
    );
    this.rangeSelect = select;
    this.fromInput = h("input", { id: "trend-from", type: "datetime-local", step: "1" });
    this.toInput = h("input", { id: "trend-to", type: "datetime-local", step: "1" });
    this.customBox = h(
      "span",
      { class: "trend-custom", hidden: true },
      h("label", { for: "trend-from", text: "From" }),
      this.fromInput,
      h("label", { for: "trend-to", text: "to" }),
      this.toInput,
      h("button", {
        type: "button",
        class: "small",
        text: "Show",
        onclick: () => {
          const a = new Date(this.fromInput.value).getTime();
          const b = new Date(this.toInput.value).getTime();
          if (!Number.isFinite(a) || !Number.isFinite(b) || b <= a) {
            this.showError("From must be a time before to.");
            return;
          }
          this.navigate(this.handles, "custom", a, b);
        },
      }),
    );
    return [h("label", { for: "trend-range", text: "Range" }), select, this.customBox];
  }

  addControls() {
    this.addSelect = h("select", { id: "trend-add", "aria-label": "Signal to add" });
    return [
      h(
        "span",
        { class: "trend-add" },
        this.addSelect,
        h("button", {
          type: "button",
          class: "small",
          text: "Add to chart",
          onclick: () => {
            const v = this.addSelect.value;
            if (v && !this.handles.includes(v)) this.navigate([...this.handles, v]);
          },
        }),
      ),
    ];
  }

  /** Whether the devices were read (before: no signal is known to be unknown). */
  inventoryKnown() {
    return this.o.inventoryKnown?.() ?? this.o.devices().length > 0;
  }

  /** Every chartable signal of every device: `{handle, sk, name, unit, valueType}`. */
  catalog() {
    return this.signals().filter((c) => isChartable(c.valueType));
  }

  /** Every signal of every device, chartable or not: `{handle, sk, name, unit, valueType}`. */
  signals() {
    const out = [];
    for (const d of this.o.devices()) {
      for (const s of d.caps?.signals ?? []) {
        const sk = signalKey(d.provider_id, d.device_id, s.signal_id);
        out.push({
          handle: `${d.provider_id}/${d.device_id}/${s.signal_id}`,
          sk,
          device: `${d.provider_id}/${d.device_id}`,
          name: s.label || s.signal_id,
          unit: this.o.unitOf(sk),
          valueType: s.value_type,
        });
      }
    }
    return out;
  }

  /**
   * What the inventory says of each signal on the chart (its type and unit, or that it is
   * unknown), as a key: the chart is drawn again when it changes (a reload removed a signal,
   * changed its type or unit).
   */
  signalsKey() {
    if (!this.inventoryKnown()) return "";
    const all = this.signals();
    return JSON.stringify(this.handles.map((hd) => {
      const ids = parseHandle(hd);
      const sk = ids === null ? "" : signalKey(ids.p, ids.d, ids.s);
      const info = all.find((c) => c.sk === sk);
      return info === undefined ? null : [info.valueType, info.unit];
    }));
  }

  /** Range picker, signal list and the add menu as the state is. */
  renderControls() {
    if (!this.built) return;
    this.rangeSelect.value = this.rangeId;
    this.customBox.hidden = this.live();
    if (!this.live()) {
      this.fromInput.value = localInput(this.from);
      this.toInput.value = localInput(this.to);
    }
    const all = this.catalog();
    const byDevice = new Map();
    for (const c of all) {
      if (this.handles.includes(c.handle)) continue;
      if (!byDevice.has(c.device)) byDevice.set(c.device, []);
      byDevice.get(c.device).push(c);
    }
    fill(
      this.addSelect,
      ...[...byDevice].map(([dev, list]) =>
        h(
          "optgroup",
          { label: dev },
          ...list.map((c) =>
            h("option", {
              value: c.handle,
              text: `${c.name}${c.unit ? ` (${c.unit})` : ""}`,
            })
          ),
        )
      ),
    );
    this.addSelect.disabled = this.handles.length >= MAX_TREND_SIGNALS;
    fill(
      this.chips,
      ...this.handles.map((hd) =>
        h(
          "li",
          { "data-signal": hd },
          hd,
          h("button", {
            type: "button",
            class: "small",
            "aria-label": `Remove ${hd} from the chart`,
            text: "×",
            onclick: () => this.navigate(this.handles.filter((x) => x !== hd)),
          }),
        )
      ),
    );
    if (this.handles.length === 0) {
      fill(
        this.chips,
        h("li", {
          class: "muted",
          text: "No signal on the chart: click a value in Devices, or add one here.",
        }),
      );
    }
  }

  showError(text) {
    this.error.hidden = text === "";
    setText(this.error, text);
  }

  destroyChart() {
    this.chart?.destroy();
    this.chart = null;
  }

  /** Reads the range from the history and draws it (again). */
  async reload() {
    const gen = ++this.generation;
    this.destroyChart();
    this.showError("");
    this.series = new Map();
    this.holdable = new Set();
    this.shownSignals = this.signalsKey();
    const unknown = [];
    const notCharted = [];
    const known = this.inventoryKnown();
    const all = this.signals();
    for (const hd of this.handles) {
      const ids = parseHandle(hd);
      const sk = signalKey(ids.p, ids.d, ids.s);
      const signal = all.find((c) => c.sk === sk);
      const info = signal !== undefined && isChartable(signal.valueType) ? signal : undefined;
      if (known && signal === undefined) unknown.push(hd);
      else if (known && info === undefined) notCharted.push(`${hd} (${signal.valueType})`);
      if (info !== undefined) this.holdable.add(sk);
      this.series.set(
        sk,
        new Series({ key: hd, name: hd, unit: info?.unit ?? this.o.unitOf(sk) }),
      );
    }
    fill(this.chartBox);
    this.chartBox.setAttribute("data-points", "0");
    this.chartBox.removeAttribute("data-source");
    if (this.handles.length === 0) {
      setText(this.status, "");
      fill(this.gapsBox);
      return;
    }
    const [since, until] = this.window();
    const step = stepFor(until - since);
    // One question per device.
    const byDevice = new Map();
    for (const hd of this.handles) {
      const ids = parseHandle(hd);
      const dk = JSON.stringify([ids.p, ids.d]);
      if (!byDevice.has(dk)) byDevice.set(dk, { p: ids.p, d: ids.d, signals: [] });
      byDevice.get(dk).signals.push(ids.s);
    }
    this.seeding = true;
    this.early = [];
    setText(this.status, "Reading the history…");
    const answers = [];
    const failures = [];
    await Promise.all([...byDevice.values()].map(async (dev) => {
      const q = new URLSearchParams();
      for (const s of dev.signals) q.append("signal_id", s);
      q.set("since_ms", String(Math.max(0, Math.floor(since))));
      q.set("until_ms", String(Math.floor(until)));
      q.set("step_ms", String(step));
      try {
        answers.push(
          await this.o.api.get(
            `/v0/history/${encodeURIComponent(dev.p)}/${encodeURIComponent(dev.d)}?${q}`,
          ),
        );
      } catch (err) {
        failures.push(`${dev.p}/${dev.d}: ${this.o.errorText(err)}`);
      }
    }));
    if (gen !== this.generation) return;
    this.seeding = false;
    const unitChanges = [];
    for (const a of answers) {
      for (const sig of a.signals ?? []) {
        const line = this.series.get(signalKey(a.provider_id, a.device_id, sig.signal_id));
        if (line === undefined) continue;
        // The axis names the unit the answer's points are in: as declared now, or, of a device no
        // provider lists (its provider removed by a reload), as its polls were recorded in -- not
        // "(no unit)" because the inventory no longer has it. None in the answer: none.
        line.unit = typeof sig.unit === "string" ? sig.unit : "";
        // Points in another unit than the axis names are not drawn on it (the note says so).
        const { points, changed } = pointsInUnitNow(sig);
        if (changed !== null) {
          unitChanges.push(
            `${line.key}: its unit changed from "${changed.unit_before}" to "${changed.unit}" ` +
              `at ${formatTime(changed.at_ms)}; the points before are not drawn (the CSV has them)`,
          );
        }
        seedLine(line, points, {
          step: a.step_ms ?? step,
          pollMs: this.o.pollIntervalMs?.() ?? 0,
          memoryFrom: finiteMs(a.memory_from_ms),
          diskStep: finiteMs(a.disk_step_ms),
          until: this.live() ? until : null,
        });
      }
    }
    for (const [sk, t, v, q] of this.early) this.series.get(sk)?.push(t, v, q);
    this.early = [];
    const problems = [...failures, ...unitChanges];
    for (const a of answers) {
      // A partial answer (GET /v0/history's `incomplete`): the chart lacks points it should have.
      if (a.incomplete === "disk_unreadable") {
        problems.push(
          `${a.provider_id}/${a.device_id}: older points may be missing (the disk tier could not be read)`,
        );
      } else if (typeof a.incomplete === "string") {
        problems.push(
          `${a.provider_id}/${a.device_id}: recent points may be missing (not yet written to disk; open the trend again)`,
        );
      }
    }
    if (unknown.length > 0) problems.push(`not a signal of a known device: ${unknown.join(", ")}`);
    if (notCharted.length > 0) {
      problems.push(`not chartable (strings and bytes are not): ${notCharted.join(", ")}`);
    }
    this.showError(problems.join("; "));
    this.chart = new Chart(this.chartBox, [...this.series.values()], {
      xRange: () => this.window(),
    });
    this.showSource(answers, step);
    this.draw();
  }

  /** Which tier answered, with the step. */
  showSource(answers, step) {
    const { source, parts } = answeredBy(answers, step);
    this.chartBox.setAttribute("data-source", source);
    setText(
      this.status,
      `Answered by: ${parts.length ? parts.join(" + ") : "nothing recorded in this range"}` +
        (this.live() ? " · then live from the event stream" : ""),
    );
  }

  /**
   * A sample from the event stream (`state_update`, or `quality_change` with no value).
   * @param {string} sk its signalKey
   */
  onSample(sk, value, quality, ts) {
    if (!this.live()) return;
    const line = this.series.get(sk);
    if (line === undefined) return;
    const t = typeof ts === "number" ? ts : this.o.serverNow();
    let v = chartNumber(value);
    if (value === undefined) {
      // A quality change alone: a gap when it is not OK, else the line goes on at the next value.
      if (quality === "OK") return;
      v = null;
    }
    if (v === undefined) return;
    if (this.seeding) {
      if (this.early.length < MAX_TREND_POINTS) this.early.push([sk, t, v, quality]);
      return;
    }
    if (line.push(t, v, quality)) this.dirty = true;
  }

  /**
   * The event stream missed events it cannot send (its `resync`, or a reconnection that could
   * not resume), as `reason` says. A restarted runtime has no samples of its outage: each live
   * line breaks after its last sample (a gap with no data) instead of joining it to the first
   * sample of the new run as if the signal had been read all along. Otherwise (the events were
   * too old) the runtime's history still has the samples missed: the range is read again, as
   * the rest of the page is (a hidden chart at its next showing).
   * @param {string} reason the `resync` event's: `restarted`, `too_old`, `unknown`
   */
  onGap(reason) {
    if (!this.live() || this.handles.length === 0) return;
    if (this.chart === null && !this.seeding) return;
    if (reason === "restarted" && this.chart !== null && !this.seeding) {
      for (const s of this.series.values()) if (s.breakLine()) this.dirty = true;
      if (this.o.isVisible()) this.draw();
      return;
    }
    if (this.o.isVisible()) {
      this.reload();
      return;
    }
    this.generation++;
    this.seeding = false;
    this.destroyChart();
  }

  /** Scrolls a live chart and draws what arrived. */
  tick() {
    if (this.chart === null) return;
    const visible = this.o.isVisible();
    if (this.live()) {
      // Trimmed also while hidden: what a live chart holds stays bounded.
      const [since] = this.window();
      for (const s of this.series.values()) s.trim(since, MAX_TREND_POINTS);
      if (visible) this.draw();
    } else if (this.dirty && visible) this.draw();
  }

  draw() {
    if (this.chart === null) return;
    this.dirty = false;
    const end = this.window()[1];
    // The stream sends changes only: while it is live, a value unchanged since its sample is still
    // that value, drawn on to now; while it is not, each line's hold stays where it was known.
    if (this.live() && (this.o.streamLive?.() ?? true)) {
      for (const [sk, s] of this.series) if (this.holdable.has(sk)) s.holdTo(end);
    }
    this.chart.update(end);
    fill(this.gapsBox, gapList([...this.series.values()], end));
  }

  /**
   * The inventory was read: a signal on the chart may be gone, or its type or unit changed. The
   * chart is drawn again for it (it says what it cannot chart); a hidden one at its next showing.
   */
  onUnits() {
    this.renderControls();
    if (this.handles.length === 0 || this.signalsKey() === this.shownSignals) return;
    if (this.o.isVisible()) {
      this.reload();
      return;
    }
    // Drawn (or being read) for the old inventory: drop it, so that showing the view reads again.
    this.generation++;
    this.destroyChart();
  }
}
