/**
 * Semantic rules for declared device calls (mode-transition hooks, safety.safe_state) and for
 * automation parameters.
 *
 * These are validated as errors whether or not automation is enabled. anolis checks some of them
 * only with automation on, but in this project modes (and so mode-transition hooks) exist without
 * automation, the safety ladder never depends on it, and a parameter that is wrong today would
 * break the day automation is switched on -- the issue lists the rules unconditionally.
 */
import { quoteProviderText } from "../common/mod.ts";
import { type Checker, describeValue, type Obj, present } from "./_checker.ts";
import { convertCallArg } from "./_scalars.ts";
import { MAX_FUNCTION_ID } from "./_schema.ts";
import { formatPath, type Path, type YamlSource } from "./_source.ts";
import { noteSourcePosition } from "./source_positions.ts";
import {
  type CallArgValue,
  type CallConfig,
  type HookConfig,
  MAX_PARAMETER_NAME_CHARS,
  type ParameterConfig,
  type ParameterType,
  RUNTIME_MODES,
  type RuntimeMode,
  type SafeStateExpectation,
} from "./types.ts";

const CALL_KEYS = ["device_handle", "function_id", "function_name", "args"] as const;
const HOOK_KEYS = ["from", "to", "fail_on_error", "calls"] as const;
const PARAMETER_KEYS = ["name", "type", "default", "min", "max", "allowed_values"] as const;
const PARAMETER_TYPES: readonly ParameterType[] = ["double", "int64", "bool", "string"];
const HANDLE_RE = /^([^/]+)\/.+$/;
const EXPECT_KEYS = ["signal", "equals", "min", "max"] as const;
/** `provider/device/signal`: provider up to the first `/`, signal after the last. */
const SIGNAL_RE = /^([^/]+)\/(.+)\/([^/]+)$/;

/** What call validation needs besides the checker. */
export interface CallContext {
  readonly checker: Checker;
  readonly source: YamlSource;
  /** Declared provider ids, to warn about handles naming none of them. */
  readonly providerIds: ReadonlySet<string>;
}

/** A list of call objects (safety.safe_state.hooks / setpoints, a hook's calls). */
export function readCalls(
  ctx: CallContext,
  raw: unknown,
  path: Path,
  positioned = false,
): CallConfig[] {
  const list = ctx.checker.sequence(raw, path) ?? [];
  const out: CallConfig[] = [];
  list.forEach((item, i) => {
    const call = readCall(ctx, item, [...path, i], positioned);
    if (call) out.push(call);
  });
  return out;
}

/** `positioned`: where it was read is kept (source_positions.ts) for messages naming it. */
function readCall(
  ctx: CallContext,
  raw: unknown,
  path: Path,
  positioned: boolean,
): CallConfig | null {
  const c = ctx.checker;
  const diagnosticsBefore = c.diagnostics.length;
  const obj = c.mapping(raw, path, true);
  if (obj === null) return null;
  c.knownKeys(obj, path, CALL_KEYS);
  const handle = c.requiredString(obj, path, "device_handle");
  const m = HANDLE_RE.exec(handle);
  if (handle !== "" && m === null) {
    c.error(
      [...path, "device_handle"],
      `must be \`provider/device\`, got ${describeValue(handle)}`,
    );
  } else if (m !== null && !ctx.providerIds.has(m[1]!)) {
    c.warning(
      [...path, "device_handle"],
      `provider ${quoteProviderText(m[1]!)} is not declared in providers; the call cannot resolve`,
    );
  }
  const functionId = c.integer(obj, path, "function_id", 0, { min: 0, max: MAX_FUNCTION_ID });
  const functionName = c.string(obj, path, "function_name", "");
  if (functionId === 0 && functionName === "" && !c.hasErrorAt([...path, "function_id"])) {
    c.error(path, "must provide function_id (> 0) or function_name");
  }
  const args: Record<string, CallArgValue> = {};
  const argsPath = [...path, "args"];
  const rawArgs = c.mapping(obj.args, argsPath) ?? {};
  for (const [name, value] of Object.entries(rawArgs)) {
    const argPath = [...argsPath, name];
    const scalar = ctx.source.scalarAt(argPath);
    if (value === null || typeof value === "object" || scalar === null) {
      c.error(
        argPath,
        `must be a scalar value (string, number or boolean), got ${describeValue(value)}`,
      );
      continue;
    }
    // The scalar's source text, quotes removed: quotes are not significant (examples/full.yaml,
    // mode_transition_hooks).
    const converted = convertCallArg(scalar.source ?? String(scalar.value));
    if (converted.ok) args[name] = converted.value;
    else c.error(argPath, converted.reason);
  }
  const call = { deviceHandle: handle, functionId, functionName, args, path: formatPath(path) };
  // Its position is for the runtime's messages about a call in force: a call with an error
  // never is (the file is refused), so its lookup is spared (--check-config stays linear with a
  // small constant per diagnostic, tests/config/linear_check_test.ts).
  if (!positioned || errorSince(c, diagnosticsBefore)) return call;
  return noteSourcePosition(call, ctx.source.position(path));
}

