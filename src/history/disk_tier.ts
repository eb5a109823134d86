/**
 * The decimated tier on disk: one JSONL row per device per `history.step_ms` bucket, holding each
 * signal's min, max, last, count and worst quality, in rotated append-only files under
 * `<data_dir>/history/` (`history-00000001.jsonl`, ...). Written through the shared journal
 * writer (src/journal/: group commit, batched fsync, rotation, torn-line recovery, gap lines);
 * the files' total is bounded by `history.disk_max_bytes` (the oldest removed; a file is begun
 * anew past a 1/DISK_FILES share of it, or after a wall clock stepped back; at most
 * DISK_MAX_FILES).
 *
 * Row: `{"t":<bucket start ms>,"p":"<provider>","d":"<device>","s":{"<signal>":[min,max,last,
 * count,quality code]}}` (quality codes: 0 OK, 1 STALE, 2 FAULT, 3 UNAVAILABLE), with `"r":<ring>`
 * after `s` when the device's ring that wrote it is not its run's first (rowRing). A row that does
 * not parse (torn by a power cut, damaged), or whose time is out of order with the rows around it
 * (damaged into another bucket: rows ascend within a file), is skipped when read and counted once,
 * never fatal (a torn one by the first question to read it, whichever device it asks for). The last
 * line of the newest file without its newline is no row yet (being written; after a crash, until
 * the next write ends it): it is neither given nor counted, and read again next time. A failed
 * write (a full disk, a read-only folder) stops the tier with one WARN (the journal writer adds
 * none): the runtime goes on, the rows of the buckets that close meanwhile (and those of the failed
 * write) are kept, in order, in a bounded queue (DISK_OUTAGE_ROWS, DISK_OUTAGE_BYTES; past it the
 * oldest are dropped and counted, one WARN per outage), and the tier tries again after
 * DISK_RETRY_MS, writing them first. One line says it writes again: an INFO, or the writer's WARN
 * with the rows lost.
 */
import {
  type Clock,
  errorMessage,
  type Logger,
  neverThrowing,
  SpellLog,
  toJsonText,
  utf8Length,
  VALUE_TYPES,
  type ValueType,
} from "../common/mod.ts";
import {
  type JournalFiles,
  type JournalLine,
  type JournalSegments,
  JournalWriter,
  lastKeyed,
  lastKeyedLines,
  seekAfter,
  segmentNumbers,
  segmentPath,
} from "../journal/mod.ts";
import { bucketStart, type HistoryPoint } from "./buckets.ts";

/** A file of the disk tier is begun anew past a 1/DISK_FILES share of history.disk_max_bytes. */
export const DISK_FILES = 16;
/**
 * Files the disk tier keeps at most, whatever their bytes (the oldest removed past it): each wall
 * clock stepped back begins a file (rows ascend within one), so a board that starts behind its
 * last row (no real-time clock) has many small ones, each listed and opened by the reader.
 * history.disk_max_bytes bounds their bytes together.
 */
export const DISK_MAX_FILES = 1024;
/** Rows waiting for the disk at most (then dropped and counted). */
export const DISK_QUEUE_ROWS = 4096;
/** Longest time a written row waits for its fsync (an SD card is spared a sync per row). */
export const DISK_SYNC_INTERVAL_MS = 5000;
/**
 * Rows of closed buckets kept while the disk fails, at most (past it the oldest are dropped and
 * counted). Equal to DISK_QUEUE_ROWS: a retry hands all of them to the writer at once.
 */
export const DISK_OUTAGE_ROWS = DISK_QUEUE_ROWS;
/** Bytes of the rows kept while the disk fails, at most (past it the oldest are dropped). */
export const DISK_OUTAGE_BYTES = 8 * 1024 * 1024;
/** After a failed write the tier stays stopped this long before it tries again. */
export const DISK_RETRY_MS = 60_000;
/** Longest row read in full (longer ones are skipped as damaged). */
export const DISK_MAX_ROW_BYTES = 1024 * 1024;
/**
 * Unreadable rows whose place (file and byte offset) the tier remembers at most, over the files it
 * keeps: each is counted once however often it is read (`rowsUnreadable`). Past it a newly found
 * one is not counted (the count stays a lower bound, never grows with the questions); a removed
 * file frees its places.
 */
export const DISK_UNREADABLE_ROWS_KEPT = 4096;

/** One row as read back. */
export interface DiskRow {
  readonly t: number;
  readonly p: string;
  readonly d: string;
  /** Signal id -> its entry; an entry of a damaged row may be anything (rowPoint checks it). */
  readonly s: Readonly<Record<string, unknown>>;
  /** The ring that wrote it, when not its run's first (rowRing); absent otherwise. */
  readonly r?: unknown;
}

/**
 * What DiskTier.read hands each row it gives: the row; whether it is of a period before the last
 * step back of the wall clock; whether an earlier run wrote it; how many files after its own begin
 * a period (DiskTier.read says each).
 */
export type DiskRowVisitor = (
  row: DiskRow,
  beforeStepBack: boolean,
  ofEarlierRun: boolean,
  stepBacksAfter: number,
) => void;

