// Alarms and interlocks in the operator console (docs/alarms.md): the Alarms view and the
// header's counts. Kept current from the event stream's `alarm` and `interlock` events; the
// lists are re-read after a reconnection that could not resume, after dropped events, after an
// operator action and, while the view is shown, on the page's refresh cycle (for the values and
// inputs, which change without a transition).

import { notAvailableHere } from "./api.js";
import { badge, fill, formatTime, formatValue, h, setResult, setText, withUnit } from "./dom.js";
import { handleKey } from "./keys.js";
import { LatestRead, OVERTAKEN } from "./latest_read.js";

/** The longest shelve the runtime accepts (MAX_SHELVE_MS in src/alarms/alarm_monitor.ts): 8 h. */
export const MAX_SHELVE_MS = 8 * 60 * 60 * 1000;
/** The shelve durations offered; the longest is MAX_SHELVE_MS. */
export const SHELVE_CHOICES = [
  { ms: 15 * 60 * 1000, label: "15 min" },
  { ms: 60 * 60 * 1000, label: "1 h" },
  { ms: 4 * 60 * 60 * 1000, label: "4 h" },
  { ms: MAX_SHELVE_MS, label: "8 h" },
];
/** Transitions kept per alarm, as the runtime keeps them (MAX_ALARM_TRANSITIONS). */
export const MAX_ALARM_TRANSITIONS = 20;
/** A read that events overtook is repeated after this pause (events come in bursts). */
export const ALARMS_RELOAD_DEBOUNCE_MS = 300;

const STATE_TEXT = {
  normal: "normal",
  active: "ACTIVE",
  active_acked: "acknowledged",
  shelved: "shelved",
};

/**
 * An alarm of GET /v0/alarms after one `alarm` event: the event's fields win, its transition is
 * appended (the last MAX_ALARM_TRANSITIONS kept). A new object; `alarm` is left as it was.
 * @param {any} alarm
 * @param {any} e the event's data
 */
export function applyAlarmEvent(alarm, e) {
  const record = {
    transition: e.transition,
    state: e.state,
    level: e.level,
    cause: e.cause,
    limit: e.limit,
    value: e.value,
    quality: e.quality,
    at_epoch_ms: e.timestamp_ms,
  };
  return {
    ...alarm,
    state: e.state,
    level: e.level,
    cause: e.cause,
    limit: e.limit,
    value: e.value,
    quality: e.quality,
    // A clear or a raise past a limit needs a usable input; otherwise the reason stays as read.
    bad_input: e.transition === "clear" || (e.transition === "raise" && e.cause !== "bad_quality")
      ? null
      : alarm.bad_input,
    shelved_until_epoch_ms: e.shelved_until_epoch_ms,
    since_epoch_ms: e.timestamp_ms,
    transitions: [...(alarm.transitions ?? []), record].slice(-MAX_ALARM_TRANSITIONS),
  };
}

/**
 * An interlock of GET /v0/interlocks after one `interlock` event (engage, release, or another
 * reason while it keeps blocking: its engage date stays).
 * @param {any} interlock
 * @param {any} e the event's data
 */
export function applyInterlockEvent(interlock, e) {
  return {
    ...interlock,
    blocking: e.blocking,
    reason: e.reason,
    message: e.message,
    block: e.block,
    since_epoch_ms: interlock.blocking && e.blocking ? interlock.since_epoch_ms : e.timestamp_ms,
  };
}

/**
 * The header's counts: active unacknowledged alarms by level (an active alarm without a level
 * counts as MAJOR), acknowledged ones still active, shelved ones.
 * @param {any[]} alarms
 */
export function alarmCounts(alarms) {
  const c = { MAJOR: 0, MINOR: 0, acked: 0, shelved: 0 };
  for (const a of alarms) {
    if (a.state === "active") c[a.level === "MINOR" ? "MINOR" : "MAJOR"]++;
    else if (a.state === "active_acked") c.acked++;
    else if (a.state === "shelved") c.shelved++;
  }
  return c;
}

/**
 * Why this alarm cannot be shelved, or "" when it can: the runtime refuses (409) to shelve an
 * alarm whose action faults or stops the machine.
 * @param {{action: string}} alarm
 */
