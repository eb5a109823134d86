// The Incidents view: the incident records the runtime wrote around every e-stop, FAULT entry,
// alarm raise and device loss (GET /v0/incidents), and a page per incident
// (`#incidents/<id>`, GET /v0/incidents/{id}): its cause, a chart of every signal captured with
// the trigger marked (before it on the left, after it on the right), and its CSV and JSON Lines
// exports as downloads (fetched with the token: a plain link would not carry it).

import { ApiError } from "./api.js";
import { Chart, gapList, isChartable, Series } from "./chart.js";
import { byId, facts, fill, formatTime, h, setResult, table } from "./dom.js";
import { signalKey } from "./keys.js";
import { LatestRead, OVERTAKEN } from "./latest_read.js";

/**
 * Incidents listed per page of the Incidents view (GET /v0/incidents' default page: every record
 * the default history.incident_max_count keeps fits on one).
 */
export const INCIDENTS_LISTED = 100;

/** What each trigger is called on the page. */
const TRIGGER_NAMES = {
  estop: "E-stop",
  fault: "FAULT entry",
  alarm: "Alarm raised",
  device_loss: "Device lost",
};

function triggerName(t) {
  return TRIGGER_NAMES[t] ?? t;
}

/** The fragment of an incident's page. */
export function incidentHash(id) {
  return `#incidents/${encodeURIComponent(id)}`;
}

