// The Automation view: in one line why the tree runs or not (or is blocked), then execution
// status and reason, tick counts, errors, last error, device-loss latches (devices, and
// providers held as one entry), outages and refused calls, and the loaded behavior tree as an
// indented outline.

import { notAvailableHere } from "./api.js";
import { byId, facts, fill, formatTime, h, setText } from "./dom.js";
import { LatestRead, OVERTAKEN } from "./latest_read.js";

/** The line's kind for each `not_running.cause` of the runtime (GET /v0/automation/status). */
const CAUSE_KIND = {
  mode: "stopped",
  device_loss_latch: "latched",
  automation_fault: "fault",
  stalled: "blocked",
  no_definition: "stopped",
  stopped: "stopped",
};

/** How each kind of line begins. */
const KIND_PREFIX = {
  stopped: "Not running",
  blocked: "Blocked",
  latched: "Latched",
  fault: "Fault",
  unknown: "Not running",
};

/**
 * Why the behavior tree runs or not, in one line, from GET /v0/automation/status. A runtime that
 * says why (`not_running`: null while the tree runs in AUTO, else its `cause`; `why_not_running`:
 * the same in words, with the remedy; `blocked_devices`) is shown in its own words; in AUTO its
 * `refused_calls` make the line "Blocked" (the tree ticks, its calls are refused). An older one
 * is read from `execution_status` and its reasons (`mode_gate`, `waiting`, `terminal_failure`,
 * `engine_fault`, `no_definition`, `stopped`, none while running) with `device_outages`. A reason
 * this console does not know is shown as the runtime words it.
 * @param {any} s the answer
 * @param {{mode?: string, timeOf?: (epochMs: number) => string}} [context] `mode`: the
 *   runtime's mode, used when the answer has none; `timeOf`: a time as shown (default the
 *   browser's local time of day)
 * @returns {{kind: "running" | "stopped" | "blocked" | "latched" | "fault" | "unknown",
 *   text: string}}
 */
export function automationWhy(s, context = {}) {
  const timeOf = context.timeOf ?? ((ms) => new Date(ms).toLocaleTimeString());
  const since = (ms) => typeof ms === "number" && ms > 0 ? `since ${timeOf(ms)}` : "";
  if (s && Object.hasOwn(s, "not_running")) return runtimeWhy(s, since);
  const mode = typeof s.mode === "string" ? s.mode : context.mode;
  const reason = s.execution_reason;
  const fault = () => ({
    kind: "fault",
    text: `Fault: ${s.last_error ?? "the tree stopped on an error"}`,
  });
  const latched = () => {
    const devices = s.device_loss_latched ?? [];
    return {
      kind: "latched",
      text: `Latched: device-loss latch${devices.length ? ` on ${devices.join(", ")}` : ""}` +
        " — re-arm by entering AUTO",
    };
  };
  switch (reason) {
    case "mode_gate":
      // An older runtime reports a tick that threw (which forces FAULT) as failed / mode_gate.
      if (s.execution_status === "failed") return fault();
      return {
        kind: "stopped",
        text: `Not running: ${
          mode ? `mode is ${mode}` : "the mode is not AUTO"
        } (enter AUTO to run)`,
      };
    case "stopped":
      return { kind: "stopped", text: "Not running: automation is stopped" };
    case "no_definition":
      return { kind: "stopped", text: "Not running: no behavior tree is loaded" };
    case "terminal_failure":
    case "engine_fault":
      return fault();
    case "waiting":
      return blockedByFailures(s, since);
    case undefined:
    case null:
    case "":
      break;
    default:
      return {
        kind: "unknown",
        text: s.execution_status ? `${s.execution_status}: ${reason}` : String(reason),
      };
  }
  // No reason: an older runtime while the tree runs.
  switch (s.execution_status) {
    case "running":
      return (s.device_loss_latched ?? []).length
        ? latched()
        : { kind: "running", text: "Running" };
    case "failed":
      return fault();
    case "blocked":
      return blockedByFailures(s, since);
    case "idle":
      return { kind: "stopped", text: "Not running" };
    case "completed":
      return { kind: "stopped", text: "Not running: the tree completed" };
    default:
      return { kind: "unknown", text: String(s.execution_status) };
  }
}

/** Exempt devices named per provider-wide entry; the rest are counted. */
const EXEMPT_NAMED = 3;

