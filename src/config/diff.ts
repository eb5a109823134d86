/**
 * What differs between the running configuration and a re-read one (SIGHUP reload): pure, so
 * every section's rule is unit-tested (tests/config/diff_test.ts). Applying the difference is
 * the composition root's job (src/config_reload.ts); this module only says what changed and
 * what cannot change without a restart.
 */
import type { LogLevel } from "../common/mod.ts";
import type { Config, ParameterConfig, ProviderConfig } from "./types.ts";

/** An old and a new value of a scalar setting. */
export interface ValueChange<T> {
  readonly from: T;
  readonly to: T;
}

/** Providers by id: in the new file only, in the old only, in both but different, identical. */
export interface ProviderDiff {
  /** Entries of the new configuration whose id the running one does not have (new order). */
  readonly added: readonly ProviderConfig[];
  /** Ids the new configuration no longer has (old order). */
  readonly removed: readonly string[];
  /** Entries present in both whose fields differ in any way (the new entry, new order). */
  readonly changed: readonly ProviderConfig[];
  /** Ids whose entries are identical: their processes must be left alone. */
  readonly unchanged: readonly string[];
}

/** Parameters by name: values are kept only where the declaration is identical. */
export interface ParameterDiff {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Same name, different declaration (type, default, bounds, allowed values): reset to default. */
  readonly redeclared: readonly string[];
  readonly unchanged: readonly string[];
}

/** The difference between two configurations. */
export interface ConfigDiff {
  readonly providers: ProviderDiff;
  /** polling.interval_ms, when it changed. */
  readonly pollingIntervalMs: ValueChange<number> | null;
  /** logging.level, when it changed. */
  readonly loggingLevel: ValueChange<LogLevel> | null;
  /** Any key under telemetry: (target, batching, names, health interval). */
  readonly telemetry: boolean;
  /** health.staleness thresholds. */
  readonly health: boolean;
  /** Anything under safety: (the e-stop ladder, its expectations, verification timeout). */
  readonly safety: boolean;
  /** automation.mode_transition_hooks or automation.manual_gating_policy. */
  readonly modeHooks: boolean;
  readonly parameters: ParameterDiff;
  /** automation.behavior_tree (the path) or automation.tick_rate_hz. */
  readonly behaviorTree: boolean;
  /** alarms: or interlocks:. */
  readonly alarms: boolean;
  /**
   * Key paths that changed but cannot take effect without a restart (RESTART_ONLY_KEYS), in
   * file order, e.g. `http.port`, `runtime.data_dir`.
   */
  readonly needsRestart: readonly string[];
}

/**
 * Settings a running service cannot swap safely; a change to one is reported as "needs a
 * restart" and the rest of the reload still applies. `http` stands for each of its keys: the
 * listening socket, TLS, auth and CORS are fixed when the server starts. `runtime.*` fixes the
 * run journal folder, the name run records carry and the start/stop budgets of this process;
 * `automation.enabled` decides at start which subsystems exist; `audit.*` sizes the audit journal
 * opened at start.
 */
export const RESTART_ONLY_KEYS: readonly string[] = [
  "runtime.name",
  "runtime.shutdown_timeout_ms",
  "runtime.startup_timeout_ms",
  "runtime.data_dir",
  "http.*",
  "automation.enabled",
  "audit.*",
];

/** Compares the running configuration with a newly loaded one. */
export function diffConfig(before: Config, after: Config): ConfigDiff {
  const needsRestart: string[] = [];
  for (const key of ["name", "shutdownTimeoutMs", "startupTimeoutMs", "dataDir"] as const) {
    if (!same(before.runtime[key], after.runtime[key])) needsRestart.push(`runtime.${snake(key)}`);
  }
  for (const key of Object.keys(after.http) as (keyof Config["http"])[]) {
    if (!same(before.http[key], after.http[key])) needsRestart.push(`http.${snake(key)}`);
  }
  const a = before.automation;
  const b = after.automation;
  if (a.enabled !== b.enabled) needsRestart.push("automation.enabled");
  for (const key of ["maxFileBytes", "maxFiles"] as const) {
    if (before.audit[key] !== after.audit[key]) needsRestart.push(`audit.${snake(key)}`);
  }
  return {
    providers: diffProviders(before.providers, after.providers),
    pollingIntervalMs: before.polling.intervalMs === after.polling.intervalMs
      ? null
      : { from: before.polling.intervalMs, to: after.polling.intervalMs },
    loggingLevel: before.logging.level === after.logging.level
      ? null
      : { from: before.logging.level, to: after.logging.level },
    telemetry: !same(before.telemetry, after.telemetry),
    health: !same(before.health, after.health),
    safety: !same(before.safety, after.safety),
    modeHooks: !same(a.modeTransitionHooks, b.modeTransitionHooks) ||
      a.manualGatingPolicy !== b.manualGatingPolicy,
    parameters: diffParameters(a.parameters, b.parameters),
    behaviorTree: a.behaviorTree !== b.behaviorTree || a.tickRateHz !== b.tickRateHz,
    alarms: !same(before.alarms, after.alarms) || !same(before.interlocks, after.interlocks),
    needsRestart,
  };
}

/** Providers matched by id; any difference in an entry makes it "changed". */
export function diffProviders(
  before: readonly ProviderConfig[],
  after: readonly ProviderConfig[],
): ProviderDiff {
  const old = new Map(before.map((p) => [p.id, p]));
  const ids = new Set(after.map((p) => p.id));
  const added: ProviderConfig[] = [];
  const changed: ProviderConfig[] = [];
  const unchanged: string[] = [];
  for (const p of after) {
    const prev = old.get(p.id);
    if (prev === undefined) added.push(p);
    else if (same(prev, p)) unchanged.push(p.id);
    else changed.push(p);
  }
  const removed = before.filter((p) => !ids.has(p.id)).map((p) => p.id);
  return { added, removed, changed, unchanged };
}

/** Parameters matched by name; any difference in a declaration makes it "redeclared". */
export function diffParameters(
  before: readonly ParameterConfig[],
  after: readonly ParameterConfig[],
): ParameterDiff {
  const old = new Map(before.map((p) => [p.name, p]));
  const names = new Set(after.map((p) => p.name));
  const added: string[] = [];
  const redeclared: string[] = [];
  const unchanged: string[] = [];
  for (const p of after) {
    const prev = old.get(p.name);
    if (prev === undefined) added.push(p.name);
    else if (same(prev, p)) unchanged.push(p.name);
    else redeclared.push(p.name);
  }
  const removed = before.filter((p) => !names.has(p.name)).map((p) => p.name);
  return { added, removed, redeclared, unchanged };
}

/** Whether anything at all differs (an empty reload: the same file read again). */
export function isEmptyDiff(diff: ConfigDiff): boolean {
  const p = diff.providers;
  const q = diff.parameters;
  return p.added.length + p.removed.length + p.changed.length === 0 &&
    q.added.length + q.removed.length + q.redeclared.length === 0 &&
    diff.pollingIntervalMs === null && diff.loggingLevel === null && !diff.telemetry &&
    !diff.health && !diff.safety && !diff.modeHooks && !diff.behaviorTree && !diff.alarms &&
    diff.needsRestart.length === 0;
}

/** Structural equality of two loaded configuration values (plain data: no cycles, no classes). */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    return Number.isNaN(a) && Number.isNaN(b);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const rb = b as Record<string, unknown>;
  const ra = a as Record<string, unknown>;
  return ka.every((k) => Object.hasOwn(rb, k) && same(ra[k], rb[k]));
}

/** `tlsCertPath` -> `tls_cert_path`: the YAML key of a Config field. */
function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