/** A Blob handed to the browser as a file download. */
export function saveBlob(blob, fileName) {
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: fileName });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The Incidents view. */
export class IncidentsView {
  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>, download: (path: string, accept: string) => Promise<Blob>},
   *   errorText: (err: unknown) => string,
   *   unitOf: (sk: string) => string,
   * }} options
   */
  constructor(options) {
    this.o = options;
    /** The incident shown, or "" for the list. */
    this.id = "";
    /** @type {Chart | null} */
    this.chart = null;
    this.loadedId = "";
    /** The list last shown (JSON): an unchanged list is not drawn again (focus stays put). */
    this.listKey = "";
    /**
     * The pages of the list gone through with Older, as their cursors: the last incident of the
     * page before each (`before=`, in the API's order); empty on the newest page. Newer steps back
     * one, Newest empties it.
     */
    this.listBefore = /** @type {string[]} */ ([]);
  }

  /** Shows the list (`id` "") or one incident. */
  async open(id) {
    this.id = id;
    if (id === "") {
      this.destroyChart();
      this.loadedId = "";
      this.listKey = "";
      await this.loadList();
    } else if (id !== this.loadedId) await this.loadOne(id);
  }

  /** The refresh cycle: the list is read again (a new incident appears); a page stays. */
  async refresh() {
    if (this.id === "") await this.loadList();
  }

  /**
   * The units became known (inventory read): an incident's page draws with them the axes of a
   * record that keeps none (written by an older version).
   */
  onUnits() {
    if (this.id !== "" && this.loadedId === this.id) {
      this.loadedId = "";
      this.loadOne(this.id).catch(() => {});
    }
  }

  destroyChart() {
    this.chart?.destroy();
    this.chart = null;
  }

  /** Reads of the list, and of one record (a slower, older answer of either is dropped). */
  listReads = new LatestRead();
  oneReads = new LatestRead();

  async loadList() {
    let list;
    let older;
    const before = this.listBefore.at(-1);
    /** The last incident of the page in the API's order (the cursor of the next page). */
    let last = "";
    try {
      // One more than shown: whether there are older incidents.
      const r = await this.listReads.read(() =>
        this.o.api.get(
          `/v0/incidents?limit=${INCIDENTS_LISTED + 1}` +
            (before === undefined ? "" : `&before=${encodeURIComponent(before)}`),
        )
      );
      if (r === OVERTAKEN) return;
      const page = (r.incidents ?? []).slice(0, INCIDENTS_LISTED);
      older = (r.incidents ?? []).length > INCIDENTS_LISTED;
      last = page.at(-1)?.incident_id ?? "";
      list = byTime(page);
    } catch (err) {
      this.listKey = "";
      fill(byId("incidents"), h("p", { class: "error", text: this.o.errorText(err) }));
      return;
    }
    if (this.id !== "") return;
    const key = JSON.stringify([before ?? null, older, list]);
    if (key === this.listKey) return;
    this.listKey = key;
    const newestPage = before === undefined;
    const page = (cursors) => () => {
      this.listBefore = cursors;
      this.listKey = "";
      this.loadList().catch(() => {});
    };
    const button = (label, aria, disabled, onclick) =>
      h("button", { type: "button", class: "small", "aria-label": aria, disabled, onclick }, label);
    const pages = newestPage && !older ? null : h(
      "div",
      { class: "fn-actions incident-list-pages" },
      button("Newest", "Newest incidents", newestPage, page([])),
      button("Newer", "Newer incidents", newestPage, page(this.listBefore.slice(0, -1))),
      button("Older", "Older incidents", !older, page([...this.listBefore, last])),
    );
    if (list.length === 0) {
      fill(
        byId("incidents"),
        h("p", {
          class: "muted",
          text: newestPage
            ? "No incidents recorded. One is written around every e-stop, FAULT entry, " +
              "alarm raise and device loss."
            : "No older incidents.",
        }),
        pages,
      );
      return;
    }
    const t = table(
      (newestPage ? "Incident records by time, newest first" : "Older incident records by time") +
        (older ? `; the ${INCIDENTS_LISTED} last recorded shown, older after` : ""),
      ["Time", "Trigger", "Cause", "Devices", "Window", "Samples", ""],
      list.map((i) => [
        formatTime(triggerAt(i)),
        triggerName(i.trigger),
        causeText(i),
        i.scope === "machine" ? `all (${i.devices.length})` : i.devices.join(", "),
        windowText(i),
        samplesText(i),
        h("a", { href: incidentHash(i.incident_id), text: "Open" }),
      ]),
      "incidents",
    );
    const rows = t.querySelectorAll("tbody tr");
    list.forEach((i, n) => rows[n]?.setAttribute("data-incident", i.incident_id));
    fill(byId("incidents"), t, pages);
  }

  async loadOne(id) {
    this.destroyChart();
    this.loadedId = id;
    const box = byId("incidents");
    fill(box, h("p", { class: "muted", text: "Loading…" }));
    let rec;
    try {
      rec = await this.oneReads.read(() =>
        this.o.api.get(`/v0/incidents/${encodeURIComponent(id)}`)
      );
      if (rec === OVERTAKEN) return;
    } catch (err) {
      if (this.id !== id) return;
      this.loadedId = "";
      // The error replaces the page, and with it a chart another load drew meanwhile.
      this.destroyChart();
      fill(
        box,
        h("p", {}, h("a", { href: "#incidents", text: "← All incidents" })),
        h("p", { class: "error", text: this.o.errorText(err) }),
      );
      return;
    }
    if (this.id !== id) return;
    const inc = rec.incident;
    const series = [];
    const skipped = [];
    /** @type {[string, string][]} signals whose samples begin after the window's start */
    const late = [];
    for (const s of rec.signals ?? []) {
      const handle = `${s.provider_id}/${s.device_id}/${s.signal_id}`;
      const from = signalFrom(s);
      const fromText = from === null ? "" : signalFromText(from, s.samples.length === 0);
      if (from !== null) late.push([handle, fromText]);
      if (!isChartable(s.value_type)) {
        skipped.push(s.signal_id);
        continue;
      }
      const line = new Series({
        key: handle,
        // A line that begins later than the window says where (the legend).
        name: from === null ? handle : `${handle} (${fromText})`,
        // The unit the record keeps (as declared when it was recorded); a record of an older
        // version keeps none: today's, if the device still declares one.
        unit: typeof s.unit === "string"
          ? s.unit
          : this.o.unitOf(signalKey(s.provider_id, s.device_id, s.signal_id)),
      });
      for (const [t, v, q] of s.samples) {
        line.push(t, typeof v === "number" ? v : typeof v === "string" ? Number(v) : null, q);
      }
      series.push(line);
    }
    const result = h("p", { class: "result", role: "status" });
    const download = (format, accept, ext) =>
      h("button", {
        type: "button",
        class: "small",
        "data-format": format,
        text: `Download ${format.toUpperCase()}`,
        onclick: async () => {
          setResult(result, "pending", `Downloading ${format.toUpperCase()}…`);
          try {
            const blob = await this.o.api.download(
              `/v0/incidents/${encodeURIComponent(id)}?format=${format}`,
              accept,
            );
            saveBlob(blob, `${id}.${ext}`);
            setResult(result, "ok", `Saved ${id}.${ext} (${blob.size} bytes).`);
          } catch (err) {
            // Refused 401 here only once the operator cancelled the token prompt it opened.
            setResult(
              result,
              "error",
              err instanceof ApiError && err.status === 401
                ? `Not downloaded: the token prompt was cancelled (${this.o.errorText(err)}). ` +
                  `Press Download ${format.toUpperCase()} again to enter the token.`
                : this.o.errorText(err),
            );
          }
        },
      });
    const chartBox = h("div", { class: "chart", "data-points": "0" });
    // Another load of this page may have drawn a chart since this one began (the units' reload
    // overlaps the first load, and both are shown when their answers come in order): the box
    // below replaces it, and a chart left undestroyed keeps its observer and plot alive.
    this.destroyChart();
    fill(
      box,
      h("p", {}, h("a", { href: "#incidents", text: "← All incidents" })),
      h("h3", { class: "incident-title", text: `${triggerName(inc.trigger)}: ${inc.cause}` }),
      facts([
        ["Incident", inc.incident_id],
        ["When", whenText(inc)],
        ["Cause", causeText(inc)],
        [
          "Devices",
          inc.scope === "machine" ? `all: ${inc.devices.join(", ")}` : inc.devices.join(", "),
        ],
        ["Window", windowFact(inc)],
        ["Recorded", recordedText(inc)],
      ]),
      h(
        "div",
        { class: "downloads" },
        download("csv", "text/csv", "csv"),
        download("jsonl", "application/jsonl", "jsonl"),
        result,
      ),
      chartBox,
      skipped.length > 0
        ? h("p", { class: "muted", text: `Not charted (not numbers): ${skipped.join(", ")}` })
        : null,
      lateList(late),
      gapList(series, inc.until_epoch_ms),
    );
    if (series.length > 0) {
      this.chart = new Chart(chartBox, series, {
        xRange: () => [inc.from_epoch_ms, inc.until_epoch_ms],
        mark: inc.at_epoch_ms,
        markLabel: markLabel(inc),
      });
      this.chart.update(inc.until_epoch_ms);
    } else {
      fill(chartBox, h("p", { class: "muted", text: "No numeric signal in this record." }));
    }
  }
}

