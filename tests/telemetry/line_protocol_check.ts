/**
 * Test helper: a strict parser for one line of InfluxDB line protocol, written from the InfluxDB
 * v2 reference ("Line protocol": elements, data types, special characters, comments, naming
 * restrictions) and, for backslashes, from InfluxDB 1.x/2.x's parser (models/points.go:
 * scanMeasurement, scanTagsKey, scanTagsValue, unescapeTag, unescapeStringField). There a `,` `=`
 * or space right after a backslash is never a separator, whatever comes before that backslash,
 * and a name or tag value unescapes only `\,` `\=` `\ ` (a measurement `\,` `\ `): any other
 * backslash, `\\` included, is kept as written. It throws an Error naming the problem and its
 * column for any line InfluxDB would refuse or misread, and is stricter in two respects, both
 * promised by the writer: no raw control character (C0 <0x20, DEL 0x7F, C1 U+0080-U+009F)
 * anywhere, and no two backslashes in a row in a name or tag value (InfluxDB keeps both,
 * VictoriaMetrics reads one).
 */

/** A parsed field value. */
export type ParsedField =
  | { type: "float"; value: number }
  | { type: "int"; value: bigint }
  | { type: "uint"; value: bigint }
  | { type: "bool"; value: boolean }
  | { type: "string"; value: string };

/** One parsed line, with escapes resolved. */
export interface ParsedLine {
  measurement: string;
  tags: [string, string][];
  fields: [string, ParsedField][];
  timestamp: bigint | null;
}

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;
const TRUE = new Set(["t", "T", "true", "True", "TRUE"]);
const FALSE = new Set(["f", "F", "false", "False", "FALSE"]);
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** Parses one line (without its newline); throws on anything that is not valid line protocol. */
export function parseLine(line: string): ParsedLine {
  let i = 0;
  const fail = (what: string): never => {
    throw new Error(`${what} at column ${i + 1} of ${JSON.stringify(line)}`);
  };
  for (let k = 0; k < line.length; k++) {
    const c = line.charCodeAt(k);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
      i = k;
      fail(`raw control character 0x${c.toString(16)}`);
    }
  }
  if (line === "") fail("empty line");
  if (line[0] === "#") fail("a line starting with # is a comment (the row would be lost)");

  /**
   * Reads a name or tag value up to a stop character that does not follow a backslash (InfluxDB
   * looks at the byte before, nothing more). A backslash before one of `escapable` is dropped;
   * any other backslash is a literal backslash.
   */
  const readName = (escapable: string, stops: string, what: string): string => {
    let out = "";
    while (i < line.length && !(stops.includes(line[i]!) && line[i - 1] !== "\\")) {
      if (line[i] === "\\" && line[i + 1] === "\\") {
        fail(`two backslashes in a row in a ${what} (InfluxDB keeps both, VictoriaMetrics one)`);
      }
      if (line[i] === "\\" && i + 1 < line.length && escapable.includes(line[i + 1]!)) {
        out += line[i + 1];
        i += 2;
      } else {
        if (what === "tag value" && line[i] === "=") fail("unescaped = in a tag value");
        out += line[i];
        i++;
      }
    }
    if (out === "") fail(`empty ${what}`);
    if (what !== "tag value" && out.startsWith("_")) fail(`${what} ${out} begins with _`);
    return out;
  };

  const measurement = readName(", ", ", ", "measurement");
  const tags: [string, string][] = [];
  while (line[i] === ",") {
    i++;
    const key = readName(",= ", ",= ", "tag key");
    if (line[i] !== "=") fail("tag key without =");
    i++;
    tags.push([key, readName(",= ", ", ", "tag value")]);
  }
  if (line[i] !== " ") fail("missing field set");
  i++;

  const fields: [string, ParsedField][] = [];
  for (;;) {
    const key = readName(",= ", ",= ", "field key");
    if (line[i] !== "=") fail("field key without =");
    i++;
    if (line[i] === '"') {
      i++;
      let out = "";
      while (i < line.length && line[i] !== '"') {
        if (line[i] === "\\" && (line[i + 1] === '"' || line[i + 1] === "\\")) {
          out += line[i + 1];
          i += 2;
        } else {
          out += line[i];
          i++;
        }
      }
      if (line[i] !== '"') fail("unterminated string field");
      i++;
      if (new TextEncoder().encode(out).length > 65536) fail("string field longer than 64 KiB");
      fields.push([key, { type: "string", value: out }]);
    } else {
      const start = i;
      while (i < line.length && line[i] !== "," && line[i] !== " ") i++;
      const token = line.slice(start, i);
      if (TRUE.has(token)) fields.push([key, { type: "bool", value: true }]);
      else if (FALSE.has(token)) fields.push([key, { type: "bool", value: false }]);
      else if (/^-?\d+i$/.test(token)) {
        const v = BigInt(token.slice(0, -1));
        if (v < INT64_MIN || v > INT64_MAX) fail(`integer ${token} out of int64 range`);
        fields.push([key, { type: "int", value: v }]);
      } else if (/^\d+u$/.test(token)) {
        const v = BigInt(token.slice(0, -1));
        if (v > UINT64_MAX) fail(`unsigned integer ${token} out of uint64 range`);
        fields.push([key, { type: "uint", value: v }]);
      } else if (FLOAT.test(token) && Number.isFinite(Number(token))) {
        fields.push([key, { type: "float", value: Number(token) }]);
      } else fail(`invalid field value ${JSON.stringify(token)}`);
    }
    if (line[i] !== ",") break;
    i++;
  }
  let timestamp: bigint | null = null;
  if (i < line.length) {
    if (line[i] !== " ") fail("junk after the field set");
    i++;
    const token = line.slice(i);
    if (!/^-?\d+$/.test(token)) fail(`invalid timestamp ${JSON.stringify(token)}`);
    timestamp = BigInt(token);
    i = line.length;
  }
  return { measurement, tags, fields, timestamp };
}