/** Counters of the disk tier (GET /metrics). */
export interface DiskTierStatus {
  /** `off` (disk_max_bytes 0), `ok`, or `stopped` (a write failed; retried later). */
  readonly state: "off" | "ok" | "stopped";
  readonly rowsWritten: number;
  /**
   * Rows not written: past the outage queue's bound (DISK_OUTAGE_ROWS, DISK_OUTAGE_BYTES), the
   * writer's queue full, or still failing at close.
   */
  readonly rowsDropped: number;
  /** Rows kept while the disk fails (or the tier reopens), waiting to be written. */
  readonly rowsHeld: number;
  /** Writes and fsyncs that failed (one each, however many rows a write held), failed opens. */
  readonly writeErrors: number;
  /**
   * Rows found unreadable (torn, damaged) since start, each counted once however often it is read
   * (at most DISK_UNREADABLE_ROWS_KEPT in the files kept at a time).
   */
  readonly rowsUnreadable: number;
  /** Reads (history questions) the tier failed part-way: their answers lack some of its rows. */
  readonly readErrors: number;
  readonly lastError: string | null;
}

export interface DiskTierOptions {
  readonly files: JournalFiles;
  /** `<data_dir>/history`. */
  readonly dir: string;
  readonly maxBytes: number;
  readonly clock: Clock;
  readonly log: Logger;
}

/** The writer and reader of the disk tier. */
export class DiskTier {
  readonly #o: DiskTierOptions;
  readonly #segments: JournalSegments;
  readonly #writer: JournalWriter;
  #state: "ok" | "stopped" = "ok";
  #retryAtMono = 0;
  /** Stops of this outage: its first WARN'd, the retries that fail again at DEBUG (#stop). */
  readonly #outage: SpellLog;
  /** #rowsDropped when this outage began: rows dropped since are said by the writer's gap WARN. */
  #droppedAtOutage = 0;
  /** Drops of the oldest kept rows in this outage: one WARN (#hold). */
  readonly #heldDrops: SpellLog;
  /** Order of the rows handed to write(): rows kept through an outage are written in it. */
  #nextSeq = 0;
  #rowsWritten = 0;
  #rowsDropped = 0;
  /** Opens that failed (the writer counts the writes and fsyncs that failed). */
  #openErrors = 0;
  #rowsUnreadable = 0;
  /** Segment number -> byte offsets of its rows counted in #rowsUnreadable. */
  readonly #unreadableAt = new Map<number, Set<number>>();
  /** Offsets held in #unreadableAt (at most DISK_UNREADABLE_ROWS_KEPT). */
  #unreadableKept = 0;
  #readErrors = 0;
  #lastError: string | null = null;
  /** Segment number -> time of its first row (rows ascend within each file). */
  readonly #firstT = new Map<number, number | null>();
  /**
   * Segment number -> the later of the times of its last two rows (#lastTime), for the files no
   * longer appended to.
   */
  readonly #lastT = new Map<number, number | null>();
  /**
   * Bucket start of the newest row handed to the writer (at open: the last row of the files). A
   * row before it (the wall clock stepped back, in this run or since the last) begins a new file:
   * the reader bisects each file by time.
   */
  #newestT = -Infinity;
  /**
   * Bucket start of the newest row written (at open: the last row of the files): the rows of a
   * failed write are not in the files, so #newestT goes back to it (their retry is in order).
   */
  #newestWrittenT = -Infinity;
  /** Order (HeldRow.seq) of the last row handed to the writer. */
  #lastAppendedSeq = -1;
  /**
   * Bucket start of the newest row of the files at open (written by an earlier run: the latest of
   * the files' last rows, ahead of the last row when a wall clock stepped back before it was
   * written), or -Infinity; learnt at an open whose writer failed too, when the files could be
   * read (#learnEndOfFiles).
   */
  #lastAtOpen = -Infinity;
  /**
   * The newest file at open and its size then: the rows before that byte of it, and every row of
   * the files before it, were written by earlier runs (learnt as #lastAtOpen; none known before
   * the files could be read).
   */
  #endAtOpen: { segment: number; bytes: number } = { segment: -Infinity, bytes: 0 };
  /**
   * Whether #lastAtOpen and #endAtOpen were learnt: not while every open so far failed to list or
   * read the files (a folder of mode 0o000, a file where it should be, a readDir that throws).
   * Until then no read gives a row (read() fails: the answer says disk_unreadable), for none can
   * be told from this run's; learnEnd() tries again at each question, the retry's open too.
   */
  #endKnown = false;
  /** Failed reads: one WARN until a read succeeds, then one INFO. */
  readonly #readFailures: SpellLog;
  /**
   * Whether open() worked. A tier whose open failed (a full or read-only disk at start) opens
   * again at its retry, before its first row: it learns the files' last row again as an open does
   * (the failed open learnt it already when it could read them).
   */
  #opened = false;
  /** That open at a retry, under way: the rows written meanwhile are kept (#held) until it ends. */
  #reopening: Promise<void> | null = null;
  /** close() closes the writer: an open() still under way (abandoned by a start) goes no further. */
  #closed = false;
  /**
   * Rows kept while the tier is stopped or reopening (and those of a failed write), in the order
   * they were handed to write(); at most DISK_OUTAGE_ROWS and DISK_OUTAGE_BYTES (#hold).
   */
  readonly #held: HeldRow[] = [];
  #heldBytes = 0;
  /** Rows handed to the writer whose write has not ended yet (written, failed or refused). */
  #inWriter = 0;

