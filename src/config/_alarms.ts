/**
 * Semantic rules of `alarms:` and `interlocks:` (docs/alarms.md). What needs the providers'
 * inventory (does the device declare this signal, of which type; does it have this function) is
 * checked at run time by src/alarms/, which treats what does not resolve as a bad input.
 */
import { providerText, quoteProviderText } from "../common/mod.ts";
import { type Checker, describeValue, type Obj, present } from "./_checker.ts";
import { conditionSignals, formatConditionError, parseCondition } from "./condition.ts";
import { formatPath, type Path, type YamlSource } from "./_source.ts";
import { noteSourcePosition } from "./source_positions.ts";
import {
  ALARM_ACTIONS,
  ALARM_ID_PATTERN,
  ALARM_LEVELS,
  type AlarmConfig,
  type AlarmLimits,
  BAD_QUALITY_POLICIES,
  type InterlockBlock,
  type InterlockConfig,
  MAX_ALARM_DELAY_MS,
  MAX_ALARM_MESSAGE_LENGTH,
  MAX_ALARMS,
  MAX_INTERLOCK_BLOCK_ENTRIES,
  MAX_INTERLOCKS,
} from "./types.ts";

const ALARM_KEYS = [
  "id",
  "signal",
  "hihi",
  "hi",
  "lo",
  "lolo",
  "alarm_when",
  "level",
  "hysteresis",
  "delay_ms",
  "on_bad_quality",
  "action",
  "message",
] as const;
const INTERLOCK_KEYS = ["id", "block", "while", "message"] as const;
/** The numeric limits, lowest first: each given one must be above the ones before it. */
const LIMIT_ORDER = ["lolo", "lo", "hi", "hihi"] as const;
/** `provider/device/signal` (or `/function`): provider up to the first `/`, last part after the last. */
const HANDLE3_RE = /^([^/]+)\/(.+)\/([^/]+)$/;

/** What alarm and interlock validation needs besides the checker. */
export interface AlarmContext {
  readonly checker: Checker;
  /** Declared provider ids: every handle must name one. */
  readonly providerIds: ReadonlySet<string>;
  /** The file, for a number's text as written. */
  readonly source: YamlSource;
}

/**
 * The integer a number is written as when a double cannot hold it (beyond +/-2^53, where YAML
 * gives the nearest double), else null.
 */
function inexactInteger(ctx: AlarmContext, path: Path, v: number): string | null {
  if (Number.isSafeInteger(v) || !Number.isInteger(v)) return null;
  const text = ctx.source.scalarAt(path)?.source;
  if (text === undefined || !/^[+-]?\d+$/.test(text)) return null;
  return BigInt(text) === BigInt(v) ? null : text;
}