/** Whether an error was reported after the first `count` diagnostics. */
function errorSince(c: CallContext["checker"], count: number): boolean {
  for (let i = count; i < c.diagnostics.length; i++) {
    if (c.diagnostics[i]!.severity === "error") return true;
  }
  return false;
}

/** automation.mode_transition_hooks.before_transition / after_transition. */
export function readHooks(ctx: CallContext, raw: unknown, path: Path): HookConfig[] {
  const c = ctx.checker;
  const list = c.sequence(raw, path) ?? [];
  const out: HookConfig[] = [];
  list.forEach((item, i) => {
    const hookPath = [...path, i];
    const obj = c.mapping(item, hookPath, true);
    if (obj === null) return;
    c.knownKeys(obj, hookPath, HOOK_KEYS);
    const from = readMode(c, obj, hookPath, "from");
    const to = readMode(c, obj, hookPath, "to");
    const failOnError = c.boolean(obj, hookPath, "fail_on_error", true);
    const callsPath = [...hookPath, "calls"];
    let calls: CallConfig[] = [];
    if (!present(obj, "calls")) {
      c.error(callsPath, "is required (a hook needs at least one call)");
    } else if (Array.isArray(obj.calls) && obj.calls.length === 0) {
      c.error(callsPath, "must have at least one call");
    } else {
      // Positioned: the vetoing-hook warning names their lines (start-up, reloads).
      calls = readCalls(ctx, obj.calls, callsPath, true);
    }
    out.push(noteSourcePosition(
      { from, to, failOnError, calls, path: formatPath(hookPath) },
      ctx.source.position(hookPath),
    ));
  });
  return out;
}

/** A hook's from/to: a mode or `*`; an empty or missing value means any (`*`). */
function readMode(c: Checker, obj: Obj, parent: Path, key: string): RuntimeMode | "*" {
  const v = obj[key];
  if (v === undefined || v === null || v === "" || v === "*") return "*";
  if (typeof v === "string" && (RUNTIME_MODES as readonly string[]).includes(v)) {
    return v as RuntimeMode;
  }
  c.error(
    [...parent, key],
    `must be one of ${RUNTIME_MODES.join(", ")} or *, got ${describeValue(v)}`,
  );
  return "*";
}

