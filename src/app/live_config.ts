/**
 * The one owner of the running configuration (style.md "One owner of the running configuration",
 * docs/architecture.md): the configuration in effect, and the one table that says, for every
 * section of the file, whether a reload applies it in place (`live`) or only a restart does
 * (`restart`), and which subsystem owns it. The list of keys that need a restart is derived from
 * this table, not written a second time.
 *
 * A reload is: load -> diff (this module) -> each changed live section applied by its owner (the
 * kernel registers one per section) -> the effective configuration takes exactly the sections that
 * were applied. A section refused (a protection it would weaken while AUTO runs) or failed keeps
 * its old value in the effective configuration, so the next reload tries it again.
 */
import type { Config } from "../config/mod.ts";
import {
  diffParameters,
  diffProviders,
  type ParameterDiff,
  type ProviderDiff,
} from "../config/mod.ts";

/** How a reload treats a section. */
export type SectionRule = "live" | "restart";

/** The sections of the configuration, as the reload applies them (YAML spelling). */
export type SectionKey =
  | "runtime.name"
  | "runtime.shutdown_timeout_ms"
  | "runtime.startup_timeout_ms"
  | "runtime.data_dir"
  | "http.auth_token"
  | "http.tokens"
  | "http.*"
  | "providers"
  | "polling"
  | "health"
  | "logging"
  | "telemetry"
  | "automation.enabled"
  | "automation.behavior_tree"
  | "automation.parameters"
  | "automation.mode_transition_hooks"
  | "safety"
  | "alarms"
  | "audit.*"
  | "runs.*"
  | "history.*"
  | "sparkplug.*";

/** One row of the section table. */
export interface ConfigSection {
  readonly key: SectionKey;
  readonly rule: SectionRule;
  /** The subsystem that applies it (live) or fixes it at start (restart). */
  readonly owner: string;
  /** The section's value in a configuration (compared structurally). */
  read(c: Config): unknown;
  /** `base` with this section taken from `from`. */
  take(base: Config, from: Config): Config;
  /**
   * The section names a file whose content may change while the configuration does not (the
   * behavior tree): its owner is asked on every reload and says whether anything changed.
   */
  readonly readsFile?: boolean;
}

const HTTP_LIVE = new Set(["authToken", "tokens", "unsendableTokens"]);

/** `base` with the unsendableTokens of `from` (absent when it has none). */
function withUnsendable(base: Config["http"], from: Config["http"]): Config["http"] {
  const { unsendableTokens: _, ...rest } = base;
  return from.unsendableTokens === undefined
    ? rest
    : { ...rest, unsendableTokens: from.unsendableTokens };
}

/** Every HttpConfig key but the live ones (`http.*`). */
function httpRest(c: Config): Record<string, unknown> {
  return Object.fromEntries(Object.entries(c.http).filter(([k]) => !HTTP_LIVE.has(k)));
}

/**
 * The section table: every key of the configuration file belongs to exactly one row
 * (tests/app/live_config_test.ts checks that no field of Config is left out). Its order is the
 * order a reload applies the live sections in (Kernel.reload), and that of its report's lists.
 */
