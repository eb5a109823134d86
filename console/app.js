// The operator console: everything it shows and does goes through the public /v0 API (REST and
// the event stream), so nothing here is impossible with curl. This module is the shell: it
// builds the views (one module each), shows the one the URL's #fragment names, runs the refresh
// cycle and hands each event of the stream to the views it concerns.

import { AlarmsPanel } from "./alarms.js";
import { Api } from "./api.js";
import { AutomationView } from "./automation.js";
import { AGE_TICK_MS, DevicesView } from "./devices.js";
import { byId, setText } from "./dom.js";
import { clearRefreshError, errorText, showRefreshError } from "./errors.js";
import { EstopPanel } from "./estop.js";
import { HealthView } from "./health.js";
import { IncidentsView } from "./incidents.js";
import { handleKey, signalKey } from "./keys.js";
import { ModeSwitch } from "./mode.js";
import { ParametersView } from "./parameters.js";
import { RunsView } from "./runs.js";
import { EventStream } from "./sse.js";
import { MachineStatus } from "./status.js";
import { TelemetryView } from "./telemetry.js";
import { askToken } from "./token_dialog.js";
import { TrendView } from "./trend.js";

/**
 * How often status, health, state ages and the visible view's counters are re-read (values
 * themselves arrive on the event stream).
 */
export const REFRESH_INTERVAL_MS = 2000;
/**
 * Longest wait between two full re-reads owed after failed ones: each failure doubles the wait
 * from REFRESH_INTERVAL_MS, so a read that fails for good while the runtime is up does not make
 * every 2 s refresh a full one.
 */
export const FULL_RETRY_MAX_MS = 30000;

const VIEWS = [
  "devices",
  "trend",
  "alarms",
  "incidents",
  "parameters",
  "health",
  "automation",
  "runs",
  "telemetry",
];
/**
 * The views whose reads every full refresh makes anyway (and the health view's, every refresh):
 * a refresh does not make them a second time.
 */
const FULL_REFRESH_VIEWS = ["parameters", "automation", "alarms"];

const api = new Api({ askToken });
const reloadStatus = () => status.load().catch(showReadError);
const status = new MachineStatus({
  api,
  onRender: () => {
    estop.render();
    mode.render();
    automation.renderWhy();
  },
});
const alarms = new AlarmsPanel({
  api,
  errorText,
  // A re-read it made by itself failed: owed, as any read outside the refresh cycle.
  onReadFailed: (err) => showReadError(err),
  onChange: () => estop.renderCause(),
  unitOf: (handle) => devices.unitOf(handleKey(handle)),
  serverNow: () => devices.serverNow(),
});
const automation = new AutomationView({
  api,
  onEnabled: () => mode.render(),
  mode: () => status.mode,
});
const mode = new ModeSwitch({
  api,
  errorText,
  mode: () => status.mode,
  automationEnabled: () => automation.enabled,
  afterChange: reloadStatus,
});
const estop = new EstopPanel({
  api,
  errorText,
  machine: status,
  alarm: (id) => alarms.alarm(id),
  afterChange: reloadStatus,
  clearModeResult: () => mode.clearResult(),
  unitOf: (handle) => devices.unitOf(handleKey(handle)),
});
const devices = new DevicesView({
  api,
  errorText,
  showRefreshError: showReadError,
  loadHealth: () => health.load(),
  // The alarms and interlock inputs, and the charts' axes, show their signals' units too.
  onUnits: () => {
    alarms.render();
    trend.onUnits();
    incidents.onUnits();
  },
  onTrendToggle: (handle) => trend.has(handle) ? trend.remove(handle) : trend.add(handle),
});
/** The event stream's state (EventStream's onState): `live`, `connecting`, `stale`, … */
let streamState = "connecting";

