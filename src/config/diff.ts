/**
 * Which provider entries and which parameter declarations differ between the configuration in
 * effect and a re-read one: the two sections whose members a reload applies one by one. The
 * sections themselves, and which need a restart, are the composition root's table
 * (src/app/live_config.ts).
 */
import type { ParameterConfig, ProviderConfig } from "./types.ts";

/**
 * The fields of a provider entry that matter only to supervision and to the next start of its
 * process (restart_policy: what happens after a crash; hello/ready timeouts: the next handshake),
 * by their YAML names: an entry that differs in these alone is updated in place by a reload, its
 * running process is left alone (README, "Reloading the configuration").
 */
export const IN_PLACE_PROVIDER_FIELDS = {
  restartPolicy: "restart_policy",
  helloTimeoutMs: "hello_timeout_ms",
  readyTimeoutMs: "ready_timeout_ms",
} as const satisfies Partial<Record<keyof ProviderConfig, string>>;

/** A provider entry that differs only in IN_PLACE_PROVIDER_FIELDS. */
export interface ProviderUpdate {
  /** The new entry. */
  readonly entry: ProviderConfig;
  /** The fields that differ, YAML names in IN_PLACE_PROVIDER_FIELDS order (`restart_policy`). */
  readonly fields: readonly string[];
}

/** Providers by id: in the new file only, in the old only, in both but different, identical. */
export interface ProviderDiff {
  /** Entries of the new configuration whose id the running one does not have (new order). */
  readonly added: readonly ProviderConfig[];
  /** Ids the new configuration no longer has (old order). */
  readonly removed: readonly string[];
  /**
   * Entries present in both that differ in a field outside IN_PLACE_PROVIDER_FIELDS (the new
   * entry, new order): their processes are stopped and started again.
   */
  readonly changed: readonly ProviderConfig[];
  /** Entries present in both that differ only in IN_PLACE_PROVIDER_FIELDS (new order). */
  readonly updated: readonly ProviderUpdate[];
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

/**
 * Providers matched by id; a difference in IN_PLACE_PROVIDER_FIELDS alone makes an entry
 * "updated", any other difference "changed".
 */
export function diffProviders(
  before: readonly ProviderConfig[],
  after: readonly ProviderConfig[],
): ProviderDiff {
  const old = new Map(before.map((p) => [p.id, p]));
  const ids = new Set(after.map((p) => p.id));
  const added: ProviderConfig[] = [];
  const changed: ProviderConfig[] = [];
  const updated: ProviderUpdate[] = [];
  const unchanged: string[] = [];
  for (const p of after) {
    const prev = old.get(p.id);
    if (prev === undefined) added.push(p);
    else if (same(prev, p)) unchanged.push(p.id);
    else if (same(withoutInPlaceFields(prev), withoutInPlaceFields(p))) {
      updated.push({ entry: p, fields: inPlaceFieldsChanged(prev, p) });
    } else changed.push(p);
  }
  const removed = before.filter((p) => !ids.has(p.id)).map((p) => p.id);
  return { added, removed, changed, updated, unchanged };
}

/** The IN_PLACE_PROVIDER_FIELDS in which two entries differ, by YAML name. */
export function inPlaceFieldsChanged(a: ProviderConfig, b: ProviderConfig): string[] {
  return Object.entries(IN_PLACE_PROVIDER_FIELDS)
    .filter(([k]) => !same(a[k as keyof ProviderConfig], b[k as keyof ProviderConfig]))
    .map(([, yaml]) => yaml);
}

/** Whether two entries of the same provider differ only in IN_PLACE_PROVIDER_FIELDS (or not at all). */
export function differsOnlyInPlace(a: ProviderConfig, b: ProviderConfig): boolean {
  return same(withoutInPlaceFields(a), withoutInPlaceFields(b));
}

/** An entry without the fields a reload applies in place. */
function withoutInPlaceFields(p: ProviderConfig): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...p };
  for (const k of Object.keys(IN_PLACE_PROVIDER_FIELDS)) delete rest[k];
  return rest;
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