/** automation.parameters. */
export function readParameters(c: Checker, raw: unknown, path: Path): ParameterConfig[] {
  const list = c.sequence(raw, path) ?? [];
  const out: ParameterConfig[] = [];
  const firstByName = new Map<string, number>();
  list.forEach((item, i) => {
    const p = [...path, i];
    const obj = c.mapping(item, p, true);
    if (obj === null) return;
    c.knownKeys(obj, p, PARAMETER_KEYS);
    const name = c.requiredString(obj, p, "name");
    // Characters (code points), as the editor schema's maxLength counts them: one outside the BMP
    // is two UTF-16 units of `length`. Refused, not cut (the name is the parameter's key); it is
    // still judged a duplicate below, as any name.
    const characters = [...name].length;
    if (characters > MAX_PARAMETER_NAME_CHARS) {
      c.error(
        [...p, "name"],
        `${quoteProviderText(name)} is ${characters} characters long, at most ` +
          `${MAX_PARAMETER_NAME_CHARS} (MAX_PARAMETER_NAME_CHARS)`,
      );
    }
    if (name !== "") {
      const first = firstByName.get(name);
      if (first !== undefined) {
        c.error(
          [...p, "name"],
          `duplicate parameter name ${quoteProviderText(name)} (first at ${
            formatPath([...path, first])
          })`,
        );
      } else {
        firstByName.set(name, i);
      }
    }
    let type: ParameterType | null = null;
    if (!present(obj, "type")) {
      c.error([...p, "type"], "is required");
    } else if (PARAMETER_TYPES.includes(obj.type as ParameterType)) {
      type = obj.type as ParameterType;
    } else {
      c.error(
        [...p, "type"],
        `must be one of ${PARAMETER_TYPES.join(", ")}, got ${describeValue(obj.type)}`,
      );
    }
    if (type === null && !present(obj, "default")) c.error([...p, "default"], "is required");
    const param = type === null ? null : readParameterValues(c, obj, p, type);
    if (param !== null && name !== "" && type !== null) out.push({ name, type, ...param });
  });
  return out;
}

function readParameterValues(
  c: Checker,
  obj: Obj,
  p: Path,
  type: ParameterType,
): Omit<ParameterConfig, "name" | "type"> | null {
  const numeric = type === "double" || type === "int64";
  let ok = true;
  const bound = (key: "min" | "max"): number | undefined => {
    if (!present(obj, key)) return undefined;
    if (!numeric) {
      c.error([...p, key], `is not allowed for a ${type} parameter (only double and int64)`);
      ok = false;
      return undefined;
    }
    const v = obj[key];
    if (typeof v !== "number" || !Number.isFinite(v)) {
      c.error([...p, key], `must be a number, got ${describeValue(v)}`);
      ok = false;
      return undefined;
    }
    return v;
  };
  let min = bound("min");
  let max = bound("max");
  if (min !== undefined && max !== undefined && min > max) {
    c.error([...p, "min"], `is greater than max (${min} > ${max})`);
    ok = false;
    min = max = undefined; // the default cannot be judged against contradictory bounds
  }
  let allowedValues: string[] = [];
  if (present(obj, "allowed_values")) {
    if (type !== "string") {
      c.error([...p, "allowed_values"], `is not allowed for a ${type} parameter (only string)`);
      ok = false;
    } else {
      const list = c.sequence(obj.allowed_values, [...p, "allowed_values"]);
      if (list === null) ok = false;
      else {
        list.forEach((v, i) => {
          if (typeof v !== "string") {
            c.error([...p, "allowed_values", i], `must be a string, got ${describeValue(v)}`);
            ok = false;
          }
        });
        allowedValues = list.filter((v): v is string => typeof v === "string");
      }
    }
  }
  const defPath = [...p, "default"];
  if (!present(obj, "default")) {
    c.error(defPath, "is required");
    return null;
  }
  const def = obj.default;
  const typeOk = type === "double"
    ? typeof def === "number" && Number.isFinite(def)
    : type === "int64"
    ? typeof def === "number" && Number.isSafeInteger(def)
    : type === "bool"
    ? typeof def === "boolean"
    : typeof def === "string";
  if (!typeOk) {
    const expected = {
      double: "a number",
      int64: "an integer within \u00b1(2^53-1)",
      bool: "a boolean",
      string: "a string",
    }[type];
    const article = type === "int64" ? "an" : "a";
    c.error(
      defPath,
      `must be ${expected} for ${article} ${type} parameter, got ${describeValue(def)}`,
    );
    return null;
  }
  const value = def as number | boolean | string;
  if (typeof value === "number" && min !== undefined && value < min) {
    c.error(defPath, `is below min (${value} < ${min})`);
    ok = false;
  }
  if (typeof value === "number" && max !== undefined && value > max) {
    c.error(defPath, `is above max (${value} > ${max})`);
    ok = false;
  }
  if (typeof value === "string" && allowedValues.length > 0 && !allowedValues.includes(value)) {
    c.error(defPath, `${describeValue(value)} is not in allowed_values`);
    ok = false;
  }
  if (!ok) return null;
  return {
    default: value,
    ...(min === undefined ? {} : { min }),
    ...(max === undefined ? {} : { max }),
    allowedValues,
  };
}