const trend = new TrendView({
  api,
  errorText,
  devices: () => devices.devices,
  unitOf: (sk) => devices.unitOf(sk),
  serverNow: () => devices.serverNow(),
  isVisible: () => isVisible("trend"),
  inventoryKnown: () => devices.inventoryKey !== "",
  // Where its history answer has no poll for longer than a few of these, a seeded line breaks.
  pollIntervalMs: () => status.status?.polling_interval_ms ?? 0,
  // A line's last value is held to now only while the stream would have told a change of it.
  streamLive: () => streamState === "live",
  onSelection: (handles) => {
    devices.markTrend(handles);
    setText(byId("trend-tab"), handles.length ? `Trend (${handles.length})` : "Trend");
  },
});
const incidents = new IncidentsView({
  api,
  errorText,
  unitOf: (sk) => devices.unitOf(sk),
});
const health = new HealthView({
  api,
  isVisible: () => isVisible("health"),
  onDevice: (p, d, h) => devices.showLiveness(p, d, h),
});
const parameters = new ParametersView({ api, errorText });
// A read it made by itself (a "Show", a page, after an action) failed: owed, as any other.
const runs = new RunsView({ api, errorText, onReadFailed: (err) => showReadError(err) });
const telemetry = new TelemetryView({ api });

// ---- views ----

/**
 * The URL fragment as a route: `#<view>[/<rest>][?<params>]`, e.g. `#devices`,
 * `#trend?s=sim0/tempctl0/tc1_temp`, `#incidents/<id>`. An unknown view is the devices view.
 */
function route() {
  const raw = location.hash.slice(1);
  const q = raw.indexOf("?");
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
  const slash = path.indexOf("/");
  const view = slash < 0 ? path : path.slice(0, slash);
  let rest = "";
  try {
    rest = slash < 0 ? "" : decodeURIComponent(path.slice(slash + 1));
  } catch {
    rest = "";
  }
  return VIEWS.includes(view) ? { view, rest, params } : { view: "devices", rest: "", params };
}

function currentView() {
  return route().view;
}

function isVisible(view) {
  return currentView() === view;
}