/**
 * Where a signal's samples begin when the record says its history ring had let go of the start of
 * its window (its line's `from_epoch_ms`; docs/history.md): null when they cover the window.
 */
export function signalFrom(s) {
  return typeof s.from_epoch_ms === "number" ? s.from_epoch_ms : null;
}

/**
 * A late signal's start in words: its time, or that it has no sample (its `from_epoch_ms` is then
 * the window's end).
 */
export function signalFromText(from, none) {
  return none ? "no sample kept in the window" : `from ${new Date(from).toLocaleTimeString()}`;
}

/**
 * The signals whose samples begin after the window's start (charted or not), each with where
 * (signalFromText), or nothing.
 * @param {[string, string][]} late
 */
function lateList(late) {
  if (late.length === 0) return null;
  return h(
    "div",
    { class: "late-signals" },
    h("p", {
      class: "muted",
      text: "Samples begin after the window's start (the history ring had let go of their " +
        "earlier changes, or a retype or a unit change began their line):",
    }),
    h(
      "ul",
      { "aria-label": "Signals whose samples begin later" },
      ...late.map(([handle, text]) =>
        h("li", { "data-signal": handle, text: `${handle}: ${text}` })
      ),
    ),
  );
}

/**
 * The incidents by their time (the list's Time column: their lead's own), newest first; those of
 * one time in the API's order (the order recorded, newest first). The API lists them as recorded,
 * and a record is begun when its trigger is found: a device loss, dated from its first failed read
 * but found down 3 x polling.interval_ms later (3 minutes with a 1-minute poll), would list above
 * an alarm raised meanwhile, out of the order of the times the operator reads.
 */
export function byTime(list) {
  return [...list].sort((a, b) => triggerAt(b) - triggerAt(a));
}

/** Why a record is not whole (GET /v0/incidents `incomplete`; docs/history.md). */
const INCOMPLETE_WHY = {
  torn: "torn: its file ends early (a power cut while it was written)",
  damaged: "damaged: a signal line could not be read",
};

/** A record's `incomplete` in words, or null when it is whole. */
function incompleteText(i) {
  if (i.incomplete === null || i.incomplete === undefined) return null;
  return INCOMPLETE_WHY[i.incomplete] ?? String(i.incomplete);
}

/** An incident's samples in the list; a record that is not whole says so. */
export function samplesText(i) {
  const base = `${i.samples} (${i.signals} signals)`;
  return incompleteText(i) === null ? base : `${base}, incomplete (${i.incomplete})`;
}

/** What an incident's record holds, on its own page; one that is not whole says why. */
export function recordedText(i) {
  const why = incompleteText(i);
  const base = `${i.samples} samples of ${i.signals} signals`;
  return why === null ? base : `${base}; incomplete, ${why}: shown as far as it is readable`;
}

/**
 * Why a window starts after its trigger: the runtime clamps a record's window to what its history
 * ring still held when it was written (a device loss found long after its date; docs/history.md).
 */
