// The operator console: everything it shows and does goes through the public /v0 API (REST and
// the event stream), so nothing here is impossible with curl.

import { AlarmsPanel } from "./alarms.js";
import { Api, ApiError } from "./api.js";
import {
  badge,
  byId,
  fill,
  formatAge,
  formatTime,
  formatValue,
  h,
  setResult,
  setText,
} from "./dom.js";
import { field, readArg, readParameter } from "./forms.js";
import { EventStream } from "./sse.js";

/**
 * How often status, health, state ages and the visible view's counters are re-read (values
 * themselves arrive on the event stream).
 */
export const REFRESH_INTERVAL_MS = 2000;
/** How often the ages shown are recomputed. */
export const AGE_TICK_MS = 1000;
/** Inventory changes (devices, capabilities) are re-read at most this often. */
export const INVENTORY_DEBOUNCE_MS = 300;
/** Runs listed in the Runs view, and events shown per run. */
export const RUNS_LISTED = 20;
export const RUN_EVENTS_LISTED = 50;

/** The mode transition table (docs/http-api.md "Modes and calls"). */
const MODE_TRANSITIONS = {
  IDLE: ["MANUAL", "FAULT"],
  MANUAL: ["IDLE", "AUTO", "FAULT"],
  AUTO: ["MANUAL", "FAULT"],
  FAULT: ["MANUAL"],
};
const MODE_HINTS = {
  IDLE: "disarmed: actuating calls refused",
  MANUAL: "armed: operator calls run",
  AUTO: "the behavior tree runs",
  FAULT: "stopped: re-arm with MANUAL",
};
const RUNG_TEXT = {
  hooks: "safe-state hooks",
  setpoints: "safe-state setpoints",
  zero: "zero every zeroable output",
  none: "nothing (no safe state declared)",
};
const CLOSE_REASONS = ["operator_stop", "completed", "failed", "superseded"];
const VIEWS = ["devices", "alarms", "parameters", "health", "automation", "runs", "telemetry"];

const api = new Api({ askToken });
const alarms = new AlarmsPanel({ api, errorText, onChange: renderEstopCause });

const model = {
  /** @type {any} GET /v0/runtime/status */
  status: null,
  /** @type {any[]} devices with their capabilities */
  devices: [],
  inventoryKey: "",
  /** @type {Map<string, {valueEl: HTMLElement, qualityEl: HTMLElement, ageEl: HTMLElement, ts: number}>} */
  cells: new Map(),
  /** @type {Map<string, HTMLElement>} "p/d" -> liveness badge */
  healthBadges: new Map(),
  /** null until known: whether /v0/automation answers (AUTO is offered only then). */
  automationEnabled: /** @type {boolean | null} */ (null),
  /** runtime clock minus this browser's, from the last state read */
  clockOffsetMs: 0,
  parametersKey: "",
  /** @type {Map<string, HTMLElement>} parameter name -> value cell */
  parameterValues: new Map(),
  /** The open run the run forms were built for ("" none); null before the first build. */
  runFormsFor: /** @type {string | null} */ (null),
  runsKey: "",
  treeShown: false,
  /** Status reads started / the latest one shown (a slower, older answer is dropped). */
  statusStarted: 0,
  statusShown: 0,
  /** mode_change events seen; a status read that started before the last one keeps its mode. */
  modeEvents: 0,
  /** The mode a "Mode X" result names; the result is cleared once the mode moves on. */
  modeResultFor: /** @type {string | null} */ (null),
};

// ---- token prompt ----

