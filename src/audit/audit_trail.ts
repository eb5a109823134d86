/**
 * The audit trail (docs/http-api.md, "Audit trail"): every decision on an actuating call, mode
 * change, parameter set, e-stop and clear, with who asked (AuditOrigin), kept in an append-only
 * JSONL journal under `<runtime.data_dir>/audit/` and served by GET /v0/audit. Written through a
 * JournalWriter (src/journal/: group commit, batched fsync, bounded queue, torn-line recovery,
 * rotation); this module keeps the audit's own rules.
 *
 * - Write ahead (a crash must never lose a call that reached a provider): before the router sends
 *   an actuating call, `writeAhead` writes the decision (origin, device, function, args, mode) and
 *   the call waits until its bytes are handed to the OS (write(2) done; the fsync follows within
 *   AUDIT_SYNC_INTERVAL_MS), at most AUDIT_WRITE_AHEAD_TIMEOUT_MS. Decisions of the same tick share
 *   one write. The record of the call's outcome (the entry served) follows and settles it. A repeat
 *   of the open accepted entry (below) writes nothing ahead: the same decision is on disk already.
 * - What a crash (kill -9, power loss after the fsync) can lose: the outcome of a call, never
 *   the call. At the next start, a decision written ahead whose outcome is not in the last
 *   AUDIT_RECOVERY_SCAN_BYTES of the journal becomes an entry of outcome `interrupted` (its result
 *   and latency unknown, count 1). A clean close ends the journal with a closing record that lists
 *   the calls still in flight: the next start reads that line instead of the tail (a start costs
 *   the same however large the journal grew); after a crash, it searches from the last checkpoint
 *   (the same record, every AUDIT_CHECKPOINT_BYTES). Both also list the calls recorded
 *   `interrupted` that the run registry has not taken yet (its start failed): the next start
 *   gives them to the run the crash left open (earlierInterrupted). Lost with the process: the
 *   count of repeats collapsed into an entry still open (at most AUDIT_COLLAPSE_MAX_OPEN_MS of
 *   them, each identical to a decision on disk), outcomes not yet written, and a gap count not
 *   yet written (below).
 *   Power loss can lose, in addition, what was written in the last AUDIT_SYNC_INTERVAL_MS.
 * - A journal that cannot be written (full disk, read-only folder) never blocks a call or a
 *   stop: the write fails fast, the call goes on, and the failure is counted, logged (ERROR once
 *   per failing streak) and shown in status() (GET /v0/providers/health `audit`) and metrics. The
 *   entries lost are counted (`gap_pending`); when writing works again an entry of action `gap`
 *   with that count (and the first and last time and the error) is written, and a WARN says so:
 *   numbered when the first was lost and written in that place (before the entries decided after
 *   it), so `seq` ascends in the journal as in memory.
 *   Entries are never claimed to be on disk when they are not. A restart before writing works
 *   again loses the count (the ERROR in the log and the metrics scraped meanwhile are what is
 *   known).
 * - Collapse: consecutive identical call decisions (same action, origin, device, function, args,
 *   outcome, reason and mode) are one entry with `count` and first/last times. The open entry is
 *   closed by a different decision, after AUDIT_COLLAPSE_MAX_OPEN_MS, by a read (GET /v0/audit)
 *   and at shutdown. Calls and untrusted refusals (below) collapse; mode, parameter and e-stop
 *   entries are written as they happen.
 * - Dates never fall (#date): every date the trail gives (an entry's times, a write-ahead record, a
 *   checkpoint or closing record, a loss of the journal, hence a `gap` entry's span) is the wall
 *   clock's, but never before the newest it gave before; across a restart, never before the newest
 *   found in what openJournal reads of the journal anyway (its closing record, or its tail from the
 *   last checkpoint). After a step back of the wall clock an e-stop's clear is thus never dated
 *   before its trigger, and a read `since` the trigger finds both. An `interrupted` entry keeps the
 *   date of its write-ahead record (when the call was decided).
 * - Untrusted refusals (refusedUntrusted: a request with no valid token, from a foreign web page,
 *   or under a role without the right; anyone who can reach the port can cause them): at most
 *   AUDIT_UNTRUSTED_PER_WINDOW entries per AUDIT_UNTRUSTED_WINDOW_MS are written one by one
 *   (identical consecutive ones collapse and count once); the rest of the window is summed up in
 *   one entry, so that a flood of refused requests can neither rotate the record of what was done
 *   out of the journal nor fill its queue.
 * - Bounds (audit_entry.ts): every text of an entry at most AUDIT_MAX_TEXT_BYTES, every line at
 *   most AUDIT_MAX_ENTRY_BYTES. A read never skips a line silently: a line it cannot use (torn by
 *   a crash, damaged, longer than AUDIT_READ_MAX_LINE_BYTES) is reported in the page's `problems`
 *   with its place, counted, and logged once.
 * - Rotation: segments `audit-00000001.jsonl`, `audit-00000002.jsonl`, ... A segment that would
 *   grow past `audit.max_file_bytes` is closed and the next one begun; beyond `audit.max_files`
 *   segments the oldest is removed. Segment numbers never repeat, so a cursor (segment, byte
 *   offset) stays valid across rotation; a cursor into a removed segment resumes at the oldest.
 * - Without a journal (openJournal not called: a runtime embedded in tests) the trail keeps
 *   the last AUDIT_MEMORY_ENTRIES entries in memory and answers queries from them.
 */
import {
  type Clock,
  errorMessage,
  invalidArgument,
  type Logger,
  neverThrowing,
  parseJsonExact,
  quoteProviderTextWithin,
  type TimerId,
  toJsonText,
  transitionDate,
  utf8Length,
} from "../common/mod.ts";
import type {
  AuditCallAhead,
  AuditDecision,
  AuditIntent,
  AuditOriginKind,
  AuditSink,
  WriteAheadOptions,
} from "../control/mod.ts";
import {
  isCutLine,
  type JournalAppendResult,
  type JournalFiles,
  type JournalGap,
  type JournalLine,
  JournalLineCount,
  JournalWriter,
  segmentNumbers,
  segmentPath,
  storedLineBytes,
} from "../journal/mod.ts";
import { AUDIT_MAX_ENTRY_BYTES, type AuditEntry, bounded, boundedEntry } from "./audit_entry.ts";

/**
 * Lines waiting for the disk; past it new entries are dropped and counted, but the entries of a
 * stop, which have AUDIT_SAFETY_RESERVE_ENTRIES places more.
 */
export const AUDIT_QUEUE_MAX_ENTRIES = 1000;
/**
 * Places of the journal's queue beyond AUDIT_QUEUE_MAX_ENTRIES kept for the entries of a stop
 * (isSafetyEntry: the e-stop and its clear, mode changes, reload decisions, the calls of the
 * e-stop ladder, of the hooks and of a device-loss FAULT, and their write-ahead records), so a
 * flood of call entries waiting for a slow disk does not drop the record that the machine was
 * stopped. Past these they are dropped and counted too.
 */
export const AUDIT_SAFETY_RESERVE_ENTRIES = 100;
/** Entries kept in memory when there is no journal. */
export const AUDIT_MEMORY_ENTRIES = 1000;
/**
 * Longest device handle or function name (a provider's text, read back from the journal) the line
 * of an interrupted call quotes; longer is cut, marked with an ellipsis. The entry keeps it.
 */
export const AUDIT_QUOTED_NAME_CHARS = 128;

/** A device handle or function name in a log line: cut to AUDIT_QUOTED_NAME_CHARS and quoted. */
function quoteName(name: string | null): string {
  return name === null ? "null" : quoteProviderTextWithin(name, AUDIT_QUOTED_NAME_CHARS);
}
/**
 * Longest the trail dates entries at its newest date while the wall clock is behind it (#date):
 * an NTP correction is seconds to minutes; a clock stepped back further (one set years ahead by
 * mistake, then corrected) is believed, said in one WARN, rather than holding every date, across
 * restarts, until the clock catches up.
 */
export const AUDIT_DATE_HOLD_MAX_MS = 60 * 60 * 1000;
/** Longest time a collapsed entry stays open (its repeats uncounted on disk) after its first call. */
export const AUDIT_COLLAPSE_MAX_OPEN_MS = 5000;
/** Untrusted refusals written one by one per AUDIT_UNTRUSTED_WINDOW_MS; the rest are summed up. */
export const AUDIT_UNTRUSTED_PER_WINDOW = 60;
/** The window of AUDIT_UNTRUSTED_PER_WINDOW, in ms. */
export const AUDIT_UNTRUSTED_WINDOW_MS = 60_000;
/** Page sizes of GET /v0/audit. */
export const AUDIT_PAGE_LIMIT = { default: 100, max: 1000 } as const;
/** Bytes of journal one GET /v0/audit reads at most; past it the page ends with a cursor. */
export const AUDIT_SCAN_MAX_BYTES = 8 * 1024 * 1024;
/** Unreadable lines one page reports at most; past it the page ends with a cursor. */
export const AUDIT_PAGE_MAX_PROBLEMS = 100;
/**
 * Longest line a read parses (lines of an older version may exceed AUDIT_MAX_ENTRY_BYTES; they are
 * served bounded); a longer line is reported as unreadable.
 */
export const AUDIT_READ_MAX_LINE_BYTES = 1024 * 1024;
/** Longest time between an entry's write and its fsync. */
export const AUDIT_SYNC_INTERVAL_MS = 1000;
/** How long a read waits for queued entries to reach the journal before it reads anyway. */
export const AUDIT_READ_FLUSH_TIMEOUT_MS = 2000;
/**
 * Longest time a call waits for its decision to reach the OS before it is sent anyway (a stalled
 * disk must not hold up the machine; counted as `write_ahead_late_total`).
 */
export const AUDIT_WRITE_AHEAD_TIMEOUT_MS = 100;
/** Bytes at the end of the journal searched at start for calls whose outcome is missing. */
export const AUDIT_RECOVERY_SCAN_BYTES = 8 * 1024 * 1024;
/**
 * Write-ahead records of this process not yet settled that it keeps, to list at a clean close
 * (calls in flight: bounded by the router; while a record past this bound is unsettled, no
 * checkpoint nor closing record is written, and a start after that searches the journal's tail).
 */
export const AUDIT_MAX_UNSETTLED = 256;
/**
 * Calls recorded `interrupted` that the run registry has not taken (its start failed) the trail
 * keeps for a later start (`for_runs`): a registry that fails start after start must not make them
 * grow with every start (each adds the calls its crash left in flight). Past it the oldest that
 * earlier starts recorded are dropped at openJournal, with a WARN naming how many (they stay on
 * the trail as `interrupted` entries, of no run); those a start records itself are never dropped
 * there (its run registry is given each as it is recorded): at most AUDIT_MAX_FOUND_UNSETTLED, the
 * most a start keeps. As many as AUDIT_MAX_UNSETTLED: what one start takes from a closing record.
 */