function showView() {
  const { view, rest, params } = route();
  for (const v of VIEWS) byId(`view-${v}`).hidden = v !== view;
  for (const a of document.querySelectorAll(".tabs a")) {
    if (a.getAttribute("href") === `#${view}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (view === "trend") trend.open(params);
  else if (view === "incidents") incidents.open(rest).catch(showReadError);
  else refreshView(view, true).catch(showReadError);
}

async function refreshView(view, full) {
  if (view === "alarms") await alarms.load();
  else if (view === "health") await health.load();
  else if (view === "automation") await automation.load(full);
  else if (view === "runs") await runs.load();
  else if (view === "telemetry") await telemetry.load();
  else if (view === "incidents") await incidents.refresh();
  else if (view === "parameters" && full) await parameters.load();
}

// ---- refresh cycle and event stream ----

let refreshing = null;
/**
 * A full re-read failed (the runtime away for a moment): the 2 s refresh re-reads everything until
 * one succeeds: 2 s after the first failure, then waiting twice as long after each (fullRetryMs).
 * Otherwise a page whose first read failed before its stream first opened (which re-reads
 * nothing) showed no devices, under a live stream, until some device came or went.
 */
let fullOwed = false;
/** Wait before the owed full re-read (doubled per failed one, up to FULL_RETRY_MAX_MS). */
let fullRetryMs = 0;
/** performance.now() from which the owed full re-read is due. */
let fullDueAt = 0;
/**
 * Full refreshes started, and the newest of them settled: one that settles after a newer one
 * (its reads overtaken, so they showed nothing) leaves fullOwed as the newer one set it. A read
 * outside the cycle that failed counts as a full one started and failed (showReadError).
 */
let fullAsked = 0;
let fullSettled = 0;
/**
 * Refreshes started (full or not), and the newest of them that set the refresh error line: one
 * that settles after a newer one did (answers out of order) leaves the line as the newer one set
 * it, not as what its older reads found. A read outside the cycle that failed (showReadError)
 * takes the next number: only a refresh asked after it hides its error.
 */
let refreshesAsked = 0;
let refreshShown = 0;

/**
 * Shows why a read outside the refresh cycle failed (a view switch's, an event's), numbered as a
 * refresh asked now: a refresh asked before it, settling after, leaves the line. It owes a full
 * re-read, as a full one failed now would (its backoff kept): the 2 s refresh reads neither the
 * inventory nor the parameters, so its success is no proof that what failed was read since.
 */
function showReadError(err) {
  refreshShown = ++refreshesAsked;
  fullSettled = ++fullAsked;
  fullOwed = true;
  showRefreshError(err);
}

/** Re-reads everything (full: inventory, parameters and tree too). */
function refresh(full) {
  if (refreshing !== null && !full) return refreshing;
  full ||= fullOwed && performance.now() >= fullDueAt;
  const asked = full ? ++fullAsked : 0;
  const nth = ++refreshesAsked;
  const run = async () => {
    const view = currentView();
    const tasks = [status.load(), health.load()];
    // The view's own reads, once: a second read of the same resource would only drop the first.
    if (view !== "health" && !(full && FULL_REFRESH_VIEWS.includes(view))) {
      tasks.push(refreshView(view, full));
    }
    if (full) {
      // The values too: a changed inventory re-reads them for its new cells, an unchanged one
      // none, so they are read right after it (a resync re-reads them at once, and only once).
      const values = devices.loadInventory().then((read) => read || devices.loadState());
      tasks.push(values, parameters.load(), automation.load(true), alarms.load());
    } else {
      tasks.push(devices.loadState());
    }
    const results = await Promise.allSettled(tasks);
    const failed = results.find((r) => r.status === "rejected");
    if (full && asked > fullSettled) {
      fullSettled = asked;
      fullOwed = failed !== undefined;
      fullRetryMs = fullOwed
        ? Math.min(FULL_RETRY_MAX_MS, fullRetryMs * 2 || REFRESH_INTERVAL_MS)
        : 0;
      fullDueAt = performance.now() + fullRetryMs;
    }
    if (nth < refreshShown) return;
    refreshShown = nth;
    // The page is up to date only once the full re-read owed since a failed one has succeeded:
    // a 2 s refresh that succeeds meanwhile leaves the line.
    if (failed) showRefreshError(failed.reason);
    else if (!fullOwed) clearRefreshError();
  };
  // Cleared only by the refresh it names: an older one settling while a newer (full) one runs
  // leaves the guard up, so a 2 s refresh started meanwhile does not settle past the newer one.
  const running = run().finally(() => {
    if (refreshing === running) refreshing = null;
  });
  refreshing = running;
  return running;
}

function onEvent(e) {
  let data;
  try {
    data = JSON.parse(e.data);
  } catch {
    return;
  }
  switch (e.event) {
    case "state_update": {
      const sk = signalKey(data.provider_id, data.device_id, data.signal_id);
      devices.showValue(sk, data.value, data.quality, data.timestamp_ms);
      alarms.onSignal(sk, data.value, data.quality);
      trend.onSample(sk, data.value, data.quality, data.timestamp_ms);
      break;
    }
    case "quality_change": {
      const sk = signalKey(data.provider_id, data.device_id, data.signal_id);
      devices.showValue(sk, undefined, data.new_quality, undefined);
      alarms.onSignal(sk, undefined, data.new_quality);
      trend.onSample(sk, undefined, data.new_quality, undefined);
      break;
    }
    case "device_availability":
    case "provider_health_change":
      devices.scheduleInventory();
      reloadStatus();
      health.load().catch(showReadError);
      break;
    case "mode_change":
      mode.onModeChange(data.new_mode);
      status.onModeChange(data.new_mode);
      reloadStatus();
      // The tree starts or stops with the mode: the why line follows at once.
      if (isVisible("automation")) automation.load(false).catch(showReadError);
      break;
    case "parameter_change":
      parameters.load().catch(showReadError);
      break;
    case "estop_change":
      if (data.latched === false) estop.onReleased();
      else estop.onLatched();
      reloadStatus();
      break;
    case "estop_verification":
      reloadStatus();
      break;
    case "alarm":
      alarms.onAlarmEvent(data);
      break;
    case "interlock":
      alarms.onInterlockEvent(data);
      break;
    case "config_reload":
      // Providers, parameters, alarms or the tree may have changed: re-read everything.
      if (data.result === "applied") refresh(true);
      break;
    case "bt_error":
    case "automation_fault":
    case "device_loss_latch":
      if (isVisible("automation")) automation.load(false).catch(showReadError);
      break;
    default:
      break;
  }
}

function onStreamState(state, detail) {
  streamState = state;
  const el = byId("conn");
  el.className = `conn conn-${state}`;
  document.body.classList.toggle("stream-down", state !== "live");
  if (state === "live") setText(el, "Live");
  else if (state === "connecting") setText(el, "Connecting…");
  else if (state === "stale") {
    setText(el, `Stale: nothing received for ${Math.round((detail.silentMs ?? 0) / 1000)} s`);
  } else if (state === "disconnected") {
    setText(
      el,
      `Disconnected — retrying in ${Math.max(1, Math.round((detail.retryInMs ?? 0) / 1000))} s` +
        (detail.error ? ` (${detail.error})` : ""),
    );
  } else setText(el, "Stopped");
}

function main() {
  estop.bind();
  addEventListener("hashchange", showView);
  let opened = false;
  showView();
  let streamToken = api.token;
  const stream = new EventStream({
    url: "/v0/events",
    // The token the last stream request carried: a 401 for it must not ask again when the
    // operator already entered a new one meanwhile (the stream's 401 can arrive after that).
    headers: () => {
      streamToken = api.token;
      return api.headers();
    },
    onEvent,
    onComment: (text) => {
      // A slow reader lost events: re-read the values, alarms and interlocks.
      if (text.startsWith("dropped")) {
        devices.loadState().catch(showReadError);
        alarms.load().catch(showReadError);
      }
    },
    // A reconnection resumes after the last event received: the runtime sends what was missed,
    // so nothing needs re-reading, unless it says it cannot (too old, or it restarted: onGap).
    // A reconnection that could not ask (no event received yet) re-reads everything. An opening
    // says the runtime answers again: a re-read owed since failed ones is made now, not after
    // its backoff (FULL_RETRY_MAX_MS), which is for a read failing while the runtime is up.
    onOpen: (resumed) => {
      if (opened && !resumed) trend.onGap("unknown");
      if ((opened && !resumed) || fullOwed) refresh(true);
      opened = true;
    },
    // The live trend too: it breaks its lines over a restart, re-reads the history otherwise.
    onGap: (reason) => {
      trend.onGap(reason);
      refresh(true);
    },
    onState: onStreamState,
    // Hidden, the stale silence is not counted up; shown again, it moves on at once.
    isHidden: () => document.hidden,
    onUnauthorized: () => api.authenticate(streamToken),
  });
  // A token entered at any prompt (a command's, after the operator cancelled one): the stream,
  // refused with the old one, need not wait out its backoff.
  api.onToken = () => stream.retryNow();
  byId("token-button").addEventListener("click", async () => {
    if (!(await api.authenticate(api.token, true))) return;
    refresh(true);
    stream.retryNow();
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) stream.recheck();
  });
  stream.start();
  // The stream's first opening usually lands while this first read runs; later openings
  // (reconnections) resume, or resync when the runtime cannot resume.
  refresh(true);
  setInterval(() => refresh(false), REFRESH_INTERVAL_MS);
  setInterval(() => {
    devices.tickAges();
    health.tickTimes();
  }, AGE_TICK_MS);
}

main();