/** Asks for the bearer token in a modal dialog; null when the operator cancels. */
function askToken(refused) {
  const dialog = /** @type {HTMLDialogElement} */ (byId("token-dialog"));
  const form = byId("token-form");
  const input = /** @type {HTMLInputElement} */ (byId("token-input"));
  byId("token-refused").hidden = !refused;
  input.value = "";
  return new Promise((resolve) => {
    const done = (token) => {
      form.removeEventListener("submit", onSubmit);
      byId("token-cancel").removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close();
      byId("token-button").hidden = token !== null;
      resolve(token);
    };
    const onSubmit = (e) => {
      e.preventDefault();
      done(input.value.trim() === "" ? null : input.value.trim());
    };
    const onCancel = (e) => {
      e.preventDefault();
      done(null);
    };
    form.addEventListener("submit", onSubmit);
    byId("token-cancel").addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    input.focus();
  });
}

// ---- header: machine at a glance, mode, e-stop ----

function renderStatus() {
  const s = model.status;
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
  const providers = byId("providers");
  fill(
    providers,
    ...(s.providers ?? []).map((p) =>
      h("span", {
        class: `badge ${p.state === "AVAILABLE" ? "q-OK" : "q-UNAVAILABLE"}`,
        text: `${p.provider_id} ${p.state}`,
      })
    ),
  );
  byId("estop-clear").hidden = e.latched !== true;
  renderEstopCause();
  renderModeButtons();
}

/** While latched: what latched it (`api`, or `alarm:<id>` with the alarm's message). */
function renderEstopCause() {
  const e = model.status?.estop;
  const el = byId("estop-cause");
  const cause = e?.latched === true && typeof e.cause === "string" ? e.cause : "";
  const alarm = cause.startsWith("alarm:") ? alarms.alarm(cause.slice(6)) : undefined;
  const key = `${cause}|${alarm?.message ?? ""}`;
  el.hidden = cause === "";
  if (el.dataset.key === key) return;
  el.dataset.key = key;
  fill(
    el,
    "Cause: ",
    cause.startsWith("alarm:")
      ? h("a", { href: "#alarms", "data-cause": cause, text: cause })
      : h("strong", { "data-cause": cause, text: cause }),
    alarm?.message
      ? ` — ${alarm.message}`
      : cause === "api"
      ? " — an e-stop request (POST /v0/estop: this page or another client)"
      : "",
  );
}

function renderModeButtons() {
  const mode = model.status?.mode;
  const targets = (MODE_TRANSITIONS[mode] ?? []).filter((m) =>
    m !== "AUTO" || model.automationEnabled !== false
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
        onclick: () => setMode(target),
        title: MODE_HINTS[target],
      }, `→ ${target}`)
    ),
  );
}

async function setMode(target) {
  const out = byId("mode-result");
  model.modeResultFor = target;
  setResult(out, "pending", `Switching to ${target}…`);
  try {
    const r = await api.post("/v0/mode", { mode: target });
    const failures = r.hook_failures ?? [];
    model.modeResultFor = r.mode;
    setResult(
      out,
      failures.length ? "warn" : "ok",
      `Mode ${r.mode}` +
        (failures.length
          ? `; ${failures.length} hook call(s) failed: ${
            failures.map((f) => `${f.device_handle} ${f.function}: ${f.error}`).join("; ")
          }`
          : ""),
    );
  } catch (err) {
    setResult(out, "error", errorText(err));
  }
  await loadStatus().catch(showRefreshError);
}