/** `alarms:`. */
export function readAlarms(ctx: AlarmContext, raw: unknown, path: Path): AlarmConfig[] {
  const c = ctx.checker;
  const list = c.sequence(raw, path) ?? [];
  if (list.length > MAX_ALARMS) {
    c.error(path, `has ${list.length} entries, at most ${MAX_ALARMS} (MAX_ALARMS)`);
    return [];
  }
  const out: AlarmConfig[] = [];
  const firstById = new Map<string, Path>();
  list.forEach((item, i) => {
    const p = [...path, i];
    const obj = c.mapping(item, p, true);
    if (obj === null) return;
    c.knownKeys(obj, p, ALARM_KEYS);
    const id = readId(c, obj, p, firstById);
    const signal = readHandle(ctx, obj, p, "signal", "provider/device/signal");
    let ok = id !== "" && signal !== null;

    const limits: { -readonly [K in keyof AlarmLimits]: number } = {};
    for (const key of LIMIT_ORDER) {
      if (!present(obj, key)) continue;
      const v = obj[key];
      const inexact = typeof v === "number" ? inexactInteger(ctx, [...p, key], v) : null;
      if (typeof v !== "number" || !Number.isFinite(v)) {
        c.error([...p, key], `must be a number, got ${describeValue(v)}`);
        ok = false;
      } else if (inexact !== null) {
        // A limit compared as the nearest double would raise or clear a count away from where it
        // is written (an int64/uint64 counter); an interlock condition keeps such literals exact.
        c.error(
          [...p, key],
          `${inexact} cannot be held exactly (a limit is a double, exact to +/-2^53): ` +
            `write ${BigInt(v)} or compare exactly in an interlock condition`,
        );
        ok = false;
      } else {
        limits[key] = v;
      }
    }
    const given = LIMIT_ORDER.filter((k) => limits[k] !== undefined);
    for (let k = 1; k < given.length; k++) {
      const below = given[k - 1];
      const key = given[k];
      if (limits[key!]! <= limits[below!]!) {
        c.error(
          [...p!, key!],
          `must be greater than ${below} (${limits[key!]} <= ${limits[below!]}): ` +
            "limits are ordered lolo < lo < hi < hihi",
        );
        ok = false;
      }
    }
    const limitCount = LIMIT_ORDER.filter((k) => present(obj, k)).length;

    let alarmWhen: boolean | string | undefined;
    if (present(obj, "alarm_when")) {
      const v = obj.alarm_when;
      if (typeof v !== "boolean" && typeof v !== "string") {
        c.error(
          [...p, "alarm_when"],
          `must be a bool or a string (the value that raises the alarm), got ${describeValue(v)}`,
        );
        ok = false;
      } else if (limitCount > 0) {
        c.error(
          [...p, "alarm_when"],
          "is for bool and string signals: give either alarm_when or numeric limits " +
            "(hihi, hi, lo, lolo), not both",
        );
        ok = false;
      } else {
        alarmWhen = v;
      }
    } else if (limitCount === 0) {
      c.error(p, "needs at least one limit (hihi, hi, lo, lolo) or alarm_when");
      ok = false;
    }

    let level = c.oneOf(obj, p, "level", ALARM_LEVELS, "MAJOR");
    if (present(obj, "level") && !present(obj, "alarm_when")) {
      c.error(
        [...p, "level"],
        "applies to alarm_when alarms only (the limits set the level: hi and lo raise MINOR, " +
          "hihi and lolo MAJOR)",
      );
      ok = false;
      level = "MAJOR";
    }

    let hysteresis = 0;
    if (present(obj, "hysteresis")) {
      const v = obj.hysteresis;
      if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
        c.error([...p, "hysteresis"], `must be a number >= 0, got ${describeValue(v)}`);
        ok = false;
      } else if (present(obj, "alarm_when")) {
        c.error([...p, "hysteresis"], "applies to numeric limits only, not to alarm_when");
        ok = false;
      } else {
        hysteresis = v;
        // The lowest high limit and the highest low limit must keep a band where it clears.
        const high = limits.hi ?? limits.hihi;
        const low = limits.lo ?? limits.lolo;
        if (high !== undefined && low !== undefined && high - v <= low + v) {
          c.error(
            [...p, "hysteresis"],
            `${v} leaves no value at which the alarm clears: ${
              limits.hi !== undefined ? "hi" : "hihi"
            } - hysteresis (${high - v}) must stay above ${
              limits.lo !== undefined ? "lo" : "lolo"
            } + hysteresis (${low + v})`,
          );
          ok = false;
        }
      }
    }

    const delayMs = c.integer(obj, p, "delay_ms", 0, { min: 0, max: MAX_ALARM_DELAY_MS });
    const onBadQuality = c.oneOf(obj, p, "on_bad_quality", BAD_QUALITY_POLICIES, "alarm");
    const action = c.oneOf(obj, p, "action", ALARM_ACTIONS, "none");
    if (action !== "none" && onBadQuality === "ignore") {
      c.warning(
        [...p, "on_bad_quality"],
        `is ignore on an alarm with action ${action}: a dead or stale sensor will never ` +
          `${action === "estop" ? "stop the machine" : "fault the machine"} (docs/alarms.md)`,
      );
    }
    const message = readMessage(c, obj, p, false);
    if (!ok || signal === null) return;
    // Positioned: a line about an alarm in force names it (a rediscovery's unit change).
    out.push(noteSourcePosition({
      id,
      signal: signal.handle,
      providerId: signal.providerId,
      deviceId: signal.deviceId,
      signalId: signal.last,
      limits,
      ...(alarmWhen === undefined ? {} : { alarmWhen }),
      level,
      hysteresis,
      delayMs,
      onBadQuality,
      action,
      message,
      path: formatPath(p),
    }, ctx.source.position(p)));
  });
  return out;
}

/** `interlocks:`. */
export function readInterlocks(ctx: AlarmContext, raw: unknown, path: Path): InterlockConfig[] {
  const c = ctx.checker;
  const list = c.sequence(raw, path) ?? [];
  if (list.length > MAX_INTERLOCKS) {
    c.error(path, `has ${list.length} entries, at most ${MAX_INTERLOCKS} (MAX_INTERLOCKS)`);
    return [];
  }
  const out: InterlockConfig[] = [];
  const firstById = new Map<string, Path>();
  list.forEach((item, i) => {
    const p = [...path, i];
    const obj = c.mapping(item, p, true);
    if (obj === null) return;
    c.knownKeys(obj, p, INTERLOCK_KEYS);
    const id = readId(c, obj, p, firstById);
    const block = readBlock(ctx, obj, p);
    const condition = readWhile(ctx, obj, p);
    const message = readMessage(c, obj, p, true);
    if (id === "" || block === null || condition === null || message === "") return;
    out.push(noteSourcePosition({
      id,
      block,
      conditionText: condition.text,
      condition: condition.node,
      signals: conditionSignals(condition.node),
      message,
      path: formatPath(p),
    }, ctx.source.position(p)));
  });
  return out;
}