const CLAMPED_NOTE = "clamped: the history ring had let go of its start";

/** Whole seconds from `a` to `b` (ms). */
function secondsBetween(a, b) {
  return Math.round((b - a) / 1000);
}

/**
 * What an incident's window is around (`at_epoch_ms`), after "after": nothing when it is its lead's
 * own time; the first trigger, named, when the lead joined later (a FAULT entry joining the loss
 * of a device, dated from its first failed read): the list shows the lead's time.
 */
function anchorText(i) {
  return triggerAt(i) === i.at_epoch_ms ? "" : ` the first trigger, ${markLabel(i)}`;
}

/** An incident's window in the list, against its trigger (the first one: anchorText). */
export function windowText(i) {
  const after = secondsBetween(i.at_epoch_ms, i.until_epoch_ms);
  if (i.from_epoch_ms > i.at_epoch_ms) {
    return `${secondsBetween(i.at_epoch_ms, i.from_epoch_ms)} s to ${after} s after${
      anchorText(i)
    } (${CLAMPED_NOTE})`;
  }
  return `${secondsBetween(i.from_epoch_ms, i.at_epoch_ms)} s before, ${after} s after` +
    anchorText(i);
}

/** An incident's window on its page, and where its chart marks the trigger. */
export function windowFact(i) {
  const span = `${formatTime(i.from_epoch_ms)} – ${formatTime(i.until_epoch_ms)}`;
  if (i.from_epoch_ms > i.at_epoch_ms) {
    // The chart spans the window only: a trigger before it has no line on it.
    const what = anchorText(i) === "" ? " the trigger" : `${anchorText(i)},`;
    return `${span} (starts ${secondsBetween(i.at_epoch_ms, i.from_epoch_ms)} s after${what} ` +
      `at ${formatTime(i.at_epoch_ms)}, which the chart does not reach; ${CLAMPED_NOTE})`;
  }
  const what = triggerAt(i) === i.at_epoch_ms
    ? "the trigger"
    : `the first trigger, ${markLabel(i)}`;
  return `${span} (the dashed line is ${what}: before it on the left, after it on the right)`;
}

/**
 * When its lead trigger happened (`trigger_at_epoch_ms`); a record of a version without it: when
 * the incident began (`at_epoch_ms`), which was its lead's time then.
 */
function triggerAt(i) {
  return typeof i.trigger_at_epoch_ms === "number" ? i.trigger_at_epoch_ms : i.at_epoch_ms;
}

/**
 * When an incident's lead happened, on its page; a lead that joined the incident later (an e-stop
 * after an alarm, within a second) says when the incident, and its window, began.
 */
export function whenText(i) {
  const at = triggerAt(i);
  if (at === i.at_epoch_ms) return formatTime(at);
  // Before it only across a step of the wall clock (triggers join by the monotonic clock).
  const apart = `${(Math.abs(at - i.at_epoch_ms) / 1000).toFixed(3)} s ${
    at > i.at_epoch_ms ? "after" : "before"
  }`;
  return `${formatTime(at)} (${apart} the incident began at ` +
    `${formatTime(i.at_epoch_ms)}: ${markLabel(i)}; its window is around that)`;
}

/**
 * What the chart's dashed line (at `at_epoch_ms`, where the window is anchored) is: the lead, or
 * the trigger that began the incident when a stronger one joined it later.
 */
export function markLabel(i) {
  if (triggerAt(i) === i.at_epoch_ms) return triggerName(i.trigger);
  const first = (i.also ?? []).find((a) => a.at_epoch_ms === i.at_epoch_ms);
  return first === undefined ? "Incident began" : triggerName(first.trigger);
}

/**
 * An incident's cause, with the triggers that joined it (one whose own time lies outside the
 * record's window, `outside_window`, says when: the chart does not reach it), and how many more
 * its record left out (`triggers_not_listed`: it lists at most 32 besides its lead; absent in
 * older records).
 */
export function causeText(i) {
  const also = (i.also ?? []).map((a) =>
    `${triggerName(a.trigger)}: ${a.cause}` +
    (a.outside_window === "before" || a.outside_window === "after"
      ? ` (at ${formatTime(a.at_epoch_ms)}, ${a.outside_window} the window)`
      : "")
  );
  const n = typeof i.triggers_not_listed === "number" ? i.triggers_not_listed : 0;
  if (n > 0) also.push(`${n} more trigger${n === 1 ? "" : "s"} not listed`);
  return also.length ? `${i.cause} (also ${also.join("; ")})` : i.cause;
}
