// The Runs view: open a run (optional label), add a marker (type and an optional JSON payload),
// close it with a reason; the runs, newest first, in pages (Older, Newer, Newest), and the events
// of any of them.

import { byId, fill, formatTime, h, setResult, table } from "./dom.js";
import { field, readArg } from "./forms.js";
import { LatestRead, OVERTAKEN } from "./latest_read.js";

/** Runs listed per page of the Runs view, and events shown per page of a run's events. */
export const RUNS_LISTED = 20;
export const RUN_EVENTS_LISTED = 50;
/**
 * Most one-event reads that finding a run's latest page ("Latest") makes: a gallop then a
 * bisection over sequence numbers, at most about 2 x 53 for any run (sequences are below 2^53).
 */
export const RUN_EVENTS_PROBES_MAX = 128;

const CLOSE_REASONS = ["operator_stop", "completed", "failed", "superseded"];

/** The Runs view. */
export class RunsView {
  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>, post: (path: string, body?: unknown) => Promise<any>},
   *   errorText: (err: unknown) => string,
   *   onReadFailed?: (err: unknown) => void,
   * }} options `onReadFailed` is told when a read the view made by itself (a "Show", a page
   *   button, the re-read after an action) failed: the page's header says so, as for any view.
   */
  constructor(options) {
    this.api = options.api;
    this.errorText = options.errorText;
    this.onReadFailed = options.onReadFailed ?? (() => {});
    /** The open run the run forms were built for ("" none); null before the first build. */
    this.formsFor = /** @type {string | null} */ (null);
    this.built = false;
    /** The list shown (re-rendered when it changes). */
    this.runsKey = "";
    /**
     * The pages of runs gone through with Older, as their cursors: the last run of the page before
     * each (`before=`); empty on the newest page. Newer steps back one, Newest empties it.
     */
    this.runsBefore = /** @type {string[]} */ ([]);
    /** The run whose events are shown (null: none), and those events as shown. */
    this.eventsFor = /** @type {string | null} */ (null);
    this.eventsKey = "";
    /** The page shown: its events have sequences above this cursor (after_sequence). */
    this.eventsAfter = 0;
    /** Whether the page shown follows the run's latest events (the "Latest" button). */
    this.eventsLatest = false;
  }

  /** Reads of the events shown (an older answer, maybe of the run shown before, is dropped). */
  eventReads = new LatestRead();

  /** Reads of the run list (a slower, older answer is dropped). */
  reads = new LatestRead();

  /**
   * Re-reads the run list and the events shown (the page's refresh, while the view is shown).
   * A failed read is shown in place and thrown, so the page's header says so (Refresh failed).
   */
  async load() {
    const results = await Promise.allSettled([this.loadList(), this.loadEvents()]);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  async loadList() {
    let r;
    const before = this.runsBefore.at(-1);
    try {
      r = await this.reads.read(async () => {
        // One more than shown: whether there are older runs. The open run (the newest, as no run
        // opens while one is open) gives the forms, read apart on an older page.
        const page = await this.api.get(
          `/v0/runs?limit=${RUNS_LISTED + 1}` +
            (before === undefined ? "" : `&before=${encodeURIComponent(before)}`),
        );
        const newest = before === undefined ? page : await this.api.get("/v0/runs?limit=1");
        return { page, newest };
      });
      if (r === OVERTAKEN) return;
    } catch (err) {
      // The list gives way to the error; the forms stay, with what is being typed in them (a
      // runtime restarting fails a read or two).
      this.runsKey = "";
      this.build();
      fill(byId("runs-list"), h("p", { class: "error", text: this.errorText(err) }));
      throw err;
    }
    const all = r.page.runs ?? [];
    const runs = all.slice(0, RUNS_LISTED);
    const older = all.length > RUNS_LISTED;
    const open = (r.newest.runs ?? []).find((x) => x.state === "open") ?? null;
    const runsKey = JSON.stringify([before ?? null, older, runs, open?.run_id ?? ""]);
    if (runsKey === this.runsKey) return;
    this.runsKey = runsKey;
    this.build();
    if ((open?.run_id ?? "") !== this.formsFor) {
      this.formsFor = open?.run_id ?? "";
      this.renderForms(open);
    }
    const page = (cursors) => () => {
      this.runsBefore = cursors;
      this.runsKey = "";
      this.loadList().catch((err) => this.onReadFailed(err));
    };
    const button = (label, aria, disabled, onclick) =>
      h("button", { type: "button", class: "small", "aria-label": aria, disabled, onclick }, label);
    const newestPage = before === undefined;
    fill(
      byId("runs-list"),
      runs.length
        ? table(
          newestPage
            ? `Recent runs (newest first)${older ? ", older after" : ""}`
            : `Older runs (newest first), before ${before}${older ? ", older after" : ""}`,
          ["Run", "Label", "State", "Started", "Ended", "Events"],
          runs.map((x) => [
            x.run_id,
            x.experiment_label ?? "—",
            x.state + (x.close_reason ? ` (${x.close_reason})` : ""),
            formatTime(x.started_at_epoch_ms),
            formatTime(x.ended_at_epoch_ms),
            h("button", {
              type: "button",
              class: "small",
              "aria-label": `Show the events of ${x.run_id}`,
              onclick: () => this.showEvents(x.run_id),
            }, "Show"),
          ]),
          "runs-table",
        )
        : h("p", { class: "muted", text: newestPage ? "No runs yet." : "No older runs." }),
      newestPage && !older ? null : h(
        "div",
        { class: "fn-actions run-list-pages" },
        button("Newest", "Newest runs", newestPage, page([])),
        button("Newer", "Newer runs", newestPage, page(this.runsBefore.slice(0, -1))),
        button(
          "Older",
          "Older runs",
          !older,
          page([...this.runsBefore, runs[runs.length - 1]?.run_id ?? ""]),
        ),
      ),
    );
  }

  /** The view's parts, once: the run forms, the last action's answer, the list and events. */
  build() {
    if (this.built) return;
    this.built = true;
    fill(
      byId("runs"),
      h("div", { id: "run-forms" }),
      h("p", { id: "runs-result", class: "result", role: "status" }),
      h("div", { id: "runs-list" }),
      h("div", { id: "run-events" }),
    );
  }

  renderForms(open) {
    const result = byId("runs-result");
    const act = async (what, fn) => {
      setResult(result, "pending", `${what}…`);
      try {
        setResult(result, "ok", await fn());
      } catch (err) {
        setResult(result, "error", this.errorText(err));
      }
      this.runsKey = "";
      await this.load().catch((err) => this.onReadFailed(err));
    };
    let forms;
    if (open === null) {
      const label = field("run-label", "Experiment label", { type: "string", required: false });
      forms = h(
        "form",
        {
          class: "card",
          novalidate: true,
          onsubmit: (e) => {
            e.preventDefault();
            const text = String(label.read()).trim();
            act("Opening", async () => {
              const r = await this.api.post("/v0/runs", text ? { experiment_label: text } : {});
              return `Run ${r.run.run_id} opened.`;
            });
          },
        },
        h("h3", { text: "Open a run" }),
        label.row,
        h("div", { class: "fn-actions" }, h("button", { type: "submit" }, "Open run")),
      );
    } else {
      const id = open.run_id;
      const path = `/v0/runs/${encodeURIComponent(id)}`;
      const type = field("marker-type", "Marker type", { type: "string", required: true });
      const payload = field("marker-payload", "Payload (JSON object)", {
        type: "string",
        required: false,
      });
      const reason = field("close-reason", "Close reason", {
        type: "string",
        required: true,
        allowed_values: CLOSE_REASONS,
      }, "operator_stop");
      forms = h(
        "div",
        { class: "run-forms" },
        h(
          "p",
          {},
          "Open run: ",
          h("strong", { "data-open-run": id, text: id }),
          ` (${open.experiment_label ?? "no label"})`,
        ),
        h(
          "form",
          {
            class: "card",
            novalidate: true,
            onsubmit: (e) => {
              e.preventDefault();
              const t = String(type.read()).trim();
              // Characters are code points, as the runtime counts them (an emoji is one).
              const long = [...t].length > 256;
              type.setError(
                t === ""
                  ? "Marker type: is required"
                  : long
                  ? "Marker type: at most 256 characters"
                  : "",
              );
              let body = { type: t };
              const raw = String(payload.read()).trim();
              payload.setError("");
              if (raw !== "") {
                let parsed;
                try {
                  parsed = JSON.parse(raw);
                } catch (err) {
                  payload.setError(
                    `Payload: not JSON (${err instanceof Error ? err.message : err})`,
                  );
                  return;
                }
                if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
                  payload.setError('Payload: must be a JSON object, e.g. {"valve": "v1"}');
                  return;
                }
                body = { ...body, payload: parsed };
              }
              if (t === "" || long) return;
              act("Adding marker", async () => {
                const r = await this.api.post(`${path}/events`, body);
                return `Marker ${r.event.type} recorded as event ${r.event.sequence}.`;
              });
            },
          },
          h("h3", { text: "Add a marker" }),
          type.row,
          payload.row,
          h("div", { class: "fn-actions" }, h("button", { type: "submit" }, "Add marker")),
        ),
        h(
          "form",
          {
            class: "card",
            novalidate: true,
            onsubmit: (e) => {
              e.preventDefault();
              const r = readArg("Close reason", {
                type: "string",
                required: true,
                allowed_values: CLOSE_REASONS,
              }, reason.read());
              reason.setError("error" in r ? r.error : "");
              if (!("value" in r)) return;
              act("Closing", async () => {
                const a = await this.api.post(`${path}/close`, { close_reason: r.value.string });
                return `Run ${a.run.run_id} closed (${a.run.close_reason}).`;
              });
            },
          },
          h("h3", { text: "Close the run" }),
          reason.row,
          h("div", { class: "fn-actions" }, h("button", { type: "submit" }, "Close run")),
        ),
      );
    }
    fill(byId("run-forms"), forms);
  }

  /**
   * Shows the events of `runId` from its first and keeps them current: the page's refresh re-reads
   * the page shown (load) while the view is shown, so a marker another client adds, or a run's
   * later events, appear. The page buttons reach every event of the run, however long.
   */
  async showEvents(runId) {
    await this.showPage(runId, 0, false);
  }

  /** Shows the page of `runId` after sequence `after` (latest: the run's last page, followed). */
  async showPage(runId, after, latest) {
    this.eventsFor = runId;
    this.eventsAfter = after;
    this.eventsLatest = latest;
    this.eventsKey = "";
    await this.loadEvents().catch((err) => this.onReadFailed(err));
  }

  /**
   * Reads one page of `runId`'s events: RUN_EVENTS_LISTED after sequence `after`, and whether
   * more follow (one more is asked for). `latest`: when more follow, the run's last page instead.
   */
  async readPage(runId, after, latest) {
    const path = `/v0/runs/${encodeURIComponent(runId)}/events`;
    let probes = 0;
    /** The events after sequence `a`, at most `limit`. */
    const get = async (a, limit) => {
      const r = await this.api.get(`${path}?after_sequence=${a}&limit=${limit}`);
      return r.events ?? [];
    };
    /** The sequence of the first event after `a`, or null when none is. */
    const next = async (a) => {
      if (++probes > RUN_EVENTS_PROBES_MAX) {
        throw new Error(
          `The latest events of ${runId} not found within ${RUN_EVENTS_PROBES_MAX} reads`,
        );
      }
      const [e] = await get(Math.min(a, Number.MAX_SAFE_INTEGER), 1);
      return e === undefined ? null : e.sequence;
    };
    let events = await get(after, RUN_EVENTS_LISTED + 1);
    if (latest && events.length > RUN_EVENTS_LISTED) {
      // The last sequence: gallop from the last event read until nothing follows, then bisect.
      let lo = events[events.length - 1].sequence;
      let hi = 0;
      for (let step = RUN_EVENTS_LISTED;; step *= 2) {
        const probe = Math.min(lo + step, Number.MAX_SAFE_INTEGER);
        const found = await next(probe);
        if (found === null) {
          hi = probe;
          break;
        }
        lo = found;
      }
      while (hi > lo) {
        const mid = Math.floor((lo + hi) / 2);
        const found = await next(mid);
        if (found === null) hi = mid;
        else lo = found;
      }
      after = Math.max(0, lo - RUN_EVENTS_LISTED);
      events = await get(after, RUN_EVENTS_LISTED + 1);
    }
    return {
      after,
      events: events.slice(0, RUN_EVENTS_LISTED),
      more: events.length > RUN_EVENTS_LISTED,
    };
  }

  /**
   * Re-reads the page of events shown (none shown: nothing to read). A failed read is shown in
   * place of the table and thrown.
   */
  async loadEvents() {
    const runId = this.eventsFor;
    if (runId === null) return;
    const box = byId("run-events");
    let r;
    try {
      r = await this.eventReads.read(() =>
        this.readPage(runId, this.eventsAfter, this.eventsLatest)
      );
      if (r === OVERTAKEN) return;
    } catch (err) {
      // The table gives way to the error, in the runtime's words; the next refresh reads again.
      this.eventsKey = "";
      fill(box, h("p", { class: "error", text: this.errorText(err) }));
      throw err;
    }
    const { after, events, more } = r;
    this.eventsAfter = after;
    const eventsKey = JSON.stringify([runId, after, more, events]);
    if (eventsKey === this.eventsKey) return;
    this.eventsKey = eventsKey;
    const first = events[0]?.sequence;
    const last = events[events.length - 1]?.sequence;
    const shown = events.length ? `events ${first} to ${last}` : "no events here";
    const button = (label, aria, disabled, onclick) =>
      h("button", { type: "button", class: "small", "aria-label": aria, disabled, onclick }, label);
    fill(
      box,
      table(
        `Events of ${runId}: ${shown}${more ? ", more after" : ""}`,
        ["#", "Category", "Type", "When", "Payload"],
        events.map((e) => [
          String(e.sequence),
          e.category,
          e.type || "—",
          formatTime(e.occurred_at_epoch_ms),
          JSON.stringify(e.payload),
        ]),
      ),
      h(
        "div",
        { class: "fn-actions run-pages" },
        button("First", "First events", after === 0, () => this.showPage(runId, 0, false)),
        button(
          "Earlier",
          "Earlier events",
          after === 0,
          () =>
            this.showPage(runId, Math.max(0, (first ?? after + 1) - 1 - RUN_EVENTS_LISTED), false),
        ),
        button("Later", "Later events", !more, () => this.showPage(runId, last ?? after, false)),
        button("Latest", "Latest events", !more, () => this.showPage(runId, after, true)),
      ),
    );
  }
}
