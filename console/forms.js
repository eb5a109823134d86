// Forms generated from the API's ArgSpecs (capabilities) and parameter declarations: one field
// per argument, checked in the browser before anything is sent, with the rules the runtime
// applies (type, required, min/max, allowed values). The runtime checks again; its refusal is
// shown as it words it.

import { h } from "./dom.js";

/** Integers in a call travel as JSON numbers: the runtime accepts at most ±(2^53-1). */
export const MAX_JSON_INTEGER = Number.MAX_SAFE_INTEGER;

const DOUBLE_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const INT_RE = /^[+-]?\d+$/;
const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Longest text (a name, a value typed, an allowed value) a field's error shows; longer is cut,
 * marked with an ellipsis -- the runtime's bound (PROVIDER_TEXT_CHARS), so that both word a
 * refusal alike and a 10 kB paste or a provider's 10 kB name makes no error of that length.
 */
export const ERROR_TEXT_CHARS = 80;

/** Allowed values an error lists at most, the rest counted, as the runtime's MAX_NAMED_IN_WARNING. */
export const MAX_NAMED_IN_ERROR = 20;

/**
 * `text` cut to ERROR_TEXT_CHARS, as the runtime's providerText: a cut never splits a character
 * beyond U+FFFF (its surrogate pair is left out whole).
 */