export function shelveRefusal(alarm) {
  if (alarm.action === "none") return "";
  const verb = alarm.action === "estop" ? "stops" : "faults";
  return `Cannot be shelved: its action ${alarm.action} ${verb} the machine.`;
}

/** A limit or alarm_when value as text, with the signal's unit when it has one. */
function limitText(v, unit = "") {
  return typeof v === "string" ? `"${v}"` : unit ? `${v} ${unit}` : String(v);
}

/**
 * What holds the alarm: `hi 50 C`, `alarm_when true`, `bad input: stale`; "" when nothing.
 * @param {any} a the alarm
 * @param {string} [unit] its signal's unit ("" when it declares none)
 */
export function causeText(a, unit = "") {
  if (a.cause === null || a.cause === undefined) return "";
  if (a.cause === "bad_quality") {
    return `bad input: ${a.bad_input ?? `quality ${a.quality ?? "unknown"}`}`;
  }
  return `${a.cause} ${limitText(a.limit, unit)}`;
}

/** The configured limits: `hi 50 C · hihi 60 C`, or `alarm_when true`. */
function limitsText(a, unit = "") {
  if (a.alarm_when !== null && a.alarm_when !== undefined) {
    return `alarm_when ${limitText(a.alarm_when)}`;
  }
  return ["lolo", "lo", "hi", "hihi"].filter((k) => a.limits?.[k] !== undefined)
    .map((k) => `${k} ${limitText(a.limits[k], unit)}`).join(" · ");
}

/**
 * One recorded transition as a line.
 * @param {any} t
 * @param {string} [unit] the alarm signal's unit
 */
export function transitionText(t, unit = "") {
  const held = causeText(t, unit);
  const quality = t.quality && t.quality !== "OK" ? ` (${t.quality})` : "";
  return `${formatTime(t.at_epoch_ms)} ${t.transition} → ${STATE_TEXT[t.state] ?? t.state}` +
    (t.level ? ` ${t.level}` : "") + (held ? `, ${held}` : "") +
    `, value ${withUnit(formatValue(t.value), unit)}${quality}`;
}

/**
 * When an ack, shelve or unshelve took effect (epoch ms, the runtime's clock): the time of the
 * transition the answer records for it, else (an ack of an alarm acknowledged already records
 * none) `serverNow`, the runtime's clock as the page carries it.
 * @param {any} alarm the answer's alarm
 * @param {"ack" | "shelve" | "unshelve"} op
 * @param {number} serverNow
 */
export function actedAt(alarm, op, serverNow) {
  const last = alarm?.transitions?.at(-1);
  return last?.transition === op && typeof last.at_epoch_ms === "number"
    ? last.at_epoch_ms
    : serverNow;
}

/**
 * The key of a signal (keys.js) -> the ids of the items that read it.
 * @param {any[]} items with an `id`
 * @param {(item: any) => string[]} signalsOf the `provider/device/signal` handles it reads
 */
function groupBySignal(items, signalsOf) {
  /** @type {Map<string, string[]>} */
  const out = new Map();
  for (const item of items) {
    for (const signal of new Set(signalsOf(item).map(handleKey))) {
      const ids = out.get(signal);
      if (ids) ids.push(item.id);
      else out.set(signal, [item.id]);
    }
  }
  return out;
}