/**
 * The device-loss latch's provider-wide entries (GET /v0/automation/status
 * `device_loss_latched_providers`: a provider past the latch's per-provider bound holds its
 * further lost devices as one entry, which refuses automated calls to every device of the provider
 * but those not lost when it was made or AUTO was last entered), in words, one per provider;
 * "none" when there are none.
 * @param {any[]} entries
 * @param {(epochMs: number) => string} [timeOf] a time as shown (default formatTime)
 * @returns {string}
 */
export function latchedProvidersText(entries, timeOf = formatTime) {
  if (entries.length === 0) return "none";
  return entries.map((p) => {
    // A runtime that names them (exempt_device_ids): the first few, and how many more.
    const ids = Array.isArray(p.exempt_device_ids) ? p.exempt_device_ids : null;
    const named = ids === null || ids.length === 0
      ? ""
      : ` (${ids.slice(0, EXEMPT_NAMED).map((d) => `${p.provider_id}/${d}`).join(", ")}${
        ids.length > EXEMPT_NAMED ? ` and ${ids.length - EXEMPT_NAMED} more` : ""
      })`;
    const exempt = p.exempt_devices > 0
      ? ` but the ${p.exempt_devices} not lost when it was made or AUTO was last entered${named}`
      : "";
    return `${p.provider_id}: ${p.losses} more lost device(s) held as one entry since ` +
      `${timeOf(p.since_epoch_ms)}, the latest ${p.last_device_handle} (${p.last_reason}); ` +
      `automated calls to every device of ${p.provider_id}${exempt} are refused`;
  }).join("; ");
}

/**
 * What a `refused_calls` entry's calls went to: the device and, from runtimes that count per
 * function (`function`), the function -- two refused functions of one device are two entries.
 */
function refusedTarget(r) {
  return typeof r.function === "string" ? `${r.device_handle} ${r.function}` : r.device_handle;
}

/**
 * The runtime's own why (`not_running`, `why_not_running`, `blocked_devices`); in AUTO, a tree
 * whose recent calls a gate or a check refused (`refused_calls`) ticks but moves nothing: blocked.
 */
function runtimeWhy(s, since) {
  const n = s.not_running;
  if (n === null) {
    const refused = Array.isArray(s.refused_calls) ? s.refused_calls : [];
    if (refused.length === 0) return { kind: "running", text: "Running" };
    return {
      kind: "blocked",
      text: `Blocked: ${
        refused.map((r) => {
          const when = since(r.since_epoch_ms);
          return `calls to ${refusedTarget(r)} are refused by ${r.refused_by} (` +
            `${r.consecutive_refusals} in a row${when ? ` ${when}` : ""})`;
        }).join("; ")
      }`,
    };
  }
  const cause = n && typeof n.cause === "string" ? n.cause : "";
  let kind = CAUSE_KIND[cause] ?? "unknown";
  // Out of AUTO with a device the tree needs down: AUTO would be refused, the line says why.
  if (kind === "stopped" && (s.blocked_devices ?? []).length > 0) kind = "blocked";
  const words = typeof s.why_not_running === "string" && s.why_not_running !== ""
    ? s.why_not_running
    : cause || "the runtime did not say why";
  return { kind, text: `${KIND_PREFIX[kind]}: ${words}` };
}

/** Today's `blocked` / `waiting`: the tree failed tick after tick; the devices whose calls fail. */
function blockedByFailures(s, since) {
  const outages = (s.device_outages ?? []).map((o) => {
    const when = since(o.since_epoch_ms);
    return `calls to ${o.device_handle} fail (${o.consecutive_failures} in a row${
      when ? ` ${when}` : ""
    })`;
  });
  return {
    kind: "blocked",
    text: `Blocked: the tree fails tick after tick${
      outages.length ? `; ${outages.join("; ")}` : ""
    }`,
  };
}

