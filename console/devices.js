// The Devices view: every device with its signals' values, quality and age (live from the event
// stream, re-read on the refresh cycle for ages and qualities), its liveness, and a form per
// function built from its ArgSpecs.

import { isChartable } from "./chart.js";
import { badge, byId, cssId, fill, formatAge, formatValue, h, setResult, setText } from "./dom.js";
import { field, readArg } from "./forms.js";
import { healthClass } from "./health.js";
import { LatestRead, OVERTAKEN } from "./latest_read.js";
import { deviceKey, signalKey } from "./keys.js";
import { trendHash } from "./trend.js";

/** How often the ages shown are recomputed. */
export const AGE_TICK_MS = 1000;
/** Inventory changes (devices, capabilities) are re-read at most this often. */
export const INVENTORY_DEBOUNCE_MS = 300;

/** The Devices view. */
export class DevicesView {
  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>, post: (path: string, body?: unknown) => Promise<any>},
   *   errorText: (err: unknown) => string,
   *   showRefreshError: (err: unknown) => void,
   *   loadHealth: () => Promise<void>,
   *   onUnits?: () => void,
   *   onTrendToggle?: (handle: string) => void,
   * }} options `loadHealth` re-reads the liveness (after the inventory changed); `onUnits` is
   *   told when the signals' units may have changed (views that show values show them too);
   *   `onTrendToggle` adds a signal to the trend chart or removes it (its + button)
   */
  constructor(options) {
    this.api = options.api;
    this.errorText = options.errorText;
    this.showRefreshError = options.showRefreshError;
    this.loadHealth = options.loadHealth;
    this.onUnits = options.onUnits ?? (() => {});
    this.onTrendToggle = options.onTrendToggle ?? (() => {});
    /** @type {Map<string, HTMLElement>} handle -> its "on the trend" button */
    this.trendButtons = new Map();
    /** @type {Set<string>} handles on the trend chart */
    this.inTrend = new Set();
    /** @type {Map<string, string>} signalKey -> its unit, for the signals that declare one */
    this.units = new Map();
    /**
     * deviceKey -> its card as shown, kept while its device is unchanged (render).
     * @type {Map<string, {json: string, el: HTMLElement, cells: Map<string, any>, liveness: HTMLElement, trendButtons: Map<string, HTMLElement>}>}
     */
    this.cards = new Map();
    /** @type {any[]} devices with their capabilities */
    this.devices = [];
    this.inventoryKey = "";
    /**
     * `receivedAt`: when the value shown was received by the runtime, on this page's monotonic
     * clock (performance.now(); null: none yet); `streamed`: the streamedCount of the last
     * streamed update shown (0: none).
     * @type {Map<string, {valueEl: HTMLElement, qualityEl: HTMLElement, ageEl: HTMLElement, receivedAt: number | null, streamed: number}>} signalKey -> its cells
     */
    this.cells = new Map();
    /** Streamed updates shown so far (state_update, quality_change): orders them against reads. */
    this.streamedCount = 0;
    /** @type {Map<string, HTMLElement>} deviceKey -> liveness badge */
    this.healthBadges = new Map();
    /**
     * The runtime's clock at the last state read (`generated_at_epoch_ms`) and performance.now()
     * then (null: no read yet): the runtime's time is carried forward on the monotonic clock, so a
     * step of this browser's wall clock never shows in ages or the trend's window.
     */
    this.serverEpochAt = null;
    this.serverMonoAt = 0;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.inventoryTimer = undefined;
  }

  /** Reads of the inventory (with every device's capabilities) and of the state. */
  inventoryReads = new LatestRead();
  stateReads = new LatestRead();

  /** Re-reads the inventory; resolves true when it changed (the values were re-read with it). */
  async loadInventory() {
    const withCaps = await this.inventoryReads.read(() => this.readInventory());
    if (withCaps === OVERTAKEN) return false;
    const inventoryKey = JSON.stringify(withCaps);
    if (inventoryKey === this.inventoryKey) return false;
    this.inventoryKey = inventoryKey;
    this.devices = withCaps;
    this.units = new Map();
    for (const d of withCaps) {
      for (const s of d.caps.signals ?? []) {
        if (s.unit) this.units.set(signalKey(d.provider_id, d.device_id, s.signal_id), s.unit);
      }
    }
    this.render();
    this.onUnits();
    await Promise.all([this.loadState(), this.loadHealth()]);
    return true;
  }

  /** GET /v0/devices and each device's capabilities (a device's failed read: none, with why). */
  async readInventory() {
    const list = (await this.api.get("/v0/devices")).devices ?? [];
    return await Promise.all(list.map(async (d) => {
      try {
        const c = await this.api.get(
          `/v0/devices/${encodeURIComponent(d.provider_id)}/${
            encodeURIComponent(d.device_id)
          }/capabilities`,
        );
        return { ...d, caps: c.capabilities, capsError: "" };
      } catch (err) {
        return { ...d, caps: { signals: [], functions: [] }, capsError: String(err) };
      }
    }));
  }

  /** Re-reads the inventory soon (device and provider events come in bursts). */
  scheduleInventory() {
    clearTimeout(this.inventoryTimer);
    this.inventoryTimer = setTimeout(
      () => this.loadInventory().catch(this.showRefreshError),
      INVENTORY_DEBOUNCE_MS,
    );
  }

  /**
   * Shows the inventory. A device whose entry and capabilities are unchanged keeps its card, as
   * it is: what the operator typed in its forms, a call's answer, the focus and the values shown
   * survive a change elsewhere (a reload adding a provider, another provider restarting).
   */
  render() {
    const previous = this.cards;
    this.cards = new Map();
    this.cells.clear();
    this.healthBadges.clear();
    this.trendButtons.clear();
    const box = byId("devices");
    if (this.devices.length === 0) {
      fill(box, h("p", { class: "muted", text: "No devices." }));
      return;
    }
    const els = this.devices.map((d) => {
      const dk = deviceKey(d.provider_id, d.device_id);
      const json = JSON.stringify(d);
      let card = previous.get(dk);
      if (card === undefined || card.json !== json) card = this.deviceCard(d, json);
      this.cards.set(dk, card);
      for (const [sk, cell] of card.cells) this.cells.set(sk, cell);
      this.healthBadges.set(dk, card.liveness);
      for (const [handle, button] of card.trendButtons) this.trendButtons.set(handle, button);
      return card.el;
    });
    // Moved only where the order changed: a card taken out of the page loses its focus.
    const kept = new Set(els);
    for (const child of [...box.children]) if (!kept.has(child)) child.remove();
    els.forEach((el, n) => {
      if (box.children[n] !== el) box.insertBefore(el, box.children[n] ?? null);
    });
    this.markTrend([...this.inTrend]);
  }

  /**
   * A device's card, with its signals' cells, its liveness badge and its trend buttons.
   * @param {any} d the device with its capabilities
   * @param {string} json `d` as JSON: a card is kept while its device's JSON is unchanged
   */
  deviceCard(d, json) {
    /** @type {Map<string, any>} */
    const cells = new Map();
    /** @type {Map<string, HTMLElement>} */
    const trendButtons = new Map();
    // The handle as the API writes it, for reading (and as a test hook); not a key: with ids
    // that contain `/` two devices or signals can share it.
    const dk = `${d.provider_id}/${d.device_id}`;
    const titleId = `dev-${cssId(d.provider_id)}-${cssId(d.device_id)}`;
    const liveness = h("span", { class: "badge q-UNKNOWN", text: "liveness …" });
    const signals = d.caps.signals ?? [];
    const rows = signals.map((s) => {
      const handle = `${dk}/${s.signal_id}`;
      const chartable = isChartable(s.value_type);
      // A value that can be charted is a link to its trend.
      const valueEl = chartable
        ? h("a", { href: trendHash([handle]), title: `Trend of ${handle}`, text: "—" })
        : h("span", { text: "—" });
      const valueCell = h("td", { class: "value" }, valueEl);
      // The provider's unit beside the value; an empty cell when it declares none.
      const unitEl = h("td", { class: "unit", text: s.unit ?? "" });
      const qualityEl = h("td", { class: "quality" }, badge("—", "q-UNKNOWN"));
      const ageEl = h("td", { class: "age", text: "—" });
      let trendCell = h("td", { class: "trend" });
      if (chartable) {
        const button = h("button", {
          type: "button",
          class: "small",
          text: "+",
          title: "Add to the trend chart (several signals on one chart)",
          "aria-label": `Add ${handle} to the trend chart`,
          "aria-pressed": this.inTrend.has(handle) ? "true" : "false",
          onclick: () => this.onTrendToggle(handle),
        });
        trendButtons.set(handle, button);
        trendCell = h("td", { class: "trend" }, button);
      }
      cells.set(signalKey(d.provider_id, d.device_id, s.signal_id), {
        valueEl,
        qualityEl,
        ageEl,
        receivedAt: null,
        streamed: 0,
      });
      return h(
        "tr",
        { "data-signal": handle },
        h(
          "th",
          { scope: "row" },
          s.label || s.signal_id,
          h("span", { class: "id", text: s.signal_id }),
        ),
        valueCell,
        unitEl,
        qualityEl,
        ageEl,
        trendCell,
      );
    });
    const el = h(
      "article",
      { class: "device", "aria-labelledby": titleId, "data-device": dk },
      h(
        "header",
        {},
        h("h3", { id: titleId, text: d.display_name }),
        h("span", { class: "muted", text: `${dk} · ${d.type}` }),
        liveness,
      ),
      d.capsError ? h("p", { class: "error", text: d.capsError }) : null,
      signals.length
        ? h(
          "table",
          { class: "signals" },
          h("caption", { class: "sr-only", text: `Signals of ${d.display_name}` }),
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col", text: "Signal" }),
              h("th", { scope: "col", colspan: "2", text: "Value" }),
              h("th", { scope: "col", text: "Quality" }),
              h("th", { scope: "col", text: "Age" }),
              h("th", { scope: "col", text: "Trend" }),
            ),
          ),
          h("tbody", {}, ...rows),
        )
        : h("p", { class: "muted", text: "No signals." }),
      ...(d.caps.functions ?? []).map((f) => this.functionForm(d, f)),
    );
    return { json, el, cells, liveness, trendButtons };
  }

  functionForm(d, f) {
    const fk = `${d.provider_id}/${d.device_id}/${f.function_id}`;
    const base = `fn-${cssId(d.provider_id)}-${cssId(d.device_id)}-${cssId(f.function_id)}`;
    const fields = Object.entries(f.args ?? {}).map(([name, spec]) => ({
      name,
      spec,
      ui: field(`${base}-arg-${cssId(name)}`, name, spec),
    }));
    const result = h("p", { class: "result", role: "status" });
    const kind = f.actuating ? "actuating" : "read";
    const onsubmit = async (e) => {
      e.preventDefault();
      const args = {};
      let bad = 0;
      for (const { name, spec, ui } of fields) {
        const r = readArg(name, spec, ui.read());
        ui.setError("error" in r ? r.error : "");
        if ("error" in r) bad++;
        else if ("value" in r) args[name] = r.value;
      }
      if (bad > 0) {
        setResult(result, "error", `Not sent: ${bad} field(s) need fixing.`);
        return;
      }
      setResult(result, "pending", "Calling…");
      try {
        await this.api.post("/v0/call", {
          provider_id: d.provider_id,
          device_id: d.device_id,
          function_id: f.function_id,
          args,
        });
        // The runtime's time, as every other time on the page (this browser's clock may be off).
        setResult(
          result,
          "ok",
          `OK at ${new Date(this.serverNow()).toLocaleTimeString()}; the device was re-polled.`,
        );
      } catch (err) {
        setResult(result, "error", this.errorText(err));
      }
    };
    return h(
      "form",
      {
        class: `fn fn-${kind}`,
        novalidate: true,
        "data-fn": fk,
        "aria-labelledby": `${base}-title`,
        onsubmit,
      },
      h(
        "div",
        { class: "fn-head" },
        h("h4", { id: `${base}-title`, text: f.name }),
        badge(f.actuating ? "actuating" : "read-only", `kind-${kind}`),
        h("span", { class: "muted", text: f.label }),
        policyText(f.policy)
          ? h("span", { class: "muted policy", text: policyText(f.policy) })
          : null,
      ),
      fields.length ? h("div", { class: "fields" }, ...fields.map((x) => x.ui.row)) : null,
      h(
        "div",
        { class: "fn-actions" },
        h("button", { type: "submit", class: f.actuating ? "actuate" : "" }, `Run ${f.name}`),
        result,
      ),
    );
  }

  /**
   * Re-reads every value (GET /v0/state) and the runtime's clock. A signal updated by the
   * stream while the read was under way keeps what the stream said (the read may hold the older
   * sample): reads and updates are ordered by when they arrived here, never by comparing times
   * (`timestamp_epoch_ms` is the provider's clock, an update's `timestamp_ms` the runtime's).
   */
  async loadState() {
    const asked = this.streamedCount;
    const m0 = performance.now();
    const r = await this.stateReads.read(() => this.api.get("/v0/state"));
    if (r === OVERTAKEN) return;
    const read = (m0 + performance.now()) / 2;
    this.serverEpochAt = r.generated_at_epoch_ms;
    this.serverMonoAt = read;
    for (const dev of r.devices ?? []) {
      for (const v of dev.values ?? []) {
        const cell = this.cells.get(signalKey(dev.provider_id, dev.device_id, v.signal_id));
        if (cell === undefined || cell.streamed > asked) continue;
        // When the runtime received it, on this page's monotonic clock: its age_ms before the read.
        this.paint(cell, v.value, v.quality, read - v.age_ms);
      }
    }
  }

  /**
   * A streamed signal's value, quality and the runtime's time of receipt (`undefined`: unchanged).
   * @param {string} sk its signalKey
   */
  showValue(sk, value, quality, ts) {
    const cell = this.cells.get(sk);
    if (cell === undefined) return;
    cell.streamed = ++this.streamedCount;
    // Its age on arrival, by the runtime's clock; before the first read (no runtime clock known
    // yet, the browser's may be off) it is taken as just received.
    const age = typeof ts !== "number"
      ? undefined
      : this.serverEpochAt === null
      ? 0
      : Math.max(0, this.serverNow() - ts);
    this.paint(cell, value, quality, age === undefined ? undefined : performance.now() - age);
  }

  /**
   * Shows a value, quality and receipt time (performance.now() terms; `undefined`: unchanged) in a
   * signal's cells.
   */
  paint(cell, value, quality, receivedAt) {
    if (value !== undefined) setText(cell.valueEl, formatValue(value));
    if (quality !== undefined) setQuality(cell.qualityEl, quality);
    if (typeof receivedAt === "number") cell.receivedAt = receivedAt;
    setText(
      cell.ageEl,
      cell.receivedAt === null ? "—" : formatAge(performance.now() - cell.receivedAt),
    );
  }

  /**
   * A signal's unit as its provider declares it ("" when it declares none, or is not known yet).
   * @param {string} sk its signalKey
   */
  unitOf(sk) {
    return this.units.get(sk) ?? "";
  }

  /** Marks the signals on the trend chart (their + buttons pressed). */
  markTrend(handles) {
    this.inTrend = new Set(handles);
    for (const [handle, button] of this.trendButtons) {
      const on = this.inTrend.has(handle);
      button.setAttribute("aria-pressed", on ? "true" : "false");
      setText(button, on ? "✓" : "+");
      button.setAttribute(
        "aria-label",
        on ? `Remove ${handle} from the trend chart` : `Add ${handle} to the trend chart`,
      );
    }
  }

  /** A device's liveness (GET /v0/providers/health). */
  showLiveness(providerId, deviceId, health) {
    const b = this.healthBadges.get(deviceKey(providerId, deviceId));
    if (b) {
      b.className = `badge q-${healthClass(health)}`;
      setText(b, `liveness ${health}`);
    }
  }

  /** The runtime's clock now (epoch ms): the last read's, carried forward on the monotonic clock. */
  serverNow() {
    if (this.serverEpochAt === null) return Date.now();
    return this.serverEpochAt + (performance.now() - this.serverMonoAt);
  }

  /** Recomputes the ages shown. */
  tickAges() {
    const now = performance.now();
    for (const cell of this.cells.values()) {
      if (cell.receivedAt !== null) setText(cell.ageEl, formatAge(now - cell.receivedAt));
    }
  }
}

function setQuality(el, quality) {
  const b = el.firstElementChild;
  if (b && b.textContent === quality) return;
  fill(el, badge(quality, `q-${quality}`));
}

/**
 * The provider's declared policy of a function in words (the runtime enforces it; docs/http-api.md
 * "Provider policies"), or "" when it declares none.
 */
export function policyText(p) {
  if (!p) return "";
  const parts = [];
  if (p.allowed_modes?.length) parts.push(`only in ${p.allowed_modes.join(", ")}`);
  if (p.min_interval_ms > 0) parts.push(`at most every ${p.min_interval_ms} ms`);
  if (p.requires_lease) parts.push("needs a lease (refused: the runtime grants none)");
  return parts.join(" · ");
}