/** Latches the e-stop at once (no confirmation: a stop must never wait for one). */
async function triggerEstop() {
  const section = byId("estop-result");
  const body = byId("estop-result-body");
  section.hidden = false;
  section.className = "estop-result pending";
  model.modeResultFor = null;
  setResult(byId("mode-result"), "", "");
  fill(body, h("p", { role: "status", text: "E-stop sent…" }));
  try {
    const r = await api.post("/v0/estop", { reason: "operator console" });
    renderEstopResult(r);
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
  await loadStatus().catch(showRefreshError);
}

function renderEstopResult(r) {
  const section = byId("estop-result");
  const v = r.verification;
  const outcome = v?.outcome ?? "unverifiable";
  section.className = `estop-result estop-${outcome}`;
  const failed = (r.actions ?? []).filter((a) => !a.success).length;
  const children = [
    h(
      "p",
      { class: "estop-summary", role: "status" },
      h("strong", { text: r.latched ? "Latched. " : "Not latched. " }),
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
          JSON.stringify(c.expected),
          formatValue(c.observed),
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

function openClearDialog() {
  const dialog = /** @type {HTMLDialogElement} */ (byId("clear-dialog"));
  dialog.showModal();
  byId("clear-cancel").focus();
}

async function confirmClear() {
  const dialog = /** @type {HTMLDialogElement} */ (byId("clear-dialog"));
  dialog.close();
  const out = byId("mode-result");
  try {
    await api.post("/v0/estop/clear");
    setResult(
      out,
      "ok",
      "E-stop latch released. The mode stays FAULT: switch to MANUAL to re-arm.",
    );
  } catch (err) {
    setResult(out, "error", errorText(err));
  }
  await loadStatus().catch(showRefreshError);
  byId("estop").focus();
}

// ---- devices: live values and function forms ----

const key = (...parts) => parts.join("/");

async function loadInventory() {
  const list = (await api.get("/v0/devices")).devices ?? [];
  const withCaps = await Promise.all(list.map(async (d) => {
    try {
      const c = await api.get(
        `/v0/devices/${encodeURIComponent(d.provider_id)}/${
          encodeURIComponent(d.device_id)
        }/capabilities`,
      );
      return { ...d, caps: c.capabilities, capsError: "" };
    } catch (err) {
      return { ...d, caps: { signals: [], functions: [] }, capsError: String(err) };
    }
  }));
  const inventoryKey = JSON.stringify(withCaps);
  if (inventoryKey === model.inventoryKey) return;
  model.inventoryKey = inventoryKey;
  model.devices = withCaps;
  renderDevices();
  await Promise.all([loadState(), loadHealth()]);
}

let inventoryTimer = 0;
function scheduleInventory() {
  clearTimeout(inventoryTimer);
  inventoryTimer = setTimeout(() => loadInventory().catch(showRefreshError), INVENTORY_DEBOUNCE_MS);
}

function renderDevices() {
  model.cells.clear();
  model.healthBadges.clear();
  const box = byId("devices");
  if (model.devices.length === 0) {
    fill(box, h("p", { class: "muted", text: "No devices." }));
    return;
  }
  fill(box, ...model.devices.map(deviceCard));
}

function deviceCard(d) {
  const dk = key(d.provider_id, d.device_id);
  const titleId = `dev-${cssId(dk)}`;
  const liveness = h("span", { class: "badge q-UNKNOWN", text: "liveness …" });
  model.healthBadges.set(dk, liveness);
  const signals = d.caps.signals ?? [];
  const rows = signals.map((s) => {
    const sk = key(d.provider_id, d.device_id, s.signal_id);
    const valueEl = h("td", { class: "value", text: "—" });
    const qualityEl = h("td", {}, badge("—", "q-UNKNOWN"));
    const ageEl = h("td", { class: "age", text: "—" });
    model.cells.set(sk, { valueEl, qualityEl, ageEl, ts: 0 });
    return h(
      "tr",
      { "data-signal": sk },
      h(
        "th",
        { scope: "row" },
        s.label || s.signal_id,
        h("span", { class: "id", text: s.signal_id }),
      ),
      valueEl,
      qualityEl,
      ageEl,
    );
  });
  return h(
    "article",
    { class: "device", "aria-labelledby": titleId, "data-device": dk },
    h(
      "header",
      {},
      h("h3", { id: titleId, text: d.display_name }),
      h("span", { class: "muted", text: `${dk} · ${d.type}` }),
      liveness,
    ),
    d.capsError ? h("p", { class: "error", text: d.capsError }) : null,
    signals.length
      ? h(
        "table",
        { class: "signals" },
        h("caption", { class: "sr-only", text: `Signals of ${d.display_name}` }),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ...["Signal", "Value", "Quality", "Age"].map((t) => h("th", { scope: "col", text: t })),
          ),
        ),
        h("tbody", {}, ...rows),
      )
      : h("p", { class: "muted", text: "No signals." }),
    ...(d.caps.functions ?? []).map((f) => functionForm(d, f)),
  );
}

function functionForm(d, f) {
  const fk = key(d.provider_id, d.device_id, f.function_id);
  const base = `fn-${cssId(fk)}`;
  const fields = Object.entries(f.args ?? {}).map(([name, spec]) => ({
    name,
    spec,
    ui: field(`${base}-${cssId(name)}`, name, spec),
  }));
  const result = h("p", { class: "result", role: "status" });
  const kind = f.actuating ? "actuating" : "read";
  const onsubmit = async (e) => {
    e.preventDefault();
    const args = {};
    let bad = 0;
    for (const { name, spec, ui } of fields) {
      const r = readArg(name, spec, ui.read());
      ui.setError("error" in r ? r.error : "");
      if ("error" in r) bad++;
      else if ("value" in r) args[name] = r.value;
    }
    if (bad > 0) {
      setResult(result, "error", `Not sent: ${bad} field(s) need fixing.`);
      return;
    }
    setResult(result, "pending", "Calling…");
    try {
      await api.post("/v0/call", {
        provider_id: d.provider_id,
        device_id: d.device_id,
        function_id: f.function_id,
        args,
      });
      setResult(
        result,
        "ok",
        `OK at ${new Date().toLocaleTimeString()}; the device was re-polled.`,
      );
    } catch (err) {
      setResult(result, "error", errorText(err));
    }
  };
  return h(
    "form",
    {
      class: `fn fn-${kind}`,
      novalidate: true,
      "data-fn": fk,
      "aria-labelledby": `${base}-title`,
      onsubmit,
    },
    h(
      "div",
      { class: "fn-head" },
      h("h4", { id: `${base}-title`, text: f.name }),
      badge(f.actuating ? "actuating" : "read-only", `kind-${kind}`),
      h("span", { class: "muted", text: f.label }),
    ),
    fields.length ? h("div", { class: "fields" }, ...fields.map((x) => x.ui.row)) : null,
    h(
      "div",
      { class: "fn-actions" },
      h("button", { type: "submit", class: f.actuating ? "actuate" : "" }, `Run ${f.name}`),
      result,
    ),
  );
}

async function loadState() {
  const t0 = Date.now();
  const r = await api.get("/v0/state");
  const t1 = Date.now();
  model.clockOffsetMs = r.generated_at_epoch_ms - (t0 + t1) / 2;
  for (const dev of r.devices ?? []) {
    for (const v of dev.values ?? []) {
      showValue(
        key(dev.provider_id, dev.device_id, v.signal_id),
        v.value,
        v.quality,
        v.timestamp_epoch_ms,
      );
    }
  }
}

function showValue(sk, value, quality, ts) {
  const cell = model.cells.get(sk);
  if (cell === undefined) return;
  // A state read that started before a newer streamed sample must not show the older one.
  if (typeof ts === "number" && ts < cell.ts) return;
  if (value !== undefined) setText(cell.valueEl, formatValue(value));
  if (quality !== undefined) setQuality(cell.qualityEl, quality);
  if (typeof ts === "number") cell.ts = ts;
  setText(cell.ageEl, cell.ts ? formatAge(serverNow() - cell.ts) : "—");
}

function setQuality(el, quality) {
  const b = el.firstElementChild;
  if (b && b.textContent === quality) return;
  fill(el, badge(quality, `q-${quality}`));
}

const serverNow = () => Date.now() + model.clockOffsetMs;

function tickAges() {
  const now = serverNow();
  for (const cell of model.cells.values()) {
    if (cell.ts) setText(cell.ageEl, formatAge(now - cell.ts));
  }
}

// ---- status and health ----

async function loadStatus() {
  const seq = ++model.statusStarted;
  const modeEvents = model.modeEvents;
  const s = await api.get("/v0/runtime/status");
  if (seq < model.statusShown) return;
  model.statusShown = seq;
  // A mode change streamed while this read was under way is newer than its answer.
  if (modeEvents !== model.modeEvents && model.status) s.mode = model.status.mode;
  model.status = s;
  renderStatus();
}

async function loadHealth() {
  const r = await api.get("/v0/providers/health");
  for (const p of r.providers ?? []) {
    for (const d of p.devices ?? []) {
      const b = model.healthBadges.get(key(p.provider_id, d.device_id));
      if (b) {
        b.className = `badge q-${healthClass(d.health)}`;
        setText(b, `liveness ${d.health}`);
      }
    }
  }
  if (isVisible("health")) renderHealth(r.providers ?? []);
}

function healthClass(health) {
  return { OK: "OK", WARNING: "STALE", STALE: "STALE", FAULT: "FAULT" }[health] ?? "UNAVAILABLE";
}

function renderHealth(providers) {
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
          ["Last seen", p.last_seen_ago_ms === null ? "—" : `${formatAge(p.last_seen_ago_ms)} ago`],
          ["Up for", formatAge((p.uptime_seconds ?? 0) * 1000)],
          ["Devices", `${p.device_count} (${p.failed_device_count} failed)`],
          ["Supervision", sup.enabled ? "restarts enabled" : "no restarts"],
          ["Restarts attempted", `${sup.attempt_count ?? 0} of ${sup.max_attempts ?? 0}`],
          ["Crash detected", sup.crash_detected ? "yes" : "no"],
          ["Circuit", sup.circuit_open ? "OPEN (no further restarts)" : "closed"],
          [
            "Next restart",
            sup.next_restart_in_ms === null || sup.next_restart_in_ms === undefined
              ? "—"
              : `in ${formatAge(sup.next_restart_in_ms)}`,
          ],
          [
            "Provider reports",
            p.reported
              ? `${p.reported.state}${p.reported.message ? ` — ${p.reported.message}` : ""}`
              : "—",
          ],
          [
            "Data faults",
            p.data_faults
              ? `${p.data_faults.type_mismatch} type, ${p.data_faults.non_finite} non-finite, ${p.data_faults.undeclared_signal} undeclared`
              : "—",
          ],
        ]),
        (p.discovery_warnings ?? []).length
          ? h("ul", { class: "warn" }, ...p.discovery_warnings.map((w) => h("li", { text: w })))
          : null,
        table(
          `Device liveness of ${p.provider_id}`,
          ["Device", "Liveness", "Last poll", "Stale signals", "Faulty signals"],
          (p.devices ?? []).map((d) => [
            d.device_id,
            badge(d.health, `q-${healthClass(d.health)}`),
            d.last_poll_ms ? `${formatAge(d.staleness_ms)} ago` : "never",
            String(d.stale_signal_count),
            String(d.fault_signal_count),
          ]),
        ),
      );
    }),
  );
}