/** The Alarms view and the header's alarm and interlock counts. */
export class AlarmsPanel {
  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>, post: (path: string, body?: unknown) => Promise<any>},
   *   errorText: (err: unknown) => string,
   *   onReadFailed?: (err: unknown) => void,
   *   onChange?: () => void,
   *   unitOf?: (handle: string) => string,
   *   serverNow?: () => number,
   * }} options `onReadFailed` is told when a read the panel made by itself (events overtook a
   *   read or named something unknown; an ack, shelve or unshelve answered) failed; `onChange` runs after the alarms changed (the e-stop cause names one); `unitOf`
   *   gives a `provider/device/signal` handle's unit ("" when it declares none); `serverNow`: the
   *   runtime's clock now (epoch ms; default this browser's)
   */
  constructor(options) {
    this.api = options.api;
    this.errorText = options.errorText;
    this.onReadFailed = options.onReadFailed ?? (() => {});
    this.onChange = options.onChange ?? (() => {});
    this.unitOf = options.unitOf ?? (() => "");
    this.serverNow = options.serverNow ?? (() => Date.now());
    /** @type {any[] | null} GET /v0/alarms; null until read */
    this.alarms = null;
    /** @type {any[] | null} GET /v0/interlocks; null until read */
    this.interlocks = null;
    /**
     * Why the lists cannot be read ("" when they can); `unavailable` when the runtime says alarms
     * are not available on it (none here), not for a 503 of a moment (api.js notAvailableHere).
     */
    this.alarmsError = "";
    this.interlocksError = "";
    this.unavailable = false;
    this.interlocksUnavailable = false;
    /** Events applied; a read that started before the last one is not shown (it is older). */
    this.alarmEvents = 0;
    this.interlockEvents = 0;
    /** Reads of both lists (a slower, older answer is dropped). */
    this.reads = new LatestRead();
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.reloadTimer = undefined;
    /** @type {Map<string, any>} alarm id -> the parts of its row */
    this.alarmRows = new Map();
    this.alarmIdsKey = null;
    /** @type {Map<string, any>} interlock id -> the parts of its row */
    this.interlockRows = new Map();
    this.interlockIdsKey = null;
    /** @type {Map<string, string[]>} signal key (keys.js) -> the alarms watching it */
    this.alarmsBySignal = new Map();
    /** @type {Map<string, string[]>} signal key (keys.js) -> the interlocks reading it */
    this.interlocksBySignal = new Map();
  }

  /** The alarm with this id, or undefined. */
  alarm(id) {
    return this.alarms?.find((a) => a.id === id);
  }

  /**
   * Re-reads both lists (the newest read answered wins: LatestRead); rejects, once shown, when a
   * list's read failed, so that the caller owes it again (app.js: a failed full re-read is made
   * again; the header's counts of a list never read stay "…" until one is).
   */
  load() {
    return this.read();
  }

  /** Re-reads soon (events overtook a read, or named something unknown). */
  scheduleLoad() {
    clearTimeout(this.reloadTimer);
    this.reloadTimer = setTimeout(
      () => this.load().catch((err) => this.onReadFailed(err)),
      ALARMS_RELOAD_DEBOUNCE_MS,
    );
  }

  async read() {
    const alarmEvents = this.alarmEvents;
    const interlockEvents = this.interlockEvents;
    const both = await this.reads.read(() =>
      Promise.allSettled([this.api.get("/v0/alarms"), this.api.get("/v0/interlocks")])
    );
    if (both === OVERTAKEN) return;
    const [a, i] = both;
    let overtaken = false;
    /** The first list's read that failed (shown, then thrown); undefined when none did. */
    let failure;
    if (alarmEvents !== this.alarmEvents) overtaken = true;
    else if (a.status === "fulfilled") {
      this.alarms = a.value.alarms ?? [];
      this.alarmsBySignal = groupBySignal(this.alarms, (x) => [x.signal]);
      this.alarmsError = "";
      this.unavailable = false;
    } else {
      this.readFailed(a.reason, "alarms");
      failure = { err: a.reason };
    }
    if (interlockEvents !== this.interlockEvents) overtaken = true;
    else if (i.status === "fulfilled") {
      this.interlocks = i.value.interlocks ?? [];
      this.interlocksBySignal = groupBySignal(
        this.interlocks,
        (x) => (x.inputs ?? []).map((input) => input.signal),
      );
      this.interlocksError = "";
      this.interlocksUnavailable = false;
    } else {
      this.readFailed(i.reason, "interlocks");
      failure ??= { err: i.reason };
    }
    if (overtaken) this.scheduleLoad();
    this.render();
    if (failure !== undefined) throw failure.err;
  }

  readFailed(err, what) {
    // None on this runtime only when it says alarms are not available on it: a 503 of a moment
    // (server busy over http.thread_pool_size, shutting down) is a failed read, the lists kept.
    const unavailable = notAvailableHere(err, "Alarms");
    if (what === "alarms") {
      this.alarmsError = String(err);
      this.unavailable = unavailable;
      if (unavailable) this.alarms = [];
    } else {
      this.interlocksError = String(err);
      this.interlocksUnavailable = unavailable;
      if (unavailable) this.interlocks = [];
    }
  }

  /** An `alarm` event from the stream. */
  onAlarmEvent(e) {
    this.alarmEvents++;
    const index = this.alarms?.findIndex((a) => a.id === e.alarm_id) ?? -1;
    if (index < 0) {
      // Not read yet, or a runtime restarted with other alarms: read them.
      this.scheduleLoad();
      return;
    }
    this.alarms = this.alarms.map((a, n) => n === index ? applyAlarmEvent(a, e) : a);
    this.render();
  }

  /** An `interlock` event from the stream. */
  onInterlockEvent(e) {
    this.interlockEvents++;
    const index = this.interlocks?.findIndex((x) => x.id === e.interlock_id) ?? -1;
    if (index < 0) {
      this.scheduleLoad();
      return;
    }
    this.interlocks = this.interlocks.map((x, n) => n === index ? applyInterlockEvent(x, e) : x);
    this.render();
  }

  /**
   * A signal's new value or quality from the stream (`undefined`: unchanged): the alarms and
   * interlock inputs that read it show it at once, as the Devices view does.
   * @param {string} signal its key (keys.js signalKey)
   */
  onSignal(signal, value, quality) {
    const alarmIds = this.alarmsBySignal.get(signal);
    if (alarmIds && this.alarms) {
      this.alarms = this.alarms.map((a) =>
        alarmIds.includes(a.id)
          ? { ...a, value: value ?? a.value, quality: quality ?? a.quality }
          : a
      );
      for (const a of this.alarms) {
        const row = this.alarmRows.get(a.id);
        if (row && alarmIds.includes(a.id)) this.updateAlarmRow(row, a);
      }
    }
    const interlockIds = this.interlocksBySignal.get(signal);
    if (interlockIds && this.interlocks) {
      this.interlocks = this.interlocks.map((x) =>
        interlockIds.includes(x.id)
          ? {
            ...x,
            inputs: x.inputs.map((i) =>
              handleKey(i.signal) === signal
                ? { ...i, value: value ?? i.value, quality: quality ?? i.quality }
                : i
            ),
          }
          : x
      );
      for (const x of this.interlocks) {
        const row = this.interlockRows.get(x.id);
        if (row && interlockIds.includes(x.id)) this.updateInterlockRow(row, x);
      }
    }
  }

  render() {
    this.renderSummary();
    this.renderAlarms();
    this.renderInterlocks();
    this.onChange();
  }

  /** The header: active unacknowledged alarms by level, and blocking interlocks. */
  renderSummary() {
    const alarmsEl = document.getElementById("alarm-summary");
    const interlocksEl = document.getElementById("interlock-summary");
    if (alarmsEl === null || interlocksEl === null) return;
    const parts = [];
    let key;
    if (this.alarms === null) key = "…";
    else if (this.unavailable) key = "not available";
    else if (this.alarms.length === 0) key = "none configured";
    else {
      const c = alarmCounts(this.alarms);
      if (c.MAJOR) parts.push(badge(`${c.MAJOR} MAJOR`, "lv-MAJOR"));
      if (c.MINOR) parts.push(badge(`${c.MINOR} MINOR`, "lv-MINOR"));
      if (c.acked) parts.push(badge(`${c.acked} acknowledged`, "st-active_acked"));
      if (c.shelved) parts.push(badge(`${c.shelved} shelved`, "st-shelved"));
      key = parts.length ? JSON.stringify(c) : "none";
    }
    if (alarmsEl.dataset.key !== key) {
      alarmsEl.dataset.key = key;
      fill(alarmsEl, parts.length ? h("a", { href: "#alarms" }, ...parts) : key);
    }
    let text;
    let blocking = 0;
    if (this.interlocks === null) text = "…";
    else if (this.interlocksUnavailable) text = "not available";
    else if (this.interlocks.length === 0) text = "none configured";
    else {
      blocking = this.interlocks.filter((x) => x.blocking).length;
      text = blocking ? `${blocking} blocking` : "none";
    }
    if (interlocksEl.dataset.key !== text) {
      interlocksEl.dataset.key = text;
      fill(
        interlocksEl,
        blocking ? h("a", { href: "#alarms" }, badge(text, "blocking")) : text,
      );
    }
  }

  // ---- alarms ----

  renderAlarms() {
    const box = document.getElementById("alarms");
    if (box === null) return;
    if (this.alarms === null) {
      if (this.alarmsError) fill(box, h("p", { class: "error", text: this.alarmsError }));
      return;
    }
    if (this.alarms.length === 0) {
      this.alarmIdsKey = null;
      this.alarmRows.clear();
      fill(
        box,
        h("p", {
          class: "muted",
          "data-empty": "alarms",
          text: this.unavailable
            ? `Alarms are not available on this runtime (${this.alarmsError}).`
            : "No alarms configured (the configuration has no alarms: section)." +
              (this.alarmsError ? ` Could not re-read the alarms: ${this.alarmsError}` : ""),
        }),
      );
      return;
    }
    const idsKey = this.alarms.map((a) => a.id).join("\n");
    if (idsKey !== this.alarmIdsKey) {
      this.alarmIdsKey = idsKey;
      this.alarmRows.clear();
      const rows = this.alarms.map((a) => this.alarmRow(a));
      fill(
        box,
        h("p", { id: "alarms-counts", class: "counts", role: "status" }),
        h("p", { id: "alarms-error", class: "error", role: "alert", hidden: true }),
        h(
          "table",
          { class: "grid alarms-table" },
          h("caption", { text: "Alarms, in configuration order" }),
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...["Alarm", "State", "Value and limit", "Since", "Action", "Operate"].map((t) =>
                h("th", { scope: "col", text: t })
              ),
            ),
          ),
          h("tbody", {}, ...rows.map((r) => r.tr)),
        ),
      );
    }
    const c = alarmCounts(this.alarms);
    const counts = document.getElementById("alarms-counts");
    if (counts) {
      setText(
        counts,
        `${this.alarms.length} alarm(s): ${c.MAJOR + c.MINOR} active unacknowledged ` +
          `(${c.MAJOR} MAJOR, ${c.MINOR} MINOR), ${c.acked} acknowledged, ${c.shelved} shelved.`,
      );
    }
    const err = document.getElementById("alarms-error");
    if (err) {
      err.hidden = this.alarmsError === "";
      setText(err, this.alarmsError ? `Could not re-read the alarms: ${this.alarmsError}` : "");
    }
    for (const a of this.alarms) this.updateAlarmRow(this.alarmRows.get(a.id), a);
  }

  /** Builds the row of one alarm; `updateAlarmRow` fills it. */
  alarmRow(a) {
    const id = a.id;
    const base = `alarm-${id}`;
    const row = {
      stateEl: h("td", { class: "a-state" }),
      valueEl: h("span", { class: "a-value" }),
      unitEl: h("span", { class: "a-unit" }),
      heldEl: h("span", { class: "a-held" }),
      sinceEl: h("td", { class: "a-since" }),
      summary: h("summary"),
      list: h("ol", { class: "transitions", reversed: true }),
      result: h("p", { class: "result", role: "status" }),
      ack: h("button", {
        type: "button",
        class: "small",
        "data-op": "ack",
        "aria-label": `Acknowledge ${id}`,
        onclick: () => this.act(id, "ack"),
      }, "Acknowledge"),
      unshelve: h("button", {
        type: "button",
        class: "small",
        "data-op": "unshelve",
        "aria-label": `Unshelve ${id}`,
        onclick: () => this.act(id, "unshelve"),
      }, "Unshelve"),
      key: "",
      transitionsKey: "",
    };
    let shelve;
    const refusal = shelveRefusal(a);
    if (refusal) {
      shelve = h("p", { class: "muted no-shelve", text: refusal });
    } else {
      const select = /** @type {HTMLSelectElement} */ (h(
        "select",
        { id: `${base}-shelve-for` },
        ...SHELVE_CHOICES.map((c) => h("option", { value: String(c.ms), text: c.label })),
      ));
      shelve = h(
        "span",
        { class: "shelve" },
        h("label", { for: `${base}-shelve-for`, text: "Shelve for" }),
        select,
        h("button", {
          type: "button",
          class: "small",
          "data-op": "shelve",
          "aria-label": `Shelve ${id}`,
          onclick: () => this.act(id, "shelve", { duration_ms: Number(select.value) }),
        }, "Shelve"),
      );
    }
    row.tr = h(
      "tr",
      { "data-alarm": id },
      h(
        "th",
        { scope: "row" },
        h("strong", { class: "a-id", text: id }),
        a.message ? h("span", { class: "a-message", text: a.message }) : null,
        h("span", { class: "a-signal", text: a.signal }),
        h("details", { class: "a-transitions" }, row.summary, row.list),
      ),
      row.stateEl,
      h("td", {}, row.valueEl, row.unitEl, row.heldEl),
      row.sinceEl,
      h("td", { class: "a-action", text: a.action }),
      h(
        "td",
        { class: "a-ops" },
        h("div", { class: "ops" }, row.ack, shelve, row.unshelve),
        row.result,
      ),
    );
    this.alarmRows.set(id, row);
    return row;
  }

  updateAlarmRow(row, a) {
    const unit = this.unitOf(a.signal);
    const key = JSON.stringify([
      unit,
      a.state,
      a.level,
      a.cause,
      a.limit,
      a.value,
      a.quality,
      a.bad_input,
      a.since_epoch_ms,
      a.shelved_until_epoch_ms,
    ]);
    if (key !== row.key) {
      row.key = key;
      row.tr.className = `alarm st-${a.state}`;
      row.tr.dataset.state = a.state;
      fill(
        row.stateEl,
        badge(STATE_TEXT[a.state] ?? a.state, `st-${a.state}`),
        a.level ? badge(a.level, `lv-${a.level}`) : null,
      );
      const quality = a.quality && a.quality !== "OK" ? ` (${a.quality})` : "";
      setText(row.valueEl, `${formatValue(a.value)}${quality}`);
      setText(row.unitEl, unit && formatValue(a.value) !== "—" ? unit : "");
      const held = causeText(a, unit);
      setText(row.heldEl, held ? `past ${held}` : limitsText(a, unit));
      row.heldEl.className = held ? "a-held holds" : "a-held muted";
      fill(
        row.sinceEl,
        formatTime(a.since_epoch_ms),
        a.state === "shelved"
          ? h("span", { class: "until", text: `until ${formatTime(a.shelved_until_epoch_ms)}` })
          : null,
      );
      row.ack.hidden = a.state !== "active";
      row.unshelve.hidden = a.state !== "shelved";
    }
    const t = a.transitions ?? [];
    const transitionsKey = `${t.length}|${t.at(-1)?.at_epoch_ms}|${t.at(-1)?.transition}|${unit}`;
    if (transitionsKey !== row.transitionsKey) {
      row.transitionsKey = transitionsKey;
      setText(row.summary, `Recent transitions (${t.length})`);
      // Newest first.
      fill(
        row.list,
        ...[...t].reverse().map((x) => h("li", { text: transitionText(x, unit) })),
      );
    }
  }

  /** Ack, shelve or unshelve; the runtime's refusal is shown as it words it. */
  async act(id, op, body) {
    const row = this.alarmRows.get(id);
    if (row === undefined) return;
    const verb = { ack: "Acknowledging", shelve: "Shelving", unshelve: "Unshelving" }[op];
    setResult(row.result, "pending", `${verb}…`);
    try {
      const r = await this.api.post(`/v0/alarms/${encodeURIComponent(id)}/${op}`, body);
      const a = r.alarm;
      const at = new Date(actedAt(a, op, this.serverNow())).toLocaleTimeString();
      // The answer is the alarm right after the change: newer than any read under way.
      this.alarmEvents++;
      this.alarms = (this.alarms ?? []).map((x) => x.id === a.id ? a : x);
      this.render();
      setResult(
        row.result,
        "ok",
        op === "ack"
          ? `Acknowledged at ${at}.`
          : op === "shelve"
          ? `Shelved at ${at} until ${formatTime(a.shelved_until_epoch_ms)}.`
          : `Unshelved at ${at}: ${STATE_TEXT[a.state] ?? a.state}.`,
      );
    } catch (err) {
      setResult(row.result, "error", this.errorText(err));
    }
    // Read again shortly: what else changed meanwhile (a refusal means the alarm moved on).
    this.scheduleLoad();
  }

  // ---- interlocks ----

  renderInterlocks() {
    const box = document.getElementById("interlocks");
    if (box === null) return;
    if (this.interlocks === null) {
      if (this.interlocksError) fill(box, h("p", { class: "error", text: this.interlocksError }));
      return;
    }
    if (this.interlocks.length === 0) {
      this.interlockIdsKey = null;
      this.interlockRows.clear();
      fill(
        box,
        h("p", {
          class: "muted",
          "data-empty": "interlocks",
          text: this.interlocksUnavailable
            ? `Interlocks are not available on this runtime (${this.interlocksError}).`
            : "No interlocks configured (the configuration has no interlocks: section)." +
              (this.interlocksError
                ? ` Could not re-read the interlocks: ${this.interlocksError}`
                : ""),
        }),
      );
      return;
    }
    const idsKey = this.interlocks.map((x) => x.id).join("\n");
    if (idsKey !== this.interlockIdsKey) {
      this.interlockIdsKey = idsKey;
      this.interlockRows.clear();
      const rows = this.interlocks.map((x) => this.interlockRow(x));
      fill(
        box,
        h("p", { id: "interlocks-error", class: "error", role: "alert", hidden: true }),
        h(
          "table",
          { class: "grid interlocks-table" },
          h("caption", { text: "Interlocks: calls to what they block are refused while blocking" }),
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...["Interlock", "Blocking now", "Blocks", "Why"].map((t) =>
                h("th", { scope: "col", text: t })
              ),
            ),
          ),
          h("tbody", {}, ...rows.map((r) => r.tr)),
        ),
      );
    }
    const err = document.getElementById("interlocks-error");
    if (err) {
      err.hidden = this.interlocksError === "";
      setText(
        err,
        this.interlocksError ? `Could not re-read the interlocks: ${this.interlocksError}` : "",
      );
    }
    for (const x of this.interlocks) this.updateInterlockRow(this.interlockRows.get(x.id), x);
  }

  interlockRow(x) {
    const row = {
      stateEl: h("td", { class: "i-state" }),
      blockEl: h("ul", { class: "i-block" }),
      reasonEl: h("p", { class: "i-reason" }),
      inputsEl: h("ul", { class: "i-inputs" }),
      key: "",
    };
    row.tr = h(
      "tr",
      { "data-interlock": x.id },
      h(
        "th",
        { scope: "row" },
        h("strong", { class: "i-id", text: x.id }),
        h("span", { class: "i-message", text: x.message }),
      ),
      row.stateEl,
      h("td", {}, row.blockEl),
      h(
        "td",
        {},
        row.reasonEl,
        h("code", { class: "i-condition", text: `while ${x.condition}` }),
        row.inputsEl,
      ),
    );
    this.interlockRows.set(x.id, row);
    return row;
  }

  updateInterlockRow(row, x) {
    const key = JSON.stringify([
      x.blocking,
      x.reason,
      x.since_epoch_ms,
      x.block,
      x.unresolved_block,
      x.inputs,
      (x.inputs ?? []).map((i) => this.unitOf(i.signal)),
    ]);
    if (key === row.key) return;
    row.key = key;
    row.tr.className = x.blocking ? "interlock is-blocking" : "interlock";
    row.tr.dataset.blocking = String(x.blocking);
    fill(
      row.stateEl,
      x.blocking ? badge("BLOCKING", "blocking") : badge("not blocking", "q-OK"),
      h("span", {
        class: "since",
        text: x.since_epoch_ms ? `since ${formatTime(x.since_epoch_ms)}` : "",
      }),
    );
    const unresolved = new Set(x.unresolved_block ?? []);
    fill(
      row.blockEl,
      ...(x.block ?? []).map((b) =>
        h(
          "li",
          {},
          h("code", { text: b }),
          unresolved.has(b) ? h("span", { class: "warn", text: " (matches nothing)" }) : null,
        )
      ),
    );
    setText(row.reasonEl, x.blocking ? (x.reason ?? "blocking") : "");
    row.reasonEl.hidden = !x.blocking;
    fill(
      row.inputsEl,
      ...(x.inputs ?? []).map((i) =>
        h("li", {
          text: `${i.signal} = ${withUnit(formatValue(i.value), this.unitOf(i.signal))}` +
            (i.quality && i.quality !== "OK" ? ` (${i.quality})` : "") +
            (i.bad_input ? ` — not usable: ${i.bad_input}` : ""),
        })
      ),
    );
  }
}