export const AUDIT_MAX_FOR_RUNS = AUDIT_MAX_UNSETTLED;
/**
 * Write-ahead records without an outcome the start's search of the journal's tail keeps at once
 * (AUDIT_RECOVERY_SCAN_BYTES holds up to ~37,000 of this trail's, ~220,000 crafted short ones,
 * each a parsed object of 100-400 bytes, then an `interrupted` entry and a WARN each): a journal
 * that leaves more unsettled (crafted, damaged, or crash after crash whose `interrupted` entries
 * were never written) has the oldest passed over as the search reads on, with one WARN naming how
 * many: they are not recorded `interrupted` (a later line may have settled some). A process has
 * one call written ahead per provider at most (under the provider's lock); twice what a closing
 * record lists, so a process past AUDIT_MAX_UNSETTLED in flight (no closing record) still has them
 * all found.
 */
export const AUDIT_MAX_FOUND_UNSETTLED = 2 * AUDIT_MAX_UNSETTLED;
/**
 * Bytes of journal lines whose records each list of the start's search keeps (the write-ahead
 * records without an outcome; the calls recorded `interrupted` for the runs), the oldest passed
 * over past it as past the count: a line of up to AUDIT_MAX_ENTRY_BYTES can parse into an object
 * six times its size (thousands of keys), so that 512 such lines would take ~50 MiB; within this,
 * ~3 MiB a list at most. This trail's records are ~250-500 bytes: the counts bind first.
 */
export const AUDIT_MAX_FOUND_BYTES = 512 * 1024;
/**
 * Calls recorded `interrupted` at a start (written ahead by an earlier process without an outcome)
 * said by a WARN line each; past it, one WARN line counts the rest. A journal's tail can leave up
 * to AUDIT_MAX_FOUND_UNSETTLED (an older version's, without a checkpoint; a crafted or damaged
 * one): each is still an `interrupted` entry on the audit trail, where the operator reads them.
 */
export const AUDIT_INTERRUPTED_WARN_LINES = 8;
/**
 * Bytes written to the audit journal between two checkpoints (records of the calls then in
 * flight): the search after a crash reads about this much instead of AUDIT_RECOVERY_SCAN_BYTES.
 */
export const AUDIT_CHECKPOINT_BYTES = 1024 * 1024;
/** What the search after a crash reads first: the last checkpoint lies within it. */
const CHECKPOINT_WINDOW_BYTES = AUDIT_CHECKPOINT_BYTES + 4 * AUDIT_MAX_ENTRY_BYTES;
/** Write-ahead ids one entry line settles at most; more go on a line of their own. */
export const AUDIT_MAX_INTENTS_PER_LINE = 16;
/** Positions of unreadable lines already logged (one WARN each); bounded. */
export const AUDIT_MAX_LOGGED_PROBLEMS = 1000;
/** Defaults of `audit.max_file_bytes` and `audit.max_files`. */
export const AUDIT_DEFAULTS = { maxFileBytes: 16 * 1024 * 1024, maxFiles: 8 } as const;

const SEGMENT_PREFIX = "audit";

/** Journal health (GET /v0/providers/health `audit`). */
export interface AuditStatus {
  /** `memory`: no journal (entries in memory only); `ok`; `failing`: the last write failed. */
  journal: "memory" | "ok" | "failing";
  /** The journal folder, or null without one. */
  path: string | null;
  entries_total: number;
  write_errors_total: number;
  /** Entries not journaled: refused by the full queue, or their write failed. */
  dropped_total: number;
  queued: number;
  /** Entries lost since the journal last wrote, not yet recorded by a `gap` entry. */
  gap_pending: number;
  /** Calls sent before their decision reached the OS (AUDIT_WRITE_AHEAD_TIMEOUT_MS passed). */
  write_ahead_late_total: number;
  /** Journal lines a read could not use (reported in the page's `problems`). */
  unreadable_lines_total: number;
  /**
   * Calls recorded interrupted that no start of the runs took (`for_runs` of a checkpoint or a
   * closing record) this process dropped, the oldest, past AUDIT_MAX_FOR_RUNS (or
   * AUDIT_MAX_FOUND_BYTES in the journal's search; each drop WARNed): they are no run's events.
   * Not `interrupted` entries found in the journal that no such record lists (an older version's
   * journal): whether a run registry took them is not known (their drop has a WARN of its own).
   */
  for_runs_dropped_total: number;
  last_error: string | null;
  last_error_at_epoch_ms: number | null;
}

/** A GET /v0/audit query (parsed by the HTTP layer). */
export interface AuditQuery {
  readonly sinceMs?: number;
  readonly untilMs?: number;
  /** `provider/device` or a bare device id. */
  readonly deviceId?: string;
  readonly origin?: AuditOriginKind;
  readonly limit: number;
  /** As returned in `next_cursor`; INVALID_ARGUMENT when it is not one. */
  readonly cursor?: string;
}

/** A journal line a read could not use. */
export interface AuditProblem {
  /** The journal file's name. */
  file: string;
  /** Byte offset of the line in it. */
  offset: number;
  /** Bytes of the line as stored. */
  bytes: number;
  problem: string;
}

/** A page of entries, oldest first; `next_cursor` null when nothing follows (yet). */
export interface AuditPage {
  entries: AuditEntry[];
  next_cursor: string | null;
  /** Lines of the part read that could not be used (never skipped silently). */
  problems: AuditProblem[];
}

export interface AuditTrailOptions {
  /** The time of entries, and the timers of the collapse bound, the waits and the fsync. */
  readonly clock: Clock;
  readonly log: Logger;
  /** The current runtime mode, stamped on every entry. */
  readonly mode: () => string;
  /** Randomness of the process's write-ahead ids (default crypto.getRandomValues). */
  readonly random?: (bytes: Uint8Array) => void;
  /**
   * The run open now (src/runs/), or null: stamped on every write-ahead record (`run_id`), so
   * that a call the next start finds interrupted goes to the run it was decided in by identity,
   * not by comparing wall times a stepped host clock can reorder.
   */
  readonly runId?: () => string | null;
}

/** Where the journal lives and its bounds (`audit.*`). */
export interface AuditJournalOptions {
  /** Absolute folder (`<runtime.data_dir>/audit`). */
  readonly dir: string;
  readonly files: JournalFiles;
  readonly maxFileBytes: number;
  readonly maxFiles: number;
}

/**
 * Called with every entry once it is closed (the run registry records calls as run events).
 * `intents`: the write-ahead ids of the calls the entry settles (see inFlightCalls). `runId`, for
 * an `interrupted` entry only: the run its write-ahead record names (null: no run was open;
 * undefined: the record names none, as an older version wrote it).
 */
export type AuditEntryListener = (
  entry: AuditEntry,
  intents: readonly string[],
  runId?: string | null,
) => void;

/** A call written ahead whose outcome is not recorded yet (in flight): its id and decision. */
export interface AuditInFlightCall {
  readonly intent: string;
  readonly time_epoch_ms: number;
  readonly origin: AuditCallAhead["origin"];
  readonly device_handle: string | null;
  readonly function: string | null;
  readonly args: Readonly<Record<string, unknown>> | null;
  readonly mode: string;
}

interface Journal extends AuditJournalOptions {
  readonly writer: JournalWriter;
}

/**
 * What openJournal reads of the journal: the write-ahead records no entry settles, and the newest
 * date of the lines read (null: none).
 */
interface Unsettled {
  readonly open: IntentRecord[];
  readonly newest: number | null;
  /** Calls an earlier start recorded `interrupted` that its run registry may not have taken. */
  readonly forRuns: ForRunsRecord[];
  /**
   * The write-ahead ids of those a closing record or a checkpoint lists (`for_runs`: no start of
   * the runs had taken them); the others are `interrupted` entries found after the last one, or
   * in a tail that has none (an older version's journal): whether their start's run registry took
   * them is not known.
   */
  readonly listed: ReadonlySet<string>;
  /** Of those listed, the oldest the search passed over past its bounds (absent: none). */
  readonly forRunsDropped?: number;
  /** Of those not listed, the oldest the search passed over past its bounds (absent: none). */
  readonly forRunsPassedOver?: number;
  /** Write-ahead records passed over past AUDIT_MAX_FOUND_UNSETTLED, the oldest (absent: none). */
  readonly openDropped?: number;
}

/**
 * A call an earlier start recorded `interrupted` (its write-ahead record and that entry's `seq`),
 * kept for the run registry until a start of it takes it (interruptedTaken): listed in `for_runs`
 * of the checkpoints and the closing record meanwhile.
 */
interface ForRunsRecord extends IntentRecord {
  seq: number;
}

/** A write-ahead record as stored (first key `intent`: the recovery scan looks for the prefix). */
interface IntentRecord {
  intent: string;
  time_epoch_ms: number;
  origin: AuditCallAhead["origin"];
  device_handle: string | null;
  function: string | null;
  args: Readonly<Record<string, unknown>> | null;
  mode: string;
  /** The run open when the call was decided (AuditTrailOptions.runId); absent in older records. */
  run_id?: string | null;
}

const INTENT_PREFIX = '{"intent":';
const INTENTS_PREFIX = '{"intents":[';
const COVERS_PREFIX = '{"covers":[';
/**
 * A record of the write-ahead records then unsettled: every earlier write-ahead record is settled
 * or listed in `open`. A `covers` line that settles nothing, so that a reader of an older version
 * skips it: the closing record of a clean close (CLOSED_PREFIX, `clean_close`), or a checkpoint
 * (`checkpoint`) every AUDIT_CHECKPOINT_BYTES.
 */
const MARKER_PREFIX = '{"covers":[],';
const CLOSED_PREFIX = '{"covers":[],"clean_close":';
const CHECKPOINT_PREFIX = '{"covers":[],"checkpoint":';
/** The member of a closing record or a checkpoint that lists #forRuns, up to its first record. */
const FOR_RUNS_KEY = ',"for_runs":[';

