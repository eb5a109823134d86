/**
 * Finding a place in a journal file whose lines carry an ascending key (a run's event sequence
 * numbers, a time) without reading it from the start: bisection over byte offsets, each probe
 * reading from the middle of the range to the next line that has a key. A seek costs
 * O(log(file size)) probes plus at most SEEK_LINEAR_BYTES read line by line, whatever the length
 * of the file. Lines without a key (corrupt, torn, another record kind) are stepped over. One
 * line whose key was damaged (a bit flip, a clock jump written to disk) costs at most itself: a
 * probe trusts a key at or below the one sought only once the next keyed line's is too.
 */
import type { JournalFiles, JournalLine } from "./journal_files.ts";

/** Below this many bytes a seek stops bisecting and reads the rest line by line. */
export const SEEK_LINEAR_BYTES = 64 * 1024;

/** A file of keyed lines, keys ascending along the file. */
export interface KeyedLines {
  readonly files: JournalFiles;
  readonly path: string;
  /** Longest line read in full (longer ones are cut, and their key is usually null). */
  readonly maxLineBytes: number;
  /** The part of the file to consider: lines that start at or past it are ignored. */
  readonly end: number;
  /** The key of a line, or null for a line without one. */
  readonly key: (line: JournalLine) => number | null;
}

/** A line with its key. */
export interface KeyedLine {
  readonly key: number;
  readonly line: JournalLine;
}

/**
 * Keyed lines a bisection probe reads: the probe's and the next one, so that one line whose key was
 * damaged into the past cannot send the search past the lines before it (seekAfter).
 */
const PROBE_KEYED_LINES = 2;

/**
 * Byte offset of the first keyed line whose key is greater than `after` (or `end` when there is
 * none), a line start to read on from. A line whose key was damaged into the future can only
 * make it earlier (more lines read on); one damaged into the past is stepped over only as
 * itself: a probe moves on past a line at or below `after` only when the keyed line after it is
 * at or below `after` too (else a damaged line in the middle would send the search past the
 * lines before it that are above `after`, and they would be left out).
 */
export async function seekAfter(k: KeyedLines, after: number): Promise<number> {
  // Invariants: every keyed line before `lo` has key <= after; no line in [bound, fallback) is
  // the answer; `fallback` is the best answer found (a line start, or end). (Of the true keys,
  // one damaged line aside: that line may be left out, nothing else.)
  let lo = 0;
  let bound = k.end;
  let fallback = k.end;
  while (bound - lo > SEEK_LINEAR_BYTES) {
    const mid = lo + Math.floor((bound - lo) / 2);
    const [probe, next] = await keyedFrom(k, mid, fallback, PROBE_KEYED_LINES);
    if (probe === undefined) {
      bound = mid;
    } else if (probe.key > after) {
      fallback = probe.line.start;
      bound = mid;
    } else if (next === undefined || next.key > after) {
      // The answer is the next line (or fallback) unless the probe's key is damaged into the
      // past: then it may be before the probe, so the lines before mid are searched still.
      if (next !== undefined) fallback = next.line.start;
      bound = mid;
    } else {
      lo = probe.line.end;
      if (lo >= bound) return fallback;
    }
  }
  for await (const line of k.files.readLinesAt(k.path, lineOptions(k, lo))) {
    if (line.start >= bound) break;
    const key = k.key(line);
    if (key !== null && key > after) return line.start;
  }
  return fallback;
}

/** The last keyed line before `end`, or null: reads backwards from the end in growing steps. */
export async function lastKeyed(k: KeyedLines): Promise<KeyedLine | null> {
  return (await lastKeyedLines(k, 1))[0] ?? null;
}

/**
 * The last `count` keyed lines before `end` (fewer when the file holds fewer), oldest first:
 * reads backwards from the end in growing steps.
 */
export async function lastKeyedLines(k: KeyedLines, count: number): Promise<KeyedLine[]> {
  let window = SEEK_LINEAR_BYTES;
  for (;;) {
    const from = Math.max(0, k.end - window);
    const last: KeyedLine[] = [];
    for await (const line of linesFrom(k, from)) {
      if (line.start >= k.end) break;
      const key = k.key(line);
      if (key === null) continue;
      last.push({ key, line });
      if (last.length > count) last.shift();
    }
    if (last.length >= count || from === 0) return last;
    window *= 4;
  }
}

/** The first `count` keyed lines that start at or after `pos` and before `limit` (fewer: no more). */
async function keyedFrom(
  k: KeyedLines,
  pos: number,
  limit: number,
  count: number,
): Promise<KeyedLine[]> {
  const out: KeyedLine[] = [];
  for await (const line of linesFrom(k, pos)) {
    if (line.start >= limit) break;
    const key = k.key(line);
    if (key === null) continue;
    out.push({ key, line });
    if (out.length === count) break;
  }
  return out;
}

/** The whole lines that start at or after `pos` (the rest of a line holding `pos - 1` skipped). */
async function* linesFrom(k: KeyedLines, pos: number): AsyncGenerator<JournalLine> {
  let skip = pos > 0;
  for await (const line of k.files.readLinesAt(k.path, lineOptions(k, pos > 0 ? pos - 1 : 0))) {
    if (skip) {
      skip = false;
      continue;
    }
    yield line;
  }
}

function lineOptions(k: KeyedLines, startByte: number) {
  return { maxLineBytes: k.maxLineBytes, startByte };
}
