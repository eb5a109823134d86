// The machine at a glance (the header): runtime name and version, mode, e-stop latch, the rung
// an e-stop would run and what it leaves untouched, provider availability. From
// GET /v0/runtime/status, kept current by `mode_change` events in between.

import { MODE_HINTS } from "./mode.js";
import { byId, fill, formatTime, h, setText } from "./dom.js";
import { LatestRead, OVERTAKEN } from "./latest_read.js";

/** Providers the header names one by one at most; past it, a count and the ones down first. */
export const MAX_PROVIDER_BADGES = 8;

const RUNG_TEXT = {
  hooks: "safe-state hooks",
  setpoints: "safe-state setpoints",
  zero: "zero every zeroable output",
  none: "nothing (no safe state declared)",
};

/** GET /v0/runtime/status and the header that shows it. */
export class MachineStatus {
  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>},
   *   onRender: (status: any) => void,
   * }} options `onRender` runs after each render (the e-stop and mode controls follow it)
   */
  constructor(options) {
    this.api = options.api;
    this.onRender = options.onRender;
    /** @type {any} GET /v0/runtime/status; null until read */
    this.status = null;
    /** Status reads (a slower, older answer is dropped). */
    this.reads = new LatestRead();
    /** The number of the read whose answer is shown (0: none yet); an error shows nothing. */
    this.shown = 0;
    /** mode_change events seen; a status read that started before the last one keeps its mode. */
    this.modeEvents = 0;
  }

  /** Status reads asked so far (the e-stop panel orders its answer against them). */
  get started() {
    return this.reads.asked;
  }

  /** The runtime's mode as last known (undefined before the first read). */
  get mode() {
    return this.status?.mode;
  }

  async load() {
    const modeEvents = this.modeEvents;
    const s = await this.reads.read(() => this.api.get("/v0/runtime/status"));
    if (s === OVERTAKEN) return;
    this.shown = this.reads.applied;
    // A mode change streamed while this read was under way is newer than its answer.
    if (modeEvents !== this.modeEvents && this.status) s.mode = this.status.mode;
    this.status = s;
    this.render();
  }

  /** A `mode_change` event: shown at once (a status read follows). */
  onModeChange(newMode) {
    this.modeEvents++;
    if (this.status) {
      this.status.mode = newMode;
      this.render();
    }
  }

  render() {
    const s = this.status;
    if (s === null) return;
    const name = s.runtime_name || "runtime";
    setText(byId("runtime-name"), name);
    setText(byId("runtime-version"), `v${s.version}`);
    document.title = `${name} — operator console`;
    const mode = byId("mode");
    setText(mode, s.mode);
    mode.className = `mode mode-${s.mode}`;
    mode.title = MODE_HINTS[s.mode] ?? "";
    const e = s.estop ?? {};
    const latch = byId("latch");
    setText(latch, e.latched ? `LATCHED since ${formatTime(e.latched_at_epoch_ms)}` : "released");
    latch.className = e.latched ? "latched" : "released";
    document.body.classList.toggle("is-latched", e.latched === true);
    setText(byId("rung"), `${e.software_safe_state} — ${RUNG_TEXT[e.software_safe_state] ?? ""}`);
    const uncovered = byId("uncovered");
    setText(uncovered, String(e.uncovered_actuating_functions));
    uncovered.className = e.uncovered_actuating_functions > 0 ? "warn" : "";
    fill(byId("providers"), ...providerBadges(s.providers ?? []));
    this.onRender(s);
  }
}

/**
 * The header's providers: each with its state, up to MAX_PROVIDER_BADGES; beyond, how many are
 * available, the first ones not available, and how many more (the Health view lists them all):
 * the header is sticky, and 40 badges left a laptop's screen no room for the views.
 */
function providerBadges(list) {
  const one = (p) =>
    h("span", {
      class: `badge ${p.state === "AVAILABLE" ? "q-OK" : "q-UNAVAILABLE"}`,
      text: `${p.provider_id} ${p.state}`,
    });
  if (list.length <= MAX_PROVIDER_BADGES) return list.map(one);
  const down = list.filter((p) => p.state !== "AVAILABLE");
  const shown = down.slice(0, MAX_PROVIDER_BADGES - 1);
  const more = down.length - shown.length;
  return [
    h("span", {
      class: `badge ${down.length === 0 ? "q-OK" : "q-UNAVAILABLE"}`,
      text: `${list.length - down.length} of ${list.length} AVAILABLE`,
    }),
    ...shown.map(one),
    more > 0 ? h("a", { href: "#health", text: `${more} more not available` }) : null,
  ];
}