/** The audit trail; the AuditSink of the router, modes, parameters and e-stop. */
export class AuditTrail implements AuditSink {
  readonly #o: AuditTrailOptions;
  /**
   * Its lines never throw. A report of a failure the trail contains (an entry not recorded, a
   * listener that threw) must not carry the failure into the caller (the e-stop, a FAULT commit)
   * after all, nor skip what follows the report; a line said in the middle of a record (the calls
   * in flight past AUDIT_MAX_UNSETTLED and back within it, markers held for a failing journal)
   * must not skip the record: a logger that throws (a custom one) loses the line, never the
   * write-ahead record, the entry, its listeners or a checkpoint.
   */
  readonly #log: Logger;
  /** Lines its journal wrote, and those of its write under way (the stop's wait reads them). */
  readonly journalLineCount = new JournalLineCount();
  /**
   * The open (collapsing) entry and the write-ahead ids its decisions settle; `side`: that of
   * its first decision's call (#side: up to #boundary, up to #cut, or after both).
   */
  #open: {
    key: string;
    entry: AuditEntry;
    timer: TimerId;
    intents: string[];
    /** Those of `intents` with no record on disk (untracked repeats): kept out of its line. */
    unwritten: string[];
    side: 0 | 1 | 2;
    /** The wall clock (not the date) at its last decision: a step back since ends it. */
    lastWall: number;
  } | null = null;
  /**
   * Untrusted refusals: this window's start (monotonic: a wall clock stepped back must neither
   * stretch the window nor hold the summing-up entry) and entries written; the summing-up entry.
   */
  #untrusted: {
    windowStartMono: number;
    written: number;
    over: { entry: AuditEntry; firstReason: string; timer: TimerId } | null;
  } = { windowStartMono: -Infinity, written: 0, over: null };
  /**
   * The newest date the trail gave (an entry, a write-ahead record, a checkpoint or closing
   * record, a loss of the journal); at openJournal, the newest found in what it reads of the
   * journal, if later. Null before the first. See #date.
   */
  #newest: number | null = null;
  #seq = 0;
  #entriesTotal = 0;
  /** The seq of the last `gap` entry counted in #entriesTotal (#gapLine). */
  #gapCounted = 0;
  #aheadLate = 0;
  #aheadLateLogged = false;
  #unreadable = 0;
  /** Of #forRuns, those dropped past AUDIT_MAX_FOR_RUNS (AuditStatus.for_runs_dropped_total). */
  #forRunsDropped = 0;
  readonly #loggedProblems = new Set<string>();
  readonly #memory: AuditEntry[] = [];
  #journal: Journal | null = null;
  /**
   * The writer of a journal whose opening is under way (openJournal), until it is taken: close()
   * closes it, so an opening the stop overtook removes no segment and begins none once the disk
   * answers (JournalWriter.open ends at its step).
   */
  #opening: JournalWriter | null = null;
  readonly #listeners: AuditEntryListener[] = [];
  /** After seal(): nothing collapses any more (no timer outlives the runtime). */
  #sealed = false;
  /**
   * After close(): a journal whose opening returns only now (a hung mount answering after the
   * stop) is closed again, never taken (openJournal).
   */
  #closed = false;
  /** This process's prefix of write-ahead ids, and the last number. */
  readonly #boot: string;
  #intentSeq = 0;
  /** The last write-ahead number when a run last opened or closed (runBoundary). */
  #boundary = 0;
  /** The last write-ahead number when a close of the open run last failed (cutEntries). */
  #cut = 0;
  /**
   * The decision each write ahead wrote and its collapse key (#key), for its outcome's record to
   * use instead of building it again (#callKey); held as long as the intent is.
   */
  readonly #aheadKeys = new WeakMap<
    AuditIntent,
    {
      readonly call: AuditCallAhead;
      readonly mode: string;
      readonly key: string;
      /** A repeat past AUDIT_MAX_UNSETTLED repeats: not listed (#overflowAfterBoundary). */
      readonly untracked?: true;
    }
  >();
  /**
   * The mode of each call decided without a journal (writeAhead wrote nothing, numbered nothing):
   * its outcome's entry takes it (#decidedMode), and settles no write ahead (#record).
   */
  readonly #unwrittenModes = new WeakMap<AuditIntent, string>();
  /** This process's write-ahead records not settled yet (their lines), by id; bounded. */
  readonly #unsettled = new Map<string, string>();
  /**
   * Records of this process that did not fit in #unsettled and are not settled yet: while any is,
   * a closing record or a checkpoint could not list it, so none is written (#markerLine).
   */
  #unsettledOverflow = 0;
  /**
   * The calls recorded `interrupted` by this start or found so by it (an earlier start recorded
   * them, its run registry may not have taken them), by write-ahead id, until the run registry's
   * start takes them (interruptedTaken): the checkpoints and the closing record list them
   * (`for_runs`), so a restart before that gives them to the run the crash left open.
   */
  readonly #forRuns = new Map<string, ForRunsRecord>();
  /** Those of #forRuns found in the journal (recorded by an earlier start), oldest first. */
  #earlierInterrupted: ForRunsRecord[] = [];
  /**
   * Those of #unsettledOverflow written ahead after the last run boundary (runBoundary), and the
   * repeats of the open entry past AUDIT_MAX_UNSETTLED (not in #repeats) decided since: calls in
   * flight inFlightCalls cannot list, counted by the run they were made in when it closes.
   */
  #overflowAfterBoundary = 0;
  /**
   * Repeats of the open accepted entry in flight (nothing written ahead for them while it is
   * open; their records are written when it closes, #closeOpen), by id: listed by inFlightCalls,
   * never by a closing record or a checkpoint; at most AUDIT_MAX_UNSETTLED.
   */
  readonly #repeats = new Map<string, IntentRecord>();
  /** How many of #forRuns the last checkpoint or closing record left out (logged when > 0). */
  #forRunsLeftOut = 0;
  /** Whether the last checkpoint or closing record was withheld for a failing journal (logged). */
  #markersHeld = false;
  /** Bytes queued for the journal since the last checkpoint. */
  #sinceCheckpoint = 0;

  constructor(options: AuditTrailOptions) {
    this.#o = options;
    this.#log = neverThrowing(options.log.child("audit"));
    const bytes = new Uint8Array(4);
    (options.random ?? ((b: Uint8Array) => crypto.getRandomValues(b)))(bytes);
    this.#boot = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  }

  /** Records one decision (collapsing a repeat of the open call entry). Never throws. */
  record(d: AuditDecision): void {
    try {
      const wall = this.#o.clock.nowMs();
      const now = this.#date(wall);
      const mode = this.#decidedMode(d);
      this.#record(d, d.action === "call" ? this.#callKey(d, mode) : null, now, mode, wall);
    } catch (err) {
      // Never let the record break a call or a stop.
      this.#log.error(`audit entry not recorded: ${errorMessage(err)}`);
    }
  }

  /**
   * Writes the decision to send an actuating call before it is sent; resolves once its bytes
   * reached the OS, its write failed (counted) or AUDIT_WRITE_AHEAD_TIMEOUT_MS passed (counted).
   * Nothing is written for a repeat of the open accepted entry (its intent, held in memory, is
   * listed by inFlightCalls until its outcome settles it; past AUDIT_MAX_UNSETTLED repeats, not
   * listed but counted: runBoundary's `unlisted`), nor without a journal (an intent with no id,
   * never listed, that only keeps the mode the call was decided in for its outcome's entry).
   * Never rejects: an internal error (a piece of the options that throws) is logged, and the
   * outcome's entry keeps the mode all the same when it was read (the record, when it was queued
   * already, still settled by the outcome; else an intent as without a journal).
   */
  async writeAhead(
    call: AuditCallAhead,
    options: WriteAheadOptions = {},
  ): Promise<AuditIntent | null> {
    let mode: string | undefined;
    let queued: AuditIntent | undefined;
    try {
      const journal = this.#journal;
      const wall = this.#o.clock.nowMs();
      const now = this.#date(wall);
      mode = this.#o.mode();
      if (journal === null) {
        // Nothing to write ahead, but the outcome's entry keeps the mode decided in, now's.
        const intent: AuditIntent = { id: "" };
        this.#unwrittenModes.set(intent, mode);
        return intent;
      }
      const accepted: AuditDecision = { ...call, action: "call", outcome: "accepted" };
      const key = this.#key(accepted, mode);
      // (Never a repeat of an entry of calls written ahead before the last run boundary.)
      const repeat = !this.#sealed && this.#open?.side === 2 && this.#collapses(key, now, wall);
      const id = `${this.#boot}.${++this.#intentSeq}`;
      if (repeat && this.#repeats.size >= AUDIT_MAX_UNSETTLED) {
        // A repeat beyond the bound is not listed by inFlightCalls, but it has an id all the same
        // (its number says which run it was decided in) and is counted as a call not listed.
        const intent: AuditIntent = { id };
        this.#overflowAfterBoundary++;
        this.#aheadKeys.set(intent, { call, mode, key, untracked: true });
        return intent;
      }
      const record: IntentRecord = {
        intent: id,
        time_epoch_ms: now,
        origin: call.origin,
        device_handle: call.device_handle ?? null,
        function: call.function ?? null,
        args: call.args ?? null,
        mode,
        ...(this.#o.runId ? { run_id: this.#o.runId() } : {}),
      };
      if (repeat) {
        // Nothing written (the open entry's decision is on disk), but in flight all the same: a
        // run closing meanwhile lists it, and its outcome is not an event of the next run.
        const intent: AuditIntent = { id };
        this.#repeats.set(id, record);
        this.#aheadKeys.set(intent, { call, mode, key });
        return intent;
      }
      const write = this.#appendAhead(journal, id, record);
      const intent: AuditIntent = { id };
      this.#aheadKeys.set(intent, { call, mode, key });
      queued = intent;
      if (options.wait === false) {
        // A stop action: queued in order, never waited for (a slow disk must not delay it).
        void write.catch(() => {});
        return intent;
      }
      let timer: TimerId;
      const late = new Promise<"late">((r) => {
        timer = this.#o.clock.setTimer(() => r("late"), AUDIT_WRITE_AHEAD_TIMEOUT_MS);
      });
      // Cut short (options.until): the call is not sent; nothing is late, nothing said.
      const cut = options.until === undefined ? [] : [
        Promise.resolve(options.until).then(() => "cut" as const, () => "cut" as const),
      ];
      const outcome = await Promise.race([write, late, ...cut]);
      this.#o.clock.clearTimer(timer);
      if (outcome === "cut") return intent;
      if (outcome === "late") {
        this.#aheadLate++;
        if (!this.#aheadLateLogged) {
          this.#aheadLateLogged = true;
          this.#log.warn(
            `audit journal slow: a call was sent before its decision was written ` +
              `(waited ${AUDIT_WRITE_AHEAD_TIMEOUT_MS} ms; counted as write_ahead_late_total)`,
          );
        }
      } else {
        this.#aheadLateLogged = false;
      }
      return intent;
    } catch (err) {
      this.#log.error(
        `audit decision ${queued ? "queued ahead, not waited for" : "not written ahead"}: ` +
          errorMessage(err),
      );
      if (queued !== undefined) return queued;
      if (mode === undefined) return null;
      const intent: AuditIntent = { id: "" };
      this.#unwrittenModes.set(intent, mode);
      return intent;
    }
  }

  /**
   * Records a refusal decided outside the domain layers (the HTTP layer: role, authentication,
   * a malformed request to an actuating route).
   */
  refused(d: Omit<AuditDecision, "outcome">): void {
    this.record({ ...d, outcome: "refused" });
  }

  /**
   * Records the refusal of a request that was not allowed to act at all (no valid token, a
   * foreign web page, a role without the right). Anyone who can reach the port can cause these,
   * so they are bounded: identical consecutive ones collapse like calls, at most
   * AUDIT_UNTRUSTED_PER_WINDOW entries per AUDIT_UNTRUSTED_WINDOW_MS are written one by one, and
   * the rest of the window is summed up in one entry (the first one's origin, action and reason,
   * with `count` the number summed up). Never throws.
   */
  refusedUntrusted(d: Omit<AuditDecision, "outcome">): void {
    try {
      const decision: AuditDecision = { ...d, outcome: "refused" };
      const wall = this.#o.clock.nowMs();
      const now = this.#date(wall);
      const mono = this.#o.clock.monoMs();
      const mode = this.#o.mode();
      const key = this.#key(decision, mode);
      const u = this.#untrusted;
      if (mono - u.windowStartMono >= AUDIT_UNTRUSTED_WINDOW_MS) {
        this.#closeUntrusted();
        u.windowStartMono = mono;
        u.written = 0;
      }
      // An identical refusal counts into the open entry (there is none once refusals are being
      // summed up: the first of them closed it).
      if (this.#sealed || this.#collapses(key, now, wall)) {
        this.#record(decision, key, now, mode, wall);
        return;
      }
      if (u.written < AUDIT_UNTRUSTED_PER_WINDOW) {
        u.written++;
        this.#record(decision, key, now, mode, wall);
        return;
      }
      if (u.over !== null) {
        u.over.entry.count++;
        // (Never before its first: #date.)
        u.over.entry.last_time_epoch_ms = now;
        return;
      }
      // A different decision closes the open entry, as in #record.
      this.#closeOpen();
      const entry = this.#entry(decision, now, mode);
      const timer = this.#o.clock.setTimer(
        () => this.#closeUntrusted(),
        u.windowStartMono + AUDIT_UNTRUSTED_WINDOW_MS - mono,
      );
      u.over = { entry, firstReason: decision.reason ?? "", timer };
    } catch (err) {
      this.#log.error(`audit entry not recorded: ${errorMessage(err)}`);
    }
  }

  /** Subscribes to closed entries. */
  onEntry(listener: AuditEntryListener): void {
    this.#listeners.push(listener);
  }

  /**
   * The mode `d` was decided in: for a call that was sent (its outcome `accepted` or `failed`),
   * the mode its write ahead recorded (without a journal: the mode then, kept in memory), not the
   * mode as its answer comes back (an e-stop that latched while it was on the wire made it
   * FAULT); for anything else, the mode now. A call refused after its write ahead (a gate that
   * closed meanwhile) was decided again, now.
   */
  #decidedMode(d: AuditDecision): string {
    if (!d.intent || d.outcome === "refused") return this.#o.mode();
    return this.#aheadKeys.get(d.intent)?.mode ?? this.#unwrittenModes.get(d.intent) ??
      this.#o.mode();
  }

  /**
   * The key of a call decision: the one its write ahead built when it is that decision's
   * accepted outcome (the same origin, device, function and args, in the same mode), else built.
   */
  #callKey(d: AuditDecision, mode: string): string {
    const ahead = d.intent ? this.#aheadKeys.get(d.intent) : undefined;
    if (
      ahead !== undefined && d.outcome === "accepted" && (d.reason ?? null) === null &&
      (d.refused_by ?? null) === null && ahead.mode === mode && d.origin === ahead.call.origin &&
      (d.device_handle ?? null) === (ahead.call.device_handle ?? null) &&
      (d.function ?? null) === (ahead.call.function ?? null) &&
      (d.args ?? null) === (ahead.call.args ?? null)
    ) return ahead.key;
    return this.#key(d, mode);
  }

  /** What makes two decisions identical for collapsing. */
  #key(d: AuditDecision, mode: string): string {
    return toJsonText([
      d.action,
      d.origin,
      d.device_handle ?? null,
      d.function ?? null,
      d.args ?? null,
      d.outcome,
      d.reason ?? null,
      d.refused_by ?? null,
      mode,
    ]);
  }

  /**
   * The date of what the trail records now, `wall` the wall clock: never before the newest date
   * it gave (#newest). After a step back of the wall clock (NTP on a Raspberry Pi without a
   * real-time clock), the date stays at that newest one until the clock passes it again, so an
   * e-stop's clear is never dated before its trigger and a read `since` the trigger finds both.
   * One comparison (on the path of every call).
   */
  #date(wall: number): number {
    const newest = this.#newest;
    if (newest !== null && newest - wall > AUDIT_DATE_HOLD_MAX_MS) this.#believe(wall, newest);
    return this.#newest = transitionDate(wall, this.#newest);
  }

  /**
   * The wall clock stepped back more than AUDIT_DATE_HOLD_MAX_MS behind the newest date: dated by
   * the clock again from here (entries before may be dated after those that follow), said once.
   */
  #believe(wall: number, newest: number): void {
    this.#log.warn(
      `the wall clock is ${newest - wall} ms behind the audit's newest date (${newest}), more ` +
        `than AUDIT_DATE_HOLD_MAX_MS (${AUDIT_DATE_HOLD_MAX_MS}): entries are dated by the wall ` +
        `clock again, after entries dated later`,
    );
    this.#newest = null;
  }

  /**
   * True when a decision with this key, dated `now` (#date) at the wall clock `wall`, counts into
   * the open entry: not past its bound, nor after a step back of the wall clock since its last
   * decision (the repeat after a step back begins an entry of its own, as a different decision
   * would; the repeats after it collapse into that one).
   */
  #collapses(key: string, now: number, wall: number): boolean {
    const open = this.#open;
    return open !== null && open.key === key && wall >= open.lastWall &&
      now - open.entry.first_time_epoch_ms < AUDIT_COLLAPSE_MAX_OPEN_MS;
  }

  /**
   * Records `d` at `now` (#date of the wall clock `wall`) in `mode`: counted into the open entry
   * when `key` matches it, else a new entry, kept open for repeats when it has a key (calls,
   * untrusted refusals), written at once when not (`key` null).
   */
  #record(d: AuditDecision, key: string | null, now: number, mode: string, wall: number): void {
    const open = this.#open;
    // (A call decided without a journal settles no write ahead: it has no id.)
    const intent = d.intent && !this.#unwrittenModes.has(d.intent) ? d.intent.id : undefined;
    // A call written ahead before the last run boundary and one after it are events of different
    // runs, and one decided during a close that failed and one after it are not of the same
    // (cutEntries): never one entry.
    const side = this.#side(intent);
    const untracked = d.intent ? this.#aheadKeys.get(d.intent)?.untracked === true : false;
    if (untracked && side !== 0 && this.#overflowAfterBoundary > 0) this.#overflowAfterBoundary--;
    if (open !== null && key !== null && open.side === side && this.#collapses(key, now, wall)) {
      const e = open.entry;
      e.count++;
      e.last_time_epoch_ms = now;
      open.lastWall = wall;
      e.result = d.result ?? null;
      e.latency_ms = d.latency_ms ?? null;
      if (intent !== undefined) open.intents.push(intent);
      if (untracked) open.unwritten.push(intent!);
      return;
    }
    this.#closeOpen();
    const entry = this.#entry(d, now, mode);
    const intents = intent === undefined ? [] : [intent];
    const unwritten = untracked ? [intent!] : [];
    if (key === null || this.#sealed) {
      this.#emit(entry, intents, undefined, unwritten);
      return;
    }
    const timer = this.#o.clock.setTimer(() => {
      if (this.#open?.entry === entry) this.#closeOpen();
    }, AUDIT_COLLAPSE_MAX_OPEN_MS);
    this.#open = { key, entry, timer, intents, unwritten, side, lastWall: wall };
  }

  /**
   * Queues a call's write-ahead record (kept in #unsettled until its outcome settles it, past
   * AUDIT_MAX_UNSETTLED counted instead); resolves as the journal's append.
   */
  #appendAhead(journal: Journal, id: string, record: IntentRecord): Promise<JournalAppendResult> {
    const line = bounded(record as unknown as Record<string, unknown>).text;
    if (this.#unsettled.size < AUDIT_MAX_UNSETTLED) this.#unsettled.set(id, line);
    else {
      this.#overflowAfterBoundary++;
      if (this.#unsettledOverflow++ === 0) {
        this.#log.warn(
          `more than ${AUDIT_MAX_UNSETTLED} calls in flight (AUDIT_MAX_UNSETTLED): no ` +
            `checkpoint nor closing record until they settle (a start after this searches the ` +
            `journal's tail)`,
        );
      }
    }
    const write = journal.writer.append(line, {
      counted: false,
      spare: stopOrigin(record.origin) ? 0 : AUDIT_SAFETY_RESERVE_ENTRIES,
    });
    this.#wrote(journal, line);
    return write;
  }

  /** A new entry of one decision. */
  #entry(d: AuditDecision, now: number, mode: string): AuditEntry {
    return {
      seq: 0,
      time_epoch_ms: now,
      first_time_epoch_ms: now,
      last_time_epoch_ms: now,
      count: 1,
      origin: d.origin,
      action: d.action,
      device_handle: d.device_handle ?? null,
      function: d.function ?? null,
      args: d.args ?? null,
      mode,
      outcome: d.outcome,
      reason: d.reason ?? null,
      refused_by: d.refused_by ?? null,
      result: d.result ?? null,
      latency_ms: d.latency_ms ?? null,
    };
  }

  /** Writes the entry summing up this window's untrusted refusals over the bound, if any. */
  #closeUntrusted(): void {
    const over = this.#untrusted.over;
    if (over === null) return;
    this.#untrusted.over = null;
    this.#o.clock.clearTimer(over.timer);
    const e = over.entry;
    e.reason = `${e.count} refusal${e.count === 1 ? "" : "s"} of requests not allowed to act, ` +
      `over the ${AUDIT_UNTRUSTED_PER_WINDOW} per ${AUDIT_UNTRUSTED_WINDOW_MS / 1000} s ` +
      `written one by one, summed up here (origins, actions and reasons may differ); ` +
      `the first: ${over.firstReason}`;
    this.#closeOpen();
    this.#emit(e, []);
  }

  /** Closes the open (collapsing) entry: it is written to the journal. */
  #closeOpen(): void {
    const open = this.#open;
    if (!open) return;
    this.#open = null;
    this.#o.clock.clearTimer(open.timer);
    this.#emit(open.entry, open.intents, undefined, open.unwritten);
    // Its repeats still in flight are not in the entry just written (their outcome is not known):
    // it no longer stands for their decision, so each is written ahead now, as any other call's
    // (a crash then records it interrupted, a closing record lists it), and settled by its outcome.
    const journal = this.#journal;
    if (journal === null) return;
    for (const [id, record] of this.#repeats) void this.#appendAhead(journal, id, record);
    this.#repeats.clear();
  }

  /**
   * Counts a line queued for the journal; past AUDIT_CHECKPOINT_BYTES since the last checkpoint,
   * queues the next one (none when the record could not be trusted: #markerLine).
   */
  #wrote(journal: Journal, line: string): void {
    this.#sinceCheckpoint += utf8Length(line) + 1;
    if (this.#sinceCheckpoint < AUDIT_CHECKPOINT_BYTES) return;
    this.#sinceCheckpoint = 0;
    const checkpoint = this.#markerLine(journal, CHECKPOINT_PREFIX);
    if (checkpoint !== null) void journal.writer.append(checkpoint, { counted: false });
  }

  /**
   * Numbers, bounds and journals a closed entry; `intents`: the write-ahead ids it settles
   * (`unwritten`: those of untracked repeats, kept out of its line).
   */
  #emit(
    raw: AuditEntry,
    intents: readonly string[],
    runId?: string | null,
    unwritten: readonly string[] = [],
  ): void {
    raw.seq = ++this.#seq;
    this.#entriesTotal++;
    const untracked = unwritten.length === 0 ? null : new Set(unwritten);
    let written = untracked === null ? intents : intents.filter((id) => !untracked.has(id));
    for (const id of untracked === null ? intents : written) {
      if (this.#repeats.delete(id)) {
        // No record of it on disk to settle: its id stays out of the journal.
        written = written.filter((w) => w !== id);
        continue;
      }
      // Not kept: one of the records past AUDIT_MAX_UNSETTLED (each intent settles once).
      if (!this.#unsettled.delete(id) && this.#unsettledOverflow > 0) {
        if (!this.#beforeBoundary(id) && this.#overflowAfterBoundary > 0) {
          this.#overflowAfterBoundary--;
        }
        if (--this.#unsettledOverflow === 0) {
          this.#log.info(
            `calls in flight back within ${AUDIT_MAX_UNSETTLED} (AUDIT_MAX_UNSETTLED): ` +
              `checkpoints and the closing record are written again`,
          );
        }
      }
    }
    const { entry, text } = boundedEntry(raw);
    for (const listener of this.#listeners) {
      try {
        listener(entry, intents, runId);
      } catch (err) {
        this.#log.error(`audit listener failed: ${errorMessage(err)}`);
      }
    }
    const journal = this.#journal;
    if (!journal) {
      this.#memory.push(entry);
      if (this.#memory.length > AUDIT_MEMORY_ENTRIES) this.#memory.shift();
      return;
    }
    const line = entryLine(text, written.slice(0, AUDIT_MAX_INTENTS_PER_LINE));
    const spare = isSafetyEntry(entry) ? 0 : AUDIT_SAFETY_RESERVE_ENTRIES;
    void journal.writer.append(line, { spare });
    this.#wrote(journal, line);
    for (let i = AUDIT_MAX_INTENTS_PER_LINE; i < written.length; i += AUDIT_MAX_INTENTS_PER_LINE) {
      const covers = JSON.stringify({ covers: written.slice(i, i + AUDIT_MAX_INTENTS_PER_LINE) });
      void journal.writer.append(covers, { counted: false, spare });
      this.#wrote(journal, covers);
    }
  }

  /**
   * The `gap` entry of entries lost while the journal could not be written: numbered when the
   * first of them was lost (gapMark), it is written in that place among the entries (after those
   * numbered before, before the others: JournalWriter), so `seq` ascends in the journal.
   */
  #gapLine(gap: JournalGap): string {
    const entry: AuditEntry = {
      seq: gap.mark ?? ++this.#seq,
      time_epoch_ms: gap.firstLostAtMs,
      first_time_epoch_ms: gap.firstLostAtMs,
      last_time_epoch_ms: gap.lastLostAtMs,
      count: gap.lines,
      origin: { kind: "runtime" },
      action: "gap",
      device_handle: null,
      function: null,
      args: null,
      mode: this.#o.mode(),
      outcome: "failed",
      reason: `${gap.lines} entr${gap.lines === 1 ? "y was" : "ies were"} not journaled: ` +
        gap.reason,
      refused_by: null,
      result: null,
      latency_ms: null,
    };
    // One entry however often its line is made (again for each write tried while it is pending).
    if (entry.seq !== this.#gapCounted) this.#entriesTotal++;
    this.#gapCounted = entry.seq;
    return boundedEntry(entry).text;
  }

  /**
   * Starts journaling into `options.dir` (created when missing): appends to the newest segment
   * when it has room; records an `interrupted` entry for every call written ahead by an earlier
   * process whose outcome is missing; entries recorded before (memory) follow. Never throws: a
   * folder that cannot be used is reported like a failed write, and writing is retried per entry.
   */
  async openJournal(options: AuditJournalOptions): Promise<void> {
    const writer = new JournalWriter({
      files: options.files,
      target: {
        segments: {
          dir: options.dir,
          prefix: SEGMENT_PREFIX,
          maxFileBytes: options.maxFileBytes,
          maxFiles: options.maxFiles,
        },
      },
      name: "audit journal",
      log: this.#log,
      // The time of a loss is a date of the trail (#date): a `gap` entry never begins before the
      // entry before its losses.
      clock: {
        nowMs: () => this.#date(this.#o.clock.nowMs()),
        setTimer: (fn, ms) => this.#o.clock.setTimer(fn, ms),
        clearTimer: (id) => this.#o.clock.clearTimer(id),
      },
      maxQueuedLines: AUDIT_QUEUE_MAX_ENTRIES + AUDIT_SAFETY_RESERVE_ENTRIES,
      syncIntervalMs: AUDIT_SYNC_INTERVAL_MS,
      gapLine: (gap) => this.#gapLine(gap),
      gapMark: () => ++this.#seq,
      lineCount: this.journalLineCount,
    });
    const journal: Journal = { ...options, writer };
    this.#opening = writer;
    let interrupted: IntentRecord[] = [];
    let notSearched: string | null = null;
    let earlier: Unsettled | null = null;
    let openPassedOver = 0;
    try {
      const found = await this.#unsettledIntents(journal);
      interrupted = found.open;
      earlier = found;
      openPassedOver = found.openDropped ?? 0;
      this.#earlierInterrupted = found.forRuns;
      for (const r of found.forRuns) this.#forRuns.set(r.intent, r);
      this.#dateFromJournal(found.newest);
    } catch (err) {
      notSearched = `audit journal not searched for interrupted calls: ${errorMessage(err)}`;
    }
    // A failure is counted and reported by the writer (status failing from now on, one ERROR
    // naming the folder and the error; later writes are in its failing spell). A folder that can
    // be neither read nor opened (a file in its place) is one cause: the search's failure is said
    // in the writer's line, not in an ERROR of its own.
    let opened = true;
    await writer.open({
      note: notSearched === null ? undefined : "interrupted calls not searched for either",
    }).catch(() => opened = false);
    // close() came while the folder hung (a start abandoned, then stopped): the journal opened
    // at last is closed again -- a trail that has stopped holds no file, nor writes beside a
    // later runtime on the folder.
    this.#opening = null;
    if (this.#closed) {
      await writer.close();
      return;
    }
    if (notSearched !== null && opened) this.#log.error(notSearched);
    this.#journal = journal;
    if (openPassedOver > 0) {
      this.#log.warn(
        "audit: the journal's tail leaves more calls written ahead without an outcome than its " +
          `search keeps (${AUDIT_MAX_FOUND_UNSETTLED}, AUDIT_MAX_FOUND_UNSETTLED; their records ` +
          `within ${AUDIT_MAX_FOUND_BYTES} bytes, AUDIT_MAX_FOUND_BYTES): the ${openPassedOver} ` +
          "oldest passed over, not recorded as interrupted (a later line may have settled some); " +
          `the newest ${interrupted.length} are`,
      );
    }
    for (const [i, r] of interrupted.entries()) {
      if (i < AUDIT_INTERRUPTED_WARN_LINES) {
        this.#log.warn(
          `audit: a call to ${quoteName(r.device_handle)} ${quoteName(r.function)} was written ` +
            "ahead by an earlier process without an outcome: recorded as interrupted",
        );
      }
      const entry = interruptedEntry(r, 0);
      this.#emit(
        entry,
        [r.intent],
        typeof r.run_id === "string" || r.run_id === null ? r.run_id : undefined,
      );
      this.#forRuns.set(r.intent, { ...r, seq: entry.seq });
    }
    if (interrupted.length > AUDIT_INTERRUPTED_WARN_LINES) {
      this.#log.warn(
        `audit: ${interrupted.length - AUDIT_INTERRUPTED_WARN_LINES} more calls written ahead by ` +
          "an earlier process without an outcome recorded as interrupted (one line each for the " +
          `first ${AUDIT_INTERRUPTED_WARN_LINES}, AUDIT_INTERRUPTED_WARN_LINES; ` +
          `${interrupted.length} in all): each is an interrupted entry of the audit trail ` +
          "(GET /v0/audit)",
      );
    }
    if (earlier !== null) this.#boundForRuns(earlier, interrupted.length);
    for (const entry of this.#memory.splice(0)) void writer.append(boundedEntry(entry).text);
  }

  /**
   * Keeps, of the calls earlier starts recorded interrupted (earlierInterrupted, oldest first),
   * the newest that fit in AUDIT_MAX_FOR_RUNS with the `now` calls this start recorded
   * interrupted (none of which is dropped: each is given to this start's run registry as it is
   * recorded; at most AUDIT_MAX_FOUND_UNSETTLED), the others neither given to the run registry nor
   * listed for a later start. `found`: what the journal's search found, with the older ones it
   * passed over already (same bound, or AUDIT_MAX_FOUND_BYTES), said with these. Said in what the
   * journal knows of them: those a checkpoint or a closing record listed (no start of the runs had
   * taken them) are the run registry's drops, counted (for_runs_dropped_total); of the others,
   * `interrupted` entries with no such record after them (a journal of an older version, or of
   * starts that ended before writing one), whether their start's run registry took them is not
   * known: said in a WARN of their own, not counted.
   */
  #boundForRuns(found: Unsettled, now: number): void {
    const room = Math.max(0, AUDIT_MAX_FOR_RUNS - now);
    const over = this.#earlierInterrupted.slice(
      0,
      Math.max(0, this.#earlierInterrupted.length - room),
    );
    let listedDropped = found.forRunsDropped ?? 0;
    let foundDropped = found.forRunsPassedOver ?? 0;
    for (const r of over) {
      this.#forRuns.delete(r.intent);
      if (found.listed.has(r.intent)) listedDropped++;
      else foundDropped++;
    }
    if (over.length > 0) this.#earlierInterrupted = this.#earlierInterrupted.slice(over.length);
    const bytes = (passedOver: number) =>
      passedOver === 0
        ? ""
        : ` (or their records past ${AUDIT_MAX_FOUND_BYTES} bytes, AUDIT_MAX_FOUND_BYTES, in the ` +
          "journal's search)";
    if (listedDropped > 0) {
      this.#forRunsDropped += listedDropped;
      this.#log.warn(
        `audit: ${listedDropped} calls recorded interrupted that no start of the runs took (the ` +
          "run registry failed to start; listed for the runs by a checkpoint or closing record " +
          `of the journal) dropped, the oldest: more than ${AUDIT_MAX_FOR_RUNS} ` +
          `(AUDIT_MAX_FOR_RUNS)${bytes(found.forRunsDropped ?? 0)}; they stay on the audit ` +
          "trail as interrupted entries, of no run",
      );
    }
    if (foundDropped > 0) {
      this.#log.warn(
        `audit: ${foundDropped} calls earlier starts recorded interrupted, found in the journal ` +
          "with no checkpoint nor closing record listing them for the runs (a journal of an " +
          "older version, or of starts that ended before writing one), not given to the run " +
          `registry, the oldest: more than ${AUDIT_MAX_FOR_RUNS} (AUDIT_MAX_FOR_RUNS)` +
          `${bytes(found.forRunsPassedOver ?? 0)}; whether the start that recorded each gave it ` +
          "to its runs is not known (not counted as dropped by the run registry); they stay on " +
          "the audit trail as interrupted entries",
      );
    }
  }

  /**
   * Write-ahead records that no entry settles: those listed by the closing record when the
   * journal ends with one (a clean close: nothing else is read), else those in the last
   * AUDIT_RECOVERY_SCAN_BYTES.
   */
  async #unsettledIntents(journal: AuditJournalOptions): Promise<Unsettled> {
    const files = journal.files;
    const segments = await segmentNumbers(files, { dir: journal.dir, prefix: SEGMENT_PREFIX });
    const closed = await this.#closingRecord(journal, segments);
    if (closed !== null) return closed;
    // After a crash: the last checkpoint is within the last AUDIT_CHECKPOINT_BYTES and a few
    // lines; without one there (an older version, a process that could not write one), the
    // whole AUDIT_RECOVERY_SCAN_BYTES.
    const near = await this.#searchTail(journal, segments, CHECKPOINT_WINDOW_BYTES);
    if (near.marked || near.whole) return near;
    return await this.#searchTail(journal, segments, AUDIT_RECOVERY_SCAN_BYTES);
  }

  /**
   * Dates nothing before `newest`, the newest date found in the journal at its opening (a host
   * that restarts with its clock behind, a Raspberry Pi without a real-time clock before NTP);
   * says so when the wall clock is behind it, and believes the clock when it is more than
   * AUDIT_DATE_HOLD_MAX_MS behind.
   */
  #dateFromJournal(newest: number | null): void {
    if (newest === null) return;
    const wall = this.#o.clock.nowMs();
    if (newest - wall > AUDIT_DATE_HOLD_MAX_MS) {
      this.#log.warn(
        `the wall clock is ${newest - wall} ms behind the audit journal's newest date ` +
          `(${newest}), more than AUDIT_DATE_HOLD_MAX_MS (${AUDIT_DATE_HOLD_MAX_MS}): entries ` +
          `are dated by the wall clock, after entries dated later`,
      );
      return;
    }
    if (wall < newest) {
      this.#log.warn(
        `the wall clock is ${newest - wall} ms behind the audit journal's newest date ` +
          `(${newest}): entries are dated ${newest} until it passes it`,
      );
    }
    this.#newest = transitionDate(newest, this.#newest);
  }

  /**
   * The write-ahead records the last `budget` bytes of the journal leave unsettled; `marked`:
   * a closing record or a checkpoint was among them (nothing before it matters), `whole`: the
   * bytes reached the journal's beginning.
   */
  async #searchTail(
    journal: AuditJournalOptions,
    segments: readonly number[],
    budget: number,
  ): Promise<Unsettled & { marked: boolean; whole: boolean }> {
    const files = journal.files;
    // The newest segments that hold the last `budget` bytes, oldest first.
    const tail: Array<{ path: string; start: number; size: number }> = [];
    let whole = true;
    for (let i = segments.length - 1; i >= 0; i--) {
      if (budget <= 0) {
        whole = false;
        break;
      }
      const path = segmentPath({ dir: journal.dir, prefix: SEGMENT_PREFIX }, segments[i]!);
      const size = await files.fileSize(path);
      tail.unshift({ path, start: Math.max(0, size - budget), size });
      if (size > budget) whole = false;
      budget -= size;
    }
    // Both bounded by count and by their lines' bytes (the oldest passed over), not only by the
    // bytes read: a line of a few dozen bytes is an object of a few hundred in memory. A marker
    // clears both, and what was passed over before it with them.
    const open = new NewestKept<IntentRecord>(AUDIT_MAX_FOUND_UNSETTLED, AUDIT_MAX_FOUND_BYTES);
    // Those of the calls for the runs a marker lists (the others: `interrupted` entries found
    // after it, or in a tail without one), and how many of each were passed over.
    const listed = new Set<string>();
    let listedPassedOver = 0;
    let foundPassedOver = 0;
    const forRuns = new NewestKept<ForRunsRecord>(
      AUDIT_MAX_FOR_RUNS,
      AUDIT_MAX_FOUND_BYTES,
      (id) => {
        if (listed.delete(id)) listedPassedOver++;
        else foundPassedOver++;
      },
    );
    let marked = false;
    let newest: number | null = null;
    for (const { path, start, size } of tail) {
      // Nothing to read (an empty file; a device file standing in for one reads as empty).
      if (size <= start) continue;
      let first = start > 0; // the rest of a line cut by the start
      const lines = files.readLinesAt(path, {
        maxLineBytes: AUDIT_MAX_ENTRY_BYTES,
        startByte: start,
      });
      for await (const line of lines) {
        if (line.start >= size) break;
        if (first) {
          first = false;
          continue;
        }
        if (!line.terminated) continue;
        const t = line.text;
        if (t.startsWith(INTENT_PREFIX)) {
          const r = parseObject(t) as IntentRecord | null;
          if (isIntentRecord(r)) {
            open.set(r.intent, r, line.end - line.start);
            newest = transitionDate(r.time_epoch_ms, newest);
          }
          continue;
        } else if (t.startsWith(MARKER_PREFIX)) {
          // A clean close or a checkpoint: what it does not list was settled before it.
          const marker = markedIntents(t);
          if (marker !== null) {
            marked = true;
            // Its records within its one line: each counted at an even share of it.
            const bytes = line.end - line.start;
            const share = Math.ceil(bytes / (marker.open.length + marker.forRuns.length || 1));
            open.clear();
            for (const r of marker.open) open.set(r.intent, r, share);
            forRuns.clear();
            listed.clear();
            listedPassedOver = foundPassedOver = 0;
            for (const r of marker.forRuns) {
              listed.add(r.intent);
              forRuns.set(r.intent, r, share);
            }
            newest = transitionDate(marker.at, newest);
          }
          continue;
        } else if (t.startsWith(INTENTS_PREFIX) || t.startsWith(COVERS_PREFIX)) {
          const v = parseObject(t);
          const ids = v?.intents ?? v?.covers;
          // An earlier start's `interrupted` entry: its run registry may not have taken it.
          const found = v !== null && v.outcome === "interrupted" && Array.isArray(ids)
            ? interruptedRecord(v, String(ids[0]), open.get(String(ids[0])))
            : null;
          if (found !== null) forRuns.set(found.intent, found, line.end - line.start);
          if (Array.isArray(ids)) { for (const id of ids) open.delete(String(id)); }
        }
        const last = entryLastDate(t);
        if (last !== null) newest = transitionDate(last, newest);
      }
    }
    return {
      open: open.values(),
      newest,
      marked,
      whole,
      forRuns: forRuns.values(),
      listed,
      forRunsDropped: listedPassedOver,
      forRunsPassedOver: foundPassedOver,
      openDropped: open.dropped,
    };
  }

  /**
   * The write-ahead records the journal's closing record lists, when the last line of its newest
   * non-empty segment is one; null otherwise (a crash, a failed write, an older version).
   */
  async #closingRecord(
    journal: AuditJournalOptions,
    segments: readonly number[],
  ): Promise<Unsettled | null> {
    const files = journal.files;
    for (let i = segments.length - 1; i >= 0; i--) {
      const path = segmentPath({ dir: journal.dir, prefix: SEGMENT_PREFIX }, segments[i]!);
      const size = await files.fileSize(path);
      if (size === 0) continue;
      // A closing record is at most AUDIT_MAX_ENTRY_BYTES and its newline: starting two bytes
      // further back, the first line read is always the rest of an earlier one.
      const start = Math.max(0, size - AUDIT_MAX_ENTRY_BYTES - 2);
      let last: JournalLine | null = null;
      let first = start > 0;
      for await (
        const line of files.readLinesAt(path, {
          maxLineBytes: AUDIT_MAX_ENTRY_BYTES,
          startByte: start,
        })
      ) {
        if (first) {
          first = false;
          continue;
        }
        last = line;
      }
      if (last === null || !last.terminated || last.end !== size) return null;
      const marker = last.text.startsWith(CLOSED_PREFIX) ? markedIntents(last.text) : null;
      // Its date is the newest its process gave (#markerLine, #date).
      return marker === null ? null : {
        open: marker.open,
        newest: marker.at,
        forRuns: marker.forRuns,
        listed: new Set(marker.forRuns.map((r) => r.intent)),
      };
    }
    return null;
  }

  /**
   * A closing record (CLOSED_PREFIX) or a checkpoint (CHECKPOINT_PREFIX): the write-ahead records
   * still without an outcome (calls in flight) and, in the room they leave within
   * AUDIT_MAX_ENTRY_BYTES, the newest of #forRuns (`for_runs`; the oldest left out, WARN). Null
   * when it cannot be trusted (the journal is failing, or lines it lost are not recorded by a `gap`
   * entry yet; more unsettled records than AUDIT_MAX_UNSETTLED) or the calls in flight alone do
   * not fit in AUDIT_MAX_ENTRY_BYTES: then the next start searches the journal's tail.
   */
  #markerLine(journal: Journal, prefix: string): string | null {
    const w = journal.writer.status();
    // Lines lost and not yet recorded by a `gap` entry: held until the journal is written again
    // and says what it lost (not for the life of the process).
    const failing = w.gapPending > 0 || w.state === "failing";
    if (failing !== this.#markersHeld) {
      this.#markersHeld = failing;
      if (failing) {
        this.#log.warn(
          `audit journal failing or its lost entries not recorded yet: no checkpoint nor ` +
            `closing record until it is written again (a start after this searches the journal's tail)`,
        );
      } else {
        this.#log.info(
          `audit journal written again, its lost entries recorded: checkpoints and the closing ` +
            `record are written again`,
        );
      }
    }
    if (this.#unsettledOverflow > 0 || failing) return null;
    const head = `${prefix}${this.#date(this.#o.clock.nowMs())},"open":[${
      [...this.#unsettled.values()].join(",")
    }]`;
    // The calls in flight must all be listed; `for_runs` takes the room they leave.
    const room = AUDIT_MAX_ENTRY_BYTES - utf8Length(head) - 1;
    if (room < 0) return null;
    const forRuns = this.#forRunsWithin(room - utf8Length(FOR_RUNS_KEY) - 1);
    if (forRuns.left !== this.#forRunsLeftOut) {
      this.#forRunsLeftOut = forRuns.left;
      const what = prefix === CLOSED_PREFIX ? "closing record" : "checkpoint";
      if (forRuns.left > 0) {
        this.#log.warn(
          `audit: ${forRuns.left} of the ${this.#forRuns.size} calls recorded interrupted that ` +
            `no start of the runs took do not fit in a ${what} (AUDIT_MAX_ENTRY_BYTES, after ` +
            `the calls in flight): the oldest left out, a start after this one gives them to no ` +
            `run (they stay on the audit trail as interrupted)`,
        );
      }
    }
    const list = forRuns.listed === "" ? "" : `${FOR_RUNS_KEY}${forRuns.listed}]`;
    return `${head}${list}}`;
  }

  /**
   * The newest of #forRuns whose records fit in `room` bytes (comma-separated, oldest first), and
   * how many were left out: the oldest, never an older one past a newer that did not fit.
   */
  #forRunsWithin(room: number): { listed: string; left: number } {
    const all = [...this.#forRuns.values()];
    const kept: string[] = [];
    let used = 0;
    for (let i = all.length - 1; i >= 0; i--) {
      const text = toJsonText(all[i]);
      const bytes = utf8Length(text) + (kept.length === 0 ? 0 : 1);
      if (used + bytes > room) break;
      used += bytes;
      kept.push(text);
    }
    return { listed: kept.reverse().join(","), left: all.length - kept.length };
  }

  /**
   * Closes the open entry and stops collapsing: a decision after this (a call that was in flight
   * when the runtime stopped) is an entry of its own at once, and no timer is left running.
   */
  seal(): void {
    this.#sealed = true;
    this.#closeOpen();
    this.#closeUntrusted();
  }

  /**
   * Seals, writes what is queued (one more try after a failure), then the closing record (the
   * next start reads it instead of searching the journal), fsyncs and closes the journal.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.seal();
    const journal = this.#journal;
    if (journal === null) {
      // An opening under way (a hung mount): ends at its step, holds no file (openJournal).
      await this.#opening?.close();
      return;
    }
    await journal.writer.flush();
    const closing = this.#markerLine(journal, CLOSED_PREFIX);
    if (closing !== null) void journal.writer.append(closing, { counted: false });
    await journal.writer.close();
  }

  /**
   * A run opens or closes: closes the open entry (its decisions are events of the run they were
   * made in) and returns the number of this process's last write-ahead id (`last`, 0 before the
   * first). Every call written ahead later has a greater one (intentNumber), so "decided before"
   * is a number compare, for every call in flight, listed by inFlightCalls or not; and from now on
   * the outcome of a call written ahead up to it never shares an entry with one written ahead
   * after. `unlisted`: the calls written ahead since the previous boundary still in flight that
   * inFlightCalls does not list (past AUDIT_MAX_UNSETTLED).
   */
  runBoundary(): { readonly last: number; readonly unlisted: number } {
    this.flushOpen();
    this.#boundary = this.#intentSeq;
    const unlisted = this.#overflowAfterBoundary;
    this.#overflowAfterBoundary = 0;
    return { last: this.#boundary, unlisted };
  }

  /**
   * A close of the open run failed (the run stays open): closes the open entry (the decisions
   * made during that close, its listener hears them now) and, from now on, the outcome of a call
   * written ahead up to now never shares an entry with that of one written ahead after, as at a
   * run boundary; the run boundary itself (and runBoundary's `unlisted`) stays: no run ended.
   */
  cutEntries(): void {
    this.flushOpen();
    this.#cut = this.#intentSeq;
  }

  /**
   * Which side of the boundaries a decision is on, by its call's write-ahead id: 0 written ahead
   * up to the last run boundary, 1 up to the last cut after it (cutEntries), 2 after both (or
   * no id of this process: a refusal, a call never written ahead).
   */
  #side(id: string | undefined): 0 | 1 | 2 {
    const n = id === undefined ? null : this.intentNumber(id);
    if (n === null) return 2;
    return n <= this.#boundary ? 0 : n <= this.#cut ? 1 : 2;
  }

  /** The number of this process's last write-ahead id (0 before the first; see intentNumber). */
  lastIntentNumber(): number {
    return this.#intentSeq;
  }

  /** Whether a write-ahead id of this process is numbered up to the last run boundary. */
  #beforeBoundary(id: string): boolean {
    const n = this.intentNumber(id);
    return n !== null && n <= this.#boundary;
  }

  /** The number of a write-ahead id of this process (its order), or null (another process's). */
  intentNumber(id: string): number | null {
    const dot = id.indexOf(".");
    if (dot !== this.#boot.length || !id.startsWith(this.#boot)) return null;
    const n = Number(id.slice(dot + 1));
    return Number.isSafeInteger(n) ? n : null;
  }

  /** Closes the open entry (a read or a test wants everything recorded so far). */
  flushOpen(): void {
    this.#closeOpen();
    this.#closeUntrusted();
  }

  /**
   * The calls an earlier start recorded `interrupted` that its run registry may not have taken
   * (its start failed, then the runtime ended), as openJournal found them (the closing record's or
   * a checkpoint's `for_runs`, the `interrupted` entries after it), oldest first: each entry as it
   * was recorded, its write-ahead id and the run that record names (undefined: not known). The
   * run registry's start gives them to the runs it closes as `abandoned` (the others are closed
   * already and take none).
   */
  earlierInterrupted(): Array<{ entry: AuditEntry; intent: string; runId?: string | null }> {
    return this.#earlierInterrupted.map((r) => ({
      entry: interruptedEntry(r, r.seq),
      intent: r.intent,
      ...(r.run_id === undefined ? {} : { runId: r.run_id }),
    }));
  }

  /**
   * The run registry started: it took the calls recorded `interrupted` (this start's and
   * earlierInterrupted()); the checkpoints and the closing record no longer list them.
   */
  interruptedTaken(): void {
    this.#forRuns.clear();
    this.#earlierInterrupted = [];
  }

  /**
   * The calls of this process written ahead whose outcome is not recorded yet, oldest first (at
   * most AUDIT_MAX_UNSETTLED; none without a journal, which writes nothing ahead), and the repeats
   * of the open entry in flight, for which nothing was written (at most AUDIT_MAX_UNSETTLED more).
   */
  inFlightCalls(): AuditInFlightCall[] {
    const calls: AuditInFlightCall[] = [];
    for (const line of this.#unsettled.values()) {
      try {
        calls.push(parseJsonExact(line) as AuditInFlightCall);
      } catch {
        // never: bounded() keeps every record valid JSON
      }
    }
    calls.push(...this.#repeats.values());
    // By id: a repeat's record joins #unsettled when its entry closes, after later calls' records.
    const n = (id: string) => Number(id.slice(id.indexOf(".") + 1));
    return calls.sort((a, b) => n(a.intent) - n(b.intent));
  }

  status(): AuditStatus {
    const w = this.#journal?.writer.status();
    return {
      journal: w === undefined ? "memory" : w.state === "failing" ? "failing" : "ok",
      path: this.#journal?.dir ?? null,
      entries_total: this.#entriesTotal,
      write_errors_total: w?.writeErrors ?? 0,
      dropped_total: w?.lost ?? 0,
      queued: w?.queued ?? 0,
      gap_pending: w?.gapPending ?? 0,
      write_ahead_late_total: this.#aheadLate,
      unreadable_lines_total: this.#unreadable,
      for_runs_dropped_total: this.#forRunsDropped,
      last_error: w?.lastError ?? null,
      last_error_at_epoch_ms: w?.lastErrorAtMs ?? null,
    };
  }

  // ---- reading ----------------------------------------------------------------------------------

  /**
   * A page of entries, oldest first, matching the query. Closes the open entry and waits (at
   * most AUDIT_READ_FLUSH_TIMEOUT_MS) for queued entries to be written first, so a page
   * includes every decision made before the request.
   */
  async query(q: AuditQuery): Promise<AuditPage> {
    this.flushOpen();
    const cursor = q.cursor === undefined ? null : parseCursor(q.cursor);
    const journal = this.#journal;
    if (!journal) {
      if (cursor && cursor.kind !== "memory") {
        throw invalidArgument("cursor: not a cursor of this runtime's audit trail");
      }
      return this.#queryMemory(q, cursor?.kind === "memory" ? cursor.seq : 0);
    }
    if (cursor && cursor.kind !== "file") {
      throw invalidArgument("cursor: not a cursor of this runtime's audit trail");
    }
    await this.#waitWritten(journal);
    return await this.#queryJournal(journal, q, cursor);
  }

  async #waitWritten(journal: Journal): Promise<void> {
    let timer: TimerId;
    const timeout = new Promise<void>((r) => {
      timer = this.#o.clock.setTimer(r, AUDIT_READ_FLUSH_TIMEOUT_MS);
    });
    try {
      await Promise.race([journal.writer.flush(), timeout]);
    } finally {
      this.#o.clock.clearTimer(timer);
    }
  }

  #queryMemory(q: AuditQuery, afterSeq: number): AuditPage {
    const entries: AuditEntry[] = [];
    for (const e of this.#memory) {
      if (e.seq <= afterSeq || !matches(e, q)) continue;
      if (entries.length === q.limit) {
        return {
          entries,
          next_cursor: encodeCursor({ kind: "memory", seq: entries.at(-1)!.seq }),
          problems: [],
        };
      }
      entries.push(e);
    }
    return { entries, next_cursor: null, problems: [] };
  }

  async #queryJournal(
    journal: Journal,
    q: AuditQuery,
    cursor: Cursor | null,
  ): Promise<AuditPage> {
    const page: AuditPage = { entries: [], next_cursor: null, problems: [] };
    let scanned = 0;
    // The page is full: its cursor, given only when a line after it holds an entry the query
    // serves or a line to report (as #queryMemory: null at the end, no empty page after it).
    let full: Cursor | null = null;
    const peeked: AuditProblem[] = [];
    const where = { dir: journal.dir, prefix: SEGMENT_PREFIX };
    const segments = await segmentNumbers(journal.files, where).catch(() => [] as number[]);
    for (const [i, n] of segments.entries()) {
      let start = 0;
      if (cursor?.kind === "file") {
        if (n < cursor.segment) continue;
        if (n === cursor.segment) start = cursor.offset;
      }
      const path = segmentPath(where, n);
      // Nothing past `start` (an empty file; a device file standing in for one reads as empty).
      if ((await journal.files.fileSize(path).catch(() => 0)) <= start) continue;
      const newest = i === segments.length - 1;
      const lines = journal.files.readLinesAt(path, {
        maxLineBytes: AUDIT_READ_MAX_LINE_BYTES,
        startByte: start,
      });
      for await (const line of lines) {
        // The last line of the newest file without a newline is being written: read next time.
        if (!line.terminated && newest) break;
        scanned += line.end - line.start;
        if (full !== null) {
          const entry = this.#readLine(path, line, peeked, true);
          if (
            peeked.length > 0 || (entry && matches(entry, q)) || scanned >= AUDIT_SCAN_MAX_BYTES
          ) {
            page.next_cursor = encodeCursor(full);
            return page;
          }
          continue;
        }
        const entry = this.#readLine(path, line, page.problems);
        if (entry && matches(entry, q)) page.entries.push(entry);
        if (scanned >= AUDIT_SCAN_MAX_BYTES || page.problems.length >= AUDIT_PAGE_MAX_PROBLEMS) {
          page.next_cursor = encodeCursor({ kind: "file", segment: n, offset: line.end });
          return page;
        }
        if (page.entries.length === q.limit) full = { kind: "file", segment: n, offset: line.end };
      }
    }
    return page;
  }

  /**
   * The entry of a stored line, or null (bookkeeping lines; unusable ones go to `problems`, and,
   * but for a `peek` past a full page, are logged and counted).
   */
  #readLine(
    path: string,
    line: JournalLine,
    problems: AuditProblem[],
    peek = false,
  ): AuditEntry | null {
    const t = line.text;
    let problem: string | null = null;
    if (isCutLine(line, AUDIT_READ_MAX_LINE_BYTES)) {
      problem = `longer than ${AUDIT_READ_MAX_LINE_BYTES} bytes: not read`;
    } else if (!line.terminated) {
      problem = "no newline at the end of a finished file: torn by a crash";
    } else if (t.startsWith(INTENT_PREFIX) || t.startsWith(COVERS_PREFIX)) {
      return null; // write-ahead bookkeeping, settled by the entries
    } else if (t.trim() === "") {
      return null;
    } else {
      const v = parseObject(t);
      if (v === null || typeof v.time_epoch_ms !== "number" || typeof v.action !== "string") {
        problem = "not an audit entry (torn by a crash, or damaged)";
      } else {
        delete v.intents;
        const entry = v as unknown as AuditEntry;
        // Lines of an older version may be longer than this one writes: served bounded.
        return storedLineBytes(line) > AUDIT_MAX_ENTRY_BYTES ? boundedEntry(entry).entry : entry;
      }
    }
    const file = path.slice(path.lastIndexOf("/") + 1);
    problems.push({ file, offset: line.start, bytes: storedLineBytes(line), problem });
    if (peek) return null; // reported by the page that reads it
    const at = `${file}:${line.start}`;
    // Counted and logged once per line (past AUDIT_MAX_LOGGED_PROBLEMS lines, once per read).
    if (!this.#loggedProblems.has(at)) {
      if (this.#loggedProblems.size < AUDIT_MAX_LOGGED_PROBLEMS) this.#loggedProblems.add(at);
      this.#unreadable++;
      this.#log.warn(`audit journal ${at}: unreadable line (${problem}); reported to readers`);
    }
    return null;
  }
}

