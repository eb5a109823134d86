/**
 * A strict parser of the Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/), for tests: it throws, naming
 * the line, on anything a Prometheus server would refuse or that the format discourages —
 * a sample before its family's TYPE, a TYPE or HELP given twice, a family's samples split by
 * another family, a duplicate series, an unknown escape, a bad name, value or histogram shape.
 */

export type FamilyType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

export interface Sample {
  /** The sample's own name (`x_bucket`, `x_sum`, `x_count` for a histogram `x`). */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  readonly type: FamilyType;
  readonly help: string;
  readonly samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

/** Parses an exposition; throws `line N: reason` on the first violation. */
export function parsePrometheusText(text: string): Map<string, Family> {
  if (text !== "" && !text.endsWith("\n")) throw new Error("exposition must end with a line feed");
  const families = new Map<string, Family>();
  const helps = new Map<string, string>();
  const seriesSeen = new Set<string>();
  const closed = new Set<string>(); // families whose sample block has ended
  let current: string | null = null;
  const lines = text.split("\n");
  lines.pop();
  lines.forEach((line, index) => {
    const where = `line ${index + 1}`;
    const fail = (why: string): never => {
      throw new Error(`${where}: ${why}: ${JSON.stringify(line)}`);
    };
    if (line === "") fail("empty line");
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) return; // an ordinary comment
      const [, kind, name, rest] = m;
      if (!METRIC_NAME.test(name!)) fail(`invalid metric name ${name}`);
      if (kind === "HELP") {
        if (helps.has(name!)) fail(`second HELP for ${name}`);
        helps.set(name!, unescapeHelp(rest!, fail));
      } else {
        if (!TYPES.has(rest!)) fail(`unknown type ${rest}`);
        if (families.has(name!)) fail(`second TYPE for ${name}`);
        if (closed.has(name!) || current === name) fail(`TYPE for ${name} after its samples`);
        families.set(name!, { name: name!, type: rest as FamilyType, help: "", samples: [] });
      }
      return;
    }
    const s = parseSampleLine(line, fail);
    const family = familyOf(s.name, families);
    if (!family) fail(`sample of ${s.name} without a TYPE line before it`);
    if (family!.name !== current) {
      if (closed.has(family!.name)) fail(`samples of ${family!.name} are not contiguous`);
      if (current !== null) closed.add(current);
      current = family!.name;
    }
    checkSampleShape(family!, s, fail);
    const key = `${s.name}{${
      Object.entries(s.labels).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) =>
        `${k}=${JSON.stringify(v)}`
      ).join(",")
    }}`;
    if (seriesSeen.has(key)) fail(`duplicate series ${key}`);
    seriesSeen.add(key);
    family!.samples.push(s);
  });
  for (const [name, help] of helps) {
    const f = families.get(name);
    if (!f) throw new Error(`HELP for ${name} without a TYPE`);
    (f as { help: string }).help = help;
  }
  return families;
}

/** The family a sample name belongs to (`x_bucket` -> histogram `x`). */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const own = families.get(name);
  if (own) return own;
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (!name.endsWith(suffix)) continue;
    const f = families.get(name.slice(0, -suffix.length));
    if (f && (f.type === "histogram" || (f.type === "summary" && suffix !== "_bucket"))) return f;
  }
  return undefined;
}

function checkSampleShape(f: Family, s: Sample, fail: (why: string) => never): void {
  if (f.type === "histogram") {
    if (s.name === f.name) fail(`histogram ${f.name} has a bare sample`);
    const hasLe = "le" in s.labels;
    if ((s.name === `${f.name}_bucket`) !== hasLe) fail("le label on a non-bucket or missing");
    if (hasLe && parseValue(s.labels.le!) === null) fail(`le is not a number: ${s.labels.le}`);
  } else if (f.type !== "summary" && s.name !== f.name) {
    fail(`${f.type} ${f.name} has a sample named ${s.name}`);
  }
  if (f.type === "counter" && !(s.value >= 0)) fail("counter value is negative or NaN");
}

