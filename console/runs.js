// The Runs view: open a run (optional label), add a marker (type and an optional JSON payload),
// close it with a reason; the most recent runs and the events of any of them.

import { byId, fill, formatTime, h, setResult, table } from "./dom.js";
import { field, readArg } from "./forms.js";
import { LatestRead, OVERTAKEN } from "./latest_read.js";

/** Runs listed in the Runs view, and events shown per run. */
export const RUNS_LISTED = 20;
export const RUN_EVENTS_LISTED = 50;

const CLOSE_REASONS = ["operator_stop", "completed", "failed", "superseded"];

/** The Runs view. */
export class RunsView {
  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>, post: (path: string, body?: unknown) => Promise<any>},
   *   errorText: (err: unknown) => string,
   * }} options
   */
  constructor(options) {
    this.api = options.api;
    this.errorText = options.errorText;
    /** The open run the run forms were built for ("" none); null before the first build. */
    this.formsFor = /** @type {string | null} */ (null);
    this.built = false;
    /** The list shown (re-rendered when it changes). */
    this.runsKey = "";
    /** The run whose events are shown (null: none), and those events as shown. */
    this.eventsFor = /** @type {string | null} */ (null);
    this.eventsKey = "";
  }

  /** Reads of the events shown (an older answer, maybe of the run shown before, is dropped). */
  eventReads = new LatestRead();

  /** Reads of the run list (a slower, older answer is dropped). */
  reads = new LatestRead();

  /** Re-reads the run list and the events shown (the page's refresh, while the view is shown). */
  async load() {
    await Promise.all([this.loadList(), this.loadEvents()]);
  }

  async loadList() {
    let r;
    try {
      r = await this.reads.read(() => this.api.get(`/v0/runs?limit=${RUNS_LISTED}`));
      if (r === OVERTAKEN) return;
    } catch (err) {
      // The list gives way to the error; the forms stay, with what is being typed in them (a
      // runtime restarting fails a read or two).
      this.runsKey = "";
      this.build();
      fill(byId("runs-list"), h("p", { class: "error", text: this.errorText(err) }));
      return;
    }
    const runs = r.runs ?? [];
    const runsKey = JSON.stringify(runs);
    if (runsKey === this.runsKey) return;
    this.runsKey = runsKey;
    this.build();
    const open = runs.find((x) => x.state === "open") ?? null;
    if ((open?.run_id ?? "") !== this.formsFor) {
      this.formsFor = open?.run_id ?? "";
      this.renderForms(open);
    }
    const list = byId("runs-list");
    fill(
      list,
      runs.length
        ? table(
          "Recent runs (newest first)",
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
        : h("p", { class: "muted", text: "No runs yet." }),
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
      await this.load();
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
   * Shows the events of `runId` and keeps them current: the page's refresh re-reads them (load)
   * while the view is shown, so a marker another client adds, or a run's later events, appear.
   */
  async showEvents(runId) {
    this.eventsFor = runId;
    this.eventsKey = "";
    await this.loadEvents();
  }

  /** Re-reads the events of the run shown (none shown: nothing to read). */
  async loadEvents() {
    const runId = this.eventsFor;
    if (runId === null) return;
    const box = byId("run-events");
    let r;
    try {
      r = await this.eventReads.read(() =>
        this.api.get(`/v0/runs/${encodeURIComponent(runId)}/events?limit=${RUN_EVENTS_LISTED}`)
      );
      if (r === OVERTAKEN) return;
    } catch (err) {
      // The table gives way to the error, in the runtime's words; the next refresh reads again.
      this.eventsKey = "";
      fill(box, h("p", { class: "error", text: this.errorText(err) }));
      return;
    }
    const events = r.events ?? [];
    const eventsKey = JSON.stringify([runId, events]);
    if (eventsKey === this.eventsKey) return;
    this.eventsKey = eventsKey;
    fill(
      box,
      table(
        `Events of ${runId} (first ${RUN_EVENTS_LISTED})`,
        ["#", "Category", "Type", "When", "Payload"],
        events.map((e) => [
          String(e.sequence),
          e.category,
          e.type || "—",
          formatTime(e.occurred_at_epoch_ms),
          JSON.stringify(e.payload),
        ]),
      ),
    );
  }
}
