// The e-stop (the header): the large button latches at once (no confirmation: a stop must never
// wait for one) and shows the runtime's answer, what was achieved and what was attempted, and
// once its latch is released (here or by another client), says so; "Release latch…" asks for a
// confirmation; while latched, what latched it.

import { badge, byId, fill, formatValue, h, setResult, setText, table, withUnit } from "./dom.js";

/** The line a release from this page leaves under the mode buttons. */
export const RELEASED_LINE =
  "E-stop latch released. The mode stays FAULT: switch to MANUAL to re-arm.";

/**
 * A read-back check's expectation (`{equals}` or `{min?, max?}`) as an operator reads it, with the
 * signal's unit where it is a number: `= 0 rpm`, `= false`, `= "closed"`, `10 to 20 degC`,
 * `\u2265 10 degC`, `\u2264 20 degC`. Bounds are written exactly as configured (not rounded as
 * observed values are): they are the thresholds the stop judged by.
 * @param {any} e
 * @param {string | undefined} unit
 */
export function expectedText(e, unit) {
  if (e === null || typeof e !== "object") return "\u2014";
  if ("equals" in e) {
    const v = e.equals;
    if (typeof v === "number") return withUnit(`= ${String(v)}`, unit);
    return typeof v === "string" ? `= ${JSON.stringify(v)}` : `= ${String(v)}`;
  }
  const min = typeof e.min === "number" ? String(e.min) : null;
  const max = typeof e.max === "number" ? String(e.max) : null;
  if (min !== null && max !== null) return withUnit(`${min} to ${max}`, unit);
  if (min !== null) return withUnit(`\u2265 ${min}`, unit);
  if (max !== null) return withUnit(`\u2264 ${max}`, unit);
  return "\u2014";
}

/** The e-stop button, its answer, the release dialog and the latch's cause. */
export class EstopPanel {
  /**
   * @param {{
   *   api: {post: (path: string, body?: unknown) => Promise<any>},
   *   errorText: (err: unknown) => string,
   *   machine: {status: any, started: number, shown: number},
   *   alarm: (id: string) => any,
   *   afterChange: () => Promise<void>,
   *   clearModeResult: () => void,
   *   unitOf?: (handle: string) => string,
   * }} options `machine`: GET /v0/runtime/status as last read, with the count of reads started
   *   and the number of the one shown (MachineStatus); `alarm`: the alarm with this id (the
   *   cause of a latch may name one); `afterChange`: re-reads the status after an action;
   *   `unitOf`: a `provider/device/signal` handle's unit ("" when it declares none)
   */
  constructor(options) {
    this.api = options.api;
    this.errorText = options.errorText;
    this.machine = options.machine;
    this.alarm = options.alarm;
    this.afterChange = options.afterChange;
    this.clearModeResult = options.clearModeResult;
    this.unitOf = options.unitOf ?? (() => "");
    /**
     * The answer shown that latched, until its latch is seen released: the status reads started
     * before it arrived and the stream's latch events seen before it was sent (older news,
     * ignored), and the word the answer's summary starts with.
     * @type {{readsBefore: number, latchEventsBefore: number, word: HTMLElement} | null}
     */
    this.latchedAnswer = null;
    /**
     * The stream's `estop_change` events with latched true seen so far: every trigger publishes
     * one as it latches, so a release the stream delivers before the one of a trigger this page
     * sent happened before that trigger.
     */
    this.latchEvents = 0;
    /**
     * The release line shown under the mode buttons (confirmClear), until it no longer holds: the
     * status reads started before its answer arrived (older news, ignored).
     * @type {{readsBefore: number} | null}
     */
    this.releaseLine = null;
  }

  /** The runtime status as last read. */
  status() {
    return this.machine.status;
  }

  /** Wires the buttons and the release dialog of index.html. */
  bind() {
    byId("estop").addEventListener("click", () => this.trigger());
    byId("estop-clear").addEventListener("click", () => this.openClearDialog());
    byId("estop-result-hide").addEventListener("click", () => {
      byId("estop-result").hidden = true;
      byId("estop").focus();
    });
    byId("clear-cancel").addEventListener("click", () => {
      /** @type {HTMLDialogElement} */ (byId("clear-dialog")).close();
      byId("estop-clear").focus();
    });
    byId("clear-confirm").addEventListener("click", () => this.confirmClear());
  }

  /**
   * Follows the runtime status: the release button while latched, the latch's cause, and
   * whether the answer shown still holds its latch.
   */
  render() {
    byId("estop-clear").hidden = this.status()?.estop?.latched !== true;
    this.renderCause();
    this.renderLost();
    this.renderReleased();
    this.renderReleaseLine();
  }