// ---- lines and cursors --------------------------------------------------------------------------

/** An entry's line: its JSON text, with the write-ahead ids it settles as the first member. */
function entryLine(text: string, intents: readonly string[]): string {
  return intents.length === 0
    ? text
    : `${INTENTS_PREFIX}${intents.map((id) => JSON.stringify(id)).join(",")}],${text.slice(1)}`;
}

/**
 * Records by key in the order first set, the newest kept within `maxCount` records and `maxBytes`
 * (the sizes given with them): past either the oldest are deleted, counted in `dropped` until
 * clear(), each key so deleted handed to `onDrop`.
 */
class NewestKept<V> {
  readonly #records = new Map<string, { value: V; bytes: number }>();
  #bytes = 0;
  /** Records deleted past a bound since the last clear(). */
  dropped = 0;

  constructor(
    readonly maxCount: number,
    readonly maxBytes: number,
    readonly onDrop?: (key: string) => void,
  ) {}

  get(key: string): V | undefined {
    return this.#records.get(key)?.value;
  }

  /** Sets `key` (one already there keeps its place), then deletes the oldest past a bound. */
  set(key: string, value: V, bytes: number): void {
    this.#bytes += bytes - (this.#records.get(key)?.bytes ?? 0);
    this.#records.set(key, { value, bytes });
    while (this.#records.size > this.maxCount || this.#bytes > this.maxBytes) {
      const [oldest, r] = this.#records.entries().next().value!;
      this.#records.delete(oldest);
      this.#bytes -= r.bytes;
      this.dropped++;
      this.onDrop?.(oldest);
    }
  }

