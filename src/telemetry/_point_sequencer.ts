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
 * tag included, so a retry still overwrites its own earlier copy; a row with the fields of one
 * already written at that point is written as that one was (an identical overwrite).
 *
 * It remembers each millisecond a series used, not only its last one: when the wall clock steps
 * back (NTP) onto a millisecond a series already wrote at, with other rows of it between, the
 * new row is still tagged apart; a row at a millisecond its series never used stays untagged.
 *
 * Bounded: it remembers the last {@link MAX_REMEMBERED_POINTS} (series, millisecond) pairs and
 * forgets the oldest first; a step back past that many rows keeps one point of a pair (the
 * limit). Of one pair it remembers {@link MAX_ROWS_PER_POINT} rows: rows past that (a wall clock
 * that stands still) share the last point, `seq=MAX_ROWS_PER_POINT`, each overwriting the one
 * before (the limit again).
 *
 * Per database (useDatabase): a reload to another database writes its first rows untagged, as it
 * holds none of the other's; back to one written before, the pairs remembered of it still tag
 * a row apart. The databases share the bound.
 */

/** (series, millisecond) pairs remembered; the oldest is forgotten for each new one past this. */
export const MAX_REMEMBERED_POINTS = 10_000;

/** Rows of one (series, millisecond) pair told apart; past it they share `seq=` this. */
export const MAX_ROWS_PER_POINT = 1000;

/**
 * Databases a PointSequencer tells apart (useDatabase); one more forgets them all, the pairs
 * remembered of them too (only reloads to that many databases in one run come to it).
 */
export const MAX_REMEMBERED_DATABASES = 16;

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

/**
 * A 52-bit hash of `line`'s characters from `start` to `end` (exclusive): two 32-bit FNV-1a
 * hashes of different offset bases, the second's top 20 bits. The fields of a row are remembered
 * as this, not as a string: a slice of the line would keep the whole line alive for as long as
 * its point is remembered (V8's sliced strings), ten thousand lines. The two hashes share their
 * multiplier, so they are not independent: two field sets at one point taken for the same (one
 * row then overwriting the other) need at least a collision of the first's 32 bits.
 */
function fieldsHash(line: string, start: number, end: number): number {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = start; i < end; i++) {
    const c = line.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  return (a >>> 0) * 0x100000 + (b >>> 12);
}

export class PointSequencer {
  /**
   * "<database prefix>series timestamp" (measurement and tags, as written) -> the hashes of the
   * field sets (fieldsHash) of the rows written at it so far, the n-th tagged `seq=n` (the first
   * untagged): one number while there is one row (most points), else an array; oldest first.
   */
  #rows = new Map<string, number | number[]>();
  /** Database (useDatabase's key) -> the prefix of its pairs' keys in #rows. */
  #databases = new Map<string, string>();
  /** The prefix of the database the rows go to now. */
  #scope = "";

  /** The rows from now on go to the database `key` names (its url, org and bucket). */
  useDatabase(key: string): void {
    let scope = this.#databases.get(key);
    if (scope === undefined) {
      if (this.#databases.size >= MAX_REMEMBERED_DATABASES) {
        this.#databases.clear();
        this.#rows.clear();
      }
      scope = `${this.#databases.size}\n`; // no series has a line break (line protocol escapes it)
      this.#databases.set(key, scope);
    }
    this.#scope = scope;
  }

  /**
   * The line, with `seq=n` added to its tags when its series already has a row of other fields
   * at its time. A row whose fields are those of a row already written at that point (the same
   * sample read twice: a provider answering two reads within one millisecond of its clock) is
   * written as that row was, tag or none: it overwrites it with the same fields, losing nothing,
   * and adds no `seq` series (a contract's tag set, measurement_names anolis, stays whole).
   */
  distinct(line: string): string {
    const end = seriesEnd(line);
    const tsStart = line.lastIndexOf(" ") + 1;
    if (end < 0 || tsStart <= end) return line;
    const series = line.slice(0, end);
    const point = `${this.#scope}${series} ${line.slice(tsStart)}`;
    const fields = fieldsHash(line, end + 1, tsStart - 1);
    const written = this.#rows.get(point);
    if (written !== undefined) {
      // (An existing key keeps its place in the order.)
      let n: number;
      if (typeof written === "number") {
        n = written === fields ? 0 : 1;
        if (n === 1) this.#rows.set(point, [written, fields]);
      } else {
        n = written.indexOf(fields);
        if (n < 0) {
          n = Math.min(written.length, MAX_ROWS_PER_POINT);
          if (n < MAX_ROWS_PER_POINT) written.push(fields);
        }
      }
      return n === 0 ? line : `${series},${SEQ_TAG}=${n}${line.slice(end)}`;
    }
    if (this.#rows.size >= MAX_REMEMBERED_POINTS) {
      this.#rows.delete(this.#rows.keys().next().value as string);
    }
    this.#rows.set(point, fields);
    return line;
  }
}
