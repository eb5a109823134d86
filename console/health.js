// The Health view: per provider its lifecycle, supervision, what it reports, its host check
// (unmet requirements with their remedies), data faults and discovery warnings, and each device's
// liveness and resource claims (GET /v0/providers/health; the Devices view
// shows the liveness too).

import { badge, byId, facts, fill, formatAge, h, setText, table } from "./dom.js";
import { LatestRead, OVERTAKEN } from "./latest_read.js";

/** The quality colour class a device liveness is shown with. */
export function healthClass(health) {
  return { OK: "OK", WARNING: "STALE", STALE: "STALE", FAULT: "FAULT" }[health] ?? "UNAVAILABLE";
}

/**
 * "n of max" restarts attempted. The API's attempt_count counts as anolis does: the failure that
 * opens the circuit counts one past max_attempts though no restart follows it, so the count shown
 * is capped at max_attempts.
 */
export function restartsText(sup) {
  const max = sup?.max_attempts ?? 0;
  return `${Math.min(sup?.attempt_count ?? 0, max)} of ${max}`;
}

/** "in 29 s": the time left until a restart due `dueAt` (performance.now() ms) at `now`. */
export function nextRestartText(dueAt, now) {
  return `in ${formatAge(dueAt - now)}`;
}

/** "12 s ago": the age at `now` of what happened at `since` (performance.now() ms). */
export function agoText(since, now) {
  return `${formatAge(now - since)} ago`;
}

/** "12 s": the time from `since` (performance.now() ms) to `now`. */
export function forText(since, now) {
  return formatAge(now - since);
}

/** The Health view. */
export class HealthView {
  /**
   * Each shown "Next restart" countdown: its element and when the restart is due on the page's
   * monotonic clock (the API's next_restart_in_ms carried forward from when it arrived), so that
   * tickTimes moves it every second between two reads of the health.
   * @type {{el: Element, dueAt: number}[]}
   */
  countdowns = [];