export const CONFIG_SECTIONS: readonly ConfigSection[] = [
  {
    key: "runtime.name",
    rule: "restart",
    owner: "run records (the name every record carries)",
    read: (c) => c.runtime.name,
    take: (b, f) => ({ ...b, runtime: { ...b.runtime, name: f.runtime.name } }),
  },
  {
    key: "runtime.shutdown_timeout_ms",
    rule: "restart",
    owner: "process (the shutdown budget)",
    read: (c) => c.runtime.shutdownTimeoutMs,
    take: (b, f) => ({
      ...b,
      runtime: { ...b.runtime, shutdownTimeoutMs: f.runtime.shutdownTimeoutMs },
    }),
  },
  {
    key: "runtime.startup_timeout_ms",
    rule: "restart",
    owner: "process (the start-up budget)",
    read: (c) => c.runtime.startupTimeoutMs,
    take: (b, f) => ({
      ...b,
      runtime: { ...b.runtime, startupTimeoutMs: f.runtime.startupTimeoutMs },
    }),
  },
  {
    key: "runtime.data_dir",
    rule: "restart",
    owner: "journals (audit and runs are opened there at start)",
    read: (c) => c.runtime.dataDir,
    take: (b, f) => ({ ...b, runtime: { ...b.runtime, dataDir: f.runtime.dataDir } }),
  },
  {
    key: "http.auth_token",
    rule: "live",
    owner: "http authentication (BearerAuth)",
    read: (c) => c.http.authToken,
    take: (b, f) => ({ ...b, http: { ...b.http, authToken: f.http.authToken } }),
  },
  {
    key: "http.tokens",
    rule: "live",
    owner: "http authentication (BearerAuth)",
    // With the entries left out as no client can send their token: not the same file's tokens.
    read: (c) => [c.http.tokens, c.http.unsendableTokens ?? []],
    take: (b, f) => ({ ...b, http: { ...withUnsendable(b.http, f.http), tokens: f.http.tokens } }),
  },
  {
    key: "http.*",
    rule: "restart",
    owner: "http server (the socket, TLS, CORS and limits are fixed when it starts)",
    read: httpRest,
    take: (b, f) => ({
      ...b,
      http: {
        ...withUnsendable(f.http, b.http),
        authToken: b.http.authToken,
        tokens: b.http.tokens,
      },
    }),
  },
  {
    key: "providers",
    rule: "live",
    owner: "provider registry (reconcile)",
    read: (c) => c.providers,
    take: (b, f) => ({ ...b, providers: f.providers }),
  },
  {
    key: "logging",
    rule: "live",
    owner: "process (log level)",
    read: (c) => c.logging,
    take: (b, f) => ({ ...b, logging: f.logging }),
  },
  {
    key: "telemetry",
    rule: "live",
    owner: "telemetry writer (retarget)",
    read: (c) => c.telemetry,
    take: (b, f) => ({ ...b, telemetry: f.telemetry }),
  },
  {
    key: "automation.enabled",
    rule: "restart",
    owner: "kernel (which subsystems exist)",
    read: (c) => c.automation.enabled,
    take: (b, f) => ({ ...b, automation: { ...b.automation, enabled: f.automation.enabled } }),
  },
  {
    key: "automation.behavior_tree",
    rule: "live",
    owner: "automation engine (never while AUTO runs)",
    readsFile: true,
    read: (c) => [c.automation.behaviorTree, c.automation.tickRateHz],
    take: (b, f) => ({
      ...b,
      automation: {
        ...b.automation,
        behaviorTree: f.automation.behaviorTree,
        tickRateHz: f.automation.tickRateHz,
      },
    }),
  },
  {
    key: "automation.parameters",
    rule: "live",
    owner: "parameter store",
    read: (c) => c.automation.parameters,
    take: (b, f) => ({
      ...b,
      automation: { ...b.automation, parameters: f.automation.parameters },
    }),
  },
  {
    key: "automation.mode_transition_hooks",
    rule: "live",
    owner: "mode manager",
    read: (c) => [c.automation.modeTransitionHooks, c.automation.manualGatingPolicy],
    take: (b, f) => ({
      ...b,
      automation: {
        ...b.automation,
        modeTransitionHooks: f.automation.modeTransitionHooks,
        manualGatingPolicy: f.automation.manualGatingPolicy,
      },
    }),
  },
  {
    key: "safety",
    rule: "live",
    owner: "e-stop (the safe-state plan and its verification)",
    read: (c) => c.safety,
    take: (b, f) => ({ ...b, safety: f.safety }),
  },
  // polling and health apply right before alarms, after every section whose owner may await
  // (the tree's file read, telemetry's retarget, the hooks' and the e-stop's securing runs):
  // none of these reads the stale bounds or the poll interval, and with no await between, a poll
  // or a wake-up of the alarm engine judges either the old bounds with the old alarms or the
  // new ones with the file's -- never the alarms the file removes or changes under the new
  // bounds, which could raise on a sample stale only there and run their action (an e-stop).
  {
    key: "polling",
    rule: "live",
    owner: "state cache and device outages",
    read: (c) => c.polling,
    take: (b, f) => ({ ...b, polling: f.polling }),
  },
  {
    key: "health",
    rule: "live",
    owner: "state cache (staleness)",
    read: (c) => c.health,
    take: (b, f) => ({ ...b, health: f.health }),
  },
  {
    key: "alarms",
    rule: "live",
    owner: "alarm engine (alarms and interlocks, reconfigured in place)",
    read: (c) => [c.alarms, c.interlocks],
    take: (b, f) => ({ ...b, alarms: f.alarms, interlocks: f.interlocks }),
  },
  {
    key: "audit.*",
    rule: "restart",
    owner: "audit journal (sized when it is opened at start)",
    read: (c) => c.audit,
    take: (b, f) => ({ ...b, audit: f.audit }),
  },
  {
    key: "runs.*",
    rule: "restart",
    owner: "run registry (its bounds are set when it starts)",
    read: (c) => c.runs,
    take: (b, f) => ({ ...b, runs: f.runs }),
  },
  {
    key: "history.*",
    rule: "restart",
    owner: "history (ring, disk tier and incidents are sized when they start)",
    read: (c) => c.history,
    take: (b, f) => ({ ...b, history: f.history }),
  },
  {
    key: "sparkplug.*",
    rule: "restart",
    owner: "sparkplug edge node (the broker session, its will and its ids are fixed at connect)",
    read: (c) => c.sparkplug,
    take: (b, f) => ({ ...b, sparkplug: f.sparkplug }),
  },
];

