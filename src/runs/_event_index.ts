/**
 * A sparse index over one run's event file, so that a page costs O(page size) instead of a scan
 * from the start of the file: every EVENT_INDEX_STRIDE-th valid event's sequence number and byte
 * offset. The first read of a run builds it (one pass over the file); later reads only index the
 * lines appended since. Reads never hold up appends: they use their own file handles and the
 * registry's write queue is not involved.
 */
import { exceedsJsonDepth } from "./_json_depth.ts";
import type { JournalFiles } from "./journal_files.ts";
import type { RunEvent } from "./run_record.ts";

/** Valid events between two index marks: a page reads at most this many lines beyond its own. */
export const EVENT_INDEX_STRIDE = 256;

interface Mark {
  readonly sequence: number;
  /** Byte offset of the event's line. */
  readonly start: number;
}

/** How an event line is judged: parsed, shaped like a RunEvent of this run, not too deep. */
export interface EventLineRules {
  readonly runId: string;
  readonly maxLineBytes: number;
  readonly maxDepth: number;
}

/** Parses one stored event line; null when it is corrupt (or a different run's, or too deep). */
export function parseEventLine(text: string, rules: EventLineRules): RunEvent | null {
  if (text.trim() === "") return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const e = v as Record<string, unknown>;
  if (
    e.run_id !== rules.runId || !Number.isSafeInteger(e.sequence) ||
    typeof e.category !== "string"
  ) {
    return null;
  }
  if (exceedsJsonDepth(e, rules.maxDepth)) return null;
  return e as unknown as RunEvent;
}

/** The index of one run's event file. */
export class EventIndex {
  readonly #files: JournalFiles;
  readonly #path: string;
  readonly #rules: EventLineRules;
  /** Valid events indexed. */
  #count = 0;
  /** Bytes of the file covered (always a line boundary). */
  #bytes = 0;
  readonly #marks: Mark[] = [];
  #corrupt = 0;
  /** Catch-up scans run one after another (each sees every line appended before it started). */
  #scanning: Promise<void> = Promise.resolve();

  constructor(files: JournalFiles, path: string, rules: EventLineRules) {
    this.#files = files;
    this.#path = path;
    this.#rules = rules;
  }

  /** Valid events indexed so far. */
  get count(): number {
    return this.#count;
  }

  /** Corrupt lines seen so far. */
  get corrupt(): number {
    return this.#corrupt;
  }

  /**
   * Indexes the lines appended since the last call (the whole file the first time). `final`:
   * the file no longer grows, so a last line without a newline is complete (otherwise it may
   * still be being written and waits for the next call).
   */
  catchUp(final: boolean): Promise<void> {
    const next = this.#scanning.then(() => this.#scan(final));
    this.#scanning = next.catch(() => {});
    return next;
  }

  async #scan(final: boolean): Promise<void> {
    const lines = this.#files.readLinesAt(this.#path, {
      maxLineBytes: this.#rules.maxLineBytes,
      startByte: this.#bytes,
    });
    for await (const line of lines) {
      if (!line.terminated && !final) break;
      const event = parseEventLine(line.text, this.#rules);
      if (event === null) {
        if (line.text.trim() !== "") this.#corrupt++;
      } else {
        if (this.#count % EVENT_INDEX_STRIDE === 0) {
          this.#marks.push({ sequence: event.sequence, start: line.start });
        }
        this.#count++;
      }
      this.#bytes = line.end;
    }
  }

  /** Ordinal (0-based position among valid events) of the first event with sequence > `seq`. */
  async ordinalAfter(seq: number): Promise<number> {
    // The last mark at or before seq (sequences grow along the file).
    let lo = 0;
    let hi = this.#marks.length - 1;
    let k = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.#marks[mid].sequence <= seq) {
        k = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (k < 0) return 0;
    let ordinal = k * EVENT_INDEX_STRIDE;
    for await (const event of this.#eventsFrom(this.#marks[k].start)) {
      if (event.sequence > seq) break;
      ordinal++;
    }
    return ordinal;
  }

  /** Up to `limit` events starting at ordinal `from`, oldest first. */
  async page(from: number, limit: number): Promise<RunEvent[]> {
    const out: RunEvent[] = [];
    if (from >= this.#count || limit <= 0) return out;
    const k = Math.floor(from / EVENT_INDEX_STRIDE);
    let skip = from - k * EVENT_INDEX_STRIDE;
    for await (const event of this.#eventsFrom(this.#marks[k].start)) {
      if (skip > 0) {
        skip--;
        continue;
      }
      out.push(event);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Valid events from byte `start` up to the end of the indexed part. */
  async *#eventsFrom(start: number): AsyncGenerator<RunEvent> {
    const end = this.#bytes;
    const lines = this.#files.readLinesAt(this.#path, {
      maxLineBytes: this.#rules.maxLineBytes,
      startByte: start,
    });
    for await (const line of lines) {
      if (line.start >= end) return;
      const event = parseEventLine(line.text, this.#rules);
      if (event !== null) yield event;
    }
  }
}
