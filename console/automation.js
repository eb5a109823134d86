// The Automation view: execution status and reason, tick counts, errors, last error, device-loss
// latches, and the loaded behavior tree as an indented outline.

import { ApiError } from "./api.js";
import { byId, facts, fill, formatTime, h } from "./dom.js";

/** The Automation view; it also learns whether automation is enabled (AUTO is offered then). */
export class AutomationView {
  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>},
   *   onEnabled: () => void,
   * }} options `onEnabled` runs after each read (`enabled` may have changed)
   */
  constructor(options) {
    this.api = options.api;
    this.onEnabled = options.onEnabled;
    /** null until known: whether /v0/automation answers (AUTO is offered only then). */
    this.enabled = /** @type {boolean | null} */ (null);
    this.treeShown = false;
  }

  /** Re-reads the status (and the tree when `withTree`, or when none is shown yet). */
  async load(withTree) {
    let s;
    try {
      s = await this.api.get("/v0/automation/status");
      this.enabled = true;
    } catch (err) {
      if (err instanceof ApiError && err.status === 503) this.enabled = false;
      fill(byId("automation-status"), h("p", { class: "muted", text: String(err) }));
      fill(byId("automation-tree"));
      this.onEnabled();
      return;
    }
    this.onEnabled();
    const d = s.engine_diagnostics ?? {};
    fill(
      byId("automation-status"),
      facts([
        ["Execution", `${s.execution_status} (${s.execution_reason})`],
        [
          "Tree",
          s.automation_version
            ? `${s.automation_version.id} · ${s.automation_version.digest.slice(0, 12)}`
            : "—",
        ],
        ["Ticks", `${d.total_ticks} total, ${d.ticks_since_progress} since progress`],
        ["Errors", String(d.error_count)],
        ["Stall suspected", d.stall_suspected ? "yes" : "no"],
        ["Running node", d.current_running_node ?? "—"],
        ["Last tick", d.last_tick_status ?? "—"],
        ["Last evaluation", formatTime(s.last_evaluation_at_epoch_ms)],
        ["Last error", s.last_error ?? "none"],
        ["Open run", s.run_id ?? "—"],
        [
          "Device-loss latched",
          (s.device_loss_latched ?? []).length ? s.device_loss_latched.join(", ") : "none",
        ],
        [
          "Device outages",
          (s.device_outages ?? []).length ? JSON.stringify(s.device_outages) : "none",
        ],
      ]),
    );
    if (withTree || !this.treeShown) {
      try {
        const t = await this.api.get("/v0/automation/tree");
        fill(byId("automation-tree"), treeOutline(t.tree));
        this.treeShown = true;
      } catch (err) {
        fill(byId("automation-tree"), h("p", { class: "muted", text: String(err) }));
      }
    }
  }
}

/** The behavior tree XML as an indented outline: node type, then its attributes. */
function treeOutline(xml) {
  const doc = new DOMParser().parseFromString(xml, "application/xml");
  if (doc.querySelector("parsererror")) return h("pre", { text: xml });
  const node = (el) => {
    const attrs = [...el.attributes].map((a) => `${a.name}="${a.value}"`).join(" ");
    const kids = [...el.children];
    return h(
      "li",
      {},
      h("span", { class: "node", text: el.tagName }),
      attrs ? h("span", { class: "attrs", text: ` ${attrs}` }) : null,
      kids.length ? h("ul", {}, ...kids.map(node)) : null,
    );
  };
  return h("ul", { class: "outline", "aria-label": "Behavior tree" }, node(doc.documentElement));
}
