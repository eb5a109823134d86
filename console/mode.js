// Switch mode (the header): only the transitions the runtime allows from the current mode, and
// the runtime's answer or refusal as it words it.

import { byId, fill, h, setResult } from "./dom.js";

/** The mode transition table (docs/http-api.md "Modes and calls"). */
export const MODE_TRANSITIONS = {
  IDLE: ["MANUAL", "FAULT"],
  MANUAL: ["IDLE", "AUTO", "FAULT"],
  AUTO: ["MANUAL", "FAULT"],
  FAULT: ["MANUAL"],
};
/** What each mode means, as a tooltip. */
export const MODE_HINTS = {
  IDLE: "disarmed: actuating calls refused",
  MANUAL: "armed: operator calls run",
  AUTO: "the behavior tree runs",
  FAULT: "stopped: re-arm with MANUAL",
};

/** The mode buttons and the line under them. */
export class ModeSwitch {
  /**
   * @param {{
   *   api: {post: (path: string, body?: unknown) => Promise<any>},
   *   errorText: (err: unknown) => string,
   *   mode: () => string | undefined,
   *   automationEnabled: () => boolean | null,
   *   afterChange: () => Promise<void>,
   * }} options `mode`: the runtime's mode now; `automationEnabled`: AUTO is offered unless
   *   false; `afterChange`: re-reads the status after a switch
   */
  constructor(options) {
    this.api = options.api;
    this.errorText = options.errorText;
    this.mode = options.mode;
    this.automationEnabled = options.automationEnabled;
    this.afterChange = options.afterChange;
    /** The mode a "Mode X" result names; the result is cleared once the mode moves on. */
    this.resultFor = /** @type {string | null} */ (null);
    /**
     * The mode asked for when a listener superseded it (AUTO, FAULT forced on entering it): its
     * `mode_change` may come after the answer, and is no move on from the result.
     */
    this.supersededTarget = /** @type {string | null} */ (null);
  }

  /** The buttons for the transitions allowed from the current mode. */
  render() {
    const mode = this.mode();
    const targets = (MODE_TRANSITIONS[mode] ?? []).filter((m) =>
      m !== "AUTO" || this.automationEnabled() !== false
    );
    const key = `${mode}|${targets.join(",")}`;
    const box = byId("mode-buttons");
    if (box.dataset.key === key) return;
    box.dataset.key = key;
    fill(
      box,
      ...targets.map((target) =>
        h("button", {
          type: "button",
          class: `mode-button mode-${target}`,
          "data-mode": target,
          onclick: () => this.set(target),
          title: MODE_HINTS[target],
        }, `→ ${target}`)
      ),
    );
  }

  async set(target) {
    const out = byId("mode-result");
    this.resultFor = target;
    setResult(out, "pending", `Switching to ${target}…`);
    try {
      const r = await this.api.post("/v0/mode", { mode: target });
      const failures = r.hook_failures ?? [];
      const superseded = typeof r.superseded_by === "string" ? r.superseded_by : null;
      const why = typeof r.superseded_reason === "string" ? `: ${r.superseded_reason}` : "";
      this.resultFor = r.mode;
      this.supersededTarget = superseded === null ? null : target;
      setResult(
        out,
        failures.length || superseded !== null ? "warn" : "ok",
        `Mode ${r.mode}` +
          (superseded === null ? "" : `: ${target} asked; superseded by ${superseded}${why}`) +
          (failures.length
            ? `; ${failures.length} hook call(s) failed: ${
              failures.map((f) => `${f.device_handle} ${f.function}: ${f.error}`).join("; ")
            }`
            : ""),
      );
    } catch (err) {
      setResult(out, "error", this.errorText(err));
    }
    await this.afterChange();
  }

  /** Clears the line under the buttons (an e-stop was sent). */
  clearResult() {
    this.resultFor = null;
    this.supersededTarget = null;
    setResult(byId("mode-result"), "", "");
  }

  /** A `mode_change` event: a "Mode X" result is old news once the mode moves on. */
  onModeChange(newMode) {
    // The superseded mode's own event (AUTO) may come after the answer: passed through, not new.
    if (newMode === this.supersededTarget) {
      this.supersededTarget = null;
      return;
    }
    if (this.resultFor !== null && newMode !== this.resultFor) this.clearResult();
  }
}