/** The keys a reload cannot apply, derived from the table. */
export const RESTART_ONLY_KEYS: readonly string[] = CONFIG_SECTIONS
  .filter((s) => s.rule === "restart").map((s) => s.key);

/** What differs between the configuration in effect and a re-read one. */
export interface SectionDiff {
  /** Live sections that differ, in table order. */
  readonly live: readonly SectionKey[];
  /**
   * Keys that differ but need a restart, in YAML spelling (`http.port`, `runtime.data_dir`,
   * `audit.max_files`, `automation.enabled`).
   */
  readonly needsRestart: readonly string[];
  readonly providers: ProviderDiff;
  readonly parameters: ParameterDiff;
}

/** Compares the configuration in effect with a newly loaded one, section by section. */
export function diffSections(before: Config, after: Config): SectionDiff {
  const live: SectionKey[] = [];
  const needsRestart: string[] = [];
  for (const s of CONFIG_SECTIONS) {
    const a = s.read(before);
    const b = s.read(after);
    if (same(a, b)) continue;
    if (s.rule === "live") {
      live.push(s.key);
    } else if (s.key.endsWith(".*")) {
      // Each key of the section that changed, named as in the file.
      const prefix = s.key.slice(0, -2);
      const ra = a as Record<string, unknown>;
      const rb = b as Record<string, unknown>;
      for (const k of Object.keys(rb)) {
        if (!same(ra[k], rb[k])) needsRestart.push(`${prefix}.${snake(k)}`);
      }
    } else {
      needsRestart.push(s.key);
    }
  }
  return {
    live,
    needsRestart,
    providers: diffProviders(before.providers, after.providers),
    parameters: diffParameters(before.automation.parameters, after.automation.parameters),
  };
}

/** The live sections a reload offers to their owners: those that differ, and those that read a file. */
export function sectionsToOffer(d: SectionDiff): SectionKey[] {
  return CONFIG_SECTIONS.filter((s) => s.rule === "live" && (d.live.includes(s.key) || s.readsFile))
    .map((s) => s.key);
}

/** Whether nothing at all differs (the same file read again). */
export function isEmptySectionDiff(d: SectionDiff): boolean {
  return d.live.length === 0 && d.needsRestart.length === 0;
}

/**
 * `effective` with every section that is the same in `next` taken from `next`: the same values,
 * read from the file as it is now. Where the loader read a hook or a call is kept beside the
 * object (config/source_positions.ts), so a reload that only moved lines (a comment added on
 * top) puts in force the objects that know their new lines.
 */
export function withCurrentSources(effective: Config, next: Config): Config {
  let out = effective;
  for (const s of CONFIG_SECTIONS) {
    if (same(s.read(out), s.read(next))) out = s.take(out, next);
  }
  return out;
}

/** The row of a section. */
export function sectionOf(key: SectionKey): ConfigSection {
  const s = CONFIG_SECTIONS.find((x) => x.key === key);
  if (s === undefined) throw new TypeError(`no config section ${key}`);
  return s;
}

