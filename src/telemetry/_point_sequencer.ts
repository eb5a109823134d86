/**
 * Keeps rows of one series that share a millisecond from overwriting each other in InfluxDB.
 *
 * InfluxDB identifies a point by measurement, tag set and timestamp: a second row with the same
 * three is merged into the first, its fields overwriting (InfluxDB v2 docs, "Handle duplicate
 * data points"; VictoriaMetrics keeps both). Two mode changes, two run markers or two transitions
 * of one alarm can fall within one millisecond. Of the two remedies those docs give (add an
 * arbitrary tag, or increment the timestamp), a tag keeps the millisecond timestamps and the
 * first row of a series exactly as before: the n-th further row of a series within one
 * millisecond gets the last tag `seq=n` (1, 2, ...). A retried line is sent as it was formatted,
 * tag included, so a retry still overwrites its own earlier copy.
 *
 * Bounded: it remembers the last millisecond of at most {@link MAX_SEQUENCED_SERIES} series and
 * forgets them all when one more arrives (a same-millisecond pair straddling that moment keeps
 * one point: the limit).
 */

/** Series whose last millisecond is remembered. */
export const MAX_SEQUENCED_SERIES = 10_000;

/** The tag key a same-millisecond row of a series gets. */
export const SEQ_TAG = "seq";

/** Where the series part of a formatted line ends: its first unescaped space. */
function seriesEnd(line: string): number {
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 0x5c) i++; // a backslash escapes the next character
    else if (c === 0x20) return i;
  }
  return -1;
}

export class PointSequencer {
  /** Series (measurement and tags, as written) -> its last timestamp and rows at it so far. */
  #last = new Map<string, { ts: string; rows: number }>();

  /** The line, with `seq=n` added to its tags when its series already has a row at its time. */
  distinct(line: string): string {
    const end = seriesEnd(line);
    const tsStart = line.lastIndexOf(" ") + 1;
    if (end < 0 || tsStart <= end) return line;
    const series = line.slice(0, end);
    const ts = line.slice(tsStart);
    const last = this.#last.get(series);
    if (last !== undefined && last.ts === ts) {
      const n = last.rows++;
      return `${series},${SEQ_TAG}=${n}${line.slice(end)}`;
    }
    if (last !== undefined) {
      last.ts = ts;
      last.rows = 1;
      return line;
    }
    if (this.#last.size >= MAX_SEQUENCED_SERIES) this.#last.clear();
    this.#last.set(series, { ts, rows: 1 });
    return line;
  }
}