  delete(key: string): void {
    const r = this.#records.get(key);
    if (r === undefined) return;
    this.#records.delete(key);
    this.#bytes -= r.bytes;
  }

  clear(): void {
    this.#records.clear();
    this.#bytes = 0;
    this.dropped = 0;
  }

  values(): V[] {
    return [...this.#records.values()].map((r) => r.value);
  }
}

function isIntentRecord(r: unknown): r is IntentRecord {
  const v = r as IntentRecord | null;
  return v !== null && typeof v === "object" && typeof v.intent === "string" &&
    typeof v.time_epoch_ms === "number";
}

/**
 * The records a closing record or a checkpoint lists, and its date; null for a line that is
 * neither.
 */
function markedIntents(
  text: string,
): { open: IntentRecord[]; at: number; forRuns: ForRunsRecord[] } | null {
  const v = parseObject(text);
  if (v === null || !Array.isArray(v.open)) return null;
  const at = typeof v.clean_close === "number"
    ? v.clean_close
    : typeof v.checkpoint === "number"
    ? v.checkpoint
    : null;
  const forRuns = Array.isArray(v.for_runs)
    ? v.for_runs.filter((r): r is ForRunsRecord =>
      isIntentRecord(r) && typeof (r as ForRunsRecord).seq === "number"
    )
    : [];
  return at === null ? null : { open: v.open.filter(isIntentRecord), at, forRuns };
}

/** The `interrupted` entry of a call written ahead by an earlier process (`seq` as numbered). */
function interruptedEntry(r: IntentRecord, seq: number): AuditEntry {
  return {
    seq,
    time_epoch_ms: r.time_epoch_ms,
    first_time_epoch_ms: r.time_epoch_ms,
    last_time_epoch_ms: r.time_epoch_ms,
    count: 1,
    origin: r.origin,
    action: "call",
    device_handle: r.device_handle,
    function: r.function,
    args: r.args,
    mode: r.mode,
    outcome: "interrupted",
    reason: "the runtime ended after this call passed every check and before its outcome " +
      "was recorded: the provider may or may not have received it; its answer, and any " +
      "repeats of it, are not known",
    refused_by: null,
    result: null,
    latency_ms: null,
  };
}

/**
 * The record of an `interrupted` entry's line `v` an earlier start wrote (settling `intent`), with
 * the run its write-ahead record `ahead` names when that was read too; null when it is not one.
 */
function interruptedRecord(
  v: Record<string, unknown>,
  intent: string,
  ahead: IntentRecord | undefined,
): ForRunsRecord | null {
  if (typeof v.seq !== "number" || typeof v.time_epoch_ms !== "number") return null;
  if (typeof v.mode !== "string" || typeof v.origin !== "object" || v.origin === null) return null;
  const text = (x: unknown) => typeof x === "string" ? x : null;
  const args = typeof v.args === "object" && v.args !== null && !Array.isArray(v.args)
    ? v.args as Record<string, unknown>
    : null;
  return {
    intent,
    seq: v.seq,
    time_epoch_ms: v.time_epoch_ms,
    origin: v.origin as IntentRecord["origin"],
    device_handle: text(v.device_handle),
    function: text(v.function),
    args,
    mode: v.mode,
    ...(ahead?.run_id === undefined ? {} : { run_id: ahead.run_id }),
  };
}

/**
 * The start of an entry's line as this trail writes it (#emit, entryLine, #gapLine: the write-ahead
 * ids it settles, if any, then `seq` and its three times, before any text), up to its last time.
 */
const ENTRY_TIMES =
  /^\{(?:"intents":\[[^\]]*\],)?"seq":\d+,"time_epoch_ms":[-0-9.e+]+,"first_time_epoch_ms":[-0-9.e+]+,"last_time_epoch_ms":([-0-9.e+]+)[,}]/;