  constructor(options: DiskTierOptions) {
    // Lines that never throw: a failed write is said before its rows are kept (History wraps its
    // own too; a tier made alone, in tests, the same).
    const o: DiskTierOptions = { ...options, log: neverThrowing(options.log) };
    this.#o = o;
    // Once per outage: a retry that fails again is the same outage (a disk that stays full would
    // otherwise log a WARN every DISK_RETRY_MS, ~1,400 a day).
    this.#outage = new SpellLog({
      log: o.log,
      firstNote: `rows are kept to be written when it works again (at most DISK_OUTAGE_ROWS ` +
        `${DISK_OUTAGE_ROWS}, the oldest dropped past it), the in-memory ring goes on; trying ` +
        `again in ${DISK_RETRY_MS / 1000} s`,
    });
    this.#heldDrops = new SpellLog({ log: o.log });
    this.#readFailures = new SpellLog({
      log: o.log,
      firstNote: "answers hold what was read of it and the in-memory ring's samples (marked " +
        "incomplete: disk_unreadable)",
      recovered: () => "history disk tier read again",
    });
    this.#segments = {
      dir: o.dir,
      prefix: "history",
      maxFileBytes: Math.max(65536, Math.floor(o.maxBytes / DISK_FILES)),
      maxFiles: DISK_MAX_FILES,
      maxTotalBytes: o.maxBytes,
    };
    // A full disk is the tier's own trouble, not the runtime's: the journal writer's ERROR lines
    // come out as WARN. A failed write is said by the tier alone (its WARN names the file and the
    // error: the writer's reason), not by the writer too (reportWriteFailures false): one event,
    // one line.
    const log = o.log;
    const warnOnly: Logger = {
      debug: (line) => log.debug(line),
      info: (line) => log.info(line),
      warn: (line) => log.warn(line),
      error: (line) => log.warn(line),
      child: (scope) => log.child(scope),
    };
    this.#writer = new JournalWriter({
      files: o.files,
      target: { segments: this.#segments },
      name: "history disk tier",
      log: warnOnly,
      clock: o.clock,
      maxQueuedLines: DISK_QUEUE_ROWS,
      syncIntervalMs: DISK_SYNC_INTERVAL_MS,
      reportWriteFailures: false,
      gapLine: (g) =>
        JSON.stringify({
          gap: { rows: g.lines, first_ms: g.firstLostAtMs, last_ms: g.lastLostAtMs, why: g.reason },
        }),
    });
  }

  /**
   * Makes the folder and reads the time of the last row; a failure stops the tier (never the start).
   * Closed meanwhile (a first open a start abandoned on a hung mount, close() not waiting for it):
   * should the disk answer at last, after the stop, it goes no further, and what the call that
   * answered late made is removed again -- the folder when it holds nothing, the file when it held
   * nothing (JournalWriter.open): it leaves nothing behind. The kernel keeps the runtime.data_dir
   * lock until this open has ended (Kernel #abandonedOpening): a later runtime's folder is not
   * removed under it.
   */
  async open(): Promise<void> {
    let failure: unknown = null;
    try {
      // Said by the tier's own WARN (#stop), counted in #openErrors.
      await this.#writer.open({ report: false });
    } catch (err) {
      failure = err;
    }
    if (this.#closed && failure === null) return; // reads nothing more after the close
    // Where the earlier runs' rows end is learnt also when the writer's open failed (a read-only
    // or full disk at start: the files can still be read, and are, by the questions until the
    // retry): no row of this run is in the files before an open worked (they are held until
    // then), so every row there now is an earlier run's -- else, until the retry, a question would
    // take those of the repeated times (a start behind them, a restart within their last bucket)
    // for this run's, and leave them out.
    let unknownEnd = "";
    if (!this.#closed) {
      try {
        await this.#learnEndOfFiles();
      } catch (err) {
        failure ??= err;
        unknownEnd = `; where the earlier runs' rows end is not known (${errorMessage(err)}): ` +
          `answers leave the disk out (incomplete: disk_unreadable) until the folder can be read`;
      }
    }
    if (failure === null) {
      this.#opened = true;
      return;
    }
    this.#openErrors++;
    this.#stop(`cannot open ${this.#o.dir}: ${errorMessage(failure)}${unknownEnd}`);
  }

  /**
   * Reads where the files end: their last row's bucket (#lastAtOpen, #newestT) and the newest file
   * with its size (#endAtOpen). Taken after the writer's open: a new file it began, empty, holds no
   * earlier run's row. No row of this run is written before the open ends: they are held until
   * then. A folder not there (its making failed) holds no file: nothing to learn. Throws when the
   * files cannot be listed or read (learnt at a later question or open: learnEnd()). Kept only
   * while no open has worked yet: one that worked meanwhile learnt it itself, before its rows.
   */
  async #learnEndOfFiles(): Promise<void> {
    const numbers = await segmentNumbers(this.#o.files, this.#segments);
    let end: { last: number | null; newest: number | null; segment: number; bytes: number } | null =
      null;
    if (numbers.length > 0) {
      const { last, newest } = await this.#lastRowOfFiles();
      const segment = numbers.at(-1)!;
      const bytes = await this.#o.files.fileSize(segmentPath(this.#segments, segment));
      end = { last, newest, segment, bytes };
    }
    if (this.#opened) return; // (its open learnt it; this run's rows may be in the files now)
    this.#endKnown = true;
    if (end === null) return;
    // The next row begins a new file when it is behind the files' last row (rows ascend within a
    // file); the earlier runs' rows reach their newest, which a wall clock stepped back before
    // the last row was written left ahead of it, in an earlier file.
    if (end.last !== null) this.#newestT = this.#newestWrittenT = end.last;
    if (end.newest !== null) this.#lastAtOpen = end.newest;
    this.#endAtOpen = { segment: end.segment, bytes: end.bytes };
  }

  /**
   * Learns where the earlier runs' rows end when no open could yet (its listing or reading of the
   * files failed): every row in the files is an earlier run's before an open worked (this run's
   * are held until then). Called before a question uses lastRowAtOpen; never throws (still not
   * known: read() gives no row). Nothing to do once known (one listing per question until then).
   */
  async learnEnd(): Promise<void> {
    if (this.#endKnown || this.#closed) return;
    try {
      await this.#learnEndOfFiles();
    } catch {
      // Said by the failed open's WARN; the read that follows fails and says so (disk_unreadable).
    }
  }

  /**
   * Bucket starts of the last row of the files (`last`), read from the newest file holding one --
   * not the writer's current file, which is a new empty one when the newest was full at open (past
   * its share: a lowered disk_max_bytes) or a crash came right after a rotation -- and of their
   * newest row (`newest`): rows ascend within a file, and a wall clock stepped back begins a new
   * one, so the newest row is the latest of the files' last rows, in an earlier file than the last
   * row after a step back. Null: none. Each file's last row is read from its end (at most
   * DISK_MAX_FILES reads, once at open).
   */
  async #lastRowOfFiles(): Promise<{ last: number | null; newest: number | null }> {
    const files = this.#o.files;
    const numbers = await segmentNumbers(files, this.#segments);
    let last: number | null = null;
    let newest: number | null = null;
    for (let i = numbers.length - 1; i >= 0; i--) {
      const path = segmentPath(this.#segments, numbers[i]!);
      const row = await lastKeyed({
        files,
        path,
        maxLineBytes: DISK_MAX_ROW_BYTES,
        end: await files.fileSize(path),
        key: rowTime,
      });
      if (row === null) continue;
      last ??= row.key;
      newest = Math.max(newest ?? -Infinity, row.key);
    }
    return { last, newest };
  }

  /**
   * Bucket start of the newest row an earlier run wrote (the latest of the files' last rows at
   * open: ahead of their last row when a wall clock stepped back before it), or -Infinity: a
   * bucket up to it may hold rows of both runs.
   */
  get lastRowAtOpen(): number {
    return this.#lastAtOpen;
  }

  /** Appends one row, of bucket start `t` (never waits, never throws). */
  write(row: string, t: number): void {
    const h: HeldRow = { row, t, seq: this.#nextSeq++, bytes: utf8Length(row) };
    if (this.#reopening !== null) {
      this.#hold(h);
      return;
    }
    if (this.#state === "stopped") {
      // Kept, and written after the rows kept before it once the disk works again.
      this.#hold(h);
      if (this.#o.clock.monoMs() >= this.#retryAtMono) this.#retry();
      return;
    }
    this.#append(h);
  }

  /** The retry after DISK_RETRY_MS: the kept rows are handed to the writer, in order. */
  #retry(): void {
    this.#state = "ok";
    this.#o.log.debug("history disk tier: trying to write again");
    if (!this.#opened) {
      // Its open failed: opened now, so the last row of an earlier run is known before this
      // run's first (a restart's bucket is answered with both runs' samples; a wall clock
      // behind that row begins a new file, as after an open that worked).
      this.#reopening = this.open().finally(() => {
        this.#reopening = null;
        this.#release();
      });
      return;
    }
    this.#release();
  }

  /** Hands the kept rows to the writer, oldest first (unless the tier stopped again). */
  #release(): void {
    if (this.#state === "stopped") return;
    const rows = this.#held.splice(0);
    this.#heldBytes = 0;
    for (const h of rows) this.#append(h);
  }

  #append(h: HeldRow): void {
    const newSegment = h.t < this.#newestT;
    this.#newestT = h.t;
    this.#lastAppendedSeq = h.seq;
    // Not counted by the writer: a row of a failed write is kept (#hold), not lost; the tier
    // counts what it drops itself (#lose), for the writer's gap line too.
    this.#inWriter++;
    void this.#writer.append(h.row, { newSegment, counted: false }).then((r) => {
      this.#inWriter--;
      if (r.ok) {
        this.#rowsWritten++;
        this.#newestWrittenT = h.t;
        // A row handed in before a failed one (the writer went on to it) written while the tier
        // is stopped: the outage goes on until its retry writes the kept rows, said then.
        if (this.#state === "stopped") return;
        // Writing works: said once, by the journal writer's gap WARN when rows were dropped
        // meanwhile (with how many), else here.
        if (this.#outage.ok() > 0 && this.#rowsDropped === this.#droppedAtOutage) {
          this.#o.log.info("history disk tier written again");
        }
        this.#heldDrops.ok();
        return;
      }
      if (this.#writer.status().state === "failing") {
        // Back to the newest row written -- unless rows were handed in after this one: the writer
        // goes on to their write, which may work (the disk had room again) and put them in the
        // file after the newest written, so this row, kept, begins a new file at the retry.
        if (h.seq === this.#lastAppendedSeq) this.#newestT = this.#newestWrittenT;
        this.#stop(r.reason);
        this.#hold(h);
        return;
      }
      this.#lose(1, r.reason); // refused: the writer's queue full, or closed
    });
  }

  /**
   * Keeps a row until the disk works again, in write() order (the rows of a failed write come back
   * after rows handed in since); past DISK_OUTAGE_ROWS or DISK_OUTAGE_BYTES the oldest are dropped
   * and counted, with one WARN per outage.
   */
  #hold(h: HeldRow): void {
    const held = this.#held;
    let i = held.length;
    while (i > 0 && held[i - 1]!.seq > h.seq) i--;
    held.splice(i, 0, h);
    this.#heldBytes += h.bytes;
    let dropped = 0;
    while (held.length > DISK_OUTAGE_ROWS || this.#heldBytes > DISK_OUTAGE_BYTES) {
      this.#heldBytes -= held.shift()!.bytes;
      dropped++;
    }
    if (dropped === 0) return;
    const reason = `history disk tier: more than ${DISK_OUTAGE_ROWS} rows or ` +
      `${DISK_OUTAGE_BYTES} bytes waiting for the disk (${this.#lastError ?? "not written"})`;
    this.#lose(dropped, reason);
    this.#heldDrops.fail(
      `history disk tier outage queue full (DISK_OUTAGE_ROWS ${DISK_OUTAGE_ROWS} rows, ` +
        `DISK_OUTAGE_BYTES ${DISK_OUTAGE_BYTES} bytes): the oldest rows are dropped and counted ` +
        `until the disk works again`,
    );
  }

  /** Rows not written: counted, and in the gap line written once writing works again. */
  #lose(rows: number, reason: string): void {
    this.#rowsDropped += rows;
    this.#writer.countLost(rows, reason);
  }

  #stop(reason: string): void {
    this.#lastError = reason;
    this.#retryAtMono = this.#o.clock.monoMs() + DISK_RETRY_MS;
    if (this.#state === "stopped") return;
    this.#state = "stopped";
    // The retries of an outage that fail again: DEBUG, with their own words (#outage counts them).
    if (this.#outage.failures > 0) {
      this.#o.log.debug(
        `history disk tier still failing: ${reason}; trying again in ${DISK_RETRY_MS / 1000} s`,
      );
    }
    if (this.#outage.failures === 0) this.#droppedAtOutage = this.#rowsDropped;
    this.#outage.fail(`history disk tier stopped: ${reason}`);
  }

  /**
   * Writes what is queued and closes the files. Rows kept through an outage get one last try
   * (whatever the retry's time); those that still fail are dropped and counted.
   *
   * No bound of its own, on purpose: it resolves only once the disk answered the last write, fsync
   * and close (JournalWriter.close), and the writer refuses every append after it (a row handed to
   * write() then is dropped and counted), so nothing of the tier lands after it resolves. Its
   * caller bounds the wait (the kernel's stop: HISTORY_STOP_BEFORE_PROVIDERS_MS, then what the
   * stop's budget leaves) and keeps the runtime.data_dir lock until it resolves or the process
   * exits: a bound here would resolve with a write still in the disk's hands, and the lock would be
   * released behind it. Not waited for: an open() a start abandoned on a hung mount (the first,
   * not a retry's #reopening): once the disk answers it writes no row, and what its late call made
   * (the folder, the empty file) is removed again (see open()), the lock kept until then by the
   * kernel's stop, not by this close.
   */
  async close(): Promise<void> {
    await this.#reopening;
    if (this.#held.length > 0 && this.#opened) {
      this.#state = "ok";
      this.#release();
      await this.#writer.flush();
    }
    if (this.#held.length > 0) {
      const rows = this.#held.splice(0);
      this.#heldBytes = 0;
      this.#lose(rows.length, this.#lastError ?? "history disk tier closed");
    }
    this.#closed = true; // (a retry's #reopening, awaited above, went on to its end)
    await this.#writer.close();
  }

  /**
   * Rows handed to write() and neither written nor dropped yet: kept through an outage or a reopen,
   * and those the writer holds (queued, or in a write the disk has not answered).
   */
  get rowsPending(): number {
    return this.#held.length + this.#inWriter;
  }

  /** Rows written since the tier was made (status().rowsWritten, without the rest of status). */
  get rowsWritten(): number {
    return this.#rowsWritten;
  }

  /**
   * Resolves once every row appended so far was written, dropped, or kept through an outage
   * (`rowsHeld`: written when the disk works again).
   */
  async flush(): Promise<void> {
    await this.#reopening;
    await this.#writer.flush();
  }

  status(): DiskTierStatus {
    return {
      state: this.#state,
      rowsWritten: this.#rowsWritten,
      rowsDropped: this.#rowsDropped,
      rowsHeld: this.#held.length,
      // Every failed write counts once (not once per row it held), a failed fsync too.
      writeErrors: this.#openErrors + this.#writer.status().writeErrors,
      rowsUnreadable: this.#rowsUnreadable,
      readErrors: this.#readErrors,
      lastError: this.#lastError,
    };
  }

  /**
   * Calls `each` for every row of one device with a bucket start in [sinceMs, untilMs]: file by
   * file, oldest first within each. Rows ascend within a file (History writes every open bucket
   * once its time has passed; a row earlier than the one before it begins a new file), so files
   * overlap in time only across a wall clock stepped back: every file whose rows reach into the
   * range is read, from its first row at or after `sinceMs` (found by bisection), up to two rows in
   * order past `untilMs` (one row's time damaged into the future ends no read); a row out of order
   * with the rows around it (its time damaged into another bucket of `stepMs`) is not given.
   * Never throws: a tier that cannot be read (an I/O error, a file where its folder should be) is
   * the tier's trouble, not the question's (the rows read before the failure are given, the rest
   * are not; one WARN until a read succeeds again). Resolves false when it failed so: the answer is
   * partial.
   * `each` is told whether the row is of a period before the last step back of the wall clock (in
   * a run or across a restart): in a file before the one whose first row is earlier than the last
   * row of the file before it, or, while the rows' newest bucket is ahead of `openBucketMs` (the
   * caller's bucket still open, its row not yet written: the clock may have passed the newest row
   * while that row is still to come), in any file: the row of the next bucket to close will begin
   * a new file. `openBucketMs` is the bucket of the next row the caller will hand to write(), of
   * any device (History: its earliest open bucket), not the asked device's alone: whether that row
   * begins a new file is a matter of the files, so the judgement is the same whichever device is
   * asked of. Not the clock's bucket: a clock stepped back behind the newest row begins no file
   * until a row behind it is handed -- the caller's open buckets from before the step, written
   * first, continue the file -- so until then no row is of a period before it (History: its ring
   * answers its polls as before the step, and the disk must not take them too). `each` is told
   * too whether an earlier run wrote the row (it was in the files at open: #endAtOpen): no ring of
   * this run holds its samples. And `stepBacksAfter`: how many files after the row's begin a
   * period (a step back of the wall clock: the file's first row earlier than the last row of the
   * file before), the one still to come (pending, above) not counted: after several step backs,
   * the rows of each period are told apart (History: the periods older than its ring's oldest kept
   * poll's have no poll in it).
   */
  async read(
    providerId: string,
    deviceId: string,
    sinceMs: number,
    untilMs: number,
    each: DiskRowVisitor,
    stepMs = 1,
    openBucketMs = Infinity,
  ): Promise<boolean> {
    // What `each` throws (History's bound on an answer's points) is the question's: passed on.
    let fromEach = false;
    const give: DiskRowVisitor = (row, beforeStepBack, ofEarlierRun, stepBacksAfter) => {
      try {
        each(row, beforeStepBack, ofEarlierRun, stepBacksAfter);
      } catch (err) {
        fromEach = true;
        throw err;
      }
    };
    try {
      await this.#read(providerId, deviceId, sinceMs, untilMs, give, stepMs, openBucketMs);
    } catch (err) {
      if (fromEach) throw err;
      this.#readErrors++;
      this.#readFailures.fail(`history disk tier not read: ${errorMessage(err)}`);
      return false;
    }
    this.#readFailures.ok();
    return true;
  }

  async #read(
    providerId: string,
    deviceId: string,
    sinceMs: number,
    untilMs: number,
    each: DiskRowVisitor,
    stepMs: number,
    openBucketMs: number,
  ): Promise<void> {
    // No row is given while none can be told from this run's (learnEnd() failed): the answer is
    // marked (disk_unreadable) rather than leave out, as this run's, rows no ring holds.
    if (!this.#endKnown) {
      throw new Error(`where the earlier runs' rows end in ${this.#o.dir} is not known yet`);
    }
    const files = this.#o.files;
    const numbers = await segmentNumbers(files, this.#segments);
    // (Taken as the files were listed: a row handed since goes to a file not listed.)
    const stepBackPending = this.#newestT > openBucketMs;
    // (Indexes in `numbers` of the files that begin a period, ascending.)
    const stepBacks = await this.#stepBacks(numbers);
    const lastStepBack = stepBackPending ? numbers.length : stepBacks.at(-1) ?? 0;
    for (const times of [this.#firstT, this.#lastT]) {
      for (const n of times.keys()) if (n < numbers[0]!) times.delete(n); // removed files
    }
    for (const [n, at] of this.#unreadableAt) {
      if (n >= numbers[0]!) continue;
      this.#unreadableKept -= at.size;
      this.#unreadableAt.delete(n);
    }
    const marker = `"p":${JSON.stringify(providerId)},"d":${JSON.stringify(deviceId)},`;
    // (Of `stepBacks`, those at or before the file read.)
    let begun = 0;
    for (let i = 0; i < numbers.length; i++) {
      const n = numbers[i]!;
      const first = await this.#firstTime(n);
      if (first === null || first > untilMs) continue;
      // (The last file may still be appended to: its last row is not kept.)
      if (i < numbers.length - 1 && ((await this.#lastTime(n)) ?? Infinity) < sinceMs) continue;
      const path = segmentPath(this.#segments, n);
      // The first row at or after sinceMs is found by bisection: an hour at the end of a long
      // file does not read the file.
      const startByte = first >= sinceMs ? 0 : await seekAfter({
        files,
        path,
        maxLineBytes: DISK_MAX_ROW_BYTES,
        end: await files.fileSize(path),
        key: rowTime,
      }, sinceMs - 1);
      const lines = files.readLinesAt(path, { maxLineBytes: DISK_MAX_ROW_BYTES, startByte });
      const newest = i === numbers.length - 1;
      const atOpen = this.#endAtOpen;
      while (begun < stepBacks.length && stepBacks[begun]! <= i) begun++;
      const stepBacksAfter = stepBacks.length - begun;
      /** Gives `line` when it is a row of the device in range (else counts it, when damaged). */
      const take = ({ text: line, start }: JournalLine): void => {
        if (!line.includes(marker)) {
          // Another device's row, or a line torn before its device (a power cut): every row and
          // gap line ends with its object's brace, a torn one not. Counted by whichever question
          // reads it first (once: by its place), else by none.
          if (!endsLikeRow(line)) this.#unreadable(n, start);
          return;
        }
        const row = parseRow(line);
        if (row === null) {
          this.#unreadable(n, start);
          return;
        }
        if (row.p !== providerId || row.d !== deviceId) return;
        if (row.t < sinceMs || row.t > untilMs) return; // (a time rowTime did not read)
        each(
          row,
          i < lastStepBack,
          n < atOpen.segment || (n === atOpen.segment && start < atOpen.bytes),
          stepBacksAfter,
        );
      };
      // Rows ascend within a file, whatever their device: a row out of order with its neighbours
      // had its time damaged on disk (a bit flip, a clock jump written to disk), and answered it
      // would be another bucket's -- merged into that bucket's point, its own bucket missing -- so
      // it is counted as unreadable instead. Judged by their buckets of `stepMs` (a time damaged
      // within its bucket answers the right bucket), from the rows around it: one in a bucket
      // before the last row taken (`floor`) was damaged into the past; one in a bucket after the
      // next two rows' (the next one no earlier than the floor) was damaged into the future; one
      // after the next row's only is either that, or the next row was damaged into the past --
      // which, is not known: neither is answered. Rows are held for that at most ROW_ORDER_AHEAD
      // past the one judged (one, but for a next row earlier than it); a row past untilMs taken in
      // order ends the file's read (the rest is later, another device's rows too: not read to the
      // file's end for none of them).
      let floor = -Infinity;
      const ahead: { line: JournalLine; b: number }[] = [];
      /** Judges the oldest row held by the rows after it; true: the file's read is done. */
      const judge = (): boolean => {
        const { line, b } = ahead.shift()!;
        const next = ahead[0]?.b ?? Infinity;
        if (b < floor) {
          this.#unreadable(n, line.start);
          return false;
        }
        // (After a next row before the floor: that one was damaged into the past, not this one.)
        if (b > next && next >= floor) {
          this.#unreadable(n, line.start);
          // (Later than the row after next too: damaged into the future, the next row is the
          // first in order. Else it and the next row are both doubtful: the next one is not taken.)
          if ((ahead[1]?.b ?? Infinity) >= b) floor = b;
          return false;
        }
        floor = b;
        if (b > untilMs) return true;
        take(line);
        return false;
      };
      let done = false;
      for await (const read of lines) {
        // The last line of the newest file without its newline is not a row yet (being written,
        // or torn by a crash until the next write ends it): not given, not counted, read next time.
        if (!read.terminated && newest) break;
        const t = rowTime(read);
        if (t === null) {
          take(read);
          continue;
        }
        ahead.push({ line: read, b: bucketStart(t, stepMs) });
        // (The row after next is waited for only when the next one is earlier than the oldest.)
        while (
          ahead.length > ROW_ORDER_AHEAD ||
          ahead.length === 2 && (ahead[0]!.b <= ahead[1]!.b || ahead[1]!.b < floor)
        ) {
          if ((done = judge())) break;
        }
        if (done) break;
      }
      while (!done && ahead.length > 0) done = judge();
    }
  }

  /**
   * Indexes in `numbers` of the files that begin a period of the files (their first row earlier
   * than the last row of the file holding rows before it: a wall clock stepped back), ascending
   * (at most one per file). Each file's first and last row times are read once (cached; the
   * newest's last is not needed).
   */
  async #stepBacks(numbers: readonly number[]): Promise<number[]> {
    const at: number[] = [];
    let before: number | null = null;
    for (let i = 0; i < numbers.length; i++) {
      const first = await this.#firstTime(numbers[i]!);
      if (first === null) continue;
      if (before !== null && first < before) at.push(i);
      if (i < numbers.length - 1) before = (await this.#lastTime(numbers[i]!)) ?? before;
    }
    return at;
  }

  /** Counts the unreadable row at byte `start` of segment `n`, unless it was counted already. */
  #unreadable(n: number, start: number): void {
    let at = this.#unreadableAt.get(n);
    if (at?.has(start)) return;
    if (this.#unreadableKept >= DISK_UNREADABLE_ROWS_KEPT) return;
    if (at === undefined) this.#unreadableAt.set(n, at = new Set());
    at.add(start);
    this.#unreadableKept++;
    this.#rowsUnreadable++;
  }

  /**
   * The later of the file's last two row times (null: no row): a last row whose time was damaged
   * into the past is out of order with the row before it, and would have the file left out of
   * every question after that time (#read), or hide a step back of the wall clock at the next
   * file (#stepBacks). (One damaged into the future is taken: the file is read, bisected.)
   */
  async #lastTime(n: number): Promise<number | null> {
    if (this.#lastT.has(n)) return this.#lastT.get(n)!;
    const path = segmentPath(this.#segments, n);
    const files = this.#o.files;
    const last = await lastKeyedLines({
      files,
      path,
      maxLineBytes: DISK_MAX_ROW_BYTES,
      end: await files.fileSize(path),
      key: rowTime,
    }, 2);
    const t = last.length === 0 ? null : Math.max(...last.map((l) => l.key));
    this.#lastT.set(n, t);
    return t;
  }

  /**
   * The earlier of the file's first two row times: a first row whose time was damaged into the
   * future (#read) is out of order with the row after it, and would have the file left out of
   * every question before that time.
   */
  async #firstTime(n: number): Promise<number | null> {
    if (this.#firstT.has(n)) return this.#firstT.get(n)!;
    let first: number | null = null;
    let rows = 0;
    for await (const line of this.#o.files.readLines(segmentPath(this.#segments, n), 4096)) {
      const m = ROW_TIME.exec(line);
      if (m === null) continue;
      first = Math.min(first ?? Infinity, Number(m[1]));
      if (++rows === 2) break;
    }
    // The current file may still be empty or hold one row: only a time of two rows is kept.
    if (rows === 2) this.#firstT.set(n, first);
    return first;
  }
}

/** A row kept until the disk works again. */
interface HeldRow {
  readonly row: string;
  readonly t: number;
  /** Its place in write() order. */
  readonly seq: number;
  readonly bytes: number;
}

/** Whether a line ends as every row and gap line does (a torn one lost its end). */
function endsLikeRow(line: string): boolean {
  return line.endsWith("}") || line.trimEnd().endsWith("}");
}

/**
 * Rows a disk read holds past the one it judges (DiskTier.read): a row in a bucket after both
 * was damaged into the future.
 */
const ROW_ORDER_AHEAD = 2;

/** A row line's beginning: its bucket start, read without parsing the row. */
const ROW_TIME = /^\{"t":(\d+),/;

/** The bucket start of a row line, read without parsing it (null: not a row). */
function rowTime(line: JournalLine): number | null {
  const m = ROW_TIME.exec(line.text);
  return m ? Number(m[1]) : null;
}

/**
 * The JSON text of a row. `ring`: the first poll number of the device's ring that wrote it (History:
 * DeviceRing.startSeq), written as `r` when above 0 -- a ring made again in the same run (the
 * device let go and picked up again) -- so a reader tells its rows from an earlier ring's of the
 * same times (rowRing); the run's first rings' rows (0) are written without it.
 */
export function rowText(
  tMs: number,
  providerId: string,
  deviceId: string,
  signals: readonly (readonly [string, HistoryPoint, (ValueType | null)?])[],
  ring = 0,
): string {
  const s: Record<string, unknown[]> = {};
  for (const [id, p, type] of signals) {
    s[id] = [p.min, p.max, p.last, p.count, p.quality];
    // The type of its values (VALUE_TYPES index), when it has had one: a retype is a new series.
    if (type !== undefined && type !== null) s[id].push(VALUE_TYPES.indexOf(type));
  }
  const row = () =>
    ring > 0
      ? toJsonText({ t: tMs, p: providerId, d: deviceId, s, r: ring })
      : toJsonText({ t: tMs, p: providerId, d: deviceId, s });
  let text = row();
  if (utf8Length(text) <= DISK_MAX_ROW_BYTES) return text;
  // Longer than a row is read back (it would be skipped, every signal of the device with it):
  // the longest string `last` values (strings, bytes) are written as null until it fits; their
  // points keep count and quality.
  const long = Object.values(s).filter((v) => typeof v[2] === "string")
    .sort((a, b) => (b[2] as string).length - (a[2] as string).length);
  for (const v of long) {
    v[2] = null;
    text = row();
    if (utf8Length(text) <= DISK_MAX_ROW_BYTES) break;
  }
  return text;
}

/**
 * The ring a row names (`r`: the first poll number of the device's ring that wrote it), 0 for a
 * row without one (its run's first ring, or written before rings were named). Within one run the
 * device's later rings have higher numbers: a row naming a lower one than a ring's was written
 * by an earlier ring of its device (History's answer takes it from the disk: no ring holds it).
 */
export function rowRing(row: DiskRow): number {
  const r = row.r;
  return typeof r === "number" && Number.isSafeInteger(r) && r > 0 ? r : 0;
}

/** The source text of a JSON value, given to a reviver by V8 (JSON.parse source text access). */
interface ReviverContext {
  readonly source?: string;
}

/** A run of digits longer than any integer a double holds exactly (2^53 has 16 digits). */
const LONG_DIGITS = /\d{16}/;
const INTEGER_TEXT = /^-?\d+$/;

/**
 * Keeps a signal's `last` exact when it is an integer no double holds (an int64 or uint64 beyond
 * +/-2^53, written as its digits by `toJsonText`): a bigint, as the ring gives it back. `last` is
 * element 2 of a signal's array, the only arrays of a row.
 */
function exactLast(this: unknown, key: string, value: unknown, context?: ReviverContext): unknown {
  if (
    key === "2" && typeof value === "number" && Array.isArray(this) &&
    !Number.isSafeInteger(value) && context?.source !== undefined &&
    INTEGER_TEXT.test(context.source)
  ) return BigInt(context.source);
  return value;
}

/**
 * A row, or null for a line that is not one (torn, damaged, a gap line). A row holding a long run
 * of digits is parsed keeping integers beyond 2^53 exact (`exactLast`); the others, the fast way.
 */
export function parseRow(line: string): DiskRow | null {
  let v: unknown;
  try {
    v = LONG_DIGITS.test(line)
      ? JSON.parse(line, exactLast as (this: unknown, key: string, value: unknown) => unknown)
      : JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null) return null;
  const r = v as Record<string, unknown>;
  if (
    typeof r.t !== "number" || typeof r.p !== "string" || typeof r.d !== "string" ||
    typeof r.s !== "object" || r.s === null
  ) return null;
  return r as unknown as DiskRow;
}

/**
 * Whether a row's entry for one signal holds values of `type`: its sixth member names the type
 * (a VALUE_TYPES index); an entry without one (no value in its bucket, or written before types
 * were) is taken for any.
 */
export function rowTypeIs(entry: unknown, type: ValueType): boolean {
  if (!Array.isArray(entry)) return false;
  const code = entry[5];
  return typeof code !== "number" || VALUE_TYPES[code] === undefined || VALUE_TYPES[code] === type;
}

/**
 * The type a row's entry for one signal names (its sixth member, a VALUE_TYPES index); null when
 * it names none (no value in its bucket, written before types were, or not a known index).
 */
export function rowType(entry: unknown): ValueType | null {
  if (!Array.isArray(entry)) return null;
  const code = entry[5];
  return typeof code === "number" ? VALUE_TYPES[code] ?? null : null;
}

/** A row's entry for one signal as a point (null when it is malformed: not an array too). */
export function rowPoint(t: number, entry: unknown): HistoryPoint | null {
  if (!Array.isArray(entry)) return null;
  const [min, max, last, count, quality] = entry;
  const numOrNull = (x: unknown) => typeof x === "number" ? x : null;
  if (typeof count !== "number" || typeof quality !== "number") return null;
  return {
    t_ms: t,
    min: numOrNull(min),
    max: numOrNull(max),
    last: typeof last === "number" || typeof last === "bigint" || typeof last === "string"
      ? last
      : null,
    count,
    // A code QUALITY_BY_CODE names (an integer 0-3), else UNAVAILABLE: a damaged row never
    // answers a quality the API cannot name ("undefined" in CSV).
    quality: Number.isInteger(quality) && quality >= 0 && quality <= 3 ? quality : 3,
  };
}