  /**
   * The release line goes once a status read that started after the release answered shows the
   * latch engaged again (another client's e-stop, an alarm's) or the mode moved on from FAULT
   * (re-armed by another client): it would tell the operator the opposite of the header. Left as
   * it is when the line under the buttons says something else by then (a mode switch's answer).
   */
  renderReleaseLine() {
    const r = this.releaseLine;
    const s = this.status();
    if (r === null || !s || this.machine.shown <= r.readsBefore) return;
    if (s.estop?.latched !== true && s.mode === "FAULT") return;
    this.releaseLine = null;
    if (byId("mode-result").textContent === RELEASED_LINE) this.clearModeResult();
  }

  /**
   * While latched: the devices the stop's read-back checked that cannot be read now (status
   * `estop.verification`, each check's `device_available`): a `verified` outcome says what was
   * read back then, not that the device still holds its safe state.
   */
  renderLost() {
    const e = this.status()?.estop;
    const el = byId("estop-lost");
    /** @type {Map<string, string>} device handle -> why it cannot be read now */
    const lost = new Map();
    if (e?.latched === true) {
      for (const c of e.verification?.checks ?? []) {
        if (c?.device_available !== false || typeof c.signal !== "string") continue;
        const device = c.signal.slice(0, c.signal.lastIndexOf("/"));
        if (!lost.has(device)) lost.set(device, c.device_unavailable_reason ?? "unavailable");
      }
    }
    const key = JSON.stringify([...lost]);
    el.hidden = lost.size === 0;
    if (el.dataset.key === key) return;
    el.dataset.key = key;
    fill(
      el,
      `Read back at the stop, not readable now (${lost.size}): `,
      ...[...lost].flatMap(([device, why], i) => [
        i === 0 ? "" : "; ",
        h("strong", { "data-lost": device, text: device }),
        ` (${why})`,
      ]),
    );
  }

  /**
   * The answer shown says "Latch released." once a status read that started after it arrived
   * shows the latch released. Not from `latched_at_epoch_ms`: a trigger while latched refreshes
   * it (the anolis contract), and that is no release; a release and a new latch between two reads
   * is told by the stream's `estop_change` (onReleased).
   */
  renderReleased() {
    const a = this.latchedAnswer;
    const e = this.status()?.estop;
    if (a === null || e === undefined || this.machine.shown <= a.readsBefore) return;
    if (e.latched !== true) this.released();
  }

  /** The stream's `estop_change` with latched true (a trigger, here or by another client). */
  onLatched() {
    this.latchEvents++;
  }

  /**
   * The stream's `estop_change` with latched false. A release the stream delivers before the
   * latch event of the trigger whose answer is shown happened before that trigger (its answer can
   * arrive first): it releases an older latch, not this one.
   */
  onReleased() {
    const a = this.latchedAnswer;
    if (a === null || this.latchEvents <= a.latchEventsBefore) return;
    this.released();
  }

  /** The latch of the answer shown was released: the answer says so. */
  released() {
    const a = this.latchedAnswer;
    if (a === null) return;
    this.latchedAnswer = null;
    setText(a.word, "Latch released. ");
    byId("estop-result").classList.add("released");
  }

  /** While latched: what latched it (`api`, or `alarm:<id>` with the alarm's message). */
  renderCause() {
    const e = this.status()?.estop;
    const el = byId("estop-cause");
    const cause = e?.latched === true && typeof e.cause === "string" ? e.cause : "";
    // An alarm a reload took out since the latch (`cause_alarm_retired`) is not the one listed
    // under its id now, if any: neither linked nor described by it.
    const retired = e?.latched === true && typeof e.cause_alarm_retired === "string"
      ? e.cause_alarm_retired
      : "";
    const alarm = cause.startsWith("alarm:") && retired === ""
      ? this.alarm(cause.slice(6))
      : undefined;
    const key = `${cause}|${retired}|${alarm?.message ?? ""}`;
    el.hidden = cause === "";
    if (el.dataset.key === key) return;
    el.dataset.key = key;
    fill(
      el,
      "Cause: ",
      cause.startsWith("alarm:") && retired === ""
        ? h("a", { href: "#alarms", "data-cause": cause, text: cause })
        : h("strong", { "data-cause": cause, text: cause }),
      retired !== ""
        ? ` — that alarm was ${retired} by a configuration reload since it latched the e-stop`
        : alarm?.message
        ? ` — ${alarm.message}`
        : cause === "api"
        ? " — an e-stop request (POST /v0/estop: this page or another client)"
        : "",
    );
  }