/**
 * The last time of an entry's line (read at openJournal, without parsing the line), or null for a
 * line that does not begin as ENTRY_TIMES says.
 */
function entryLastDate(text: string): number | null {
  const m = ENTRY_TIMES.exec(text);
  const last = m === null ? NaN : Number(m[1]);
  return Number.isFinite(last) ? last : null;
}

/** A journal line's object (an integer beyond 2^53 exact, a bigint, as it was written), or null. */
function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v = parseJsonExact(text);
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? v as Record<string, unknown>
      : null;
  } catch {
    return null;
  }
}

function matches(e: AuditEntry, q: AuditQuery): boolean {
  if (q.sinceMs !== undefined && e.last_time_epoch_ms < q.sinceMs) return false;
  if (q.untilMs !== undefined && e.first_time_epoch_ms > q.untilMs) return false;
  if (q.origin !== undefined && e.origin?.kind !== q.origin) return false;
  if (q.deviceId !== undefined) {
    // `provider/device`, or a bare device id: the handle's whole device part (after the first
    // "/": a provider id holds none, a device id may), never a tail of it.
    const h = e.device_handle;
    if (h === null || (h !== q.deviceId && h.slice(h.indexOf("/") + 1) !== q.deviceId)) {
      return false;
    }
  }
  return true;
}