function parseSampleLine(line: string, fail: (why: string) => never): Sample {
  let i = 0;
  while (i < line.length && line[i] !== "{" && line[i] !== " ") i++;
  const name = line.slice(0, i);
  if (!METRIC_NAME.test(name)) fail(`invalid metric name ${name}`);
  const labels: Record<string, string> = {};
  if (line[i] === "{") {
    i++;
    while (line[i] !== "}") {
      let j = i;
      while (j < line.length && line[j] !== "=") j++;
      const label = line.slice(i, j);
      if (!LABEL_NAME.test(label) || label.startsWith("__")) fail(`invalid label name ${label}`);
      if (label in labels) fail(`label ${label} given twice`);
      if (line[j + 1] !== '"') fail(`label ${label} value is not quoted`);
      let value = "";
      let k = j + 2;
      for (;; k++) {
        if (k >= line.length) fail("unterminated label value");
        const c = line[k];
        if (c === '"') break;
        if (c === "\\") {
          const e = line[++k];
          if (e === "\\") value += "\\";
          else if (e === '"') value += '"';
          else if (e === "n") value += "\n";
          else fail(`unknown escape \\${e} in a label value`);
        } else {
          value += c;
        }
      }
      labels[label] = value;
      i = k + 1;
      if (line[i] === ",") i++;
      else if (line[i] !== "}") fail("expected , or } after a label");
    }
    i++;
  }
  if (line[i] !== " ") fail("expected one space before the value");
  const parts = line.slice(i + 1).split(" ");
  if (parts.length > 2) fail("trailing fields after the value and timestamp");
  const value = parseValue(parts[0]!);
  if (value === null) fail(`invalid value ${parts[0]}`);
  if (parts.length === 2 && !/^-?\d+$/.test(parts[1]!)) fail(`invalid timestamp ${parts[1]}`);
  return { name, labels, value: value! };
}

/** A Go ParseFloat value as the format allows it; null when it is not one. */
export function parseValue(text: string): number | null {
  if (text === "+Inf" || text === "Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return null;
  return Number(text);
}

function unescapeHelp(text: string, fail: (why: string) => never): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== "\\") {
      out += text[i];
      continue;
    }
    const e = text[++i];
    if (e === "\\") out += "\\";
    else if (e === "n") out += "\n";
    else fail(`unknown escape \\${e} in HELP`);
  }
  return out;
}

/**
 * Checks every series of a histogram family: `le` ascending and ending at +Inf, bucket counts
 * non-decreasing, +Inf = _count, one _sum and one _count per series. Returns the series
 * (labels without `le`, as a sorted key) -> {count, sum}.
 */
export function checkHistogram(f: Family): Map<string, { count: number; sum: number }> {
  if (f.type !== "histogram") throw new Error(`${f.name} is a ${f.type}, not a histogram`);
  const keyOf = (labels: Readonly<Record<string, string>>) =>
    JSON.stringify(Object.entries(labels).filter(([k]) => k !== "le").sort());
  const series = new Map<
    string,
    { buckets: Array<[number, number]>; sum?: number; count?: number }
  >();
  for (const s of f.samples) {
    const key = keyOf(s.labels);
    let e = series.get(key);
    if (!e) series.set(key, e = { buckets: [] });
    if (s.name.endsWith("_bucket")) e.buckets.push([parseValue(s.labels.le!)!, s.value]);
    else if (s.name.endsWith("_sum")) e.sum = s.value;
    else e.count = s.value;
  }
  const out = new Map<string, { count: number; sum: number }>();
  for (const [key, e] of series) {
    const where = `${f.name} ${key}`;
    if (e.sum === undefined || e.count === undefined) throw new Error(`${where}: no _sum/_count`);
    if (e.buckets.length === 0) throw new Error(`${where}: no buckets`);
    for (let i = 1; i < e.buckets.length; i++) {
      if (!(e.buckets[i]![0] > e.buckets[i - 1]![0])) throw new Error(`${where}: le not ascending`);
      if (e.buckets[i]![1] < e.buckets[i - 1]![1]) throw new Error(`${where}: bucket decreases`);
    }
    const last = e.buckets[e.buckets.length - 1];
    if (last![0] !== Infinity) throw new Error(`${where}: last bucket is not +Inf`);
    if (last![1] !== e.count) {
      throw new Error(`${where}: +Inf bucket ${last![1]} != _count ${e.count}`);
    }
    out.set(key, { count: e.count, sum: e.sum });
  }
  return out;
}

/** The value of the one sample of `name` whose labels include `labels`; throws unless exactly one. */
export function sampleValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number {
  const all = [...families.values()].flatMap((f) => f.samples).filter((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  if (all.length !== 1) {
    throw new Error(`${all.length} samples of ${name} ${JSON.stringify(labels)}, expected 1`);
  }
  return all[0]!.value;
}