/** safety.safe_state.expect: what each signal must read back as after an e-stop. */
export function readExpectations(
  ctx: CallContext,
  raw: unknown,
  path: Path,
): SafeStateExpectation[] {
  const c = ctx.checker;
  const list = c.sequence(raw, path) ?? [];
  const out: SafeStateExpectation[] = [];
  const seen = new Map<string, string>();
  list.forEach((item, i) => {
    const p = [...path, i];
    const obj = c.mapping(item, p, true);
    if (obj === null) return;
    c.knownKeys(obj, p, EXPECT_KEYS);
    const signal = c.requiredString(obj, p, "signal");
    const m = SIGNAL_RE.exec(signal);
    if (signal !== "" && m === null) {
      c.error([...p, "signal"], `must be \`provider/device/signal\`, got ${describeValue(signal)}`);
    } else if (m !== null && !ctx.providerIds.has(m[1]!)) {
      c.warning(
        [...p, "signal"],
        `provider ${
          quoteProviderText(m[1]!)
        } is not declared in providers; this expectation can never verify`,
      );
    }
    // Written counts, empty too (`equals:` is null): judged as its value below, one error at
    // the key, not also "needs `equals`" at the entry.
    const hasEquals = obj.equals !== undefined;
    const hasMin = obj.min !== undefined;
    const hasMax = obj.max !== undefined;
    let ok = m !== null;
    if (hasEquals && (hasMin || hasMax)) {
      c.error(p, "give either `equals` or `min`/`max`, not both");
      ok = false;
    } else if (!hasEquals && !hasMin && !hasMax) {
      c.error(p, "needs `equals`, or `min` and/or `max`");
      ok = false;
    }
    const equals = obj.equals;
    if (
      hasEquals && typeof equals !== "boolean" && typeof equals !== "string" &&
      !(typeof equals === "number" && Number.isFinite(equals))
    ) {
      c.error([...p, "equals"], `must be a bool, number or string, got ${describeValue(equals)}`);
      ok = false;
    }
    const bound = (key: "min" | "max"): number | undefined => {
      const v = obj[key];
      if (v === undefined) return undefined;
      if (typeof v !== "number" || !Number.isFinite(v)) {
        c.error([...p, key], `must be a number, got ${describeValue(v)}`);
        ok = false;
        return undefined;
      }
      return v;
    };
    const min = bound("min");
    const max = bound("max");
    if (min !== undefined && max !== undefined && min > max) {
      c.error([...p, "max"], `must be >= min (${max} < ${min})`);
      ok = false;
    }
    if (m !== null) {
      const previous = seen.get(signal);
      if (previous !== undefined) {
        c.warning([...p, "signal"], `also expected at ${previous}; both must hold`);
      }
      seen.set(signal, formatPath(p));
    }
    if (!ok || m === null) return;
    // Positioned: a line about an expectation in force names it (a rediscovery's unit change).
    out.push(noteSourcePosition({
      signal,
      providerId: m[1]!,
      deviceId: m[2]!,
      signalId: m[3]!,
      ...(hasEquals ? { equals: equals as boolean | number | string } : {}),
      ...(min !== undefined ? { min } : {}),
      ...(max !== undefined ? { max } : {}),
      path: formatPath(p),
    }, ctx.source.position(p)));
  });
  return out;
}