// ---- parameters ----

async function loadParameters() {
  let list;
  try {
    list = (await api.get("/v0/parameters")).parameters ?? [];
  } catch (err) {
    model.parametersKey = "";
    fill(byId("parameters"), h("p", { class: "muted", text: String(err) }));
    return;
  }
  list.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const shape = JSON.stringify(list.map(({ value: _v, ...rest }) => rest));
  if (shape !== model.parametersKey) {
    model.parametersKey = shape;
    renderParameters(list);
  }
  for (const p of list) {
    const cell = model.parameterValues.get(p.name);
    if (cell) setText(cell, String(p.value));
  }
}

function renderParameters(list) {
  model.parameterValues.clear();
  if (list.length === 0) {
    fill(byId("parameters"), h("p", { class: "muted", text: "No parameters declared." }));
    return;
  }
  fill(
    byId("parameters"),
    ...list.map((p) => {
      const id = `param-${cssId(p.name)}`;
      const valueEl = h("strong", { class: "value", text: String(p.value) });
      model.parameterValues.set(p.name, valueEl);
      const ui = field(`${id}-new`, `New value of ${p.name}`, { ...p, required: true });
      const result = h("p", { class: "result", role: "status" });
      const onsubmit = async (e) => {
        e.preventDefault();
        const r = readParameter(p, ui.read());
        ui.setError("error" in r ? r.error : "");
        if ("error" in r) {
          setResult(result, "error", "Not sent: fix the value.");
          return;
        }
        setResult(result, "pending", "Setting…");
        try {
          const a = await api.post("/v0/parameters", { name: p.name, value: r.value });
          setResult(result, "ok", `${a.parameter.name} = ${a.parameter.value}`);
        } catch (err) {
          setResult(result, "error", errorText(err));
        }
        await loadParameters();
      };
      return h(
        "form",
        { class: "card param", novalidate: true, "data-parameter": p.name, onsubmit },
        h("h3", { text: p.name }),
        h("p", {}, "Current value: ", valueEl, h("span", { class: "muted", text: ` (${p.type})` })),
        ui.row,
        h("div", { class: "fn-actions" }, h("button", { type: "submit" }, `Set ${p.name}`), result),
      );
    }),
  );
}

