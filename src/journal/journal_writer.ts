/**
 * The one writer of an append-only JSONL journal (one file, or a rotated series of segments):
 *
 * - **Group commit.** `append` queues a line and resolves once the line was handed to the OS
 *   (write(2) done) or could not be. Lines appended in the same tick are one write; lines
 *   appended while a write is in flight are the next one. A line never waits for a timer.
 * - **Batched fsync.** A line appended with `sync` resolves after an fsync; any other line is
 *   fsync'd within `syncIntervalMs` (and at close), or, when a later write fails, before the
 *   file is let go (a failed write drops it; see #dropAfterFailedWrite). A batched fsync that
 *   fails is logged once per failing spell, and once when an fsync works again. When the fsync
 *   of a write holding a `sync` line fails, that write is cut back (`truncate`) and all its lines
 *   are reported failed: a line reported failed is not left in the file for a retry to
 *   duplicate. A crash of the process loses nothing written (the OS has it); a crash of the
 *   machine loses at most the last `syncIntervalMs` of lines.
 * - **Bounded, drop-and-count.** At most `maxQueuedLines` wait; past it an append is refused at
 *   once (`hasRoom()` tells beforehand). A failed write (full disk, read-only folder) drops its
 *   lines; both are counted (`status()`), logged once per failing streak, and the writer tries
 *   again with the next append (never in a loop of its own).
 * - **Torn-line recovery.** A file is opened after a check of its last byte: when a crash or a
 *   failed write left a partial line, the next write starts on a new line, so the partial line
 *   stays one unreadable line instead of spoiling the next one (a segment left for the next one,
 *   full or `newSegment`, is ended so before it is left); once that write succeeds, one INFO
 *   names the file (readers skip the line it ended). A write that failed part-way (a
 *   short write on a full disk) is cut back first (`truncate`): its lines were reported failed,
 *   so none of them stays in the file, whole or torn; only a crash (or a cut that fails) leaves
 *   a torn line.
 * - **Gaps.** Lines lost since the last successful write are a gap: with `gapLine`, the owner's
 *   line recording it (count, first and last time, reason) is written with the next write, where
 *   the gap began: after the lines appended before its first loss, before those appended after it
 *   (before the lines of the write that succeeds, when none was waiting), so the journal's lines
 *   stay in the order they were appended in (`gapMark`: the owner numbers its gap line then). A
 *   WARN says so once it is written. A gap not yet written when the process ends is lost with it
 *   (the ERROR logged at the first failure and `status().gapPending` are what is known).
 *
 * The owner keeps its own rules (what a line is, what must be fsync'd before an answer); the
 * writer never throws into it.
 */
import {
  type Clock,
  errorMessage,
  type Logger,
  SpellLog,
  type TimerId,
  utf8Length,
} from "../common/mod.ts";
import { closeHandle, type JournalAppendHandle, type JournalFiles } from "./journal_files.ts";
import { type JournalSegments, segmentNumbers, segmentPath } from "./journal_segments.ts";

/** Lines lost since the last successful write. */
export interface JournalGap {
  /** Lost lines appended with `counted` (the default). */
  readonly lines: number;
  readonly firstLostAtMs: number;
  readonly lastLostAtMs: number;
  /** Why the last of them was lost (the write error, or the queue bound). */
  readonly reason: string;
  /** What `gapMark` returned when the first of them was lost (undefined without it). */
  readonly mark: number | undefined;
}

/**
 * Lines written by the JournalWriters that share it (all the files of one owner), and those of
 * their writes under way: what a stop waiting for that owner's close reads of a disk that answers
 * (the kernel's bounded stop step).
 */
export class JournalLineCount {
  /** Lines written so far (as status().linesWritten counts them). */
  written = 0;
  /** Lines of the writes under way now: taken from the queue, neither written nor failed yet. */
  writing = 0;
  /** Writes begun so far (the number of the last one). */
  #begun = 0;
  /** What the reader since() returned last counts: the lines of the writes numbered past `after`. */
  #since: { readonly after: number; written: number } | null = null;

  /** A write of `lines` lines is taken from its writer's queue: its number, for ended(). */
  began(lines: number): number {
    this.writing += lines;
    return ++this.#begun;
  }