/** The Automation view; it also learns whether automation is enabled (AUTO is offered then). */
export class AutomationView {
  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>},
   *   onEnabled: () => void,
   *   mode: () => string | undefined,
   * }} options `onEnabled` runs after each read (`enabled` may have changed); `mode`: the
   *   runtime's mode (the why line uses it when the answer has no `mode`)
   */
  constructor(options) {
    this.api = options.api;
    this.onEnabled = options.onEnabled;
    this.mode = options.mode;
    /** null until known: whether /v0/automation answers (AUTO is offered only then). */
    this.enabled = /** @type {boolean | null} */ (null);
    /**
     * Whether the tree's outline is shown: until then (a failed read took it down or shows its
     * error) every read of the status reads the tree too.
     */
    this.treeShown = false;
    /** @type {any} the last status read; null when none (or the read failed) */
    this.status = null;
    /** The runtime's mode when it was read (undefined: not known then). */
    this.modeAtRead = /** @type {string | undefined} */ (undefined);
  }

  /**
   * The why line, from the last status read and the runtime's mode as known at that read (or
   * now, when it was not known then: a mode newer than the status would contradict it).
   */
  renderWhy() {
    const el = byId("automation-why");
    el.hidden = this.status === null;
    if (this.status === null) return;
    const why = automationWhy(this.status, { mode: this.modeAtRead ?? this.mode() });
    el.className = `why why-${why.kind}`;
    setText(el, why.text);
  }

  /** Re-reads the status (and the tree when `withTree`, or when none is shown yet). */
  /** Reads of the status, and of the tree (a slower, older answer of either is dropped). */
  statusReads = new LatestRead();
  treeReads = new LatestRead();

  async load(withTree) {
    let s;
    try {
      s = await this.statusReads.read(() => this.api.get("/v0/automation/status"));
      if (s === OVERTAKEN) {
        // A newer status is shown; the tree this call was asked to re-read (a reload) is not.
        await this.loadTree(withTree);
        return;
      }
      this.enabled = true;
    } catch (err) {
      // Not offered only when the runtime says automation is not available on it: a 503 of a
      // moment (server busy) says nothing of it, and nothing reads the status again soon.
      if (notAvailableHere(err, "Automation")) this.enabled = false;
      this.status = null;
      this.renderWhy();
      fill(byId("automation-status"), h("p", { class: "muted", text: String(err) }));
      // The tree is taken down with the status: none is shown, so the next read reads it again.
      fill(byId("automation-tree"));
      this.treeShown = false;
      this.onEnabled();
      return;
    }
    this.onEnabled();
    this.status = s;
    this.modeAtRead = this.mode();
    this.renderWhy();
    const d = s.engine_diagnostics ?? {};
    fill(
      byId("automation-status"),
      facts([
        [
          "Execution",
          s.execution_reason
            ? `${s.execution_status} (${s.execution_reason})`
            : String(s.execution_status),
        ],
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
        // Runtimes that bound the latch per provider (an older one has no such entries).
        ...(Array.isArray(s.device_loss_latched_providers)
          ? [[
            "Device-loss latched providers",
            latchedProvidersText(s.device_loss_latched_providers),
          ]]
          : []),
        [
          "Device outages",
          (s.device_outages ?? []).length
            ? s.device_outages.map((o) =>
              `${o.device_handle} (${o.consecutive_failures} calls failed in a row): ` +
              o.last_error
            ).join("; ")
            : "none",
        ],
        ...(Array.isArray(s.refused_calls)
          ? [[
            "Refused calls",
            s.refused_calls.length
              ? s.refused_calls.map((r) =>
                `${refusedTarget(r)} by ${r.refused_by} (${r.consecutive_refusals} in a row): ` +
                r.last_refusal
              ).join("; ")
              : "none",
          ]]
          : []),
        ...(Array.isArray(s.blocked_devices)
          ? [[
            "Blocked devices",
            s.blocked_devices.length
              ? s.blocked_devices.map((b) => {
                const when = b.since_epoch_ms ? `since ${formatTime(b.since_epoch_ms)}` : "";
                const what = b.condition ? `${b.condition}: ${b.reason}` : b.reason;
                return `${b.device_handle} (${[what, when].filter((x) => x).join(", ")})`;
              }).join("; ")
              : "none",
          ]]
          : []),
      ]),
    );
    await this.loadTree(withTree);
  }

  /** Re-reads the tree when `withTree`, or when none is shown yet. */
  async loadTree(withTree) {
    if (!withTree && this.treeShown) return;
    try {
      const t = await this.treeReads.read(() => this.api.get("/v0/automation/tree"));
      if (t === OVERTAKEN) return;
      fill(byId("automation-tree"), treeOutline(t.tree));
      this.treeShown = true;
    } catch (err) {
      // The error in its place is no tree shown: the next read (the 2 s refresh's) reads it again.
      fill(byId("automation-tree"), h("p", { class: "muted", text: String(err) }));
      this.treeShown = false;
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
