/**
 * What a Grafana panel's Flux query needs from the database, read from the query text: the
 * measurements it selects, the fields, the tags (and tag values) it filters, groups or shows. Not
 * a Flux parser: it reads the idioms Grafana dashboards for InfluxDB use
 * (`r._measurement == "m"`, `r["_field"] == "f"`, `contains(value: r._field, set: [...])`,
 * `r._field =~ /re/`, `r.tag` / `r["tag"]`, `columns: [...]`, `schema.tagValues(tag: ...)`), and
 * {@link missingData} compares them with rows that were really written.
 */
import type { ParsedField, ParsedLine } from "../telemetry/line_protocol_check.ts";

/** What one query needs. */
export interface QueryNeeds {
  /** Measurements it selects (`r._measurement == "…"`); empty: it looks at the whole bucket. */
  readonly measurements: readonly string[];
  /** Fields it selects by name. */
  readonly fields: readonly string[];
  /** Fields it selects by regular expression (`r._field =~ /…/`). */
  readonly fieldPatterns: readonly RegExp[];
  /** Columns it reads or groups by (`r.x`, `r["x"]`, `columns: ["x"]`), `_…` columns excluded. */
  readonly columns: readonly string[];
  /** Tags whose values it lists (`schema.tagValues(tag: "…")`). */
  readonly listedTags: readonly string[];
  /** Tag values it compares with a literal (`r.tag == "value"`). */
  readonly tagValues: readonly (readonly [string, string])[];
  /** True when it turns fields into columns (`pivot(… columnKey: ["_field"] …)`). */
  readonly pivotsFields: boolean;
}

const ACCESS = String.raw`\br(?:\.(\w+)|\["(\w+)"\])`;
const strings = (list: string) => [...list.matchAll(/"([^"]*)"/g)].map((m) => m[1]);

/** Reads what `flux` needs. */
export function queryNeeds(flux: string): QueryNeeds {
  const measurements = new Set<string>();
  const fields = new Set<string>();
  const fieldPatterns: RegExp[] = [];
  const columns = new Set<string>();
  const listedTags = new Set<string>();
  const tagValues: [string, string][] = [];
  for (const m of flux.matchAll(new RegExp(`${ACCESS}\\s*==\\s*"([^"]*)"`, "g"))) {
    const name = m[1] ?? m[2];
    if (name === "_measurement") measurements.add(m[3]!);
    else if (name === "_field") fields.add(m[3]!);
    else if (!name!.startsWith("_")) tagValues.push([name!, m[3]!]);
  }
  for (const m of flux.matchAll(new RegExp(`${ACCESS}\\s*=~\\s*/((?:\\\\/|[^/])*)/`, "g"))) {
    if ((m[1] ?? m[2]) === "_field") fieldPatterns.push(new RegExp(`^(?:${m[3]})$`));
  }
  for (
    const m of flux.matchAll(
      /contains\(\s*value:\s*r(?:\._field|\["_field"\])\s*,\s*set:\s*\[([^\]]*)\]/g,
    )
  ) {
    for (const f of strings(m[1]!)) fields.add(f!);
  }
  for (const m of flux.matchAll(new RegExp(ACCESS, "g"))) {
    const name = m[1] ?? m[2];
    if (!name!.startsWith("_")) columns.add(name!);
  }
  for (const m of flux.matchAll(/\b(?:columns|rowKey):\s*\[([^\]]*)\]/g)) {
    for (const c of strings(m[1]!)) if (!c!.startsWith("_")) columns.add(c!);
  }
  for (const m of flux.matchAll(/tagValues\([^)]*\btag:\s*"([^"]+)"/g)) listedTags.add(m[1]!);
  return {
    measurements: [...measurements],
    fields: [...fields],
    fieldPatterns,
    columns: [...columns],
    listedTags: [...listedTags],
    tagValues,
    pivotsFields: /pivot\([^)]*columnKey:\s*\["_field"\]/.test(flux),
  };
}

/** The tags, tag values and typed fields rows of each measurement carried. */
export type WrittenSchema = Map<
  string,
  { tags: Map<string, Set<string>>; fields: Map<string, Set<ParsedField["type"]>> }
>;

/** Builds the {@link WrittenSchema} of rows. */
export function writtenSchema(rows: readonly ParsedLine[]): WrittenSchema {
  const out: WrittenSchema = new Map();
  for (const row of rows) {
    let m = out.get(row.measurement);
    if (!m) out.set(row.measurement, m = { tags: new Map(), fields: new Map() });
    for (const [k, v] of row.tags) {
      if (!m.tags.has(k)) m.tags.set(k, new Set());
      m.tags.get(k)!.add(v);
    }
    for (const [k, v] of row.fields) {
      if (!m.fields.has(k)) m.fields.set(k, new Set());
      m.fields.get(k)!.add(v.type);
    }
  }
  return out;
}

/**
 * What a query needs that the written rows do not have, one line per problem (empty: every
 * measurement, field, tag and tag value it names was written). A column it reads must be a tag of
 * the selected measurements or, after a pivot on `_field`, one of the fields it selects.
 */
export function missingData(needs: QueryNeeds, written: WrittenSchema): string[] {
  const problems: string[] = [];
  const selected = needs.measurements.length === 0 ? [...written.keys()] : needs.measurements;
  const present = selected.filter((m) => written.has(m));
  for (const m of needs.measurements) {
    if (!written.has(m)) problems.push(`no ${m} rows`);
  }
  if (present.length === 0) return problems;
  const fieldsOf = new Set(present.flatMap((m) => [...written.get(m)!.fields.keys()]));
  const tagsOf = new Map<string, Set<string>>();
  for (const m of present) {
    for (const [k, vs] of written.get(m)!.tags) {
      tagsOf.set(k, new Set([...(tagsOf.get(k) ?? []), ...vs]));
    }
  }
  const chosen = new Set<string>();
  for (const f of needs.fields) {
    if (fieldsOf.has(f)) chosen.add(f);
    else problems.push(`no field ${f} in ${present.join(", ")}`);
  }
  for (const re of needs.fieldPatterns) {
    const hits = [...fieldsOf].filter((f) => re.test(f));
    if (hits.length === 0) problems.push(`no field matching ${re} in ${present.join(", ")}`);
    hits.forEach((f) => chosen.add(f));
  }
  const noFieldFilter = needs.fields.length === 0 && needs.fieldPatterns.length === 0;
  for (const c of needs.columns) {
    if (tagsOf.has(c) || (needs.fields.includes(c) && !fieldsOf.has(c))) continue; // reported
    const isChosenField = noFieldFilter ? fieldsOf.has(c) : chosen.has(c);
    if (isChosenField && needs.pivotsFields) continue;
    problems.push(
      isChosenField
        ? `field ${c} read as a column without a pivot on _field`
        : `no tag ${c} in ${present.join(", ")}`,
    );
  }
  for (const t of needs.listedTags) {
    if (!tagsOf.has(t)) problems.push(`no tag ${t} to list in ${present.join(", ")}`);
  }
  for (const [t, v] of needs.tagValues) {
    if (tagsOf.has(t) && !tagsOf.get(t)!.has(v)) {
      problems.push(`no ${t}=${v} in ${present.join(", ")}`);
    }
  }
  return problems;
}