function readId(c: Checker, obj: Obj, p: Path, firstById: Map<string, Path>): string {
  const id = c.requiredString(obj, p, "id");
  if (id === "") return "";
  if (!ALARM_ID_PATTERN.test(id)) {
    c.error(
      [...p, "id"],
      `${
        describeValue(id)
      } is not an id: use 1 to 64 letters, digits, '_', '.' or '-', not starting with '.'`,
    );
    return "";
  }
  const first = firstById.get(id);
  if (first !== undefined) {
    c.error([...p, "id"], `duplicate id '${id}' (first at ${formatPath(first)})`);
    return "";
  }
  firstById.set(id, p);
  return id;
}

/** A `provider/device/<last>` key whose provider must be declared; null after an error. */
function readHandle(
  ctx: AlarmContext,
  obj: Obj,
  p: Path,
  key: string,
  shape: string,
): { handle: string; providerId: string; deviceId: string; last: string } | null {
  const c = ctx.checker;
  const handle = c.requiredString(obj, p, key);
  if (handle === "") return null;
  return parseHandle(ctx, handle, [...p, key], shape);
}

function parseHandle(
  ctx: AlarmContext,
  handle: string,
  path: Path,
  shape: string,
): { handle: string; providerId: string; deviceId: string; last: string } | null {
  const m = HANDLE3_RE.exec(handle);
  if (m === null) {
    ctx.checker.error(path, `must be \`${shape}\`, got ${describeValue(handle)}`);
    return null;
  }
  if (!ctx.providerIds.has(m[1]!)) {
    ctx.checker.error(path, `provider ${quoteProviderText(m[1]!)} is not declared in providers`);
    return null;
  }
  return { handle, providerId: m[1]!, deviceId: m[2]!, last: m[3]! };
}

function readBlock(ctx: AlarmContext, obj: Obj, p: Path): InterlockBlock[] | null {
  const c = ctx.checker;
  const path = [...p, "block"];
  if (!present(obj, "block")) {
    c.error(path, "is required: the functions this interlock refuses");
    return null;
  }
  const list = c.sequence(obj.block, path);
  if (list === null) return null;
  if (list.length === 0) {
    c.error(path, "must have at least one entry (provider/device/function or provider/device/*)");
    return null;
  }
  if (list.length > MAX_INTERLOCK_BLOCK_ENTRIES) {
    c.error(
      path,
      `has ${list.length} entries, at most ${MAX_INTERLOCK_BLOCK_ENTRIES} ` +
        "(MAX_INTERLOCK_BLOCK_ENTRIES; use provider/device/* for a whole device)",
    );
    return null;
  }
  const out: InterlockBlock[] = [];
  const seen = new Set<string>();
  let ok = true;
  list.forEach((v, j) => {
    if (typeof v !== "string") {
      c.error([...path, j], `must be a string, got ${describeValue(v)}`);
      ok = false;
      return;
    }
    const h = parseHandle(ctx, v, [...path, j], "provider/device/function or provider/device/*");
    if (h === null) {
      ok = false;
      return;
    }
    if (seen.has(v)) c.warning([...path, j], `'${v}' is listed twice`);
    seen.add(v);
    out.push({ handle: v, providerId: h.providerId, deviceId: h.deviceId, functionName: h.last });
  });
  return ok ? out : null;
}

function readWhile(
  ctx: AlarmContext,
  obj: Obj,
  p: Path,
): { text: string; node: InterlockConfig["condition"] } | null {
  const c = ctx.checker;
  const path = [...p, "while"];
  if (!present(obj, "while")) {
    c.error(path, "is required: the condition under which the block holds");
    return null;
  }
  const text = obj.while;
  if (typeof text !== "string") {
    c.error(
      path,
      `must be a condition (a string), got ${describeValue(text)}` +
        (typeof text === "boolean" ? ` (quote it: "${text}")` : ""),
    );
    return null;
  }
  if (text.trim() === "") {
    c.error(path, "must not be empty");
    return null;
  }
  const parsed = parseCondition(text);
  if (!parsed.ok) {
    c.error(path, formatConditionError(parsed.error));
    return null;
  }
  for (const s of conditionSignals(parsed.condition)) {
    if (!ctx.providerIds.has(s.providerId)) {
      c.error(
        path,
        formatConditionError({
          column: s.column,
          message: `provider ${quoteProviderText(s.providerId)} of ${
            providerText(s.handle)
          } is not declared in providers`,
        }),
      );
      return null;
    }
  }
  return { text, node: parsed.condition };
}

function readMessage(c: Checker, obj: Obj, p: Path, required: boolean): string {
  const message = required ? c.requiredString(obj, p, "message") : c.string(obj, p, "message", "");
  // Characters (code points), as the editor schema's maxLength counts them: one outside the BMP
  // is two UTF-16 units of `length`.
  const characters = [...message].length;
  if (characters > MAX_ALARM_MESSAGE_LENGTH) {
    c.error(
      [...p, "message"],
      `is ${characters} characters long, at most ${MAX_ALARM_MESSAGE_LENGTH}`,
    );
    return "";
  }
  return message;
}