  /**
   * Each shown age ("Last seen", "Up for", a device's "Last poll"): its element, since when on the
   * page's monotonic clock (the API's age carried back from when it arrived) and its text, so
   * that tickTimes moves it every second between two reads of the health.
   * @type {{el: Element, since: number, text: (since: number, now: number) => string}[]}
   */
  ages = [];

  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>},
   *   isVisible: () => boolean,
   *   onDevice: (providerId: string, deviceId: string, health: string) => void,
   * }} options `onDevice` gets each device's liveness (the Devices view's badges)
   */
  constructor(options) {
    this.api = options.api;
    this.isVisible = options.isVisible;
    this.onDevice = options.onDevice;
  }

  /** Reads of the health (the newest applied wins). */
  reads = new LatestRead();

  /**
   * Reads the health and shows it, unless a read asked for later was shown already: reads overlap
   * (an availability event, a reload's full refresh, the refresh cycle) and their answers may
   * arrive in any order.
   */
  async load() {
    const r = await this.reads.read(() => this.api.get("/v0/providers/health"));
    if (r === OVERTAKEN) return;
    for (const p of r.providers ?? []) {
      for (const d of p.devices ?? []) this.onDevice(p.provider_id, d.device_id, d.health);
    }
    if (this.isVisible()) this.render(r.providers ?? []);
  }

  /**
   * Moves every "Next restart" countdown and every age shown to now (app.js calls it every
   * AGE_TICK_MS).
   */
  tickTimes() {
    const now = performance.now();
    for (const c of this.countdowns) setText(c.el, nextRestartText(c.dueAt, now));
    for (const a of this.ages) setText(a.el, a.text(a.since, now));
  }

  render(providers) {
    const now = performance.now();
    this.countdowns = [];
    this.ages = [];
    const countdown = (inMs) => {
      const el = h("span", { "data-next-restart": true, text: nextRestartText(now + inMs, now) });
      this.countdowns.push({ el, dueAt: now + inMs });
      return el;
    };
    const age = (agoMs, text) => {
      const el = h("span", { text: text(now - agoMs, now) });
      this.ages.push({ el, since: now - agoMs, text });
      return el;
    };
    fill(
      byId("health"),
      ...providers.map((p) => {
        const sup = p.supervision ?? {};
        return h(
          "section",
          { class: "card", "data-provider": p.provider_id },
          h(
            "h3",
            {},
            `Provider ${p.provider_id} `,
            badge(p.state, p.state === "AVAILABLE" ? "q-OK" : "q-UNAVAILABLE"),
          ),
          facts([
            ["Lifecycle", p.lifecycle_state],
            ...(p.start_error ? [["Not started", p.start_error]] : []),
            [
              "Last seen",
              p.last_seen_ago_ms === null || p.last_seen_ago_ms === undefined
                ? "—"
                : age(p.last_seen_ago_ms, agoText),
            ],
            // A provider that is not up has no uptime (0): it does not grow.
            [
              "Up for",
              p.state === "AVAILABLE"
                ? age((p.uptime_seconds ?? 0) * 1000, forText)
                : formatAge((p.uptime_seconds ?? 0) * 1000),
            ],
            ["Devices", `${p.device_count} (${p.failed_device_count} failed)`],
            ["Supervision", sup.enabled ? "restarts enabled" : "no restarts"],
            ["Restarts attempted", restartsText(sup)],
            ["Crash detected", sup.crash_detected ? "yes" : "no"],
            [
              "Circuit",
              sup.circuit_open
                ? "OPEN (no further restarts; a config reload retries it)"
                : "closed",
            ],
            [
              "Next restart",
              sup.next_restart_in_ms === null || sup.next_restart_in_ms === undefined
                ? "—"
                : countdown(sup.next_restart_in_ms),
            ],
            [
              "Provider reports",
              p.reported
                ? `${p.reported.state}${p.reported.message ? ` — ${p.reported.message}` : ""}`
                : "—",
            ],
            [
              "Host check",
              !p.host_check
                ? "not reported"
                : p.host_check.status === "ok"
                ? "ok"
                : `UNMET — ${p.device_count === 0 ? "up without devices" : "partly ready"}`,
            ],
            [
              "Data faults",
              p.data_faults
                ? `${p.data_faults.type_mismatch} type, ${p.data_faults.non_finite} non-finite, ${p.data_faults.undeclared_signal} undeclared`
                : "—",
            ],
          ]),
          p.host_check?.status === "unmet"
            ? table(
              `Unmet host requirements of ${p.provider_id}`,
              ["Requirement", "Found", "Remedy"],
              (p.host_check.unmet.length
                ? p.host_check.unmet
                : [{ id: "—", detail: p.host_check.summary, remedy: "" }]).map((r) => [
                  r.id,
                  r.detail || "—",
                  r.remedy || "—",
                ]),
            )
            : null,
          (p.discovery_warnings ?? []).length
            ? h("ul", { class: "warn" }, ...p.discovery_warnings.map((w) => h("li", { text: w })))
            : null,
          table(
            `Device liveness of ${p.provider_id}`,
            ["Device", "Liveness", "Last poll", "Stale signals", "Faulty signals", "Claims"],
            (p.devices ?? []).map((d) => [
              d.device_id,
              badge(d.health, `q-${healthClass(d.health)}`),
              d.last_poll_ms ? age(d.staleness_ms, agoText) : "never",
              String(d.stale_signal_count),
              String(d.fault_signal_count),
              (d.claims ?? []).length ? d.claims.join(" ") : "—",
            ]),
          ),
          // Those of devices it no longer lists and, while a reload restarts it, those of its old
          // process until it has exited (docs/http-api.md "Resource claims").
          (p.held_claims ?? []).length
            ? table(
              `Claims still held for devices ${p.provider_id} does not list`,
              ["Device", "Claims"],
              p.held_claims.map((d) => [d.device_id, d.claims.join(" ")]),
            )
            : null,
        );
      }),
    );
  }
}