function cut(text) {
  if (text.length <= ERROR_TEXT_CHARS) return text;
  const last = text.charCodeAt(ERROR_TEXT_CHARS - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? ERROR_TEXT_CHARS - 1 : ERROR_TEXT_CHARS;
  return `${text.slice(0, end)}\u2026`;
}

/**
 * `text` cut, then JSON-quoted, as the runtime's quoteProviderText (DEL, the C1 controls and
 * U+2028/U+2029 written `\u007f`-style too): `"Open"`.
 */
function quoted(text) {
  return JSON.stringify(cut(text)).replace(
    /[\u007f-\u009f\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** The allowed values an error lists, as the runtime lists them: `"open", "closed"`. */
function allowedText(allowed) {
  const named = allowed.slice(0, MAX_NAMED_IN_ERROR).map(quoted).join(", ");
  return allowed.length <= MAX_NAMED_IN_ERROR
    ? named
    : `${named} and ${allowed.length - MAX_NAMED_IN_ERROR} more`;
}

/**
 * The spec in words for the field's hint: `double, 0 … 1, required`.
 * @param {{type: string, required?: boolean, min?: number, max?: number,
 *   allowed_values?: string[], unit?: string}} spec
 */
export function describeSpec(spec) {
  const parts = [spec.type];
  if (spec.unit) parts.push(spec.unit);
  if (spec.min !== undefined && spec.max !== undefined) parts.push(`${spec.min} … ${spec.max}`);
  else if (spec.min !== undefined) parts.push(`≥ ${spec.min}`);
  else if (spec.max !== undefined) parts.push(`≤ ${spec.max}`);
  if (spec.allowed_values?.length) parts.push(`one of ${spec.allowed_values.join(", ")}`);
  parts.push(spec.required ? "required" : "optional");
  return parts.join(", ");
}

/**
 * Checks one argument's raw input against its spec.
 * Returns `{value}` (a typed value as the API takes it), `{omit: true}` (an optional argument
 * left empty) or `{error}` (why it cannot be sent, naming the argument, cut, and quoting the text
 * typed and the allowed values as the runtime quotes them).
 * @param {string} fieldName the argument's or parameter's name
 * @param {{type: string, required?: boolean, min?: number, max?: number,
 *   allowed_values?: string[]}} spec
 * @param {string | boolean} raw text of the field, or a checkbox's state
 * @returns {{value: Record<string, unknown>} | {omit: true} | {error: string}}
 */
export function readArg(fieldName, spec, raw) {
  // A provider's text (any length), or a configured name: cut.
  const name = cut(fieldName);
  if (typeof raw === "boolean") {
    return spec.type === "bool"
      ? { value: { type: "bool", bool: raw } }
      : { error: `${name}: must be a ${spec.type}` };
  }
  const text = spec.type === "string" || spec.type === "bytes" ? raw : raw.trim();
  if (text === "") {
    return spec.required ? { error: `${name}: is required` } : { omit: true };
  }
  switch (spec.type) {
    case "double": {
      const x = Number(text);
      if (!DOUBLE_RE.test(text) || !Number.isFinite(x)) {
        return { error: `${name}: must be a number, got ${quoted(text)}` };
      }
      return bounded(name, spec, x, cut(text)) ?? { value: { type: "double", double: x } };
    }
    case "int64":
    case "uint64": {
      if (!INT_RE.test(text)) {
        return { error: `${name}: must be a whole number, got ${quoted(text)}` };
      }
      const n = Number(text);
      if (spec.type === "uint64" && n < 0) {
        return { error: `${name}: must not be negative (uint64), got ${cut(text)}` };
      }
      if (!Number.isSafeInteger(n)) {
        return {
          error: `${name}: must be within ±${MAX_JSON_INTEGER} (a JSON number), got ${cut(text)}`,
        };
      }
      return bounded(name, spec, n, String(n)) ?? { value: { type: spec.type, [spec.type]: n } };
    }
    case "bool":
      if (text === "true" || text === "false") {
        return { value: { type: "bool", bool: text === "true" } };
      }
      return { error: `${name}: must be true or false, got ${quoted(text)}` };
    case "string": {
      const allowed = spec.allowed_values ?? [];
      if (allowed.length > 0 && !allowed.includes(text)) {
        return {
          error: `${name}: ${quoted(text)} is not one of the allowed values (${
            allowedText(allowed)
          })`,
        };
      }
      return { value: { type: "string", string: text } };
    }
    case "bytes":
      if (!BASE64_RE.test(text)) {
        return { error: `${name}: must be base64 (A-Z a-z 0-9 + / with = padding)` };
      }
      return { value: { type: "bytes", base64: text } };
    default:
      return {
        error: `${name}: its provider declared no type (${spec.type}); the runtime refuses it`,
      };
  }
}

function bounded(name, spec, x, shown) {
  if (spec.min !== undefined && x < spec.min) {
    return { error: `${name}: ${shown} is below the minimum ${spec.min}` };
  }
  if (spec.max !== undefined && x > spec.max) {
    return { error: `${name}: ${shown} is above the maximum ${spec.max}` };
  }
  return null;
}

/**
 * Checks a parameter's new value (types double, int64, bool, string): `{value}` is the plain
 * JSON value POST /v0/parameters takes, else `{error}`.
 * @param {{name: string, type: string, min?: number, max?: number, allowed_values?: string[]}} p
 * @param {string | boolean} raw
 * @returns {{value: unknown} | {error: string}}
 */
export function readParameter(p, raw) {
  const r = readArg(p.name, { ...p, required: true }, raw);
  if ("error" in r) return r;
  if ("omit" in r) return { error: `${cut(p.name)}: is required` };
  const v = /** @type {any} */ (r.value);
  return { value: v[v.type] };
}

/**
 * One form field for an argument or a parameter: a labelled input (a select for allowed values
 * and optional bools, a checkbox for required bools) with its spec as a hint and a place for
 * its error. `read()` gives the raw value for readArg/readParameter.
 * @param {string} id unique element id
 * @param {string} label
 * @param {{type: string, required?: boolean, min?: number, max?: number,
 *   allowed_values?: string[], unit?: string, description?: string}} spec
 * @param {unknown} [initial] a current value to start from
 */
export function field(id, label, spec, initial) {
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const described = `${hintId} ${errorId}`;
  /** @type {HTMLInputElement | HTMLSelectElement} */
  let input;
  let read;
  const allowed = spec.allowed_values ?? [];
  if (spec.type === "bool" && spec.required) {
    input = /** @type {HTMLInputElement} */ (h("input", {
      id,
      type: "checkbox",
      "aria-describedby": described,
      checked: initial === true,
    }));
    read = () => /** @type {HTMLInputElement} */ (input).checked;
  } else if (spec.type === "bool" || (spec.type === "string" && allowed.length > 0)) {
    const options = spec.type === "bool" ? ["true", "false"] : allowed;
    input = /** @type {HTMLSelectElement} */ (h(
      "select",
      { id, "aria-describedby": described, "aria-required": spec.required === true },
      spec.required ? null : h("option", { value: "", text: "(not set)" }),
      spec.required && initial === undefined
        ? h("option", { value: "", text: "choose…", disabled: true })
        : null,
      ...options.map((o) => h("option", { value: o, text: o })),
    ));
    input.value = initial === undefined ? "" : String(initial);
    read = () => input.value;
  } else {
    const numeric = spec.type === "double" || spec.type === "int64" || spec.type === "uint64";
    const negative = spec.min === undefined || spec.min < 0;
    input = /** @type {HTMLInputElement} */ (h("input", {
      id,
      type: "text",
      // A tablet's numeric pad has no minus sign: offer the full keyboard when one is needed.
      inputmode: !numeric
        ? undefined
        : negative
        ? "text"
        : spec.type === "double"
        ? "decimal"
        : "numeric",
      autocomplete: "off",
      spellcheck: "false",
      "aria-describedby": described,
      "aria-required": spec.required === true,
      value: initial === undefined || initial === null ? "" : String(initial),
    }));
    read = () => input.value;
  }
  const error = h("span", { id: errorId, class: "field-error", role: "alert" });
  const row = h(
    "div",
    { class: "field" },
    h("label", { for: id }, label, spec.required ? h("span", { class: "req", text: " *" }) : null),
    // The declared unit right beside the input (none when the spec declares none).
    spec.unit
      ? h("span", { class: "with-unit" }, input, h("span", { class: "unit", text: spec.unit }))
      : input,
    h("span", {
      id: hintId,
      class: "hint",
      text: describeSpec(spec) + (spec.description ? ` — ${spec.description}` : ""),
    }),
    error,
  );
  return {
    row,
    input,
    read,
    /** Shows (or clears, with "") this field's error. */
    setError(message) {
      error.textContent = message;
      if (message === "") input.removeAttribute("aria-invalid");
      else input.setAttribute("aria-invalid", "true");
    },
  };
}