// ---- automation ----

async function loadAutomation(withTree) {
  let s;
  try {
    s = await api.get("/v0/automation/status");
    model.automationEnabled = true;
  } catch (err) {
    if (err instanceof ApiError && err.status === 503) model.automationEnabled = false;
    fill(byId("automation-status"), h("p", { class: "muted", text: String(err) }));
    fill(byId("automation-tree"));
    renderModeButtons();
    return;
  }
  renderModeButtons();
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
  if (withTree || !model.treeShown) {
    try {
      const t = await api.get("/v0/automation/tree");
      fill(byId("automation-tree"), treeOutline(t.tree));
      model.treeShown = true;
    } catch (err) {
      fill(byId("automation-tree"), h("p", { class: "muted", text: String(err) }));
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

// ---- runs ----

async function loadRuns() {
  let r;
  try {
    r = await api.get(`/v0/runs?limit=${RUNS_LISTED}`);
  } catch (err) {
    model.runsKey = "";
    model.runFormsFor = null;
    fill(byId("runs"), h("p", { class: "muted", text: String(err) }));
    return;
  }
  const runs = r.runs ?? [];
  const runsKey = JSON.stringify(runs);
  if (runsKey === model.runsKey) return;
  model.runsKey = runsKey;
  if (model.runFormsFor === null) {
    fill(
      byId("runs"),
      h("div", { id: "run-forms" }),
      h("p", { id: "runs-result", class: "result", role: "status" }),
      h("div", { id: "runs-list" }),
      h("div", { id: "run-events" }),
    );
  }
  const open = runs.find((x) => x.state === "open") ?? null;
  if ((open?.run_id ?? "") !== model.runFormsFor) {
    model.runFormsFor = open?.run_id ?? "";
    renderRunForms(open);
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
            onclick: () => showRunEvents(x.run_id),
          }, "Show"),
        ]),
        "runs-table",
      )
      : h("p", { class: "muted", text: "No runs yet." }),
  );
}