  /** The write numbered `write` (began()) of `taken` lines ended, `written` of them written. */
  ended(write: number, taken: number, written: number): void {
    this.writing -= taken;
    this.written += written;
    if (this.#since !== null && write > this.#since.after) this.#since.written += written;
  }

  /**
   * Counts from now on the lines of the writes begun from now on, never those of a write under
   * way now, however it ends (all its lines written, some before a failure, or none): returns the
   * reader of that count. One count at a time: a later call's reader counts from then on, the
   * earlier one's keeps what it had counted.
   */
  since(): () => number {
    const since = { after: this.#begun, written: 0 };
    this.#since = since;
    return () => since.written;
  }
}

/** Construction options. */
export interface JournalWriterOptions {
  readonly files: JournalFiles;
  /** One file (its folder must exist), or a rotated series of files (the folder is created). */
  readonly target: { readonly path: string } | { readonly segments: JournalSegments };
  /** The journal's name in log lines and reasons (`audit journal`). */
  readonly name: string;
  readonly log: Logger;
  /** The time of a failure, and the timer of the batched fsync. */
  readonly clock: Pick<Clock, "nowMs" | "setTimer" | "clearTimer">;
  /** Lines waiting for the disk at most; past it an append is refused and counted. */
  readonly maxQueuedLines: number;
  /** Longest time between a line's write and its fsync, for lines appended without `sync`. */
  readonly syncIntervalMs: number;
  /**
   * The line recording a gap, written with the next write, in the place of the gap's first loss
   * (after the lines appended before it, before the others); made again when that write fails.
   */
  readonly gapLine?: ((gap: JournalGap) => string) | undefined;
  /**
   * Called when a gap begins (its first line lost); what it returns is the gap's `mark`: the owner
   * numbering its lines as it appends them numbers the gap line here, in its place among them.
   */
  readonly gapMark?: (() => number) | undefined;
  /**
   * false: a failed write is said by the owner alone (each of its appends is an event of its own,
   * whose one line names the failure: the reason in the append's result), so the writer counts it
   * (status()) without its own ERROR line, nor one for a failed fsync of a `sync` batch or of a
   * segment before rotation (their reasons say so), nor the INFO when it writes again (a gap's
   * WARN stays). Default true: one ERROR per failing streak.
   */
  readonly reportWriteFailures?: boolean | undefined;
  /** Counts this writer's lines with those of the other writers sharing it (JournalLineCount). */
  readonly lineCount?: JournalLineCount | undefined;
}

/** Per-append options. */
export interface JournalAppendOptions {
  /** Resolve only after the line was fsync'd (default: fsync within syncIntervalMs). */
  readonly sync?: boolean;
  /** The line counts in `lost` and in a gap when it cannot be written (default true). */
  readonly counted?: boolean;
  /**
   * Segments only: the line begins a new file when the current one holds anything (the history's
   * disk tier after a wall clock stepped back: rows ascend within each file).
   */
  readonly newSegment?: boolean;
  /**
   * Places of the queue the line leaves free (default 0): it is refused, as by a full queue, when
   * fewer would be left (an owner keeping the last places for lines that matter more).
   */
  readonly spare?: number;
}

/** What became of an appended line. */
export type JournalAppendResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: string };

/** Counters and state of a writer. */
export interface JournalWriterStatus {
  /** `failing`: the last write (or fsync) failed. */
  readonly state: "ok" | "failing";
  readonly linesWritten: number;
  /** Writes and fsyncs that failed. */
  readonly writeErrors: number;
  /** Counted lines not journaled since start: refused (queue full) or their write failed. */
  readonly lost: number;
  readonly queued: number;
  /** Counted lines lost since the last successful write (not yet recorded by a gap line). */
  readonly gapPending: number;
  readonly lastError: string | null;
  readonly lastErrorAtMs: number | null;
}

interface GapCount {
  lines: number;
  first: number;
  last: number;
  reason: string;
  /** Its place: the lines appended before its first loss (`#appended` then). */
  readonly at: number;
  readonly mark: number | undefined;
}

/** A file and its size before a write. */
interface BatchStart {
  readonly path: string;
  readonly size: number;
}

interface Pending {
  readonly text: string;
  readonly sync: boolean;
  readonly counted: boolean;
  readonly newSegment: boolean;
  readonly settled: Promise<JournalAppendResult>;
  done(result: JournalAppendResult): void;
}

/** Appends lines to one journal; see the module comment. */
export class JournalWriter {
  readonly #o: JournalWriterOptions;
  readonly #segments: JournalSegments | null;
  #queue: Pending[] = [];
  /** The batch being written. */
  #inflight: Pending[] = [];
  #writing: Promise<void> | null = null;
  /**
   * The #prepare under way (open()'s, or a write's), settled: one at a time, so an open() and a
   * write begun together open one handle, not two (the one overwritten never closed), nor rotate
   * twice. Null when none is.
   */
  #preparing: Promise<void> | null = null;
  #handle: JournalAppendHandle | null = null;
  /** Bytes in the current file (segments only). */
  #size = 0;
  /** Current segment number; null until the folder was listed. */
  #segment: number | null = null;
  #needsNewline = false;
  /** Where the last batch's write began (file and size): a failed fsync of it cuts back there. */
  #batchStart: BatchStart | null = null;
  #syncTimer: TimerId | null = null;
  #syncDue = false;
  /** The open file holds lines written (and reported written) since its last fsync attempt. */
  #unsynced = false;
  /**
   * close(), once called: its one run (a second call waits for it), writing what is left with an
   * fsync at its end instead of by timer; `closed` once it is done (appends refused from then on).
   */
  #close: { run: Promise<void>; closed: boolean } | null = null;
  #failing = false;
  #linesWritten = 0;
  #writeErrors = 0;
  #lost = 0;
  #gap: GapCount | null = null;
  /** The gap whose line the write in flight holds (back to #gap when that write fails). */
  #gapInFlight: GapCount | null = null;
  /** Lines ever queued, and taken from the queue into writes: the places of gaps (GapCount.at). */
  #appended = 0;
  #taken = 0;
  #lastError: string | null = null;
  #lastErrorAt: number | null = null;
  /** Appends refused by a full queue: one ERROR per streak, until an append is queued again. */
  readonly #refusals: SpellLog;
  /**
   * fsyncs that failed with their own ERROR (#syncNow): one per failing spell (the next at DEBUG),
   * then one INFO when an fsync works again. A disk whose fsync keeps failing would otherwise log
   * a line every syncIntervalMs.
   */
  readonly #syncFailures: SpellLog;