type Cursor =
  | { kind: "file"; segment: number; offset: number }
  | { kind: "memory"; seq: number };

function encodeCursor(c: Cursor): string {
  const text = c.kind === "file" ? `f.${c.segment}.${c.offset}` : `m.${c.seq}`;
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

/** Digits of a cursor's segment number. */
const CURSOR_SEGMENT_DIGITS = 12;
/** Digits of a cursor's byte offset or memory sequence. */
const CURSOR_PLACE_DIGITS = 15;
/** Longest text a cursor encodes: `f.<segment>.<offset>`, each at its most digits. */
const CURSOR_TEXT_MAX = 2 + CURSOR_SEGMENT_DIGITS + 1 + CURSOR_PLACE_DIGITS;
/** Shortest text a cursor encodes: `m.0`. */
const CURSOR_TEXT_MIN = 3;
const CURSOR_FILE = new RegExp(
  String.raw`^f\.(\d{1,${CURSOR_SEGMENT_DIGITS}})\.(\d{1,${CURSOR_PLACE_DIGITS}})$`,
);
const CURSOR_MEMORY = new RegExp(String.raw`^m\.(\d{1,${CURSOR_PLACE_DIGITS}})$`);

/**
 * The shape of every cursor GET /v0/audit returns (unpadded base64url of its text, from
 * CURSOR_TEXT_MIN to CURSOR_TEXT_MAX bytes): the parser refuses any other text before decoding
 * it, and the OpenAPI document shows this pattern, so a text it refuses is refused by both. A
 * text of this shape may still not be a cursor of this trail (400 too): the cursor is opaque.
 */
export const AUDIT_CURSOR_PATTERN = `^[A-Za-z0-9_-]{${Math.ceil((CURSOR_TEXT_MIN * 4) / 3)},${
  Math.ceil((CURSOR_TEXT_MAX * 4) / 3)
}}$`;
const CURSOR_SHAPE = new RegExp(AUDIT_CURSOR_PATTERN, "u");

function parseCursor(raw: string): Cursor {
  let text = "";
  // Checked first: atob also takes spaces, padding and the standard alphabet, none of which an
  // answer's cursor holds.
  if (CURSOR_SHAPE.test(raw)) {
    try {
      text = atob(raw.replaceAll("-", "+").replaceAll("_", "/"));
    } catch {
      // not base64: reported below
    }
  }
  const f = CURSOR_FILE.exec(text);
  if (f) return { kind: "file", segment: Number(f[1]), offset: Number(f[2]) };
  const m = CURSOR_MEMORY.exec(text);
  if (m) return { kind: "memory", seq: Number(m[1]) };
  throw invalidArgument("cursor: not a cursor returned by GET /v0/audit");
}

/** Origins of a stop's calls: the e-stop ladder, a mode-transition hook, a device-loss FAULT. */
function stopOrigin(origin: AuditEntry["origin"]): boolean {
  return origin.kind === "estop" || origin.kind === "hook" || origin.kind === "device_loss";
}

/**
 * Whether an entry takes the journal queue's reserve (AUDIT_SAFETY_RESERVE_ENTRIES): the e-stop
 * and its clear, mode changes, reload decisions, and every entry of a stop's origin.
 */
function isSafetyEntry(entry: AuditEntry): boolean {
  switch (entry.action) {
    case "estop":
    case "estop_clear":
    case "mode":
    case "config":
      return true;
    default:
      return stopOrigin(entry.origin);
  }
}