  /** Latches the e-stop at once. */
  async trigger() {
    const section = byId("estop-result");
    const body = byId("estop-result-body");
    section.hidden = false;
    section.className = "estop-result pending";
    this.latchedAnswer = null;
    this.releaseLine = null;
    this.clearModeResult();
    fill(body, h("p", { role: "status", text: "E-stop sent…" }));
    // Counted before it is sent: its own latch event is the first that can come after.
    const latchEventsBefore = this.latchEvents;
    try {
      const r = await this.api.post("/v0/estop", { reason: "operator console" });
      this.renderResult(r, latchEventsBefore);
    } catch (err) {
      section.className = "estop-result failed";
      fill(
        body,
        h("p", { class: "error", role: "alert" }, `The e-stop request failed: ${err}`),
        h("p", {
          class: "error",
          text: "The machine may still be running: use the hardware emergency stop.",
        }),
      );
    }
    await this.afterChange();
  }

  /**
   * Shows a trigger's answer. `latchEventsBefore`: the stream's latch events seen when it was
   * sent (onReleased).
   */
  renderResult(r, latchEventsBefore) {
    const section = byId("estop-result");
    const v = r.verification;
    const outcome = v?.outcome ?? "unverifiable";
    section.className = `estop-result estop-${outcome}`;
    const failed = (r.actions ?? []).filter((a) => !a.success).length;
    const word = h("strong", { text: r.latched ? "Latched. " : "Not latched. " });
    this.latchedAnswer = r.latched
      ? { readsBefore: this.machine.started, latchEventsBefore, word }
      : null;
    const children = [
      h(
        "p",
        { class: "estop-summary", role: "status" },
        word,
        `Mode ${r.fault_engaged ? "FAULT" : "unchanged"}. Safe state read back: `,
        h("span", { class: `badge outcome-${outcome}`, "data-outcome": outcome, text: outcome }),
        v ? ` (${v.elapsed_ms} ms)` : "",
        `. Rung ${r.software_safe_state}: ${(r.actions ?? []).length} call(s), ${failed} failed.`,
      ),
    ];
    if (r.warning) children.push(h("p", { class: "warn", text: r.warning }));
    if (v?.checks?.length) {
      children.push(
        table(
          "What was achieved (fresh read-back)",
          ["Signal", "Expected", "Observed", "Quality", "Outcome"],
          v.checks.map((c) => [
            c.signal,
            expectedText(c.expected, this.unitOf(c.signal)),
            withUnit(formatValue(c.observed), this.unitOf(c.signal)),
            c.quality ?? "—",
            badge(c.outcome + (c.reason ? ` — ${c.reason}` : ""), `outcome-${c.outcome}`),
          ]),
          "estop-checks",
        ),
      );
    }
    children.push(
      table(
        "What was attempted",
        ["Device", "Function", "Result"],
        (r.actions ?? []).map((a) => [
          a.device_handle,
          a.function,
          a.success ? badge("ok", "q-OK") : badge(`failed: ${a.error}`, "q-FAULT"),
        ]),
        "estop-actions",
      ),
    );
    if (r.hook_failures?.length) {
      children.push(
        h("p", { class: "warn" }, `${r.hook_failures.length} FAULT hook call(s) failed:`),
        h(
          "ul",
          {},
          ...r.hook_failures.map((f) =>
            h("li", { text: `${f.device_handle} ${f.function}: ${f.error}` })
          ),
        ),
      );
    }
    if (r.hooks_pending) {
      children.push(
        h("p", {
          class: "warn",
          text:
            "FAULT hook calls were still running when the e-stop answered (re-arming waits for them)",
        }),
      );
    }
    if (r.drain && !r.drain.complete) {
      children.push(
        h("p", {
          class: "warn",
          text: `Calls still in flight at: ${r.drain.pending_providers.join(", ")}`,
        }),
      );
    }
    if (r.uncovered?.length) {
      children.push(
        h(
          "details",
          {},
          h("summary", {
            text: `${r.uncovered_actuating_functions} actuating function(s) left untouched`,
          }),
          h(
            "ul",
            {},
            ...r.uncovered.map((u) => h("li", { text: `${u.device_handle} ${u.function}` })),
          ),
        ),
      );
    }
    fill(byId("estop-result-body"), ...children);
  }

  openClearDialog() {
    const dialog = /** @type {HTMLDialogElement} */ (byId("clear-dialog"));
    dialog.showModal();
    byId("clear-cancel").focus();
  }

  async confirmClear() {
    const dialog = /** @type {HTMLDialogElement} */ (byId("clear-dialog"));
    dialog.close();
    const out = byId("mode-result");
    this.releaseLine = null;
    try {
      await this.api.post("/v0/estop/clear");
      setResult(out, "ok", RELEASED_LINE);
      this.releaseLine = { readsBefore: this.machine.started };
    } catch (err) {
      setResult(out, "error", this.errorText(err));
    }
    await this.afterChange();
    byId("estop").focus();
  }
}