  constructor(options: JournalWriterOptions) {
    this.#o = options;
    this.#refusals = new SpellLog({ log: options.log, failLevel: "error" });
    this.#syncFailures = new SpellLog({
      log: options.log,
      failLevel: "error",
      restLevel: "debug",
      recovered: (failed, path) =>
        `${options.name}: fsync of ${path} works again (${failed} failed before)`,
    });
    this.#segments = "segments" in options.target ? options.target.segments : null;
  }

  /** The file being appended to (the current segment), or null before the first write. */
  get currentPath(): string | null {
    if (this.#segments === null) return (this.#o.target as { path: string }).path;
    return this.#segment === null ? null : segmentPath(this.#segments, this.#segment);
  }

  /**
   * Opens the file now (instead of at the first write); rejects when it cannot be opened. A
   * failure counts as a failed write (status() `failing`, its error, one ERROR per failing
   * streak): a folder that cannot be written at start is said then, not at the first line.
   * `report: false` leaves it to the caller (its own line says what the failure means): nothing
   * is counted nor logged. `note`: what else the failure means to the caller, appended (after
   * `; `) to that ERROR, so one cause is said in one line. Closed while it opened (a hung mount
   * answering after the owner's stop), it resolves, holds no file (one opened meanwhile is closed
   * again) and changes nothing more on disk: no segment removed, none begun (#ClosedMeanwhile);
   * what the call that answered after the close made is removed again (#undoLate): the folder
   * when it holds nothing, the file when it held nothing before (an empty one there before goes
   * too: it held nothing). Removed, not prevented: the call was made before the close.
   * With a write under way or begun meanwhile, the file is opened once (#preparing). Called once
   * closed, it resolves at once, without a call on the disk (no folder made).
   */
  async open(
    options: { readonly report?: boolean; readonly note?: string | undefined } = {},
  ): Promise<void> {
    try {
      // Closed before its turn (an owner stopped while the opening waited): no disk call.
      if (!await this.#prepareInTurn(0, false, true)) return;
    } catch (err) {
      // Closed meanwhile: what the disk said since is no failure of the writer's owner's.
      if (this.#closed) return;
      if (options.report ?? true) this.#failed(err, options.note);
      throw err;
    } finally {
      if (this.#closed) this.#dropHandle("the journal is closed");
    }
  }

  /**
   * True when an append now would be queued (not refused by `maxQueuedLines`) and leave room for
   * `spare` more (an owner keeping the last places of its queue for lines that matter more).
   */
  hasRoom(spare = 0): boolean {
    return !this.#closed && this.#queue.length + spare < this.#o.maxQueuedLines;
  }

  /**
   * Queues `line` (JSON text without a newline) and resolves once it was written (and, with
   * `sync`, fsync'd), or could not be. Never rejects.
   */
  append(line: string, options: JournalAppendOptions = {}): Promise<JournalAppendResult> {
    const counted = options.counted ?? true;
    if (this.#closed) {
      return Promise.resolve(this.#refuse(counted, `${this.#o.name} is closed`));
    }
    const spare = options.spare ?? 0;
    if (this.#queue.length + spare >= this.#o.maxQueuedLines) {
      const reason = `${this.#o.name}: ${
        this.#o.maxQueuedLines - spare
      } lines waiting for the disk`;
      this.#refusals.fail(`${this.#o.name} too slow: ${reason}, new ones are dropped`);
      return Promise.resolve(this.#refuse(counted, reason));
    }
    this.#refusals.ok();
    let done!: (r: JournalAppendResult) => void;
    const settled = new Promise<JournalAppendResult>((r) => done = r);
    this.#appended++;
    this.#queue.push({
      text: line,
      sync: options.sync ?? false,
      counted,
      newSegment: options.newSegment ?? false,
      settled,
      done,
    });
    this.#kick();
    return settled;
  }

  /** Resolves once every line appended before the call was written or dropped. */
  async flush(): Promise<void> {
    const last = this.#queue.at(-1) ?? this.#inflight.at(-1);
    if (last) await last.settled;
  }

  /**
   * Writes what is queued, fsyncs and closes the file; later appends are refused. A call while a
   * close is under way waits for it (one close: one fsync, one ERROR for lines lost).
   */
  close(): Promise<void> {
    if (this.#close === null) {
      const close: { run: Promise<void>; closed: boolean } = {
        run: Promise.resolve(),
        closed: false,
      };
      this.#close = close;
      close.run = this.#closeOnce(close);
    }
    return this.#close.run;
  }

  /** close() has run to its end (#close). */
  get #closed(): boolean {
    return this.#close?.closed === true;
  }

  /** close()'s one run (`close`: #close, set before it starts). */
  async #closeOnce(close: { closed: boolean }): Promise<void> {
    if (this.#syncTimer !== null) this.#o.clock.clearTimer(this.#syncTimer);
    this.#syncTimer = null;
    this.#syncDue = this.#handle !== null;
    this.#kick();
    while (this.#writing) await this.#writing;
    close.closed = true;
    const handle = this.#handle;
    this.#handle = null;
    try {
      // A close that throws rejects close(): its caller (the owner's stop) awaits it and says it.
      handle?.close();
    } finally {
      if (this.#gap !== null) {
        this.#o.log.error(
          `${this.#o.name}: ${this.#gap.lines} lines lost and not recorded in the journal ` +
            `(it could not be written again before it was closed)`,
        );
      }
    }
  }

  /**
   * Counts `lines` the owner dropped without handing them to the writer (it holds its own lines
   * back while the journal fails): they are lost like refused ones, and in the next gap line.
   */
  countLost(lines: number, reason: string): void {
    if (lines > 0) this.#lose(lines, reason);
  }

  status(): JournalWriterStatus {
    return {
      state: this.#failing || this.#syncFailures.failures > 0 ? "failing" : "ok",
      linesWritten: this.#linesWritten,
      writeErrors: this.#writeErrors,
      lost: this.#lost,
      queued: this.#queue.length,
      gapPending: (this.#gap?.lines ?? 0) + (this.#gapInFlight?.lines ?? 0),
      lastError: this.#lastError,
      lastErrorAtMs: this.#lastErrorAt,
    };
  }

  // ---- writing ----------------------------------------------------------------------------------

  #kick(): void {
    if (this.#writing !== null) return;
    this.#writing = this.#drain().finally(() => {
      this.#writing = null;
      if (this.#queue.length > 0 || this.#syncDue) this.#kick();
    });
  }

  async #drain(): Promise<void> {
    // Every line appended in this tick joins the first write.
    await Promise.resolve();
    while (this.#queue.length > 0 || this.#syncDue) {
      const batch = this.#queue.splice(0);
      const firstIndex = this.#taken;
      this.#taken += batch.length;
      this.#inflight = batch;
      if (batch.length === 0) {
        this.#syncDue = false;
        await this.#syncNow();
        continue;
      }
      const lines = batch.map((p) => p.text);
      const fresh = batch.some((p) => p.newSegment) ? batch.map((p) => p.newSegment) : null;
      // A gap goes with this write, in its place (#gapLineAt); a loss while it is in flight
      // begins a gap of its own, after it.
      const gap = this.#gap;
      this.#gap = null;
      this.#gapInFlight = gap;
      const gapAt = gap === null ? -1 : this.#gapLineAt(gap, firstIndex, lines, fresh);
      const writeNo = this.#o.lineCount?.began(batch.length) ?? 0;
      let written = 0;
      try {
        written = await this.#write(lines, (n) => written = n, fresh);
      } catch (err) {
        const reason = this.#failed(err);
        await this.#dropAfterFailedWrite();
        const ok = Math.min(gapAt >= 0 && written > gapAt ? written - 1 : written, batch.length);
        if (gap !== null) {
          if (gapAt >= 0 && written > gapAt) this.#gapWritten(gap);
          else this.#gapBack(gap);
        }
        this.#linesWritten += ok;
        this.#counted(writeNo, batch.length, ok);
        for (const p of batch.slice(0, ok)) p.done({ ok: true });
        for (const p of batch.slice(ok)) {
          if (p.counted) this.#lose(1, reason);
          p.done({ ok: false, reason });
        }
        continue;
      }
      const sync = batch.some((p) => p.sync);
      if (sync) {
        // The gap line is cut back with the batch whose fsync fails: the gap stays pending.
        const synced = await this.#syncNow(this.#batchStart);
        if (!synced.ok) {
          if (gap !== null) this.#gapBack(gap);
          this.#counted(writeNo, batch.length, 0);
          for (const p of batch) {
            if (p.counted) this.#lose(1, synced.reason);
            p.done(synced);
          }
          continue;
        }
      }
      this.#linesWritten += batch.length;
      this.#counted(writeNo, batch.length, batch.length);
      if (gap !== null) this.#gapWritten(gap);
      if (this.#failing && this.#gap === null) {
        this.#failing = false;
        // An owner that said the failures says this too (reportWriteFailures false).
        if (gap === null && this.#o.reportWriteFailures !== false) {
          this.#o.log.info(`${this.#o.name} written again`);
        }
      }
      if (!sync) this.#scheduleSync();
      for (const p of batch) p.done({ ok: true });
    }
    this.#inflight = [];
  }

  /** The write `writeNo` of `taken` lines ended, `written` of them written: the shared count. */
  #counted(writeNo: number, taken: number, written: number): void {
    this.#o.lineCount?.ended(writeNo, taken, written);
  }

  /**
   * With gapLine, puts the gap's line into `lines` (and `fresh`), the write of the batch whose
   * first line is the `firstIndex`th appended, in the gap's place: after the lines appended before
   * its first loss, before those appended after it. Returns its index, or -1 without gapLine.
   */
  #gapLineAt(
    gap: GapCount,
    firstIndex: number,
    lines: string[],
    fresh: boolean[] | null,
  ): number {
    if (!this.#o.gapLine) return -1;
    const at = Math.min(Math.max(gap.at - firstIndex, 0), lines.length);
    lines.splice(
      at,
      0,
      this.#o.gapLine({
        lines: gap.lines,
        firstLostAtMs: gap.first,
        lastLostAtMs: gap.last,
        reason: gap.reason,
        mark: gap.mark,
      }),
    );
    fresh?.splice(at, 0, false);
    return at;
  }

  /** The gap of the write in flight is recorded (with gapLine): says so. */
  #gapWritten(gap: GapCount): void {
    this.#gapInFlight = null;
    this.#o.log.warn(
      `${this.#o.name} written again: ${gap.lines} lines were lost before (${gap.reason})`,
    );
  }

  /**
   * The write holding the gap's line failed: the gap is pending again, in its place and with its
   * mark, and takes in the losses since (a later place, their own mark: it began before them).
   */
  #gapBack(gap: GapCount): void {
    this.#gapInFlight = null;
    const since = this.#gap;
    if (since !== null) {
      gap.lines += since.lines;
      gap.first = Math.min(gap.first, since.first);
      gap.last = Math.max(gap.last, since.last);
      gap.reason = since.reason;
    }
    this.#gap = gap;
  }

  /**
   * fsync of the current file; a failure is counted and reported, never thrown. With `cutTo` (the
   * batch of lines appended with `sync` just written), a failed fsync cuts the file back to where
   * that batch began: its lines are reported failed, so the file must not hold them (a marker
   * answered 503 would be duplicated by the client's retry; a run record reported failed would
   * take effect at the next start). Lines of earlier writes, reported written, stay. A batch that
   * began in an earlier segment is not cut (no segmented journal appends with `sync`).
   */
  async #syncNow(cutTo: BatchStart | null = null): Promise<JournalAppendResult> {
    if (this.#syncTimer !== null) this.#o.clock.clearTimer(this.#syncTimer);
    this.#syncTimer = null;
    // No handle: nothing written since the last fsync attempt (a failed write's
    // #dropAfterFailedWrite fsyncs what was written before it).
    if (this.#handle === null) return { ok: true };
    this.#unsynced = false;
    try {
      await this.#handle.sync();
      this.#syncFailures.ok(this.currentPath ?? "");
      return { ok: true };
    } catch (err) {
      // Counted, not a failing write streak: no line was dropped (its own spell below says it).
      const failed = this.#failed(err, undefined, "fsync");
      if (cutTo !== null && this.#o.reportWriteFailures === false) {
        // The batch's appends are reported failed to an owner that says each in one line of its
        // own: their reason names the fsync and what it means, no second line for the event.
        if (cutTo.path === this.currentPath) await this.#cutBack(cutTo.size);
        this.#dropHandle();
        return {
          ok: false,
          reason: `${this.#o.name} (${this.currentPath}): fsync failed, the lines written to it ` +
            `before may not survive a machine crash: ${errorMessage(err)}`,
        };
      }
      const reason = failed;
      // Its own ERROR (the write's, once per failing streak, speaks of lines dropped only): lines
      // reported written since the last fsync may be lost in a machine crash. Not retried (after
      // a failed fsync the kernel may have marked the pages clean). Once per failing spell.
      this.#syncFailures.fail(
        `${this.#o.name}: fsync of ${this.currentPath} failed (${errorMessage(err)}): the lines ` +
          "written to it since its last fsync may not survive a machine crash",
      );
      if (cutTo !== null && cutTo.path === this.currentPath) await this.#cutBack(cutTo.size);
      this.#dropHandle();
      return { ok: false, reason };
    }
  }

  #scheduleSync(): void {
    if (this.#close !== null) {
      this.#syncDue = true;
      return;
    }
    if (this.#syncTimer !== null) return;
    this.#syncTimer = this.#o.clock.setTimer(() => {
      this.#syncTimer = null;
      this.#syncDue = true;
      this.#kick();
    }, this.#o.syncIntervalMs);
  }

  /**
   * Appends the lines, as many per write as fit the current segment (at least one); calls
   * `progress` with the number of lines fully written so far. Returns the number written.
   * `fresh[i]`: line i begins a new segment (newSegment).
   */
  async #write(
    lines: string[],
    progress: (n: number) => void,
    fresh: readonly boolean[] | null = null,
  ): Promise<number> {
    const max = this.#segments?.maxFileBytes ?? Infinity;
    let i = 0;
    let first = true;
    while (i < lines.length) {
      // After open()'s under way (#preparing); rarely waits.
      await this.#prepareInTurn(utf8Length(lines[i]!) + 1, fresh?.[i] === true, false);
      const endsTornLine = this.#needsNewline;
      let text = endsTornLine ? "\n" : "";
      let size = this.#size + text.length;
      do {
        text += `${lines[i]}\n`;
        size += utf8Length(lines[i]!) + 1;
        i++;
      } while (
        i < lines.length && size + utf8Length(lines[i]!) + 1 <= max && fresh?.[i] !== true
      );
      if (first) this.#batchStart = { path: this.currentPath!, size: this.#size };
      first = false;
      try {
        await this.#handle!.append(text);
      } catch (err) {
        await this.#cutBack(this.#size);
        throw err;
      }
      this.#needsNewline = false;
      if (endsTornLine) this.#saidTornLineEnded();
      this.#unsynced = true;
      this.#size = size;
      progress(Math.min(i, lines.length));
    }
    return i;
  }

  /**
   * #prepare, one at a time (#preparing: an open() and a write begun together open one handle);
   * no wait when none is under way. `opening` (open()'s): closed before its turn, it makes no call
   * on the disk and answers false.
   */
  async #prepareInTurn(bytes: number, fresh: boolean, opening: boolean): Promise<boolean> {
    while (this.#preparing !== null) await this.#preparing;
    if (opening && this.#closed) return false;
    const prepare = this.#prepare(bytes, fresh, opening);
    const mine = this.#preparing = prepare.then(() => {}, () => {});
    try {
      await prepare;
    } finally {
      if (this.#preparing === mine) this.#preparing = null;
    }
    return true;
  }

  /**
   * Makes the file ready for a line of `bytes`: opens it, or rotates when it would overflow (or,
   * `fresh`, when it holds anything). A file left for the next that ends in a torn line (a crash)
   * gets its newline first, as the next write would have given it: the fragment stays one
   * unreadable line, and its INFO is said, whether the file was full at open or filled by the
   * line.
   */
  async #prepare(bytes: number, fresh = false, opening = false): Promise<void> {
    // open()'s: ends where it is once the writer was closed meanwhile (#ClosedMeanwhile), undoing
    // what the call that answered after the close made (`undo`: #undoLate).
    const step: Step = opening
      ? async <T>(call: Promise<T>, undo?: () => Promise<void>, path = ""): Promise<T> => {
        const result = await call;
        if (this.#closed) {
          if (undo !== undefined) await this.#undoLate(undo, path);
          throw new ClosedMeanwhile();
        }
        return result;
      }
      : identity;
    const s = this.#segments;
    if (s === null) {
      if (this.#handle === null) {
        this.#size = await step(this.#o.files.fileSize(this.currentPath!));
        await this.#openFile(this.currentPath!, step, this.#size === 0);
      }
      return;
    }
    const full = (size: number) => size > 0 && (fresh || size + bytes > s.maxFileBytes);
    for (;;) {
      if (this.#handle === null) {
        await step(this.#o.files.ensureDir(s.dir), () => this.#removeIfEmpty(s.dir), s.dir);
        if (this.#segment === null) {
          this.#segment = (await step(segmentNumbers(this.#o.files, s))).at(-1) ?? 1;
        }
        const path = segmentPath(s, this.#segment);
        const size = await step(this.#o.files.fileSize(path));
        if (full(size) && await step(this.#o.files.endsWithNewline(path))) {
          // Whole and full: left as it is (not opened).
          this.#segment++;
          await this.#prune(s, opening);
          continue;
        }
        await this.#openFile(path, step, size === 0);
        this.#size = size;
      }
      if (!full(this.#size)) return;
      await this.#endTornLine();
      // Attempted once: a failure here is the write's (counted and reported failed by it), and
      // not retried (#dropAfterFailedWrite). Its own ERROR: the lines already in the file were
      // reported written, and the write's ERROR (once per failing streak) does not say so. An
      // owner that says each failure itself (reportWriteFailures false) gets it in the reason
      // instead, which names the file too: one event, one line.
      this.#unsynced = false;
      try {
        await this.#handle!.sync();
      } catch (err) {
        if (this.#o.reportWriteFailures === false) {
          throw new Error(
            `fsync before rotation failed, the lines written to it may not survive a machine ` +
              `crash: ${errorMessage(err)}`,
            { cause: err },
          );
        }
        this.#o.log.error(
          `${this.#o.name}: fsync of ${this.currentPath} before rotation failed (${
            errorMessage(err)
          }): the lines written to it may not survive a machine crash`,
        );
        throw err;
      }
      this.#dropHandle();
      this.#segment = this.#segment! + 1;
      await this.#prune(s, opening);
    }
  }

  /** Ends the open file's torn last line (#needsNewline) with a newline, said once (INFO). */
  async #endTornLine(): Promise<void> {
    if (!this.#needsNewline) return;
    await this.#handle!.append("\n");
    this.#needsNewline = false;
    this.#size += 1;
    this.#unsynced = true;
    this.#saidTornLineEnded();
  }

  #saidTornLineEnded(): void {
    this.#o.log.info(
      `${this.#o.name}: ${this.currentPath} ended in a torn last line (no newline, as a crash ` +
        `leaves it): ended it with a newline, readers skip that line as unreadable`,
    );
  }

  /**
   * Opens `path`; `step` wraps each call on the disk (#prepare's check of a close meanwhile).
   * `empty`: the file held nothing (or was missing) when its size was read.
   */
  async #openFile(path: string, step: Step = identity, empty = false): Promise<void> {
    this.#needsNewline = !(await step(this.#o.files.endsWithNewline(path)));
    this.#handle = await this.#o.files.openAppend(path);
    // Closed meanwhile (open()'s): open() closes the handle again, and a file that held nothing
    // (made by this open, most likely) is removed: a late open leaves no empty file behind.
    if (step !== identity) {
      await step(Promise.resolve(), empty ? () => this.#o.files.remove(path) : undefined, path);
    }
  }

  /** `dir` removed when it holds nothing (a folder with anything in it stays). */
  async #removeIfEmpty(dir: string): Promise<void> {
    if ((await this.#o.files.listNames(dir)).length === 0) await this.#o.files.remove(dir);
  }

  /**
   * Undoes what a call of open() that answered after the close made at `path` (a hung mount
   * answering after the owner's stop): the folder it made, the empty file it opened. Never
   * throws: a failure is said in one WARN, and open() resolves as it would.
   */
  async #undoLate(undo: () => Promise<void>, path: string): Promise<void> {
    try {
      await undo();
    } catch (err) {
      this.#o.log.warn(
        `${this.#o.name}: ${path}, made by its open after the journal was closed, could not be ` +
          `removed (${errorMessage(err)})`,
      );
    }
  }

  /**
   * Removes the oldest segments so at most maxFiles remain, counting the current one, and (with
   * maxTotalBytes) the ones before it total at most maxTotalBytes less the current one's share.
   * `opening` (open()'s): once the writer was closed meanwhile, it removes no more.
   */
  async #prune(s: JournalSegments, opening = false): Promise<void> {
    const files = this.#o.files;
    const numbers = await segmentNumbers(files, s);
    // The oldest number kept: by count, then by the bytes of the newest ones before the current.
    let keepFrom = this.#segment! - s.maxFiles + 1;
    if (s.maxTotalBytes !== undefined) {
      let total = 0;
      for (let i = numbers.length - 1; i >= 0 && numbers[i]! >= keepFrom; i--) {
        if (numbers[i]! >= this.#segment!) continue;
        total += await files.fileSize(segmentPath(s, numbers[i]!));
        if (total > s.maxTotalBytes - s.maxFileBytes) {
          keepFrom = numbers[i]! + 1;
          break;
        }
      }
    }
    for (const n of numbers) {
      if (opening && this.#closed) throw new ClosedMeanwhile();
      if (n < keepFrom) await files.remove(segmentPath(s, n));
    }
  }

  /**
   * After a failed append (or a failed fsync of a `sync` batch: #syncNow): cuts the file back to
   * `size`, its size before the write, so no part of the failed
   * text stays (a short write on a full disk leaves whole lines and a torn one). Its lines are
   * reported failed, so the file must not hold them: a whole line kept would be a record its
   * writer was told was lost (a marker answered 503 would still appear; a run record reported
   * failed would take effect at the next start), and a torn line a complete JSON text without
   * its newline would become valid once the next open ends it. When the cut fails too, the next
   * open still ends a torn line with a newline (torn-line recovery) and replay skips it.
   */
  async #cutBack(size: number): Promise<void> {
    try {
      await this.#handle!.truncate(size);
    } catch (err) {
      this.#o.log.warn(
        `${this.#o.name}: a failed write could not be cut back (${
          errorMessage(err)
        }): its whole lines may stay in ${this.currentPath}`,
      );
    }
  }

  /**
   * Drops the handle after a failed write (the next write reopens the file, ending a torn line),
   * but first fsyncs the lines earlier writes left in it: they were reported written, and with the
   * handle gone the batched fsync would have nothing to sync, so a machine crash could lose them
   * however long ago they were written. One attempt, never retried: after a failed fsync the
   * kernel may have marked the pages clean, so a second one could succeed without them on disk;
   * the failure is counted (`writeErrors`) and logged instead.
   */
  async #dropAfterFailedWrite(): Promise<void> {
    if (this.#handle !== null && this.#unsynced) {
      this.#unsynced = false;
      try {
        await this.#handle.sync();
      } catch (err) {
        const reason = this.#failed(err);
        this.#o.log.error(
          `${this.#o.name}: fsync of lines written before a failed write failed too (${reason}): ` +
            `they may not survive a machine crash`,
        );
      }
    }
    this.#dropHandle();
  }

  /**
   * Lets the open file go (the next write opens it again). A close that throws (a JournalFiles
   * against JournalAppendHandle.close's contract: host's never does) is said in one WARN naming
   * the file (`then`: what follows), never thrown: it would leave the write loop (#drain) rejected
   * with nobody awaiting it, an uncaught error taking the runtime down, and the lines in flight
   * never answered. The handle is gone either way; the next write opens a new one. Only close()
   * (#closeOnce) lets a failed close reach its caller: the owner's stop awaits it and says it.
   */
  #dropHandle(then = "the next write opens it again"): void {
    const handle = this.#handle;
    this.#handle = null;
    if (handle === null) return;
    closeHandle(handle, (err) => {
      this.#o.log.warn(
        `${this.#o.name}: closing ${this.currentPath ?? "its file"} failed (${
          errorMessage(err)
        }): it is let go, ${then}`,
      );
    });
  }

  /**
   * Counts a failed write or fsync; returns its reason. `note` is appended to the ERROR of a
   * failing streak's first failure (open()'s caller's). A failed fsync begins no write streak
   * (its "lines dropped" ERROR and "written again" INFO): it dropped no line, and says itself what
   * it means (#syncFailures, which also keeps status() `failing` until an fsync works again).
   */
  #failed(err: unknown, note?: string, what: "write" | "fsync" = "write"): string {
    this.#writeErrors++;
    // Not open yet (its folder could not be used): the folder is where it failed.
    const where = this.currentPath ??
      (this.#segments === null ? "not open" : `folder ${this.#segments.dir}, not open`);
    const reason = `${this.#o.name} (${where}): ${errorMessage(err)}`;
    this.#lastError = reason;
    this.#lastErrorAt = this.#o.clock.nowMs();
    if (what === "write" && !this.#failing) {
      this.#failing = true;
      if (this.#o.reportWriteFailures === false) return reason;
      this.#o.log.error(
        `${this.#o.name} write failed (lines dropped until it works again): ${reason}` +
          (note === undefined ? "" : `; ${note}`),
      );
    }
    return reason;
  }

  #refuse(counted: boolean, reason: string): JournalAppendResult {
    if (counted) this.#lose(1, reason);
    return { ok: false, reason };
  }

  #lose(lines: number, reason: string): void {
    this.#lost += lines;
    const now = this.#o.clock.nowMs();
    if (this.#gap === null) {
      const mark = this.#o.gapMark?.();
      this.#gap = { lines, first: now, last: now, reason, at: this.#appended, mark };
    } else {
      this.#gap.lines += lines;
      // The span of the losses: a wall clock stepped back between two must not end it before it
      // begins.
      this.#gap.first = Math.min(this.#gap.first, now);
      this.#gap.last = Math.max(this.#gap.last, now);
      this.#gap.reason = reason;
    }
  }
}

/**
 * Ends an open() whose writer was closed while it waited on the disk (a hung mount answering
 * after the owner's stop): no segment is removed nor begun after the close. open() resolves.
 */
class ClosedMeanwhile extends Error {
  constructor() {
    super("the journal was closed while it opened");
  }
}

/**
 * Wraps a call on the disk in #prepare; `undo` removes what the call made at `path`, should
 * open()'s call answer after the close (#undoLate).
 */
type Step = <T>(call: Promise<T>, undo?: () => Promise<void>, path?: string) => Promise<T>;

/** A call on the disk as it is (#prepare's step outside open()). */
function identity<T>(call: Promise<T>): Promise<T> {
  return call;
}
