/**
 * Which provider entries and which parameter declarations differ between the configuration in
 * effect and a re-read one: the two sections whose members a reload applies one by one. The
 * sections themselves, and which need a restart, are the composition root's table
 * (src/app/live_config.ts).
 */
import type { ParameterConfig, ProviderConfig } from "./types.ts";

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
