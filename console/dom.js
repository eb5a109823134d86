// Small DOM and formatting helpers (no framework: a page this size does not need one).

/**
 * Creates an element. `props`: `class`, `text`, `hidden`, `on<event>` handlers, `aria-*`,
 * `data-*` and other attributes; children are nodes or strings (null/false are skipped).
 * @param {string} tag
 * @param {Record<string, unknown>} [props]
 * @param {...(Node | string | null | undefined | false)} children
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = String(value);
    else if (key === "text") el.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    } else if (key === "value" || key === "checked" || key === "disabled" || key === "hidden") {
      /** @type {any} */ (el)[key] = value;
    } else if (value === true) el.setAttribute(key, key.startsWith("aria-") ? "true" : "");
    else el.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child);
  }
  return el;
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren(...children.filter((c) => c !== null && c !== undefined && c !== false));
}

/** The element with this id (throws when the page lacks it: a bug, not an operator error). */
export function byId(id) {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`console: #${id} missing from index.html`);
  return el;
}

/** A small coloured label (`cls`: its colour class, e.g. `q-OK`); always with its word. */
export function badge(text, cls) {
  return h("span", { class: `badge ${cls}`, text });
}

/** Shows the outcome of an operator action: `kind` is ok, pending, warn, error or "". */
export function setResult(el, kind, text) {
  el.className = `result ${kind}`;
  el.textContent = text;
}

/** Sets text only when it changed (keeps screen readers and layout calm). */
export function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

/**
 * A value's text followed by its unit (`23.5 C`); the text alone when the unit is "" or there is
 * no value ("—", undefined).
 * @param {string | undefined} text
 * @param {string} unit
 */
export function withUnit(text, unit) {
  if (text === undefined) return "—";
  return unit && text !== "—" ? `${text} ${unit}` : text;
}

/**
 * A typed value as the API writes it (`{type, <member>}`) as short text.
 * @param {any} v
 */
export function formatValue(v) {
  if (v === null || v === undefined || typeof v !== "object") return "—";
  switch (v.type) {
    case "double":
      if (v.double === null) return v.non_finite ?? "NaN";
      return formatNumber(v.double);
    case "int64":
      return String(v.int64);
    case "uint64":
      return String(v.uint64);
    case "bool":
      return v.bool ? "true" : "false";
    case "string":
      return v.string === "" ? "\u201c\u201d" : v.string;
    case "bytes":
      return v.base64.length > 24 ? `${v.base64.slice(0, 24)}… (base64)` : `${v.base64} (base64)`;
    default:
      return "—";
  }
}

/** A double for reading at a glance: up to 4 decimals, no trailing zeros. */
export function formatNumber(x) {
  if (typeof x !== "number") return String(x);
  if (Number.isInteger(x)) return String(x);
  const abs = Math.abs(x);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e9)) return x.toExponential(3);
  return String(Number(x.toFixed(abs >= 1000 ? 1 : 4)));
}

/** An age in ms as `0.4 s`, `12 s`, `3 min`, `2 h`. */
export function formatAge(ms) {
  if (!Number.isFinite(ms)) return "—";
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

/** Epoch ms as local date and time (or — for null/0). */
export function formatTime(ms) {
  if (typeof ms !== "number" || ms <= 0) return "—";
  return new Date(ms).toLocaleString();
}

/**
 * A definition list of `[name, value]` pairs (a value is text or a node).
 * @param {[string, Node | string][]} pairs
 */
export function facts(pairs) {
  return h(
    "dl",
    { class: "kv" },
    ...pairs.map(([k, v]) => h("div", {}, h("dt", { text: k }), h("dd", {}, v))),
  );
}

/**
 * A table with a caption, column heads and rows of cells (text or nodes).
 * @param {string} caption
 * @param {string[]} heads
 * @param {(Node | string)[][]} rows
 * @param {string} [cls] more classes
 */
export function table(caption, heads, rows, cls = "") {
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
 * Text as a part of an element id: letters and digits kept, every other character (`_` and `-`
 * too) as `_` and 4 hex digits. Two texts never give the same part, and no part has a `-`, so
 * parts joined with `-` stay apart (`fn-<provider>-<device>-<function>`).
 */
export function cssId(text) {
  return String(text).replace(
    /[^A-Za-z0-9]/g,
    (c) => `_${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