function renderRunForms(open) {
  const result = byId("runs-result");
  const act = async (what, fn) => {
    setResult(result, "pending", `${what}…`);
    try {
      setResult(result, "ok", await fn());
    } catch (err) {
      setResult(result, "error", errorText(err));
    }
    model.runsKey = "";
    await loadRuns();
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
            const r = await api.post("/v0/runs", text ? { experiment_label: text } : {});
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
            type.setError(
              t === ""
                ? "Marker type: is required"
                : t.length > 256
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
                payload.setError(`Payload: not JSON (${err instanceof Error ? err.message : err})`);
                return;
              }
              if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
                payload.setError('Payload: must be a JSON object, e.g. {"valve": "v1"}');
                return;
              }
              body = { ...body, payload: parsed };
            }
            if (t === "" || t.length > 256) return;
            act("Adding marker", async () => {
              const r = await api.post(`${path}/events`, body);
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
              const a = await api.post(`${path}/close`, { close_reason: r.value.string });
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

async function showRunEvents(runId) {
  const box = byId("run-events");
  try {
    const r = await api.get(
      `/v0/runs/${encodeURIComponent(runId)}/events?limit=${RUN_EVENTS_LISTED}`,
    );
    fill(
      box,
      table(
        `Events of ${runId} (first ${RUN_EVENTS_LISTED})`,
        ["#", "Category", "Type", "When", "Payload"],
        (r.events ?? []).map((e) => [
          String(e.sequence),
          e.category,
          e.type || "—",
          formatTime(e.occurred_at_epoch_ms),
          JSON.stringify(e.payload),
        ]),
      ),
    );
  } catch (err) {
    fill(box, h("p", { class: "error", text: String(err) }));
  }
}

// ---- telemetry ----

async function loadTelemetry() {
  let s;
  try {
    s = await api.get("/v0/telemetry/status");
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

// ---- shared pieces ----

function facts(pairs) {
  return h(
    "dl",
    { class: "kv" },
    ...pairs.map(([k, v]) => h("div", {}, h("dt", { text: k }), h("dd", {}, v))),
  );
}

function table(caption, heads, rows, cls = "") {
  return h(
    "table",
    { class: `grid ${cls}` },
    h("caption", { text: caption }),
    h("thead", {}, h("tr", {}, ...heads.map((t) => h("th", { scope: "col", text: t })))),
    h(
      "tbody",
      {},
      ...rows.map((cells) => h("tr", {}, ...cells.map((c) => h("td", {}, c)))),
    ),
  );
}

/**
 * An API error as shown: verbatim, plus what to configure when the origin policy refused, or how
 * to go on when the token's role may not do this (the API names the role needed; the "Enter API
 * token" button is offered to switch to a token that has it).
 */
function errorText(err) {
  const text = String(err);
  if (
    err instanceof ApiError && err.code === "PERMISSION_DENIED" &&
    err.message.startsWith("Origin not allowed")
  ) {
    return `${text} — Opened under a host name? List it in http.allowed_hosts, or open the ` +
      "console by IP address.";
  }
  if (isRoleRefusal(err)) {
    byId("token-button").hidden = false;
    return `${text} — This token may not do this: use "Enter API token" to switch to a token ` +
      "with that role.";
  }
  return text;
}

/** Whether the API refused a request for the token's role (403 "... role X required ..."). */
function isRoleRefusal(err) {
  return err instanceof ApiError && err.status === 403 && err.code === "PERMISSION_DENIED" &&
    /\brole \w+ required\b/.test(err.message);
}

function cssId(text) {
  return String(text).replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0).toString(16)}`);
}

function showRefreshError(err) {
  const el = byId("refresh-error");
  const text = err instanceof ApiError && err.status === 401
    ? `${err} — enter the API token to continue.`
    : `Refresh failed: ${err}`;
  el.hidden = false;
  setText(el, text);
  if (err instanceof ApiError && err.status === 401) byId("token-button").hidden = false;
}

function clearRefreshError() {
  byId("refresh-error").hidden = true;
}

// ---- views ----

function currentView() {
  const v = location.hash.slice(1);
  return VIEWS.includes(v) ? v : "devices";
}

function isVisible(view) {
  return currentView() === view;
}

function showView() {
  const view = currentView();
  for (const v of VIEWS) byId(`view-${v}`).hidden = v !== view;
  for (const a of document.querySelectorAll(".tabs a")) {
    if (a.getAttribute("href") === `#${view}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  refreshView(view, true).catch(showRefreshError);
}

async function refreshView(view, full) {
  if (view === "alarms") await alarms.load();
  else if (view === "health") await loadHealth();
  else if (view === "automation") await loadAutomation(full);
  else if (view === "runs") await loadRuns();
  else if (view === "telemetry") await loadTelemetry();
  else if (view === "parameters" && full) await loadParameters();
}

// ---- refresh cycle and event stream ----

let refreshing = null;

/** Re-reads everything (full: inventory, parameters and tree too). */
function refresh(full) {
  if (refreshing !== null && !full) return refreshing;
  const run = async () => {
    const tasks = [loadStatus(), loadHealth(), refreshView(currentView(), full)];
    if (full) {
      tasks.push(loadInventory(), loadParameters(), loadAutomation(true), alarms.load());
    } else {
      tasks.push(loadState());
    }
    const results = await Promise.allSettled(tasks);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) showRefreshError(failed.reason);
    else clearRefreshError();
  };
  refreshing = run().finally(() => refreshing = null);
  return refreshing;
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
      const sk = key(data.provider_id, data.device_id, data.signal_id);
      showValue(sk, data.value, data.quality, data.timestamp_ms);
      alarms.onSignal(sk, data.value, data.quality);
      break;
    }
    case "quality_change": {
      const sk = key(data.provider_id, data.device_id, data.signal_id);
      showValue(sk, undefined, data.new_quality, undefined);
      alarms.onSignal(sk, undefined, data.new_quality);
      break;
    }
    case "device_availability":
    case "provider_health_change":
      scheduleInventory();
      loadStatus().catch(showRefreshError);
      loadHealth().catch(showRefreshError);
      break;
    case "mode_change":
      // A "Mode X" result is old news once the mode moves on (an e-stop, another client).
      if (model.modeResultFor !== null && data.new_mode !== model.modeResultFor) {
        model.modeResultFor = null;
        setResult(byId("mode-result"), "", "");
      }
      model.modeEvents++;
      if (model.status) {
        model.status.mode = data.new_mode;
        renderStatus();
      }
      loadStatus().catch(showRefreshError);
      break;
    case "parameter_change":
      loadParameters().catch(showRefreshError);
      break;
    case "estop_change":
    case "estop_verification":
      loadStatus().catch(showRefreshError);
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
      if (isVisible("automation")) loadAutomation(false).catch(showRefreshError);
      break;
    default:
      break;
  }
}