/** Structural equality of two loaded configuration values (plain data: no cycles, no classes). */
export function same(a: unknown, b: unknown): boolean {
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

/** Most names a section's change lists (added, removed, changed together); the rest are counted. */
export const CONFIG_CHANGE_MAX_NAMES = 32;

/**
 * What a reload changed in a section, by name only (never a value: a token, a URL's password):
 * the ids (names, for parameters and tokens) of list entries `added`, `removed` or `changed`
 * (`alarms[high_temp]`), and the keys whose value changed (`polling.interval_ms`), in YAML
 * spelling; at most CONFIG_CHANGE_MAX_NAMES names, `omitted` counting the rest. Null when the
 * section is the same.
 */
export function sectionChanges(
  key: SectionKey,
  before: Config,
  after: Config,
): { added: string[]; removed: string[]; changed: string[]; omitted: number } | null {
  const s = sectionOf(key);
  const a = s.read(before);
  const b = s.read(after);
  if (same(a, b)) return null;
  const out = { added: [] as string[], removed: [] as string[], changed: [] as string[] };
  let names = 0;
  let omitted = 0;
  const note = (list: string[], name: string) => {
    if (names++ < CONFIG_CHANGE_MAX_NAMES) list.push(name);
    else omitted++;
  };
  const walk = (x: unknown, y: unknown, path: string) => {
    if (same(x, y)) return;
    const xs = identified(x);
    const ys = identified(y);
    if (xs !== null && ys !== null) {
      for (const [id, v] of ys) {
        if (!xs.has(id)) note(out.added, `${path}[${id}]`);
        else if (!sameEntry(xs.get(id), v, path)) note(out.changed, `${path}[${id}]`);
      }
      for (const id of xs.keys()) if (!ys.has(id)) note(out.removed, `${path}[${id}]`);
      return;
    }
    if (isRecord(x) && isRecord(y)) {
      for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) {
        walk(x[k], y[k], `${path}.${snake(k)}`);
      }
      return;
    }
    note(out.changed, path);
  };
  const parts = TUPLE_SECTIONS[key];
  if (parts !== undefined && Array.isArray(a) && Array.isArray(b)) {
    const prefix = key.includes(".") ? key.slice(0, key.lastIndexOf(".") + 1) : "";
    parts.forEach((part, i) => walk(a[i], b[i], `${prefix}${part}`));
  } else {
    walk(a, b, key);
  }
  return { ...out, omitted };
}

/** The sections whose `read` is a tuple: the name of each member, in YAML spelling. */
const TUPLE_SECTIONS: Partial<Record<SectionKey, readonly string[]>> = {
  "alarms": ["alarms", "interlocks"],
  "http.tokens": ["tokens", "unsendable_tokens"],
  "automation.behavior_tree": ["behavior_tree", "tick_rate_hz"],
  "automation.mode_transition_hooks": ["mode_transition_hooks", "manual_gating_policy"],
};

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Two entries of the identified list at `list` (`interlocks`) with the same settings: their `path`
 * (`alarms[2]`, where the entry is written in the file) is not one, so an entry that only moved
 * (one before it removed, the list reordered) has not changed; nor is the order of what a list's
 * entry holds as a set (ENTRY_SETS).
 */
function sameEntry(a: unknown, b: unknown, list: string): boolean {
  if (!isRecord(a) || !isRecord(b)) return same(a, b);
  const { path: _a, ...restA } = a;
  const { path: _b, ...restB } = b;
  const sets = ENTRY_SETS[list];
  if (sets !== undefined) {
    for (const [key, asSet] of Object.entries(sets)) {
      restA[key] = asSet(restA[key]);
      restB[key] = asSet(restB[key]);
    }
  }
  return same(restA, restB);
}

/**
 * Members of a list's entries whose order is not part of the entry, by the list's path in a
 * section change, each with the form it is compared in: the functions an interlock blocks are a
 * set (the run gate compares them so too: app/run_gate.ts sameInterlock).
 */
const ENTRY_SETS: Readonly<Record<string, Readonly<Record<string, (v: unknown) => unknown>>>> = {
  interlocks: {
    block: (v) =>
      Array.isArray(v) && v.every((e) => isRecord(e) && typeof e.handle === "string")
        ? blockedHandles(v as readonly { readonly handle: string }[])
        : v,
  },
};

/** The functions a `block` list names, as a set: each handle once, sorted. */
export function blockedHandles(block: readonly { readonly handle: string }[]): string[] {
  return [...new Set(block.map((x) => x.handle))].sort();
}

/** A list whose every entry is an object with a string `id` (or `name`), by it; else null. */
function identified(v: unknown): Map<string, unknown> | null {
  if (!Array.isArray(v)) return null;
  const byId = new Map<string, unknown>();
  for (const e of v) {
    if (!isRecord(e)) return null;
    const id = typeof e.id === "string" ? e.id : typeof e.name === "string" ? e.name : null;
    if (id === null || byId.has(id)) return null;
    byId.set(id, e);
  }
  return byId;
}
