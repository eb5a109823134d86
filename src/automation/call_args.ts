/**
 * CallDevice's `args` text parsed into typed arguments: outside bt/ (the tree engine),
 * so the AUTO gate (automation_engine.ts) checks a tree's literal arguments without loading the
 * engine and its XML parser at start-up (tests/meta/startup_graph_test.ts).
 */
import {
  errorMessage,
  exactInteger,
  INT64_MAX,
  INT64_MIN,
  type TypedValue,
} from "../common/mod.ts";

interface JsonReviverContext {
  source?: string;
}

/**
 * Parses CallDevice `args` (after the `json:` prefix): a JSON object whose values are numbers,
 * booleans or strings. JSON floats (with `.`/exponent in the source text) become double, JSON
 * integers int64, exactly from their source digits (beyond +/-2^53 too, within the int64 range);
 * a number beyond any double (`1e400`, read as Infinity) is refused.
 * Returns the typed args or an error message.
 */
export function parseCallArgs(
  text: string,
): { ok: true; args: Record<string, TypedValue> } | { ok: false; error: string } {
  const body = text.startsWith("json:") ? text.slice(5) : text;
  // Source text of every number, per holder object (the reviver sees nested holders too).
  const sources = new WeakMap<object, Map<string, string>>();
  let parsed: unknown;
  try {
    parsed = JSON.parse(
      body,
      function (this: unknown, key: string, value: unknown, context?: JsonReviverContext) {
        if (typeof value === "number" && typeof this === "object" && this !== null) {
          let m = sources.get(this);
          if (!m) sources.set(this, m = new Map());
          if (context?.source !== undefined) m.set(key, context.source);
        }
        return value;
      },
    );
  } catch (err) {
    const reason = errorMessage(err);
    return { ok: false, error: `invalid JSON in args: ${reason}` };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return { ok: false, error: "args must be a JSON object" };
  }
  // No prototype while built, and made a plain object by fromEntries (which defines, never sets):
  // an argument named `__proto__` stays an argument (refused as unknown by the declaration
  // check), whatever the runtime's `__proto__` setting (`--unsafe-proto`).
  const out: Record<string, TypedValue> = Object.create(null);
  const numberSources = sources.get(parsed);
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value === "boolean") out[name] = { type: "bool", bool: value };
    else if (typeof value === "string") out[name] = { type: "string", string: value };
    else if (typeof value === "number") {
      const src = numberSources?.get(name);
      const isFloat = src !== undefined ? /[.eE]/.test(src) : !Number.isInteger(value);
      if (isFloat) {
        // Valid JSON beyond any double (`1e400`) reads as +/-Infinity: refused, as POST /v0/call
        // and the Sparkplug node refuse it (an unbounded argument would pass the call's bounds).
        if (!Number.isFinite(value)) {
          return {
            ok: false,
            error: `arg '${name}': ${src ?? value} is not a finite double (beyond any double)`,
          };
        }
        out[name] = { type: "double", double: value };
      } else if (Number.isSafeInteger(value)) out[name] = { type: "int64", int64: value };
      else {
        const exact = src !== undefined ? BigInt(src) : null;
        if (exact === null || exact < INT64_MIN || exact > INT64_MAX) {
          return { ok: false, error: `arg '${name}': integer ${src ?? value} is out of range` };
        }
        out[name] = { type: "int64", int64: exactInteger(exact) };
      }
    } else {
      const kind = value === null ? "null" : Array.isArray(value) ? "array" : "object";
      return { ok: false, error: `arg '${name}': unsupported JSON value (${kind})` };
    }
  }
  return { ok: true, args: Object.fromEntries(Object.entries(out)) };
}