function onStreamState(state, detail) {
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
  byId("estop").addEventListener("click", triggerEstop);
  byId("estop-clear").addEventListener("click", openClearDialog);
  byId("estop-result-hide").addEventListener("click", () => {
    byId("estop-result").hidden = true;
    byId("estop").focus();
  });
  byId("clear-cancel").addEventListener("click", () => {
    /** @type {HTMLDialogElement} */ (byId("clear-dialog")).close();
    byId("estop-clear").focus();
  });
  byId("clear-confirm").addEventListener("click", confirmClear);
  addEventListener("hashchange", showView);
  let opened = false;
  showView();
  const stream = new EventStream({
    url: "/v0/events",
    headers: () => api.headers(),
    onEvent,
    onComment: (text) => {
      // A slow reader lost events: re-read the values, alarms and interlocks.
      if (text.startsWith("dropped")) {
        loadState().catch(showRefreshError);
        alarms.load();
      }
    },
    // After every reconnection: resync everything, since events may have been missed.
    onOpen: () => {
      if (opened) refresh(true);
      opened = true;
    },
    onState: onStreamState,
    onUnauthorized: () => api.authenticate(api.token),
  });
  byId("token-button").addEventListener("click", async () => {
    if (!(await api.authenticate(api.token, true))) return;
    refresh(true);
    stream.retryNow();
  });
  stream.start();
  // The stream's first opening usually lands while this first read runs; later openings
  // (reconnections) resync.
  refresh(true);
  setInterval(() => refresh(false), REFRESH_INTERVAL_MS);
  setInterval(tickAges, AGE_TICK_MS);
}

main();
