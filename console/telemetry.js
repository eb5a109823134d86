// The Telemetry view: the counters of GET /v0/telemetry/status.

import { byId, facts, fill, formatTime, h } from "./dom.js";
import { LatestRead, OVERTAKEN } from "./latest_read.js";

/** The Telemetry view. */
export class TelemetryView {
  /** @param {{api: {get: (path: string) => Promise<any>}}} options */
  constructor(options) {
    this.api = options.api;
    /** Reads of the telemetry status (a slower, older answer is dropped). */
    this.reads = new LatestRead();
  }

  async load() {
    let s;
    try {
      s = await this.reads.read(() => this.api.get("/v0/telemetry/status"));
      if (s === OVERTAKEN) return;
    } catch (err) {
      fill(byId("telemetry"), h("p", { class: "muted", text: String(err) }));
      return;
    }
    const { status: _status, backend, ...counters } = s;
    fill(
      byId("telemetry"),
      backend
        ? h("p", {}, `Writing to ${backend.url} (org ${backend.org}, bucket ${backend.bucket})`)
        : null,
      facts(
        Object.entries(counters).map(([k, v]) => [
          k.replaceAll("_", " "),
          k.endsWith("_epoch_ms") ? formatTime(v) : v === null ? "—" : String(v),
        ]),
      ),
    );
  }
}
