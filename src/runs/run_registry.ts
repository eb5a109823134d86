/**
 * The run registry (docs/http-api.md, "Runs"): at most one open run, markers, and a durable
 * append-only JSONL journal under `runtime.data_dir`.
 *
 * On-disk layout (all files append-only JSONL):
 * - `<data_dir>/runs.jsonl` -- run lifecycle records: `{"v":1,"op":"open","run":{...}}` and
 *   `{"v":1,"op":"close","run_id":...,"close_reason":...,"ended_at_epoch_ms":...}`. Replayed at
 *   start; the last record per run wins. Also the count of an open run's events left out
 *   (`not_recorded`), and of the safety events no run recorded (`between_runs`, the last one after
 *   the last `open`: BETWEEN_RUNS_SAVE_MS), and the write-ahead ids of the calls a close of the
 *   open run that failed listed `in_flight` (`in_flight`: RUN_IN_FLIGHT_IDS_KEPT).
 * - `<data_dir>/runs/<ULID>.jsonl` -- one RunEvent per line for that run (the ULID part of the
 *   run id names the file, so a runtime name never becomes part of a path).
 *
 * Every file is written through a JournalWriter (src/journal/: group commit, batched fsync, torn
 * line recovery, bounded queue); this module keeps the rules of runs. Durability: open and close
 * are fsync'd (event file and journal) before the call answers; every marker is fsync'd before it
 * answers too (operators rely on a marker that was acknowledged). Bus events (mode/parameter
 * change, automation fault, alarm, interlock, call) are written at once but fsync'd in a batch at
 * most 1 s later, or at the next marker/close/shutdown.
 *
 * Open, close and markers run one after another (a queue of operations), and every line of a run
 * goes through the run's one writer in the order its sequence numbers were given, so sequence
 * numbers ascend along the file. Reads never enter that queue: listing runs answers from memory,
 * and a page of events is read from the run's file at the place a bisection on the sequence
 * numbers finds (journal/journal_seek.ts), so a page costs O(page size + log(file size)) from the
 * first read after a start on, and reading a run never delays writing one.
 *
 * Memory: run records live in memory (a few hundred bytes each plus params, whose record is
 * capped at 64 KiB and nested at most MAX_RUN_JSON_DEPTH levels). Events are never held in
 * memory: a page is read from the run's file (limit <= 1000, lines <= 256 KiB). At most
 * MAX_PENDING_BUS_EVENTS bus events wait for the disk (and RUN_SAFETY_RESERVE_EVENTS safety events
 * more); more are dropped and counted, by the registry and by the run they were events of.
 *
 * Bounds on disk (config `runs.*`): an open run's event file stops growing at maxRunBytes (its
 * automatic events are then counted, not recorded, but its safety events, kept within
 * RUN_SAFETY_RESERVE_BYTES more); closed runs are kept up to maxRuns and
 * maxTotalBytes of event files together, the oldest removed first (record and file; never the most
 * recently closed one), when a run closes and at start. runs.jsonl is rewritten with the kept
 * runs' records at start when it holds more, and while running once it holds twice the lines they
 * need (then appended to as the new file). A close record gives the event file's final size
 * (`event_bytes`), so a start does not look at every file.
 *
 * A run left open when the process ends (crash or shutdown) is closed as `abandoned` at the next
 * start, ended at its last known activity (lastActivity; payload end_basis "last_event"), not at
 * that start, and recorded then when the wall clock reads earlier (a run of this process is
 * likewise recorded, and closed, never before its latest recorded event: OpenRun.recordedAt); a
 * shutdown saves when it stopped recording the run (a `not_recorded` record with
 * `shutdown: true`), and the run ends then (end_basis "shutdown"). The calls the audit trail found
 * in flight at that end are written before its run_closed (RunStartInput), unless its event file
 * already ends with run_closed (a close whose record failed): that event's reason and time are
 * recorded instead, and nothing is written after it. Journal lines
 * replay cannot use (corrupt, torn by a crash, nested too deep, or failing in any other way) are
 * skipped, counted and reported through the logger and
 * {@link RunRegistry.startupReport} (the first RUNS_CORRUPT_LINES_NAMED by position, the rest in
 * one count); they are never fatal.
 */
import {
  type Clock,
  errorMessage,
  failedPrecondition,
  invalidArgument,
  type Logger,
  namedList,
  neverThrowing,
  notFound,
  pageBounds,
  quoteProviderText,
  raceTimeout,
  RUNTIME_VERSION,
  RuntimeError,
  SpellLog,
  type TimerId,
  type TypedValue,
  unavailable,
  utf8Length,
} from "../common/mod.ts";
import { RUNS_LIMITS } from "../config/mod.ts";
import type { EventBus, RuntimeEvent } from "../events/mod.ts";
import {
  closeHandle,
  type JournalAppendOptions,
  type JournalAppendResult,
  type JournalFiles,
  type JournalLine,
  JournalLineCount,
  JournalWriter,
  type KeyedLines,
  lastKeyed,
  replaceWhole,
  seekAfter,
} from "../journal/mod.ts";
import { type EventLineRules, eventOfLine } from "./_event_lines.ts";
import { fitEvent } from "./_event_fit.ts";
import { exceedsJsonDepth } from "./_json_depth.ts";
import { STOP_RUNNING, type StopPhase, stopPhaseAfter, type StopStep } from "./_stop_phase.ts";
import {
  type AutomationVersion,
  CLIENT_CLOSE_REASONS,
  CLOSE_REASONS,
  type CloseReason,
  type Run,
  type RunEvent,
  type RunEventCategory,
  type TagScope,
} from "./run_record.ts";
import type {
  CloseRunRequest,
  EventPageRequest,
  MarkerRequest,
  OpenRunRequest,
  RunsPageRequest,
  StillAdmitted,
} from "./run_requests.ts";
import { ULID_PATTERN, UlidGenerator } from "./ulid.ts";

/**
 * An actuating call's audit trail entry (origin, device, function, args, outcome, result, count
 * of collapsed repeats), recorded as a `call` event; type is `device_handle function`.
 */
export type RunCallEntry =
  & {
    readonly first_time_epoch_ms: number;
    readonly device_handle: string | null;
    readonly function: string | null;
  }
  & Record<string, unknown>;

/** A call the audit trail found in flight when the previous process ended. */
export interface InterruptedCall {
  /** Its audit entry (outcome `interrupted`), the event's payload. */
  readonly call: RunCallEntry;
  /**
   * The run open when it was decided (its write-ahead record says), null when none was; absent
   * when the record does not say (an older version wrote it): then the latest run started at or
   * before the call's wall time.
   */
  readonly runId?: string | null;
  /**
   * Its write-ahead id (the audit trail's). A call whose id an `in_flight` call event at the end
   * of its run's file names (a close listed it, then the process ended before its run_closed
   * reached the disk) is not written again: one ending per call.
   */
  readonly intent?: string;
}

/** What the start is handed besides the journal. */
export interface RunStartInput {
  /**
   * Calls the audit trail found in flight when the previous process ended (outcome
   * `interrupted`): each is an event of the run open when it was made, when start closes that
   * run as `abandoned`, written before its run_closed (none of a run already closed: its close
   * recorded the calls then in flight).
   */
  readonly interruptedCalls?: readonly InterruptedCall[];
  /**
   * Called once the start succeeded (at once, or on a retry): the interrupted calls are taken.
   * Until then the audit trail keeps them for the next start (a runtime that ends first).
   */
  readonly onStarted?: () => void;
}

/** Called after a run opened, closed or got a marker (the runtime forwards it to telemetry). */
export type RunTelemetrySink = (event: RunEvent, run: Run) => void;

/** Construction options. */
export interface RunRegistryOptions {
  /** Absolute `runtime.data_dir`. */
  readonly dataDir: string;
  /** `runtime.name`; "" becomes "default" in run ids. */
  readonly runtimeName: string;
  /** `polling.interval_ms`, recorded in every run (a reload sets it: setPollingIntervalMs). */
  readonly pollingIntervalMs: number;
  readonly files: JournalFiles;
  readonly clock: Clock;
  /** Its lines (and its journal writers'); one that throws loses the line, never what follows it. */
  readonly logger: Logger;
  /** The loaded automation definition, or null (manual-only); read when a run opens. */
  readonly automationVersion?: () => AutomationVersion | null;
  readonly telemetrySink?: RunTelemetrySink;
  /**
   * Hands over the calls decided so far that are not recorded yet (the audit trail's entry of
   * identical calls still collapsing, given to recordCall when it closes): called right before a
   * run opens or closes, so that they are events of the run they were made in.
   */
  readonly settleCalls?: () => void;
  /**
   * Tells the events of what came so far that are told a moment after it (an incident, once the
   * triggers of its step joined it: IncidentRecorder.tellNow): called right before a run opens or
   * closes, so that they are events of the run open when they came, or of none -- never of the
   * run that opens next, nor left out of the one that closes.
   */
  readonly settleEvents?: () => void;
  /**
   * Called when a close of the open run failed and the run stays open (before the close throws):
   * the calls decided while it was under way named no run, and the run counts them
   * (countCallsNotListed) instead of recording them.
   */
  readonly closeFailed?: () => void;
  /**
   * The mode and whether the e-stop is latched, read when a run opens: its run_opened event's
   * payload (`mode`, `estop_latched`), so a run opened in FAULT or under a latched e-stop says so
   * (its trigger happened before the run). Absent: the payload is `{}`.
   */
  readonly safetyState?: () => { readonly mode: string; readonly estopLatched: boolean };
  /**
   * Why no run may open now, or null: asked when POST /v0/runs arrives and again at its turn in
   * the write queue. The kernel's stop (its HTTP drain answers requests still arriving, after the
   * tree is halted and before this registry's shutdown): a run opened then would record nothing
   * and be left open by that shutdown. A reason given is refused 409 FAILED_PRECONDITION.
   */
  readonly openRefusal?: () => string | null;
  /** Randomness for run ids (default crypto.getRandomValues). */
  readonly random?: (bytes: Uint8Array) => void;
  readonly runtimeVersion?: string;
  /** `runs.max_run_bytes` (default RUN_MAX_BYTES_DEFAULT). */
  readonly maxRunBytes?: number;
  /** `runs.max_runs`: closed runs kept (default RUNS_KEPT_DEFAULT). */
  readonly maxRuns?: number;
  /** `runs.max_total_bytes`: closed runs' event files together (default RUNS_TOTAL_BYTES_DEFAULT). */
  readonly maxTotalBytes?: number;
}

/** What start-up found in the journal. */
export interface RunStartupReport {
  /** `file:line` of the first skipped corrupt lines in runs.jsonl (RUNS_CORRUPT_LINES_NAMED). */
  readonly corruptLines: string[];
  /** Every skipped corrupt line in runs.jsonl, named or not. */
  readonly corruptLineCount: number;
  /** Runs closed as abandoned at this start. */
  readonly abandonedRunIds: string[];
  /**
   * Event files under `<data_dir>/runs/` that name no run of runs.jsonl (a crash between a run's
   * first event line and its open record; runs.jsonl removed or replaced by hand): not served,
   * not counted by retention, never removed by the runtime. One WARN at start names them.
   */
  readonly orphanedEventFiles: string[];
}

/**
 * Corrupt lines of runs.jsonl a start names one by one (a WARN each, and in its startup report);
 * the rest are counted, in one WARN: a runs.jsonl damaged over millions of lines (a garbage file
 * copied over it) must not flood the log nor fill memory with their positions.
 */
export const RUNS_CORRUPT_LINES_NAMED = 20;
/** Orphaned event files a start's WARN names (the count is always given). */
const ORPHANS_NAMED_IN_LOG = 5;

/** Operator view of the registry. */
export interface RunRegistryInfo {
  available: boolean;
  unavailable_reason: string | null;
  open_run_id: string | null;
  run_count: number;
  /** Bus events not journaled: too many were waiting for the disk, or their write failed. */
  dropped_bus_events: number;
}

const SCHEMA_VERSION = 1 as const;
/** Largest journal record (a run with its params, or one event with its payload). */
export const MAX_RECORD_BYTES = 64 * 1024;
/** Deepest nesting of `params` and marker `payload` (arrays and objects, one level each). */
export const MAX_RUN_JSON_DEPTH = 32;
/** Deepest stored line replay and reads accept: a run or event record around MAX_RUN_JSON_DEPTH. */
const MAX_STORED_JSON_DEPTH = MAX_RUN_JSON_DEPTH + 4;
const MAX_LINE_BYTES = 256 * 1024;
/** Longest marker `type`, in characters (code points, longerThanChars). */
export const MAX_MARKER_TYPE_CHARS = 256;
/** Longest client `marker_id`, in characters (code points, longerThanChars). */
export const MAX_MARKER_ID_CHARS = 128;

/**
 * Whether `text` has more than `max` characters: Unicode code points, as docs/http-api.md says
 * and as the config counts them (an emoji is one character, not its two UTF-16 units). Stops
 * counting at `max + 1`.
 */
function longerThanChars(text: string, max: number): boolean {
  // A string never has more code points than UTF-16 units.
  if (text.length <= max) return false;
  let count = 0;
  for (const _ of text) {
    if (++count > max) return true;
  }
  return false;
}
/**
 * Client marker ids the open run remembers (the oldest forgotten first): a retry of a marker
 * whose answer was lost, sent within this many markers, is answered, not recorded again. About
 * 250 bytes each (the id and a SHA-256 of the marker), forgotten when the run closes.
 */
export const MARKER_IDS_KEPT = 1000;
/**
 * Bus events of the open run waiting for the disk at most (and, as many, of a run whose open is
 * being written); more are dropped and counted (`dropped_bus_events`, and the run's
 * `events_not_recorded`), but the safety events, which have RUN_SAFETY_RESERVE_EVENTS places more.
 */
export const MAX_PENDING_BUS_EVENTS = 1000;
/**
 * Places of an open run's queues (its writer's, and the one of its open's window) beyond
 * MAX_PENDING_BUS_EVENTS kept for its safety events (isSafetyEvent: e-stop, FAULT, reconfiguration),
 * so a flood of calls waiting for a slow disk does not drop the e-stop that stopped them. Past
 * these the safety events are dropped and counted too.
 */
export const RUN_SAFETY_RESERVE_EVENTS = 100;
/**
 * Lines an open run's writer holds at most: the bus events, their safety reserve, and the one line
 * of the serial operation under way (a marker or the run_closed), which a full queue of events
 * must not refuse.
 */
const RUN_WRITER_MAX_LINES = MAX_PENDING_BUS_EVENTS + RUN_SAFETY_RESERVE_EVENTS + 1;
/**
 * Write-ahead ids of the calls an open run listed `in_flight` (at a close of it that failed) it
 * remembers, the oldest forgotten first: saved to runs.jsonl (an `in_flight` record) when such a
 * close fails, so a start after a crash does not record those calls again as `interrupted`. A
 * close lists at most AUDIT_MAX_UNSETTLED calls and as many repeats; ~30 bytes each. Those it
 * forgets are counted (the record's `forgotten`, and a WARN when it is saved).
 */
export const RUN_IN_FLIGHT_IDS_KEPT = 1024;
/**
 * Longest wait of a close that failed for its `in_flight` record to be written and fsync'd before
 * it answers (503): its answer then says the record is on disk, so a crash after it cannot give a
 * listed call a second ending (`interrupted`). Past it the close answers all the same, with a WARN.
 */
export const RUN_IN_FLIGHT_SAVE_TIMEOUT_MS = 5_000;
/** Longest time between a bus event's write and its fsync. */
export const BUS_EVENT_SYNC_DELAY_MS = 1000;
/**
 * First wait before a failed start (a full disk while closing abandoned runs, a folder not yet
 * mounted) is tried again; each further failure doubles it up to RUN_START_RETRY_MAX_MS. Retries
 * go on until one succeeds or the registry shuts down: a short disk-full spell at boot must not
 * disable runs for the life of the process.
 */
export const RUN_START_RETRY_MS = 5_000;
/** Longest wait between two tries of a failed start. */
export const RUN_START_RETRY_MAX_MS = 60_000;
/** Records waiting for runs.jsonl at most (open and close wait for theirs: a handful at most). */
export const MAX_PENDING_RUN_RECORDS = 64;
/**
 * Default of `runs.max_run_bytes`: the size an open run's event file may reach. Past it automatic
 * events (calls, alarms, interlocks, mode changes not into or out of FAULT, parameter changes,
 * automation faults, incidents and incident triggers but an e-stop's or FAULT entry's) are
 * counted instead of recorded; the safety events (e-stop trigger, clear and reason, mode changes
 * into and out of FAULT, the incident and incident_trigger of an e-stop or FAULT entry,
 * config_change, polling_change, automation_change) are still recorded within
 * RUN_SAFETY_RESERVE_BYTES more; markers are refused, and the run_closed event (always written)
 * says how many were left out: a run left open in AUTO must not fill the disk the audit journal
 * and the history share.
 */
export const RUN_MAX_BYTES_DEFAULT = RUNS_LIMITS.maxRunBytes.default;
/**
 * Bytes an open run's event file may grow beyond `runs.max_run_bytes` for its safety events only
 * (isSafetyEvent: the e-stop's trigger, clear and late reason, mode changes into and out of FAULT,
 * the incident and incident_trigger of an e-stop or FAULT entry, config_change, polling_change,
 * automation_change): a review of a run past the bound must still show that the machine was
 * stopped, released, or reconfigured. About 5,000 such events (~200 bytes each); past the
 * reserve they are counted too (one WARN), so the file never exceeds max_run_bytes + this (+ its
 * run_closed).
 */
export const RUN_SAFETY_RESERVE_BYTES = RUNS_LIMITS.safetyReserveBytes;
/**
 * Defaults of `runs.max_runs` and `runs.max_total_bytes`: the closed runs kept, by number and by
 * the bytes of their event files together. Past either, the oldest closed runs are removed (record
 * and event file) when a run closes and at start; runs.jsonl is rewritten with the kept runs'
 * records at start and once it holds twice the lines they need. The most recently closed run is
 * always kept.
 */
export const RUNS_KEPT_DEFAULT = RUNS_LIMITS.maxRuns.default;
export const RUNS_TOTAL_BYTES_DEFAULT = RUNS_LIMITS.maxTotalBytes.default;
/**
 * Lines of runs.jsonl beyond two per kept run that start tolerates before rewriting it. A running
 * registry rewrites it when it holds twice the lines its kept runs need (plus these): each close
 * past runs.max_runs adds two lines for runs that are gone, so a runtime that is never restarted
 * rewrites ~2 x runs.max_runs lines once per runs.max_runs runs, not the whole file at every close.
 */
const RUNS_COMPACT_SLACK_LINES = 64;
/**
 * Closes after a failed rewrite of runs.jsonl before the running registry tries it again (a
 * rename refused, a full disk); each further failure doubles the wait up to
 * RUNS_COMPACT_RETRY_MAX_CLOSES, a rewrite that succeeds resets it: a rewrite that keeps failing
 * is not redone at every close.
 */
export const RUNS_COMPACT_RETRY_CLOSES = 8;
/** Most closes between two tries of a failing rewrite of runs.jsonl. */
export const RUNS_COMPACT_RETRY_MAX_CLOSES = 256;
/** Characters of runs.jsonl the rewrite gathers before each write (the file is never one string). */
const RUNS_COMPACT_CHUNK_CHARS = 1024 * 1024;
/**
 * How often, at most, the count of an open run's events left out past runs.max_run_bytes is saved
 * to runs.jsonl (a `not_recorded` record: the first at once, then the count reached, while it
 * grows; and at shutdown; a save that failed is tried again this long after, until one is
 * written), so a start after a crash closes the run with it: at most 8,640 lines a
 * day while such a run stays open and keeps leaving events out (runs.jsonl is rewritten, keeping
 * the last one, once they make it twice what its runs need: #compactIfLong). While that rewrite
 * has failed and waits for closes, the saves back off up to RUN_NOT_RECORDED_SAVE_MAX_MS.
 */
export const RUN_NOT_RECORDED_SAVE_MS = 10_000;
/**
 * Longest time between two saves of a run's count of events left out while runs.jsonl is long
 * and its rewrite failed (it is tried again only after closes: RUNS_COMPACT_RETRY_CLOSES): the
 * time between saves doubles from RUN_NOT_RECORDED_SAVE_MS up to this, so such a run adds at most
 * 33 lines the first day and 24 a day after, not 8,640; a crash then loses at most this long of
 * the count's growth. Back to RUN_NOT_RECORDED_SAVE_MS at the first save after a rewrite that
 * succeeded.
 */
export const RUN_NOT_RECORDED_SAVE_MAX_MS = 3_600_000;
/**
 * How often, at most, the count of safety events no run recorded (safety_events_between_runs) is
 * saved to runs.jsonl (a `between_runs` record: at the end of the step of the first change, then
 * the count reached at most this long after, and at shutdown; a save that failed is tried again
 * this long after, until one is written), so a restart, after a crash too,
 * gives it to the next run opened: at most 8,640 lines a day while safety events keep coming
 * between runs (a rewrite of runs.jsonl, once they make it twice what its runs need, keeps the
 * last one: #compactIfLong). While that rewrite has failed and waits for closes, the saves back
 * off up to BETWEEN_RUNS_SAVE_MAX_MS. A run's open takes the count (its record resets it).
 */
export const BETWEEN_RUNS_SAVE_MS = 10_000;
/**
 * Longest time between two saves of the count of safety events between runs while runs.jsonl is
 * long and its rewrite failed: as RUN_NOT_RECORDED_SAVE_MAX_MS (nextSaveEveryMs), at most 33 lines
 * the first day and 24 a day after, not 8,640; a crash then loses at most this long of the
 * count's growth. Back to BETWEEN_RUNS_SAVE_MS at the first save after a rewrite that succeeded.
 */
export const BETWEEN_RUNS_SAVE_MAX_MS = 3_600_000;

/**
 * The time from a save of a count (a run's `not_recorded`, `between_runs`) to the next: `baseMs`;
 * while `backOff` (runs.jsonl long and its rewrite, failed, waiting for closes: each save is a
 * line for good) twice `currentMs`, up to `maxMs`.
 */
function nextSaveEveryMs(currentMs: number, backOff: boolean, baseMs: number, maxMs: number) {
  return backOff ? Math.min(2 * currentMs, maxMs) : baseMs;
}
/** Page sizes of GET /v0/runs and GET /v0/runs/{id}/events. */
export const RUNS_PAGE_LIMIT = { default: 50, max: 200 } as const;
export const EVENTS_PAGE_LIMIT = { default: 200, max: 1000 } as const;

interface OpenRun {
  run: Run;
  nextSequence: number;
  /** The writer of the run's event file. */
  writer: JournalWriter;
  /**
   * Its run_closed event is being written: nothing more is queued for it. Not set by the retry of
   * a close whose run_closed is already written (closedEvent): its events are dropped, counted.
   */
  closing: boolean;
  /** Bytes of its event file (the lines queued included). */
  bytes: number;
  /**
   * Events left out: past the bound (maxRunBytes), or lost on their way to the disk (a queue full,
   * a failed write).
   */
  notRecorded: number;
  /** Its event file reached the bound (maxRunBytes): warned once. */
  boundReached: boolean;
  /** Its safety events no longer fit RUN_SAFETY_RESERVE_BYTES either (warned once). */
  reserveUsedUp: boolean;
  /** `notRecorded` as last saved to runs.jsonl (RUN_NOT_RECORDED_SAVE_MS). */
  savedNotRecorded: number;
  /** When `savedNotRecorded` was saved (its record's `at_epoch_ms`; #countAt, never falls). */
  savedNotRecordedAt: number;
  /** When the last of its events left out was counted (#countAt: the wall clock, never falling). */
  lastLossAt: number;
  /** The timer of the next save of `notRecorded`, or null. */
  saveTimer: TimerId | null;
  /**
   * Time from a save of `notRecorded` to the next: RUN_NOT_RECORDED_SAVE_MS, doubled by every
   * save while runs.jsonl is long and its rewrite failed, up to RUN_NOT_RECORDED_SAVE_MAX_MS.
   */
  saveEveryMs: number;
  /** Its saves of `notRecorded` that failed (warned once until one succeeds). */
  readonly saveFailures: SpellLog;
  /**
   * Bus events that came while its run_closed was being written: of no run when the close
   * succeeds (the cut is by recording, whatever their time: nothing follows a run_closed; its
   * safety events are counted by the next run_opened: #betweenRuns), lost and counted if it fails
   * (docs/http-api.md "Runs", Closing).
   */
  whileClosing: number;
  /** The safety events of whileClosing: of no run when the close succeeds (SafetyBetweenRuns). */
  safetyWhileClosing: SafetyBetweenRuns | null;
  /**
   * Its run_closed event, once written to its event file while the close record of runs.jsonl is
   * not (that write failed): the run has ended on disk. Nothing more is written to its file, and
   * the retried close writes only the record, with this event's reason and time.
   */
  closedEvent: RunEvent | null;
  /** Client marker ids (MarkerRequest.marker_id) -> the marker's sequence and digest, oldest first. */
  markerIds: Map<string, { sequence: number; digest: string }>;
  /**
   * Write-ahead ids of its `in_flight` call events (a close lists them; at most
   * RUN_IN_FLIGHT_IDS_KEPT, oldest forgotten first); how often that set changed, and at which
   * change runs.jsonl got it (0: not saved); how many ids it forgot, and how many were warned of.
   */
  listedInFlight: Set<string>;
  listedInFlightChanges: number;
  savedInFlight: number;
  inFlightForgotten: number;
  inFlightForgottenWarned: number;
  /** The monotonic clock when it started (with its started_at_epoch_ms). */
  startedMono: number;
  /**
   * The latest recorded_at_epoch_ms given to one of its events (#recordedAt): the next is never
   * earlier, so recorded times ascend along its file as its sequence does, whatever the wall
   * clock does (an NTP step back). A run found open at start is closed there, its last event's
   * recording read from its file (lastActivity): none stays open to need it recovered.
   */
  recordedAt: number;
}

/**
 * Safety events (isSafetyEvent) no run recorded: between two runs, while a close wrote its
 * run_closed, while an open that then failed was written. The next run opened gives them in its
 * run_opened payload (`safety_events_between_runs`).
 */
interface SafetyBetweenRuns {
  count: number;
  estopTriggers: number;
  firstAt: number;
  lastAt: number;
  /**
   * The latest of them this process noted (null: only a previous process's, saved in runs.jsonl):
   * the run whose run_opened lists them starts no earlier (#startAt). A previous process's is no
   * reference, as for #lastEnd: its clock may have been ahead of this one's.
   */
  ownLastAt: number | null;
}

function noteSafety(
  into: SafetyBetweenRuns | null,
  category: RunEventCategory,
  type: string,
  occurred: number,
): SafetyBetweenRuns {
  const trigger = category === "estop" && type === "trigger" ? 1 : 0;
  if (into === null) {
    return {
      count: 1,
      estopTriggers: trigger,
      firstAt: occurred,
      lastAt: occurred,
      ownLastAt: occurred,
    };
  }
  into.count++;
  into.estopTriggers += trigger;
  into.firstAt = Math.min(into.firstAt, occurred);
  into.lastAt = Math.max(into.lastAt, occurred);
  into.ownLastAt = Math.max(into.ownLastAt ?? occurred, occurred);
  return into;
}

function mergeSafety(
  into: SafetyBetweenRuns | null,
  more: SafetyBetweenRuns | null,
): SafetyBetweenRuns | null {
  if (more === null) return into;
  if (into === null) return { ...more };
  into.count += more.count;
  into.estopTriggers += more.estopTriggers;
  into.firstAt = Math.min(into.firstAt, more.firstAt);
  into.lastAt = Math.max(into.lastAt, more.lastAt);
  into.ownLastAt = into.ownLastAt === null || more.ownLastAt === null
    ? into.ownLastAt ?? more.ownLastAt
    : Math.max(into.ownLastAt, more.ownLastAt);
  return into;
}

/** An event of the open run not yet given its sequence number. */
interface QueuedEvent {
  readonly category: RunEventCategory;
  readonly type: string;
  readonly occurred: number;
  readonly payload: Record<string, unknown>;
}

type Body = Record<string, unknown>;

function isObject(v: unknown): v is Body {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function stringList(v: unknown): string[] {
  return Array.isArray(v) && v.every((s) => typeof s === "string") ? [...v] : [];
}

/**
 * Whether an automatic event is kept past `runs.max_run_bytes` (within RUN_SAFETY_RESERVE_BYTES):
 * every `estop` event (trigger, clear, late reason, verification), a mode change into or out of
 * FAULT and a hook into FAULT that failed, the `incident` or `incident_trigger` of an e-stop or
 * a FAULT entry (its link to the record of the stop), and what a reload changed (`config_change`,
 * and `polling_change` and `automation_change`, which say it for those sections instead of
 * config_change). No run recording one, it is counted between runs.
 */
function isSafetyEvent(category: RunEventCategory, payload: Record<string, unknown>): boolean {
  switch (category) {
    case "estop":
    case "config_change":
    case "polling_change":
    case "automation_change":
      return true;
    case "incident":
    case "incident_trigger":
      return payload.trigger === "estop" || payload.trigger === "fault";
    case "mode_change":
      return payload.previous_mode === "FAULT" || payload.new_mode === "FAULT";
    case "hook_failure":
      return typeof payload.transition === "string" && payload.transition.endsWith("->FAULT");
    default:
      return false;
  }
}

/** Parses a journaled run; null when the shape is wrong. */
function parseRun(v: unknown): Run | null {
  if (!isObject(v)) return null;
  const id = v.run_id;
  if (typeof id !== "string" || !ULID_PATTERN.test(id.slice(-26))) return null;
  if (typeof v.started_at_epoch_ms !== "number") return null;
  const scope = isObject(v.tag_scope) ? v.tag_scope : {};
  return {
    schema_version: SCHEMA_VERSION,
    run_id: id,
    state: "open",
    close_reason: null,
    started_at_epoch_ms: v.started_at_epoch_ms,
    ended_at_epoch_ms: null,
    automation_version: isObject(v.automation_version)
      ? v.automation_version as unknown as AutomationVersion
      : null,
    runtime_version: typeof v.runtime_version === "string" ? v.runtime_version : "",
    polling_interval_ms: typeof v.polling_interval_ms === "number" ? v.polling_interval_ms : 0,
    params: isObject(v.params) ? v.params : {},
    tag_scope: {
      provider_ids: stringList(scope.provider_ids),
      device_ids: stringList(scope.device_ids),
      signal_ids: stringList(scope.signal_ids),
    },
    experiment_label: typeof v.experiment_label === "string" ? v.experiment_label : null,
  };
}

/** Run records with markers, durable across restarts. */
export class RunRegistry {
  readonly #opts: RunRegistryOptions;
  readonly #log: Logger;
  readonly #ulid: UlidGenerator;
  readonly #prefix: string;
  readonly #runsFile: string;
  readonly #eventsDir: string;
  readonly #runs = new Map<string, Run>();
  /**
   * The end of the run this process closed last (its ended_at_epoch_ms and the monotonic clock
   * then): the next run starts no earlier (#startAt). Null before the first close. A run a previous
   * process left open gives none: its clock may have been ahead of this one's.
   */
  #lastEnd: { readonly wall: number; readonly mono: number } | null = null;
  /** Run ids in opening order (oldest first). */
  readonly #order: string[] = [];
  #state: "new" | "ready" | "unavailable" | "stopped" = "new";
  #unavailableReason: string | null = "not started";
  /** The writer of runs.jsonl. */
  #journal: JournalWriter | null = null;
  /**
   * Lines its files (runs.jsonl, the runs' event files) wrote, and those of their writes under way
   * (the stop's wait reads them).
   */
  readonly journalLineCount = new JournalLineCount();
  #open: OpenRun | null = null;
  #chain: Promise<void> = Promise.resolve();
  #droppedBusEvents = 0;
  /** The current spell of dropped bus events, said once (until one is written again). */
  readonly #busDrops: SpellLog;
  #unsubscribe: (() => void) | null = null;
  #report: RunStartupReport = {
    corruptLines: [],
    corruptLineCount: 0,
    abandonedRunIds: [],
    orphanedEventFiles: [],
  };
  readonly #warnedCorruptRuns = new Set<string>();
  readonly #maxRunBytes: number;
  /** Event file bytes of every closed run (what retention counts). */
  readonly #closedBytes = new Map<string, number>();
  #closedTotal = 0;
  /** Event file sizes the close records give (`event_bytes`), until retention takes them. */
  readonly #recordedBytes = new Map<string, number>();
  /**
   * Runs found open by replay: the count of events left out past the bound their process saved
   * last (`not_recorded` records) and when; their close at start counts them. `shutdown`: saved
   * by a graceful stop, when it stopped recording the run (the run's end).
   */
  readonly #savedNotRecorded = new Map<
    string,
    { count: number; at: number; shutdown: boolean }
  >();
  /**
   * Runs found open by replay: the write-ahead ids of the calls a close of theirs that failed
   * listed `in_flight` (their last `in_flight` record): not written again as interrupted calls.
   */
  readonly #savedInFlight = new Map<string, Set<string>>();
  /** Lines of runs.jsonl (read at start, appended since; compacted when far more than needed). */
  #journalLines = 0;
  /** Times #journalLines was counted anew (a start's replay, a rewrite): see #appendSave. */
  #journalCount = 0;
  /** Closes to let pass before the next try of a rewrite of runs.jsonl (one failed). */
  #compactWait = 0;
  /** The wait after the next failed rewrite (RUNS_COMPACT_RETRY_CLOSES, doubling). */
  #compactBackoff = RUNS_COMPACT_RETRY_CLOSES;
  /** `polling.interval_ms` in effect, recorded in the runs opened from now on. */
  #pollingIntervalMs: number;
  /** start() was called (a shutdown before it has no start to say it ends). */
  #startCalled = false;
  /** What start() was handed, kept for its retries. */
  #startInput: RunStartInput = {};
  /** The pending retry of a failed start, and the wait before the next one. */
  #retryTimer: TimerId | null = null;
  #retryDelayMs = RUN_START_RETRY_MS;
  /**
   * Events that came while a run's open was being written (it has started: its started_at is
   * taken first), at most MAX_PENDING_BUS_EVENTS: queued as its events once the open is durable,
   * dropped with it when the open fails. Null while no open is being written.
   */
  #whileOpening: QueuedEvent[] | null = null;
  /** Id of the run whose open is being written (meaningful while #whileOpening is not null). */
  #openingId: string | null = null;
  /** Events of the run whose open is being written that #whileOpening had no room for. */
  #lostWhileOpening = 0;
  /**
   * Markers, opens and closes whose write failed: one ERROR per failing spell, DEBUG for the next
   * ones, one INFO when one is written again (#ioError, #ioWritten).
   */
  readonly #writeFailures: SpellLog;
  /**
   * Reads of a run's events that failed (GET /v0/runs/{run_id}/events): one ERROR per failing
   * spell, DEBUG for the next ones, one INFO when one works again (#ioError, listEvents).
   */
  readonly #readFailures: SpellLog;
  /**
   * The safety events of #lostWhileOpening: of no run if that open fails (counted by the next
   * run's run_opened, #betweenRuns); if it succeeds, its run counts them with the rest.
   */
  #lostSafetyWhileOpening: SafetyBetweenRuns | null = null;
  /**
   * Safety events no run recorded since the last run opened (saved to runs.jsonl: a start begins
   * with the count its previous process saved last, BETWEEN_RUNS_SAVE_MS).
   */
  #betweenRuns: SafetyBetweenRuns | null = null;
  /** The count the replay of runs.jsonl found (its last `between_runs` after the last open). */
  #replayedBetween: SafetyBetweenRuns | null = null;
  /**
   * The latest safety event between runs this process noted that a start's rewrite of runs.jsonl
   * saved before the start failed: its retry replays that count as if a previous process's, but it
   * is this process's, so still a reference for the next run's start (#startAt).
   */
  #ownSavedLastAt: number | null = null;
  /** The `between_runs` record last saved (or found by the replay) since a run opened, or null. */
  #betweenSaved: string | null = null;
  /**
   * The timer of the next save of #betweenRuns (#betweenSaveEveryMs), or null: while it is set, a
   * change waits for it.
   */
  #betweenTimer: TimerId | null = null;
  /**
   * Time from a save of #betweenRuns to the next: BETWEEN_RUNS_SAVE_MS, doubled by every save while
   * runs.jsonl is long and its rewrite failed, up to BETWEEN_RUNS_SAVE_MAX_MS (nextSaveEveryMs).
   */
  #betweenSaveEveryMs = BETWEEN_RUNS_SAVE_MS;
  /** Saves of #betweenRuns that failed (warned once until one succeeds). */
  readonly #betweenSaveFailures: SpellLog;
  /**
   * Where the stop is (_stop_phase.ts), moved on only by shutdown() (#stopStep): read as
   * #stopAsked, #shuttingDown and #lostWhy.
   */
  #stop: StopPhase = STOP_RUNNING;
  /**
   * The id of the run shutdown() left open (closed as `abandoned` at the next start), or null: an
   * e-stop's reason of that run arriving after the stop's last save is said as that run's
   * (recordEstopReason), not as a safety event between runs.
   */
  #leftOpenAtStop: string | null = null;
  /**
   * The count of safety events between runs a try of the start took (#tryStart), until it is in
   * runs.jsonl or given back to #betweenRuns; a shutdown meanwhile says it with the rest (one WARN
   * with the total, #betweenRunsLost) and the try gives back nothing then.
   */
  #takenBetween: SafetyBetweenRuns | null = null;
  /**
   * The rewrite of runs.jsonl holding #takenBetween (a first start's, #compact) asked its rename:
   * the count may be in the file whatever a shutdown does now, so a shutdown meanwhile leaves it to
   * the start, which gives it back (said, #betweenRunsLost) only if the rename failed.
   */
  #takenRenaming = false;
  /**
   * The close of the runs.jsonl writer a rewrite replaced (#compact), while it is under way, or
   * null: a shutdown meanwhile (a first start's rewrite is not in the serial chain) waits for it.
   */
  #replacedClosing: Promise<void> | null = null;
  /** shutdown()'s one run, once it was called: a second call waits for it (one stop, said once). */
  #stopping: Promise<void> | null = null;
  /**
   * shutdown() was called: a start under way (start() is not in the serial chain, and a hung
   * mount may hold it past the stop) ends at its next step (#startGoesOn), writing nothing more.
   * A retry (in the serial chain: the shutdown waits for it) goes on; none is set once it is.
   */
  get #stopAsked(): boolean {
    return this.#stop.kind !== "running";
  }
  /** Shutdown has begun (its turn came): no save is tried again from now on. */
  get #shuttingDown(): boolean {
    return this.#stop.kind === "saving" || this.#stop.kind === "saved";
  }
  /**
   * Why a safety event between runs noted from now on is not recorded, or null: set by shutdown()
   * after its last save (a registry never available: the reason its WARN gave). One noted after it,
   * before "stopped" or after (an e-stop's reason arriving: recordEstopReason), is said likewise
   * (#betweenRunsChanged), not lost unsaid.
   */
  get #lostWhy(): string | null {
    return this.#stop.kind === "saved" ? this.#stop.lostWhy : null;
  }
  /** Moves the stop on by `step` (stopPhaseAfter). */
  #stopStep(step: StopStep): void {
    this.#stop = stopPhaseAfter(this.#stop, step);
  }
  /** A save of #betweenRuns is due at the end of this step (#betweenRunsChanged). */
  #betweenSoon = false;
  /** A rewrite of runs.jsonl grown by saved counts is queued (#compactIfLong). */
  #compactQueued = false;

  constructor(options: RunRegistryOptions) {
    this.#opts = options;
    // A logger that throws (a custom sink that fails) loses its line only: it never replaces the
    // error a failed write answers with (#ioError says it before it is thrown), nor leaves a
    // journal writer's loop half-way (the writers log through this one).
    this.#log = neverThrowing(options.logger);
    this.#busDrops = new SpellLog({ log: this.#log, failLevel: "error" });
    this.#betweenSaveFailures = new SpellLog({ log: this.#log });
    this.#writeFailures = new SpellLog({
      log: this.#log,
      failLevel: "error",
      firstNote: "failed markers, opens and closes are logged at DEBUG until one is written again",
      restLevel: "debug",
      recovered: (failed) =>
        `run journal written again (${failed} marker, open or close requests failed before)`,
    });
    this.#readFailures = new SpellLog({
      log: this.#log,
      failLevel: "error",
      firstNote: "failed reads of run events are logged at DEBUG until one works again",
      restLevel: "debug",
      recovered: (failed) => `run journal: run events read again (${failed} reads failed before)`,
    });
    this.#ulid = new UlidGenerator({ now: () => options.clock.nowMs(), random: options.random });
    this.#prefix = options.runtimeName || "default";
    this.#maxRunBytes = options.maxRunBytes ?? RUN_MAX_BYTES_DEFAULT;
    this.#pollingIntervalMs = options.pollingIntervalMs;
    const dir = options.dataDir.replace(/\/+$/, "");
    this.#runsFile = `${dir}/runs.jsonl`;
    this.#eventsDir = `${dir}/runs`;
  }

  /**
   * Replays the journal and closes runs left open as `abandoned`. Never throws: on failure the
   * registry is unavailable (every call answers UNAVAILABLE), the reason is logged, and the start
   * is tried again after RUN_START_RETRY_MS (doubling up to RUN_START_RETRY_MAX_MS) until it
   * succeeds or the registry shuts down.
   */
  async start(input: RunStartInput = {}): Promise<void> {
    // Once shutdown() was called (its stop under way, "stopped" not yet set): no try, no call on
    // the disk -- one on a hung mount would make the folder after the stop, and its lock's release.
    if (this.#state !== "new" || this.#stopAsked) return;
    this.#startCalled = true;
    this.#startInput = input;
    await this.#tryStart(true);
  }

  /**
   * One try of the start; a failure leaves the registry unavailable and schedules the next.
   * `outOfTurn`: the first try, start()'s, not in the serial chain -- a shutdown() meanwhile ends
   * it at its next step (#startGoesOn). A retry is in turn with shutdown, which waits for it: it
   * is not ended, so that what it takes (the count of safety events between runs) is in
   * runs.jsonl, or back in #betweenRuns for the shutdown's own save (or, still unavailable, its
   * WARN of what is lost: #betweenRunsLost), when the shutdown runs.
   */
  async #tryStart(outOfTurn: boolean): Promise<void> {
    // A failed try may have replayed part of the journal: the next one starts from nothing.
    this.#runs.clear();
    this.#order.length = 0;
    this.#closedBytes.clear();
    this.#closedTotal = 0;
    this.#recordedBytes.clear();
    this.#savedNotRecorded.clear();
    this.#savedInFlight.clear();
    this.#warnedCorruptRuns.clear();
    this.#replayedBetween = null;
    this.#journalLines = 0;
    this.#journalCount++;
    this.#report = {
      corruptLines: [],
      corruptLineCount: 0,
      abandonedRunIds: [],
      orphanedEventFiles: [],
    };
    const input = this.#startInput;
    // The count of safety events noted before this try took it (#takenBetween: given back if the
    // try fails before the count is in runs.jsonl).
    this.#takenBetween = null;
    let journal: JournalWriter | null = null;
    try {
      await this.#opts.files.ensureDir(this.#eventsDir);
      this.#startGoesOn(outOfTurn);
      await this.#replay();
      this.#startGoesOn(outOfTurn);
      // New ids sort after every kept run's, whatever the clock did since they were made.
      for (const id of this.#order) this.#ulid.advancePast(id.slice(-26));
      journal = this.#runsWriter();
      // A failure is this start's: said by its own ERROR (below), with the retry.
      await journal.open({ report: false });
      this.#startGoesOn(outOfTurn);
      this.#journal = journal;
      const now = this.#opts.clock.nowMs();
      const abandoned: string[] = [];
      const interrupted = this.#callsByRun(input.interruptedCalls ?? []);
      for (const id of this.#order) {
        const run = this.#runs.get(id) as Run;
        if (run.state !== "open") continue;
        this.#startGoesOn(outOfTurn);
        const reason = await this.#closeRun(
          run,
          "abandoned",
          now,
          interrupted.get(id),
          () => this.#startGoesOn(outOfTurn),
        );
        if (reason !== "abandoned") {
          this.#log.warn(
            `run ${id}: its event file ends with run_closed (${reason}), its close record was ` +
              `not written by the previous process: closed as the event file says`,
          );
          continue;
        }
        abandoned.push(id);
        this.#log.warn(`run ${id} was left open by the previous process: closed as abandoned`);
      }
      this.#report = { ...this.#report, abandonedRunIds: abandoned };
      for (const id of this.#order) {
        if (this.#runs.get(id)!.state !== "closed" || this.#closedBytes.has(id)) continue;
        this.#noteClosed(id, await this.#closedFileBytes(id));
      }
      // The count its previous process saved, and what this one counted before the start.
      // (Set by the replay: not null for all TypeScript knows.)
      const replayed = this.#replayedBetween as SafetyBetweenRuns | null;
      // Taken now: what is noted during the steps below (a safety event while a retry runs) is
      // noted apart and added at the end.
      this.#takenBetween = this.#betweenRuns;
      this.#betweenRuns = null;
      const between = mergeSafety(
        replayed === null ? null : { ...replayed, ownLastAt: this.#ownSavedLastAt },
        this.#takenBetween,
      );
      let betweenSaved = replayed === null ? null : betweenRunsRecord(replayed);
      this.#startGoesOn(outOfTurn);
      const removed = await this.#prune(() => this.#startGoesOn(outOfTurn));
      this.#startGoesOn(outOfTurn);
      if (removed > 0 || this.#journalLines > 2 * this.#runs.size + RUNS_COMPACT_SLACK_LINES) {
        const compacted = await this.#compact(
          between,
          () => this.#startGoesOn(outOfTurn),
          () => (this.#takenRenaming = true),
        ).finally(() => (this.#takenRenaming = false));
        if (compacted) {
          betweenSaved = between === null ? null : betweenRunsRecord(between);
          // In the file now: a retry of this start (a later step failing) replays them.
          this.#takenBetween = null;
          this.#ownSavedLastAt = between?.ownLastAt ?? null;
        }
      }
      this.#startGoesOn(outOfTurn);
      this.#report = { ...this.#report, orphanedEventFiles: await this.#orphans() };
      this.#startGoesOn(outOfTurn);
      if (this.#state === "unavailable") {
        this.#log.info(`run registry available: ${this.#runsFile} started on a retry`);
      }
      this.#state = "ready";
      this.#unavailableReason = null;
      this.#startInput = {};
      this.#takenBetween = null; // in `between`
      input.onStarted?.();
      this.#betweenRuns = mergeSafety(between, this.#betweenRuns);
      this.#betweenSaved = betweenSaved;
      if (this.#betweenRuns !== null) this.#betweenRunsChanged();
    } catch (err) {
      // Given back (none if a shutdown meanwhile said it with the rest).
      this.#betweenRuns = mergeSafety(this.#betweenRuns, this.#takenBetween);
      this.#takenBetween = null;
      if (outOfTurn && this.#stopAsked) {
        // Shut down meanwhile (the disk answered after the stop): no retry, no ERROR, and no file
        // of it left open -- the start's runs.jsonl (a rewrite's, when it rewrote it) is closed.
        // The count it took and gave back, if the shutdown is past its own save (else it says it).
        if (this.#shuttingDown) this.#betweenRunsLost("run registry stopped while it started");
        const left = [journal, this.#journal];
        this.#journal = null;
        for (const j of left) await j?.close();
        return;
      }
      this.#state = "unavailable";
      this.#unavailableReason = `run journal ${this.#runsFile}: ${errorMessage(err)}`;
      await this.#journal?.close();
      this.#journal = null;
      if (this.#stopAsked) {
        // shutdown() came while this try ran or closed runs.jsonl (its cancel of a retry found
        // none yet): no retry is set for a stopped registry, said by the shutdown (INFO), as is
        // the count of safety events between runs given back (WARN) -- unless it is past that.
        if (this.#shuttingDown) this.#betweenRunsLost(this.#unavailableReason);
        return;
      }
      const delay = this.#retryDelayMs;
      this.#retryDelayMs = Math.min(2 * delay, RUN_START_RETRY_MAX_MS);
      this.#log.error(
        `run registry unavailable: ${this.#unavailableReason}; retrying in ${delay} ms`,
      );
      this.#retryTimer = this.#opts.clock.setTimer(() => this.#retryStart(), delay);
    }
  }

  /** Ends start()'s try (#tryStart) at this step once shutdown() was called: see #stopAsked. */
  #startGoesOn(outOfTurn: boolean): void {
    if (outOfTurn && this.#stopAsked) throw unavailable("run registry stopped while it started");
  }

  /**
   * The safety events counted between runs that a stopped registry cannot save (it never became
   * available: no runs.jsonl open): one WARN with how many and `why`; the count is dropped.
   * Said as the stop is then: its files still closing ("stopping") or closed ("stopped").
   */
  #betweenRunsLost(why: string): void {
    const lost = this.#betweenRuns;
    if (lost === null) return;
    this.#betweenRuns = null;
    const stop = this.#state === "stopped" ? "stopped" : "stopping";
    this.#log.warn(
      `run registry ${stop}: ${lost.count} safety events between runs (${lost.estopTriggers} ` +
        `e-stop triggers) not recorded: ${why}`,
    );
  }

  /** A retry of a failed start, in turn with shutdown (which cancels it). */
  #retryStart(): void {
    this.#retryTimer = null;
    this.#serial(async () => {
      if (this.#state === "unavailable") await this.#tryStart(false);
    }).catch((err) => this.#log.error(`run registry start retry failed: ${errorMessage(err)}`));
  }

  #cancelRetry(): void {
    if (this.#retryTimer === null) return;
    this.#opts.clock.clearTimer(this.#retryTimer);
    this.#retryTimer = null;
  }

  /**
   * The calls of each run: the run the call's record names (identity: a wall clock stepped back
   * after a run opened cannot move its calls to an earlier run); for a record naming none (an
   * older version), the latest run started at or before the call's wall time, if any. In the
   * order given (the audit trail's: the order they were decided in, not their wall times).
   */
  #callsByRun(calls: readonly InterruptedCall[]): Map<string, InterruptedCall[]> {
    const byRun = new Map<string, InterruptedCall[]>();
    for (const c of calls) {
      const { call, runId } = c;
      let owner: string | null = null;
      if (runId !== undefined) {
        owner = runId !== null && this.#runs.has(runId) ? runId : null;
      } else {
        let ownerStart = -Infinity;
        for (const id of this.#order) {
          const started = this.#runs.get(id)!.started_at_epoch_ms;
          if (started <= call.first_time_epoch_ms && started >= ownerStart) {
            owner = id;
            ownerStart = started;
          }
        }
      }
      if (owner === null) continue;
      const list = byRun.get(owner) ?? [];
      list.push(c);
      byRun.set(owner, list);
    }
    return byRun;
  }

  /** What start() found: skipped corrupt lines, runs it closed as abandoned, orphaned files. */
  startupReport(): RunStartupReport {
    return {
      corruptLines: [...this.#report.corruptLines],
      corruptLineCount: this.#report.corruptLineCount,
      abandonedRunIds: [...this.#report.abandonedRunIds],
      orphanedEventFiles: [...this.#report.orphanedEventFiles],
    };
  }

  /**
   * The event files no run names, sorted, with one WARN when there are any. They are kept:
   * removing them would also remove every run's events when runs.jsonl was lost, and they are
   * the only copy of those events; the operator decides (docs/http-api.md, "Runs").
   */
  async #orphans(): Promise<string[]> {
    const named = new Set(this.#order.map((id) => `${id.slice(-26)}.jsonl`));
    const orphans = (await this.#opts.files.listNames(this.#eventsDir))
      .filter((name) => name.endsWith(".jsonl") && !named.has(name))
      .sort()
      .map((name) => `${this.#eventsDir}/${name}`);
    if (orphans.length > 0) {
      const shown = namedList(orphans, ORPHANS_NAMED_IN_LOG);
      this.#log.warn(
        `runs: ${orphans.length} event file(s) name no run of ${this.#runsFile}: not served, not counted by retention, kept: ${shown}`,
      );
    }
    return orphans;
  }

  /**
   * A reload changed `polling.interval_ms`: the runs opened from now on record `ms`, and a run
   * open now (whose record keeps the interval it opened with) gets a `polling_change` event
   * (queued like bus events, bounded). The same value again records nothing.
   */
  setPollingIntervalMs(ms: number): void {
    const previous = this.#pollingIntervalMs;
    this.#pollingIntervalMs = ms;
    if (ms === previous) return;
    this.#queueEvent("polling_change", "", this.#opts.clock.nowMs(), {
      previous_interval_ms: previous,
      new_interval_ms: ms,
    });
  }

  /**
   * A reload applied a section of the configuration (a protection's limits, a provider, the
   * safe state, ...): a run open now gets a `config_change` event of type `section`, payload
   * `section` and what changed by name (`added`, `removed`, `changed`: ids and keys, never values,
   * bounded by the caller; `omitted`: names left out). Queued like bus events, bounded. The caller
   * leaves out what an event of its own says (polling_change, automation_change).
   */
  recordConfigChange(
    section: string,
    changes: {
      readonly added: readonly string[];
      readonly removed: readonly string[];
      readonly changed: readonly string[];
      readonly omitted: number;
    },
  ): void {
    this.#queueEvent("config_change", section, this.#opts.clock.nowMs(), {
      section,
      added: [...changes.added],
      removed: [...changes.removed],
      changed: [...changes.changed],
      omitted: changes.omitted,
    });
  }

  /**
   * Whether an event recorded now is one of a run's: a run is open, or has started and its open
   * is being written (its id is not given out until that is durable).
   */
  acceptsEvents(): boolean {
    return this.#state === "ready" && (this.#open !== null || this.#whileOpening !== null);
  }

  /** Id of the open run, or null (automation status reports it). */
  openRunId(): string | null {
    return this.#open?.run.run_id ?? null;
  }

  /** Availability and counters for operators. */
  info(): RunRegistryInfo {
    return {
      available: this.#state === "ready",
      unavailable_reason: this.#state === "ready" ? null : this.#unavailableReason,
      open_run_id: this.openRunId(),
      run_count: this.#runs.size,
      dropped_bus_events: this.#droppedBusEvents,
    };
  }

  /**
   * POST /v0/runs. Throws INVALID_ARGUMENT for params nested deeper than MAX_RUN_JSON_DEPTH or a
   * record over MAX_RECORD_BYTES (before anything is written), FAILED_PRECONDITION when a run is
   * open, UNAVAILABLE on I/O failure. `stillAdmitted`: asked at its turn in the write queue, first;
   * a refusal it returns is thrown, no run opened.
   */
  async open(
    request: OpenRunRequest = {},
    stillAdmitted?: StillAdmitted,
  ): Promise<{ run: Run }> {
    // Checked before the write queue: a bad request never waits, nor writes anything.
    this.#requireReady();
    this.#refuseOpenIfAsked();
    const params = request.params ?? {};
    if (!isObject(params)) throw invalidArgument("params: must be a JSON object");
    if (exceedsJsonDepth(params, MAX_RUN_JSON_DEPTH)) {
      throw invalidArgument(`params: nested deeper than ${MAX_RUN_JSON_DEPTH} levels`);
    }
    const scope = request.tag_scope ?? {};
    const tagScope: TagScope = {
      provider_ids: [...(scope.provider_ids ?? [])],
      device_ids: [...(scope.device_ids ?? [])],
      signal_ids: [...(scope.signal_ids ?? [])],
    };
    const experimentLabel = request.experiment_label ?? null;
    return await this.#serial(async () => {
      // A reload may have removed or lowered its requester's token while it waited its turn.
      const refusal = stillAdmitted?.() ?? null;
      if (refusal !== null) throw refusal.error;
      this.#requireReady();
      this.#refuseOpenIfAsked(); // a stop begun while it waited its turn
      if (this.#open) throw failedPrecondition(`Run already open: ${this.#open.run.run_id}`);
      this.#settleCalls(); // calls made before the run are none of its events
      const startedMono = this.#opts.clock.monoMs();
      const between = this.#betweenRuns;
      const now = this.#startAt(this.#opts.clock.nowMs(), startedMono, between);
      let runId: string;
      do {
        // A restarted process with a clock behind the previous one could repeat an id.
        runId = `${this.#prefix}-${this.#ulid.next()}`;
      } while (this.#runs.has(runId));
      const run = this.#newRun(runId, now, structuredClone(params), tagScope, experimentLabel);
      const record = JSON.stringify({ v: SCHEMA_VERSION, op: "open", run });
      if (utf8Length(record) > MAX_RECORD_BYTES) {
        throw invalidArgument(
          `run record exceeds ${MAX_RECORD_BYTES} bytes: shorten params, tag_scope or experiment_label`,
        );
      }
      const state = this.#opts.safetyState?.();
      const openedPayload = {
        ...(state === undefined ? {} : { mode: state.mode, estop_latched: state.estopLatched }),
        ...(between === null ? {} : {
          safety_events_between_runs: {
            count: between.count,
            estop_triggers: between.estopTriggers,
            first_at_epoch_ms: between.firstAt,
            last_at_epoch_ms: between.lastAt,
          },
        }),
      };
      const event = this.#event(run.run_id, 1, "run_opened", "", now, now, openedPayload);
      // Its failures are the registry's lines: the run's open, a marker, a close answer with
      // theirs, a dropped bus event says so once per spell (#droppedBusEvent).
      const writer = this.#writer(this.#eventFile(run.run_id), RUN_WRITER_MAX_LINES, true);
      let opened = 0;
      // The run has started (at `now`): what comes while its open is written is its own.
      this.#whileOpening = [];
      this.#lostWhileOpening = 0;
      this.#lostSafetyWhileOpening = null;
      this.#openingId = run.run_id;
      // Taken by its run_opened: what is noted between runs from now on (an e-stop's reason whose
      // trigger was of no run) is counted apart, by the run opened after this one.
      this.#betweenRuns = null;
      try {
        // Event file first: without the journal record it is an ignored orphan; the journal
        // record is the commit point.
        const line = JSON.stringify(event);
        written(await writer.append(line, { sync: true }));
        opened = utf8Length(line) + 1;
        await this.#appendJournal(record);
      } catch (err) {
        // Of no run: the open failed. The count it took goes back, with its safety events, to
        // the next run's run_opened.
        this.#mergeBetween(between);
        for (const e of this.#whileOpening ?? []) {
          if (isSafetyEvent(e.category, e.payload)) {
            this.#noteBetween(e.category, e.type, e.occurred);
          }
        }
        // Those its window's full queue dropped too.
        this.#mergeBetween(this.#lostSafetyWhileOpening);
        this.#lostSafetyWhileOpening = null;
        this.#whileOpening = null;
        // Saved now (no save is made while an open is written).
        this.#betweenRunsChanged();
        await writer.close();
        // No run names the file (a failed write is cut back, runs.jsonl's record too): not left
        // as an orphan for every start to warn about.
        await this.#opts.files.remove(this.#eventFile(run.run_id)).catch((e) =>
          this.#log.warn(
            `run ${run.run_id}: event file of a failed open not removed: ${errorMessage(e)}`,
          )
        );
        throw this.#ioError("open run", err);
      }
      this.#runs.set(run.run_id, run);
      this.#order.push(run.run_id);
      // In its run_opened (and its open record resets the count saved in runs.jsonl); what was
      // noted while the open was written is saved after that record (below).
      this.#betweenSaved = null;
      this.#stopSavingBetween();
      this.#open = {
        run,
        nextSequence: 2,
        writer,
        closing: false,
        bytes: opened,
        notRecorded: 0,
        boundReached: false,
        reserveUsedUp: false,
        savedNotRecorded: 0,
        savedNotRecordedAt: now,
        lastLossAt: now,
        saveTimer: null,
        saveEveryMs: RUN_NOT_RECORDED_SAVE_MS,
        saveFailures: new SpellLog({ log: this.#log }),
        whileClosing: 0,
        safetyWhileClosing: null,
        closedEvent: null,
        markerIds: new Map(),
        listedInFlight: new Set(),
        listedInFlightChanges: 0,
        savedInFlight: 0,
        inFlightForgotten: 0,
        inFlightForgottenWarned: 0,
        startedMono,
        recordedAt: now,
      };
      const came = this.#whileOpening ?? [];
      this.#whileOpening = null;
      this.#lostSafetyWhileOpening = null; // counted by the run with the rest (below)
      // Its events the window's queue dropped are left out of its record: counted by the run.
      for (let n = this.#lostWhileOpening; n > 0; n--) this.#countNotRecorded(this.#open);
      for (const e of came) this.#queueEvent(e.category, e.type, e.occurred, e.payload);
      if (this.#betweenRuns !== null) this.#betweenRunsChanged();
      this.#ioWritten();
      this.#log.info(`run ${run.run_id} opened`);
      this.#emit(event, run);
      return { run: structuredClone(run) };
    });
  }

  /**
   * GET /v0/runs: newest first, from memory (never waits for a write). `offset` counts from the
   * newest run, so a run opened between two pages shifts them (the next page repeats one);
   * `before` (a run id: the last of the previous page) starts after that run instead, and a run
   * opened meanwhile changes nothing. A `before` run no longer kept (retention) starts at the
   * newest run whose id's ULID sorts below its own. INVALID_ARGUMENT when `before` does not end
   * with a ULID.
   */
  list(page: RunsPageRequest = {}): Promise<{ runs: Run[]; count: number }> {
    return settled(() => {
      this.#requireReady();
      const { limit, offset } = pageBounds(page, RUNS_PAGE_LIMIT);
      const from = page.before === undefined ? this.#order.length : this.#indexBefore(page.before);
      const runs: Run[] = [];
      for (let i = from - 1 - offset; i >= 0 && runs.length < limit; i--) {
        runs.push(structuredClone(this.#runs.get(this.#order[i]!) as Run));
      }
      return { runs, count: runs.length };
    });
  }

  /** Index in #order just past the runs opened before `cursor` (a run id). */
  #indexBefore(cursor: string): number {
    const ulid = cursor.slice(-26);
    if (!ULID_PATTERN.test(ulid)) {
      // The client's text quoted and cut: it can neither make the answer long nor forge it.
      throw invalidArgument(
        `before: must be a run id (ending with a ULID), got ${quoteProviderText(cursor)}`,
      );
    }
    const at = this.#runs.has(cursor) ? this.#order.indexOf(cursor) : -1;
    if (at >= 0) return at;
    // Not kept (retention removed it; the oldest go first): the runs whose ULID sorts below.
    let i = this.#order.length;
    while (i > 0 && this.#order[i - 1]!.slice(-26) >= ulid) i--;
    return i;
  }

  /** GET /v0/runs/{run_id}, from memory. */
  get(runId: string): Promise<{ run: Run }> {
    return settled(() => {
      this.#requireReady();
      return { run: structuredClone(this.#runOrThrow(runId)) };
    });
  }

  /** POST /v0/runs/{run_id}/close: idempotent (a closed run is returned unchanged). */
  async close(runId: string, request: CloseRunRequest = {}): Promise<{ run: Run }> {
    this.#requireReady();
    const reason: CloseReason = request.close_reason ?? "operator_stop";
    if (!(CLIENT_CLOSE_REASONS as readonly string[]).includes(reason)) {
      throw invalidArgument(`close_reason: must be one of ${CLIENT_CLOSE_REASONS.join(", ")}`);
    }
    return await this.#serial(async () => {
      this.#requireReady();
      const run = this.#runOrThrow(runId);
      if (run.state === "open") await this.#closeRun(run, reason, this.#opts.clock.nowMs());
      return { run: structuredClone(run) };
    });
  }

  /**
   * GET /v0/runs/{run_id}/events: oldest first, read from the run's file. Waits for the appends
   * queued before it but never enters the write queue, so a read never delays an append.
   * `after_sequence` starts after that sequence number, and `offset` skips that many sequence
   * numbers more: the page starts at the first event whose sequence is greater than
   * after_sequence + offset, found by bisection, so a page reads its own lines plus
   * O(log(file size)) probes and at most SEEK_LINEAR_BYTES, however long the run. (Sequence
   * numbers have no holes unless a write failed; across a hole an offset page may repeat an event
   * of the page before it, never leave one out.)
   */
  async listEvents(
    runId: string,
    page: EventPageRequest = {},
  ): Promise<{ events: RunEvent[]; count: number }> {
    this.#requireReady();
    const run = this.#runOrThrow(runId);
    const after = page.after_sequence;
    if (after !== undefined && !(Number.isSafeInteger(after) && after >= 0)) {
      throw invalidArgument(`after_sequence: must be an integer from 0 to 2^53-1 (got ${after})`);
    }
    const { limit, offset } = pageBounds(page, EVENTS_PAGE_LIMIT);
    // Read your writes: wait for the operations and appends queued before this read, without
    // joining the queue -- appends queued after it never wait for the read.
    await this.#chain;
    if (this.#open?.run === run) await this.#open.writer.flush();
    const from = (after ?? 0) + offset;
    const events: RunEvent[] = [];
    let corrupt = 0;
    try {
      const final = run.state === "closed";
      const lines = await this.#keyedEvents(runId, final);
      const start = from > 0 ? await seekAfter(lines, from) : 0;
      const read = this.#opts.files.readLinesAt(lines.path, {
        maxLineBytes: MAX_LINE_BYTES,
        startByte: start,
      });
      for await (const line of read) {
        if (line.start >= lines.end || (!line.terminated && !final)) break;
        const event = eventOfLine(line, this.#eventRules(runId), final);
        if (event === null) {
          if (line.text.trim() !== "") corrupt++;
        } else if (event.sequence > from) {
          events.push(event);
          if (events.length >= limit) break;
        }
      }
    } catch (err) {
      this.#throwIfRemoved(runId, run);
      throw this.#ioError("read run events", err, false);
    }
    // Retention may have removed the run (memory first, then its file) while this read waited
    // for the close queued before it, or while it read: its file no longer answers for it.
    this.#throwIfRemoved(runId, run);
    this.#readFailures.ok();
    if (corrupt > 0 && !this.#warnedCorruptRuns.has(runId)) {
      this.#warnedCorruptRuns.add(runId);
      this.#log.warn(`run ${runId}: corrupt event lines skipped (${corrupt} in one page)`);
    }
    return { events, count: events.length };
  }

  /** The run's event file as keyed lines (sequence numbers), up to its size now. */
  async #keyedEvents(runId: string, final: boolean): Promise<KeyedLines> {
    const path = this.#eventFile(runId);
    const rules = this.#eventRules(runId);
    return {
      files: this.#opts.files,
      path,
      maxLineBytes: MAX_LINE_BYTES,
      end: await this.#opts.files.fileSize(path),
      key: (line: JournalLine) => eventOfLine(line, rules, final)?.sequence ?? null,
    };
  }

  /**
   * POST /v0/runs/{run_id}/events: an operator marker (category annotation), fsync'd. The
   * marker is checked (type, nesting, size) before it is queued: a bad one writes nothing.
   * `stillAdmitted`: asked at its turn in the write queue, first; a refusal it returns is thrown,
   * nothing written.
   */
  async addMarker(
    runId: string,
    marker: MarkerRequest,
    stillAdmitted?: StillAdmitted,
  ): Promise<{ event: RunEvent }> {
    this.#requireReady();
    const run = this.#runOrThrow(runId);
    const { type, occurred_at_epoch_ms: occurred, marker_id: markerId } = marker;
    const payload = marker.payload ?? {};
    if (
      markerId !== undefined &&
      (typeof markerId !== "string" || markerId === "" ||
        longerThanChars(markerId, MAX_MARKER_ID_CHARS))
    ) {
      throw invalidArgument(
        `marker_id: must be a string of 1 to ${MAX_MARKER_ID_CHARS} characters`,
      );
    }
    if (typeof type !== "string" || type === "") {
      throw invalidArgument("type: must be a non-empty string");
    }
    if (longerThanChars(type, MAX_MARKER_TYPE_CHARS)) {
      throw invalidArgument(`type: longer than ${MAX_MARKER_TYPE_CHARS} characters`);
    }
    if (!isObject(payload)) throw invalidArgument("payload: must be a JSON object");
    if (exceedsJsonDepth(payload, MAX_RUN_JSON_DEPTH)) {
      throw invalidArgument(`payload: nested deeper than ${MAX_RUN_JSON_DEPTH} levels`);
    }
    if (
      occurred !== undefined &&
      !(typeof occurred === "number" && Number.isSafeInteger(occurred) && occurred >= 0)
    ) {
      throw invalidArgument("occurred_at_epoch_ms: must be a non-negative integer");
    }
    const stored = structuredClone(payload) as Record<string, unknown>;
    // What a repeat must match: the same type, payload and (given) time.
    const digest = markerId === undefined
      ? ""
      : await sha256Hex(memberOrderedJson([type, stored, occurred ?? null]));
    const answer = await this.#serial(
      async (): Promise<{ event: RunEvent } | { repeat: number }> => {
        // A reload may have removed or lowered its requester's token while it waited its turn.
        const refusal = stillAdmitted?.() ?? null;
        if (refusal !== null) throw refusal.error;
        this.#requireReady();
        const open = this.#open;
        if (run.state !== "open" || !open || open.run !== run) {
          throw failedPrecondition(`Run is closed: ${runId}`);
        }
        const seen = markerId === undefined ? undefined : open.markerIds.get(markerId);
        if (seen !== undefined) {
          if (seen.digest !== digest) {
            throw failedPrecondition(
              `Run ${runId}: marker_id ${markerId} already names another marker ` +
                `(sequence ${seen.sequence}): a retry must repeat its type, payload and time`,
            );
          }
          return { repeat: seen.sequence };
        }
        if (open.closedEvent !== null) {
          throw failedPrecondition(
            `Run is closing: ${runId} (its run_closed event is written, its close record is not: ` +
              `retry the close)`,
          );
        }
        const now = this.#opts.clock.nowMs();
        const event = this.#event(
          runId,
          open.nextSequence,
          "annotation",
          type,
          occurred ?? now,
          this.#recordedAt(open, now),
          stored,
        );
        const line = JSON.stringify(event);
        const size = utf8Length(line);
        if (size > MAX_RECORD_BYTES) {
          throw invalidArgument(`marker exceeds ${MAX_RECORD_BYTES} bytes: shorten payload`);
        }
        if (open.bytes + size + 1 > this.#maxRunBytes) {
          throw failedPrecondition(
            `Run ${runId}: its event file reached runs.max_run_bytes (${this.#maxRunBytes} bytes): ` +
              `no more markers; close the run and open another`,
          );
        }
        open.nextSequence++;
        open.bytes += size + 1;
        try {
          // Not counted as lost by the writer (its gap line, its "lines were lost" WARN): the
          // client is answered 503 and may send it again.
          written(await open.writer.append(line, { sync: true, counted: false }));
        } catch (err) {
          open.bytes -= size + 1; // not in the file (a failed write or fsync is cut back)
          // A refused marker takes no sequence number (readers see no hole for it), unless an
          // event was queued behind it meanwhile with the next one: then its number stays a hole,
          // as that of any event whose write failed.
          if (open.nextSequence === event.sequence + 1) open.nextSequence--;
          throw this.#ioError("write marker", err);
        }
        this.#ioWritten();
        if (markerId !== undefined) {
          if (open.markerIds.size >= MARKER_IDS_KEPT) {
            open.markerIds.delete(open.markerIds.keys().next().value!);
          }
          open.markerIds.set(markerId, { sequence: event.sequence, digest });
        }
        this.#emit(event, run);
        return { event };
      },
    );
    if ("event" in answer) return answer;
    // A repeat: the marker recorded first, read back from the run's file (outside the queue).
    const { events } = await this.listEvents(runId, {
      after_sequence: answer.repeat - 1,
      limit: 1,
    });
    const first = events[0];
    if (first === undefined || first.sequence !== answer.repeat) {
      throw unavailable(
        `Run ${runId}: marker ${answer.repeat} (marker_id ${markerId}) not read back`,
      );
    }
    return { event: first };
  }

  /**
   * Journals mode changes, parameter changes, automation faults, alarm transitions and interlock
   * engages/releases into the open run. The listener only queues (bounded); returns the
   * unsubscribe function.
   */
  attach(bus: EventBus): () => void {
    this.#unsubscribe?.();
    const off = bus.subscribe(({ event }) => this.#onBusEvent(event));
    this.#unsubscribe = off;
    return () => {
      off();
      if (this.#unsubscribe === off) this.#unsubscribe = null;
    };
  }

  /**
   * Detaches from the bus, writes what is pending, fsyncs and closes files. The open run stays
   * open in the journal and is closed as `abandoned` at the next start.
   */
  shutdown(): Promise<void> {
    if (this.#state === "stopped") return Promise.resolve();
    // A second call while the first is under way waits for it and says nothing: its own step in
    // the serial chain would find "stopped" and read as a start that never succeeded.
    // One that failed (a close that threw) is tried again by the next call, as before.
    this.#stopping ??= this.#shutdownOnce().catch((err) => {
      this.#stopping = null;
      throw err;
    });
    return this.#stopping;
  }

  /** shutdown()'s one run (#stopping). */
  async #shutdownOnce(): Promise<void> {
    this.#stopStep({ kind: "ask" }); // a start under way ends at its next step (#tryStart)
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#cancelRetry();
    await this.#serial(async () => {
      this.#stopStep({ kind: "turn" });
      // A retry ahead of this in the queue may have failed and set another.
      this.#cancelRetry();
      const open = this.#open;
      if (open) {
        // Left open (closed as abandoned at the next start): with its count of events left out,
        // saved now whether or not it changed, so that the next start ends the run here, when
        // recording it stopped, not at its last event (a quiet run lived on until this stop).
        this.#stopSaving(open);
        this.#saveNotRecorded(open, true);
        // Ended on disk already (its run_closed written, its record not): of no run from now on.
        if (open.closedEvent === null) this.#leftOpenAtStop = open.run.run_id;
      }
      this.#open = null;
      // The count of safety events between runs as it is now, for the next start's first run.
      this.#stopSavingBetween();
      this.#saveBetweenRuns(true);
      if (this.#state === "ready") {
        // That save was the last: one noted from now on (an e-stop's reason arriving, a provider
        // lost as the stop's ladder runs) is said in a WARN of its own (#lostWhy), never saved
        // nor lost unsaid, and arms no timer (#betweenRunsChanged).
        this.#betweenRuns = null;
        this.#stopStep({ kind: "lastSave", lostWhy: "noted after the stop's last save" });
      }
      // Never available (its start failed, or still runs): its start goes no further (one INFO:
      // the stop was asked, no fault of the registry's, so not an ERROR, and said here once
      // whichever way the start ends), and no runs.jsonl is open to save the count in (WARN; one
      // noted after it, before "stopped" or after, is said likewise: #lostWhy).
      if (this.#state !== "ready") {
        const why = !this.#startCalled
          ? "run registry stopped before its start"
          : this.#state === "new"
          ? "run registry stopped while it started"
          : this.#unavailableReason ?? "unknown";
        if (this.#state === "new" && this.#startCalled) {
          // Its first try still under way, none failed (a quick stop at boot, a disk slow or
          // hung): nothing was or would be retried, no fault to hint at.
          this.#log.info("run registry stopped while its start was under way: not started");
        } else if (this.#startCalled) {
          this.#log.info(`run registry start not retried: stopped before it succeeded (${why})`);
        }
        this.#stopStep({ kind: "lastSave", lostWhy: why });
        // With the count a first start still under way took (its give-back then holds nothing):
        // one WARN with the total -- unless its rewrite is being renamed into place: then it may
        // be in runs.jsonl (the next start counts it), and the start says it only if not.
        if (!this.#takenRenaming) {
          this.#betweenRuns = mergeSafety(this.#betweenRuns, this.#takenBetween);
          this.#takenBetween = null;
        }
        this.#betweenRunsLost(why);
      }
      // Writes what is queued and fsyncs; a failure is logged by the writer.
      await open?.writer.close();
      await this.#journal?.close();
      this.#journal = null;
      // The writer a first start's rewrite replaced, still closing (a slow disk): closed before
      // the stop resolves (the data_dir lock is released after it).
      await this.#replacedClosing;
      this.#state = "stopped";
      this.#unavailableReason = "run registry stopped";
    });
  }

  // ---- internals ------------------------------------------------------------------------------

  #onBusEvent(e: RuntimeEvent): void {
    let category: RunEventCategory;
    let type: string;
    let payload: Record<string, unknown>;
    switch (e.kind) {
      case "mode_change":
        category = "mode_change";
        type = "";
        payload = { previous_mode: e.previous_mode, new_mode: e.new_mode };
        break;
      case "parameter_change":
        category = "parameter_change";
        type = e.parameter_name;
        payload = {
          parameter_name: e.parameter_name,
          old_value: e.old_value,
          new_value: e.new_value,
        };
        break;
      case "automation_fault":
        category = "automation_fault";
        type = e.locus;
        payload = { message: e.error };
        break;
      case "alarm":
        category = "alarm";
        type = e.transition;
        payload = {
          alarm_id: e.alarm_id,
          state: e.state,
          level: e.level,
          cause: e.cause,
          limit: e.limit,
          signal: e.signal,
          // A 64-bit integer beyond 2^53 is kept exact as its decimal digits (the journal is JSON).
          value: e.value === null ? null : jsonSafeValue(e.value),
          quality: e.quality,
          action: e.action,
          // A long message is cut with the event's other long strings (fitEvent).
          message: e.message,
          // A shelve says how long the alarm is hidden.
          shelved_until_epoch_ms: e.shelved_until_epoch_ms,
        };
        break;
      case "estop_change":
        // The latch and its release: an audit of a run shows when it was stopped, and when
        // the stop was cleared (a trigger while already in FAULT changes no mode; a clear never
        // does). A reason read after the latch follows as type `reason` (recordEstopReason).
        category = "estop";
        type = e.latched ? "trigger" : "clear";
        payload = { latched: e.latched, reason: e.reason, cause: e.cause };
        break;
      case "estop_verification":
        // What the stop achieved, read back: a review of the run shows whether it was verified.
        category = "estop";
        type = "verification";
        payload = {
          outcome: e.outcome,
          elapsed_ms: e.elapsed_ms,
          checks_total: e.checks_total,
          checks_verified: e.checks_verified,
          failed_signals: e.failed_signals,
        };
        break;
      case "hook_failure":
        category = "hook_failure";
        type = e.transition;
        payload = {
          transition: e.transition,
          phase: e.phase,
          hook: e.hook,
          device_handle: e.device_handle,
          function: e.function,
          error: e.error,
        };
        break;
      case "interlock":
        category = "interlock";
        type = e.blocking ? "engage" : "release";
        payload = {
          interlock_id: e.interlock_id,
          blocking: e.blocking,
          reason: e.reason,
          message: e.message,
        };
        break;
      default:
        return;
    }
    this.#queueEvent(category, type, e.timestamp_ms, payload);
  }

  /**
   * Records an actuating call decided while a run is open (the audit trail's entry: origin,
   * device, function, args, outcome, result, count of collapsed repeats) as a `call` event of
   * the open run; type is `device_handle function`. Queued like bus events (bounded).
   */
  recordCall(entry: RunCallEntry): void {
    this.#queueEvent("call", callType(entry), entry.first_time_epoch_ms, { ...entry });
  }

  /**
   * Records that a configuration reload replaced the behavior tree (`previous` -> `next`) as an
   * `automation_change` event of the open run, whose record keeps the version it opened with.
   * Queued like bus events (bounded); nothing when no run is open.
   */
  recordAutomationChange(previous: AutomationVersion | null, next: AutomationVersion | null): void {
    const now = this.#opts.clock.nowMs();
    this.#queueEvent("automation_change", "replaced", now, {
      previous_version: previous === null ? null : { ...previous },
      new_version: next === null ? null : { ...next },
    });
  }

  /**
   * An e-stop's reason still arriving when it latched (Estop.onReasonArriving: an HTTP body read
   * after the latch): once it arrives, non-empty, it is an `estop` event of type `reason`
   * (payload `reason`, `cause`) of the run its trigger was an event of, if that run is still
   * open; else (it latched between runs or in the window of an open that failed, or its run has
   * closed since) a safety event no run recorded, counted by the next run's run_opened. Holds
   * only the promise, which the HTTP layer's body read bounds. Dated no earlier than
   * `latchedAtMs`, its trigger's date (a step back of the wall clock, NTP, while the body arrived
   * must not put the reason before the stop it explains). One arriving once the stop made its last
   * save of the count is said in a WARN (#lostWhy).
   */
  recordEstopReason(
    reason: Promise<string | null>,
    cause: string,
    latchedAtMs: number | null = null,
  ): void {
    // The run open (its close under way included: then counted between runs, as its trigger).
    // Stopped (or once it is): said in a WARN of its own, as an event of the run left open at the
    // stop (#leftOpenAtStop) or else as one between runs (#lostWhy).
    const runId = this.#currentRunId();
    void reason.then((r) => {
      if (!r) return;
      const now = Math.max(this.#opts.clock.nowMs(), latchedAtMs ?? -Infinity);
      // Its run closing now: queued all the same, of no run then (counted between runs).
      if (runId !== null && this.#currentRunId() === runId) {
        this.#queueEvent("estop", "reason", now, { reason: r, cause });
      } else if (runId !== null && runId === this.#leftOpenAtStop) {
        // Its run was left open at the stop, whose last save is made: that run's, not recorded.
        // Said as the stop is then: its files still closing ("stopping") or closed ("stopped").
        const stop = this.#state === "stopped" ? "stopped" : "stopping";
        this.#log.warn(
          `run registry ${stop}: an e-stop reason of run ${runId} (left open at the stop) not ` +
            `recorded: noted after the stop's last save`,
        );
      } else {
        // No run records it (not even a run opened since: its trigger was none of that run's).
        this.#noteBetween("estop", "reason", now);
      }
    }, () => {});
  }

  /**
   * Id of the run whose events are recorded now: the open one, or the one whose open is being
   * written (it has started; if that open fails, no run has the id). What an actuating call's
   * write-ahead record names, so a crash before its outcome makes it that run's interrupted call.
   * Null once the open run's close has begun (its run_closed is being written, or is written and
   * its record is not): the close is a point, what is decided after it belongs to no run, as the
   * call's event does (#queueEvent), whether the process then crashes or not (if that close fails,
   * the run counts the call among its events_not_recorded).
   */
  eventRunId(): string | null {
    const open = this.#open;
    if (open !== null && (open.closing || open.closedEvent !== null)) return null;
    return this.#currentRunId();
  }

  /** The open run's id (closing or not), or that of the run whose open is being written. */
  #currentRunId(): string | null {
    if (this.#state !== "ready") return null;
    return this.#open?.run.run_id ?? (this.#whileOpening === null ? null : this.#openingId);
  }

  /**
   * Records an incident (history/: e-stop, FAULT entry, alarm raise, device loss) as an
   * `incident` event of the open run, type its trigger, linking its record by id. Queued like bus
   * events (bounded); nothing when no run is open.
   */
  recordIncident(incident: {
    readonly incident_id: string;
    readonly trigger: string;
    readonly cause: string;
    readonly at_epoch_ms: number;
    /** The triggers that joined it as it began (the e-stop's own FAULT entry); none absent. */
    readonly also?: readonly {
      readonly trigger: string;
      readonly cause: string;
      readonly at_epoch_ms: number;
    }[];
    /** Those that joined it as it began beyond the record's bound, not in `also`; 0 absent. */
    readonly triggers_not_listed?: number;
  }): void {
    this.#queueEvent("incident", incident.trigger, incident.at_epoch_ms, {
      incident_id: incident.incident_id,
      trigger: incident.trigger,
      cause: incident.cause,
      also: (incident.also ?? []).map((c) => ({
        trigger: c.trigger,
        cause: c.cause,
        at_epoch_ms: c.at_epoch_ms,
      })),
      triggers_not_listed: incident.triggers_not_listed ?? 0,
      link: `/v0/incidents/${encodeURIComponent(incident.incident_id)}`,
    });
  }

  /**
   * Records a trigger joining an incident already recorded (an e-stop within a second of an
   * alarm's incident) as an `incident_trigger` event of the open run, type the trigger, at its
   * own time: the run names every trigger of the incident. Queued as recordIncident.
   */
  recordIncidentTrigger(joined: {
    readonly incident_id: string;
    readonly trigger: string;
    readonly cause: string;
    readonly at_epoch_ms: number;
    readonly leads: boolean;
  }): void {
    this.#queueEvent("incident_trigger", joined.trigger, joined.at_epoch_ms, {
      incident_id: joined.incident_id,
      trigger: joined.trigger,
      cause: joined.cause,
      leads: joined.leads,
      link: `/v0/incidents/${encodeURIComponent(joined.incident_id)}`,
    });
  }

  /**
   * Queues an event of the open run (bounded: a full queue drops it, counted, and it takes no
   * sequence number). Written at once, fsync'd within BUS_EVENT_SYNC_DELAY_MS.
   */
  #queueEvent(
    category: RunEventCategory,
    type: string,
    occurred: number,
    payload: Record<string, unknown>,
  ): void {
    const open = this.#open;
    const safety = isSafetyEvent(category, payload);
    if (this.#state !== "ready") {
      // No run can be open (a start not done yet, or failed and waiting for its retry): between
      // runs, counted by the next run's run_opened; once stopped, said in a WARN (#lostWhy).
      if (safety) this.#noteBetween(category, type, occurred);
      return;
    }
    if (!open) {
      const opening = this.#whileOpening;
      if (opening === null) {
        // Between runs: no run records it, the next run's run_opened counts it.
        if (safety) this.#noteBetween(category, type, occurred);
        return;
      }
      if (opening.length >= MAX_PENDING_BUS_EVENTS + (safety ? RUN_SAFETY_RESERVE_EVENTS : 0)) {
        this.#lostWhileOpening++;
        if (safety) {
          this.#lostSafetyWhileOpening = noteSafety(
            this.#lostSafetyWhileOpening,
            category,
            type,
            occurred,
          );
        }
        this.#droppedBusEvent(
          `${MAX_PENDING_BUS_EVENTS} events came while a run's open was written`,
        );
        return;
      }
      opening.push({ category, type, occurred, payload });
      return;
    }
    if (open.closedEvent !== null && !open.closing) {
      this.#droppedBusEvent(`the open run's run_closed is written, its close record is not`);
      // The run has ended on disk: of no run, as between runs.
      if (safety) this.#noteBetween(category, type, occurred);
      return;
    }
    if (open.closing) {
      open.whileClosing++;
      if (safety) {
        open.safetyWhileClosing = noteSafety(open.safetyWhileClosing, category, type, occurred);
      }
      return;
    }
    if (
      category === "call" && payload.outcome === "in_flight" && typeof payload.intent === "string"
    ) {
      // Its ending in this run (recorded, or counted below): remembered for a close that fails.
      // A repeat (a close that failed before listed it too) forgets nothing; past the bound the
      // oldest is forgotten, counted (the in_flight record and a WARN say how many).
      if (!open.listedInFlight.has(payload.intent)) {
        if (open.listedInFlight.size >= RUN_IN_FLIGHT_IDS_KEPT) {
          open.listedInFlight.delete(open.listedInFlight.values().next().value!);
          open.inFlightForgotten++;
        }
        open.listedInFlight.add(payload.intent);
        open.listedInFlightChanges++;
      }
    }
    // The last place is the serial operation's (a marker, the run_closed); the reserve before
    // it the safety events'.
    if (!open.writer.hasRoom(safety ? 1 : RUN_SAFETY_RESERVE_EVENTS + 1)) {
      this.#droppedBusEvent(`${MAX_PENDING_BUS_EVENTS} events waiting for the disk`);
      this.#countNotRecorded(open);
      return;
    }
    const recorded = this.#recordedAt(open, this.#opts.clock.nowMs());
    const runId = open.run.run_id;
    // Long strings cut to fit a record: a line the reader cannot read would be lost in silence.
    const { line } = fitEvent(
      this.#event(runId, open.nextSequence, category, type, occurred, recorded, payload),
      MAX_RECORD_BYTES,
    );
    const size = utf8Length(line) + 1;
    const bound = this.#maxRunBytes + (safety ? RUN_SAFETY_RESERVE_BYTES : 0);
    if (open.bytes + size > bound) {
      if (safety && !open.reserveUsedUp) {
        open.reserveUsedUp = true;
        this.#log.warn(
          `run ${runId}: its event file used up its safety reserve (runs.max_run_bytes + ` +
            `${RUN_SAFETY_RESERVE_BYTES} bytes): e-stop, FAULT and reconfiguration events are ` +
            `counted from now on too, not recorded`,
        );
      }
      if (!open.boundReached) {
        open.boundReached = true;
        this.#log.warn(
          `run ${runId}: its event file reached runs.max_run_bytes (${this.#maxRunBytes} bytes): ` +
            `events are counted from now on, not recorded (the run_closed event says how many), ` +
            `but e-stop, FAULT and reconfiguration events (within ${RUN_SAFETY_RESERVE_BYTES} bytes more)`,
        );
      }
      this.#countNotRecorded(open);
      return;
    }
    open.nextSequence++;
    open.bytes += size;
    void open.writer.append(line).then((r) => {
      if (r.ok) {
        this.#busDrops.ok();
        return;
      }
      this.#droppedBusEvent(r.reason);
      // Not in the file (a failed write is cut back; unless the cut failed too, see journal/):
      // its bytes do not count toward runs.max_run_bytes. Counted by the run (unless its
      // run_closed, whose count was taken when its close began, is written already).
      open.bytes -= size;
      this.#countNotRecorded(open);
    });
  }

  /**
   * Calls of the open run counted as events left out, in its run_closed's events_not_recorded:
   * those in flight as it closes that the audit trail cannot list (past AUDIT_MAX_UNSETTLED, so no
   * `in_flight` event for them; called by settleCalls, before the close takes its count), and
   * those decided while a close of it was under way that failed (closeFailed), whose outcome or
   * `in_flight` event is none of its events.
   */
  countCallsNotListed(count: number): void {
    const open = this.#open;
    if (this.#state !== "ready" || open === null || open.closing || count <= 0) return;
    this.#countNotRecorded(open, count);
  }

  /**
   * `n` more events of the open run left out of its event file (past the bound, or lost on their
   * way): its run_closed says how many; the count is saved at once the first time, then at most
   * every RUN_NOT_RECORDED_SAVE_MS.
   */
  #countNotRecorded(open: OpenRun, n = 1): void {
    const before = open.notRecorded;
    open.notRecorded += n;
    open.lastLossAt = this.#countAt(open);
    if (before === 0) {
      this.#saveNotRecorded(open);
    } else if (open.saveTimer === null && open === this.#open && !open.closing) {
      open.saveTimer = this.#opts.clock.setTimer(() => {
        open.saveTimer = null;
        this.#saveNotRecorded(open);
      }, open.saveEveryMs);
    }
  }

  /**
   * Saves the open run's count of events left out past the bound to runs.jsonl (not awaited, not
   * fsync'd at once: within BUS_EVENT_SYNC_DELAY_MS), so a start after a crash closes the run with
   * it. Nothing once its close began, or when the count is saved already (but `atShutdown`: the
   * record, marked `shutdown`, then dates the run's end); a full queue or a failed write leaves
   * it to the next save -- but the stop's, the last, which says it (#notRecordedNotSavedAtStop).
   */
  #saveNotRecorded(open: OpenRun, atShutdown = false): void {
    const journal = this.#journal;
    if (
      open !== this.#open || open.closing || open.closedEvent !== null || journal === null ||
      (open.notRecorded === open.savedNotRecorded && !atShutdown)
    ) {
      return;
    }
    if (!journal.hasRoom()) {
      if (atShutdown) {
        this.#notRecordedNotSavedAtStop(open, this.#queueFullWhy());
      }
      return;
    }
    const count = open.notRecorded;
    const previous = open.savedNotRecorded;
    const previousAt = open.savedNotRecordedAt;
    const at = this.#countAt(open);
    open.savedNotRecorded = count;
    open.savedNotRecordedAt = at;
    // A line for good while the rewrite that would drop it waits for closes: the next one later.
    open.saveEveryMs = nextSaveEveryMs(
      open.saveEveryMs,
      this.#savesBackOff(),
      RUN_NOT_RECORDED_SAVE_MS,
      RUN_NOT_RECORDED_SAVE_MAX_MS,
    );
    void this.#appendSave(
      journal,
      JSON.stringify({
        v: SCHEMA_VERSION,
        op: "not_recorded",
        run_id: open.run.run_id,
        count,
        at_epoch_ms: at,
        ...(atShutdown ? { shutdown: true } : {}),
      }),
    ).then((r) => {
      if (r.ok) {
        open.saveFailures.ok();
        return;
      }
      if (open.savedNotRecorded === count) {
        open.savedNotRecorded = previous;
        open.savedNotRecordedAt = previousAt;
      }
      if (this.#shuttingDown) {
        // Stopped (or stopping): no save follows, so no "tried again" -- said once, at WARN.
        if (atShutdown) this.#notRecordedNotSavedAtStop(open, r.reason);
        return;
      }
      // One WARN per spell of failures.
      open.saveFailures.fail(
        `run ${open.run.run_id}: count of events not recorded not saved: ${r.reason}; ` +
          `tried again every ${RUN_NOT_RECORDED_SAVE_MS} ms`,
      );
      // Tried again (RUN_NOT_RECORDED_SAVE_MS), not only at the next event left out or shutdown:
      // a crash once the disk works again must not lose it.
      if (open === this.#open && !this.#shuttingDown && !open.closing && open.saveTimer === null) {
        open.saveTimer = this.#opts.clock.setTimer(() => {
          open.saveTimer = null;
          this.#saveNotRecorded(open);
        }, RUN_NOT_RECORDED_SAVE_MS);
      }
    });
  }

  /**
   * The stop's save of the open run's count of events not recorded (its `shutdown` record, which
   * dates the run's end) did not reach runs.jsonl and none follows: one WARN. The next start
   * closes the run as abandoned with the count and end of its last save that was written.
   */
  #notRecordedNotSavedAtStop(open: OpenRun, why: string): void {
    this.#log.warn(
      `run ${open.run.run_id}: count of events not recorded not saved at the stop ` +
        `(${open.notRecorded}; the next start ends the run at an earlier save or its last ` +
        `event): ${why}`,
    );
  }

  /**
   * Saves the write-ahead ids of the open run's `in_flight` call events to runs.jsonl (an
   * `in_flight` record, the last one per run wins; fsync'd) when a close of it failed and they
   * changed since they were saved. The ids are taken at once; the run's event file, which holds
   * their `in_flight` events, is fsync'd first, then the record is written: a power loss never
   * leaves a record naming calls whose events it took. The promise settles when the record is
   * fsync'd, failed, or after RUN_IN_FLIGHT_SAVE_TIMEOUT_MS (never rejects). A full queue (one
   * WARN naming the run and how many ids) or a failed fsync or write leaves it to the next
   * failed close or rewrite.
   */
  #saveInFlight(open: OpenRun): Promise<void> {
    const journal = this.#journal;
    const ids = open.listedInFlight;
    if (
      open !== this.#open || journal === null ||
      open.listedInFlightChanges === open.savedInFlight
    ) {
      return Promise.resolve();
    }
    if (!journal.hasRoom()) {
      this.#log.warn(
        `run ${open.run.run_id}: its ${ids.size} calls listed in flight not saved: ` +
          `${this.#runsFile} has ${MAX_PENDING_RUN_RECORDS} records waiting for the disk (a ` +
          `start after a crash may record them again as interrupted)`,
      );
      return Promise.resolve();
    }
    const changes = open.listedInFlightChanges;
    // What runs.jsonl holds already: kept as saved when this save fails (a rewrite copies it).
    const previous = open.savedInFlight;
    open.savedInFlight = changes;
    if (open.inFlightForgotten > open.inFlightForgottenWarned) {
      open.inFlightForgottenWarned = open.inFlightForgotten;
      this.#log.warn(
        `run ${open.run.run_id}: ${open.inFlightForgotten} calls listed in flight forgotten ` +
          `(past RUN_IN_FLIGHT_IDS_KEPT ${RUN_IN_FLIGHT_IDS_KEPT}, oldest first): a start after ` +
          `a crash may record them again as interrupted`,
      );
    }
    const line = inFlightRecord(open.run.run_id, ids, open.inFlightForgotten);
    // Written, perhaps not fsync'd (the failed close dropped its writer's file, and with it the
    // pending fsync): on disk before the record that names them.
    const saved = this.#syncFile(this.#eventFile(open.run.run_id)).then(
      (): Promise<JournalAppendResult> => {
        // A newer save (a later failed close) writes the newer ids.
        if (open.savedInFlight !== changes) return Promise.resolve({ ok: true });
        const now = this.#journal;
        if (now === null) return Promise.resolve({ ok: false, reason: "runs.jsonl is closed" });
        return this.#appendSave(now, line, { sync: true });
      },
      (err): JournalAppendResult => ({
        ok: false,
        reason: `its event file not fsync'd: ${errorMessage(err)}`,
      }),
    ).then((r) => {
      if (r.ok) return;
      if (open.savedInFlight === changes) open.savedInFlight = previous;
      this.#log.warn(`run ${open.run.run_id}: its calls listed in flight not saved: ${r.reason}`);
    });
    const late = Symbol("late");
    return raceTimeout(this.#opts.clock, saved, RUN_IN_FLIGHT_SAVE_TIMEOUT_MS, late).then((r) => {
      if (r !== late) return;
      this.#log.warn(
        `run ${open.run.run_id}: its calls listed in flight not on disk after ` +
          `${RUN_IN_FLIGHT_SAVE_TIMEOUT_MS} ms; the failed close answers without it`,
      );
    });
  }

  /** One more safety event no run recorded (counted by the next run_opened), saved. */
  #noteBetween(category: RunEventCategory, type: string, occurred: number): void {
    this.#betweenRuns = noteSafety(this.#betweenRuns, category, type, occurred);
    this.#betweenRunsChanged();
  }

  #mergeBetween(more: SafetyBetweenRuns | null): void {
    if (more === null) return;
    this.#betweenRuns = mergeSafety(this.#betweenRuns, more);
    this.#betweenRunsChanged();
  }

  /**
   * The count of safety events between runs changed: saved at the end of this step, unless a save
   * was made less than #betweenSaveEveryMs ago (then when that time is up). Before the start is
   * done, its end saves it.
   */
  #betweenRunsChanged(): void {
    // Stopping, never available: no runs.jsonl to save it in, said as the shutdown's WARN was.
    if (this.#lostWhy !== null) {
      this.#betweenRunsLost(this.#lostWhy);
      return;
    }
    if (this.#state !== "ready" || this.#betweenTimer !== null || this.#betweenSoon) return;
    // After the events of the same step (an e-stop's trigger and its FAULT entry): one record.
    this.#betweenSoon = true;
    queueMicrotask(() => {
      this.#betweenSoon = false;
      // A stop begun since made the last save: no timer is armed after it (it would hold the
      // process, or write after runs.jsonl is closed).
      if (
        this.#state !== "ready" || this.#shuttingDown || this.#betweenTimer !== null ||
        this.#betweenRuns === null
      ) {
        return;
      }
      this.#saveBetweenRuns();
      this.#armBetweenTimer();
    });
  }

  /**
   * The next save of #betweenRuns, #betweenSaveEveryMs from the last: a save it makes arms it
   * again, so a change that comes after waits for that time too (not saved at once).
   */
  #armBetweenTimer(): void {
    if (this.#shuttingDown) return; // the stop's save is the last
    this.#betweenTimer = this.#opts.clock.setTimer(() => {
      this.#betweenTimer = null;
      if (this.#saveBetweenRuns() && this.#state === "ready" && !this.#shuttingDown) {
        this.#armBetweenTimer();
      }
    }, this.#betweenSaveEveryMs);
  }

  #stopSavingBetween(): void {
    if (this.#betweenTimer === null) return;
    this.#opts.clock.clearTimer(this.#betweenTimer);
    this.#betweenTimer = null;
  }

  /**
   * Appends the count of safety events between runs to runs.jsonl (a `between_runs` record; not
   * awaited, fsync'd within BUS_EVENT_SYNC_DELAY_MS) when it is not saved already. A full queue or
   * a failed write leaves it to the next save. True when a record was appended. `atShutdown`: the
   * last save, none after it: a full queue or a failed write is said (#betweenNotSavedAtStop).
   */
  #saveBetweenRuns(atShutdown = false): boolean {
    const journal = this.#journal;
    const between = this.#betweenRuns;
    if (
      this.#state !== "ready" || journal === null || between === null ||
      // A run's open is being written: its record (the count's reset) may be in runs.jsonl
      // already, and a count after it would be counted again by a start. If the open fails, the
      // count is saved then.
      this.#whileOpening !== null
    ) {
      return false;
    }
    const line = betweenRunsRecord(between);
    if (line === this.#betweenSaved) return false;
    if (!journal.hasRoom()) {
      if (atShutdown) {
        this.#betweenNotSavedAtStop(between, this.#queueFullWhy());
      }
      return false;
    }
    const previous = this.#betweenSaved;
    this.#betweenSaved = line;
    this.#betweenSaveEveryMs = nextSaveEveryMs(
      this.#betweenSaveEveryMs,
      this.#savesBackOff(),
      BETWEEN_RUNS_SAVE_MS,
      BETWEEN_RUNS_SAVE_MAX_MS,
    );
    void this.#appendSave(journal, line).then((r) => {
      if (r.ok) {
        this.#betweenSaveFailures.ok();
        return;
      }
      // The last save tried (a later one, queued meanwhile, holds a larger count and says itself).
      const last = this.#betweenSaved === line;
      if (last) this.#betweenSaved = previous;
      if (this.#shuttingDown) {
        // Stopped (or stopping): no save follows, so no "tried again" -- said once, at WARN.
        if (last) this.#betweenNotSavedAtStop(between, r.reason);
        return;
      }
      // One WARN per spell of failures.
      this.#betweenSaveFailures.fail(
        `count of safety events between runs not saved: ${r.reason}; tried again every ` +
          `${BETWEEN_RUNS_SAVE_MS} ms`,
      );
      // Tried again (BETWEEN_RUNS_SAVE_MS), not only at the next change or shutdown: a crash
      // once the disk works again must not lose it. (A run opened since takes the count.)
      if (
        this.#state === "ready" && !this.#shuttingDown && this.#betweenTimer === null &&
        this.#betweenRuns !== null
      ) {
        this.#betweenTimer = this.#opts.clock.setTimer(() => {
          this.#betweenTimer = null;
          this.#saveBetweenRuns();
        }, BETWEEN_RUNS_SAVE_MS);
      }
    });
    return true;
  }

  /**
   * The stop's save of the count of safety events between runs did not reach runs.jsonl (a full
   * queue, a failed write) and none follows: one WARN with the count and `why`. The next start
   * counts those of the last save that was written only. Said as the stop is then: its files
   * still closing ("stopping": the stop's own save, found no room or failed while it closes) or
   * closed ("stopped").
   */
  #betweenNotSavedAtStop(between: SafetyBetweenRuns, why: string): void {
    const stop = this.#state === "stopped" ? "stopped" : "stopping";
    this.#log.warn(
      `run registry ${stop}: count of safety events between runs not saved (${between.count}, ` +
        `${between.estopTriggers} e-stop triggers; the next start counts those of an earlier ` +
        `save only): ${why}`,
    );
  }

  /** Why the stop's last save could not be queued: runs.jsonl's queue is full (a stalled disk). */
  #queueFullWhy(): string {
    return `${this.#runsFile} has ${MAX_PENDING_RUN_RECORDS} records waiting for the disk`;
  }

  /**
   * runs.jsonl holds twice the lines its kept runs need (and RUNS_COMPACT_SLACK_LINES) after a
   * count was saved (`not_recorded` of a run left open for long, `between_runs` while no run is
   * opened): rewritten in turn with the serial operations, as after a close, so saved counts
   * alone never grow it for ever. After a failed rewrite it is not tried here until closes
   * (#retain counts them down, #compactWait) have let it: a stream of saves must not retry it at
   * every save.
   */
  #compactIfLong(): void {
    const long = () => this.#journalLong();
    if (this.#compactQueued || !long()) return;
    this.#compactQueued = true;
    this.#serial(async () => {
      this.#compactQueued = false;
      if (this.#state === "ready" && long() && this.#compactWait <= 0) await this.#compact();
    }).catch((err) => this.#log.warn(`${this.#runsFile} not rewritten: ${errorMessage(err)}`));
  }

  /**
   * Appends a saved record (a count, a failed close's in_flight ids) to runs.jsonl, not awaited by
   * its caller. It is a line of the file (#journalLines, the measure of #compactIfLong) from the
   * time it is queued until its write fails (the writer cuts a failed write back: it adds none),
   * unless runs.jsonl was counted anew since (a rewrite, which does not hold it). Not counted as
   * lost by the writer: each save's failure is said by the registry (a count's spell WARN and its
   * retry, or the stop's WARN; the in_flight ids' WARN), and the writer's own line for the same
   * failure ("written again: N lines were lost before" once a later record is written -- the count
   * retried is not lost --, or its ERROR "lines lost" at the stop's close) was a second line.
   */
  #appendSave(
    journal: JournalWriter,
    line: string,
    options?: JournalAppendOptions,
  ): Promise<JournalAppendResult> {
    this.#journalLines++;
    const counted = this.#journalCount;
    const written = journal.append(line, { ...options, counted: false }).then((r) => {
      if (!r.ok && counted === this.#journalCount) this.#journalLines--;
      return r;
    });
    this.#compactIfLong();
    return written;
  }

  /** runs.jsonl holds twice the lines its kept runs need, and RUNS_COMPACT_SLACK_LINES. */
  #journalLong(): boolean {
    return this.#journalLines > 4 * this.#runs.size + RUNS_COMPACT_SLACK_LINES;
  }

  /**
   * Saves of counts back off (nextSaveEveryMs): runs.jsonl is long and its rewrite, which would
   * drop their lines, failed and waits for closes, so each save is a line for good.
   */
  #savesBackOff(): boolean {
    return this.#compactWait > 0 && this.#journalLong();
  }

  #stopSaving(open: OpenRun): void {
    if (open.saveTimer === null) return;
    this.#opts.clock.clearTimer(open.saveTimer);
    open.saveTimer = null;
  }

  #droppedBusEvent(reason: string): void {
    this.#droppedBusEvents++;
    // Once per spell (until an event is written again), not once per process: a disk that fills
    // again days later is said again, with its own reason.
    this.#busDrops.fail(`run journal: bus events are being dropped (${reason})`);
  }

  /** A closed run's event file size: as its close record gave it, else from the disk. */
  async #closedFileBytes(runId: string): Promise<number> {
    const recorded = this.#recordedBytes.get(runId);
    this.#recordedBytes.delete(runId);
    return recorded ?? await this.#opts.files.fileSize(this.#eventFile(runId));
  }

  /**
   * Counts a closed run's event file toward retention (a run closes at most once; its record is
   * never written to again).
   */
  #noteClosed(runId: string, bytes: number): void {
    this.#closedBytes.set(runId, bytes);
    this.#closedTotal += bytes;
  }

  /** Counts a run closed in this process toward retention and prunes; never throws. */
  async #retain(runId: string): Promise<void> {
    try {
      this.#noteClosed(runId, await this.#closedFileBytes(runId));
      await this.#prune();
      if (
        this.#journalLines > 4 * this.#runs.size + RUNS_COMPACT_SLACK_LINES &&
        this.#compactWait-- <= 0
      ) {
        await this.#compact();
      }
    } catch (err) {
      this.#log.warn(`runs: retention not applied after ${runId} closed: ${errorMessage(err)}`);
    }
  }

  /**
   * Removes the oldest closed runs (record and event file) while more than maxRuns are kept or
   * their files pass maxTotalBytes together, never the most recently closed one. Returns how many
   * went. A file that cannot be removed is logged; its run is forgotten all the same. `goesOn`:
   * asked before each removal (a start's prune, ended by a shutdown meanwhile: #startGoesOn);
   * throwing removes no further file.
   */
  async #prune(goesOn: () => void = () => {}): Promise<number> {
    const maxRuns = this.#opts.maxRuns ?? RUNS_KEPT_DEFAULT;
    const maxBytes = this.#opts.maxTotalBytes ?? RUNS_TOTAL_BYTES_DEFAULT;
    // The oldest closed runs first (opening order), until what is left fits: chosen in one pass
    // and taken out of the order in one more (a start may remove many at once).
    const gone: string[] = [];
    let kept = this.#closedBytes.size;
    let total = this.#closedTotal;
    for (const id of this.#order) {
      if (kept <= 1 || (kept <= maxRuns && total <= maxBytes)) break;
      const bytes = this.#closedBytes.get(id);
      if (bytes === undefined) continue; // the open run
      gone.push(id);
      kept--;
      total -= bytes;
    }
    if (gone.length === 0) return 0;
    const going = new Set(gone);
    let w = 0;
    for (const id of this.#order) if (!going.has(id)) this.#order[w++] = id;
    this.#order.length = w;
    for (const id of gone) {
      this.#runs.delete(id);
      this.#closedBytes.delete(id);
      this.#warnedCorruptRuns.delete(id);
    }
    this.#closedTotal = total;
    for (const id of gone) {
      // Removed one by one while the disk may hang, maybe past a shutdown: none after it.
      goesOn();
      await this.#opts.files.remove(this.#eventFile(id)).catch((err) =>
        this.#log.warn(`run ${id}: event file not removed: ${errorMessage(err)}`)
      );
    }
    this.#log.info(
      `runs: ${gone.length} oldest closed run${gone.length === 1 ? "" : "s"} removed ` +
        `(runs.max_runs ${maxRuns}, runs.max_total_bytes ${maxBytes})`,
    );
    return gone.length;
  }

  /**
   * Rewrites runs.jsonl with the records of the kept runs only (written beside it, fsync'd, then
   * renamed over it), and has the journal append to the new file from then on (the old writer's
   * descriptor still names the replaced file: a record appended through it would be lost). A
   * failure leaves the old file, which the next start replays and prunes again. Runs inside the
   * serial chain (or in start), so no record is appended meanwhile. `goesOn`: asked before each
   * write (a start's rewrite, ended by a shutdown meanwhile: #startGoesOn); throwing rejects, and
   * runs.jsonl is not replaced. `renaming`: told when the rename goes (runs.jsonl may be replaced
   * from then on, a shutdown meanwhile or not: #takenRenaming). Asked again once the rename
   * landed: throwing then resolves true (the file is replaced) with no writer opened on the new
   * file, so none outlives a shutdown that came meanwhile (it closes the one it finds).
   */
  async #compact(
    between: SafetyBetweenRuns | null = this.#betweenRuns,
    goesOn: () => void = () => {},
    renaming: () => void = () => {},
  ): Promise<boolean> {
    // The counts the new file holds, as gathered (a save while it is written goes to the old file).
    // Set by the writer below: declared `as`, so that the compiler does not take them for null.
    let betweenWritten = null as string | null;
    let notRecordedWritten = null as { open: OpenRun; count: number; at: number } | null;
    try {
      let lines = 0;
      await replaceWhole(
        this.#opts.files,
        this.#runsFile,
        async (append) => {
          let chunk = "";
          const add = async (line: string) => {
            chunk += `${line}\n`;
            lines++;
            if (chunk.length >= RUNS_COMPACT_CHUNK_CHARS) {
              await append(chunk);
              chunk = "";
            }
          };
          for (const id of this.#order) {
            const run = this.#runs.get(id)!;
            const opened = {
              ...run,
              state: "open",
              close_reason: null,
              ended_at_epoch_ms: null,
            };
            await add(JSON.stringify({ v: SCHEMA_VERSION, op: "open", run: opened }));
            const open = this.#open?.run === run ? this.#open : null;
            if (open !== null && open.notRecorded > 0) {
              // Dated as the count it copies (its save, else its last loss), not as the rewrite: a
              // start after a crash takes it for the run's last known activity (lastActivity).
              const at = open.notRecorded === open.savedNotRecorded
                ? open.savedNotRecordedAt
                : open.lastLossAt;
              notRecordedWritten = { open, count: open.notRecorded, at };
              await add(JSON.stringify({
                v: SCHEMA_VERSION,
                op: "not_recorded",
                run_id: id,
                count: open.notRecorded,
                at_epoch_ms: at,
              }));
            }
            if (open !== null && open.savedInFlight > 0) {
              // Every id listed: a superset of those saved (whose events #saveInFlight fsync'd)
              // when a later save failed; their `in_flight` events on disk first, then, and a
              // failed fsync fails the rewrite (the old file is kept).
              if (open.listedInFlightChanges !== open.savedInFlight) {
                await this.#syncFile(this.#eventFile(id));
              }
              await add(inFlightRecord(id, open.listedInFlight, open.inFlightForgotten));
            }
            if (run.state === "closed") {
              await add(JSON.stringify({
                v: SCHEMA_VERSION,
                op: "close",
                run_id: id,
                close_reason: run.close_reason,
                ended_at_epoch_ms: run.ended_at_epoch_ms,
                event_bytes: this.#closedBytes.get(id),
              }));
            }
          }
          // After every open: the safety events no run recorded since the last one opened.
          if (between !== null) {
            betweenWritten = betweenRunsRecord(between);
            await add(betweenWritten);
          }
          if (chunk !== "") await append(chunk);
        },
        { log: this.#log, goesOn, renaming },
      );
      this.#journalLines = lines;
      this.#journalCount++;
      this.#compactWait = 0;
      this.#compactBackoff = RUNS_COMPACT_RETRY_CLOSES;
    } catch (err) {
      goesOn(); // stopped meanwhile: the start ends here, nothing said
      this.#compactWait = this.#compactBackoff;
      this.#compactBackoff = Math.min(2 * this.#compactBackoff, RUNS_COMPACT_RETRY_MAX_CLOSES);
      this.#log.warn(
        `${this.#runsFile} not rewritten: ${errorMessage(err)}; tried again after ` +
          `${this.#compactWait} closes`,
      );
      return false;
    }
    const replaced = this.#journal;
    if (replaced === null) return true;
    try {
      goesOn();
    } catch {
      // A start stopped while the rename landed: the file is replaced (its counts are in it), and
      // no writer is opened on it -- nothing is appended (the registry never became ready), and
      // one opened now would outlive the stop, whose close (under way, maybe) is of `replaced`.
      return true;
    }
    const journal = this.#runsWriter();
    this.#journal = journal;
    // A shutdown meanwhile (a start's rewrite: not in the serial chain) closes `journal` and waits
    // for this close too: it does not resolve with a handle to runs.jsonl still closing.
    const closing = replaced.close();
    this.#replacedClosing = closing;
    try {
      await closing;
    } finally {
      if (this.#replacedClosing === closing) this.#replacedClosing = null;
    }
    // Opened now to report a problem early; one that fails opens at the next append instead.
    await journal.open({ report: false }).catch((err) =>
      this.#log.warn(`${this.#runsFile} not reopened after its rewrite: ${errorMessage(err)}`)
    );
    // The new file holds the counts as they were gathered; one saved to the old file meanwhile (a
    // save is not in the serial chain, and `between` may have grown in place) is saved again.
    this.#betweenSaved = betweenWritten;
    this.#saveBetweenRuns();
    const open = this.#open;
    if (open !== null) {
      const held = notRecordedWritten?.open === open ? notRecordedWritten : null;
      open.savedNotRecorded = held?.count ?? 0;
      open.savedNotRecordedAt = held?.at ?? open.savedNotRecordedAt;
      this.#saveNotRecorded(open);
    }
    return true;
  }

  async #replay(): Promise<void> {
    const corrupt: string[] = [];
    let corruptCount = 0;
    let lineNo = 0;
    for await (const line of this.#opts.files.readLines(this.#runsFile, MAX_LINE_BYTES)) {
      lineNo++;
      if (line.trim() === "") continue;
      let problem: string | null;
      try {
        problem = this.#applyJournalLine(line);
      } catch (err) {
        // Whatever a record does to the code that applies it, replay goes on without it.
        problem = `cannot be applied: ${errorMessage(err)}`;
      }
      if (problem !== null && ++corruptCount <= RUNS_CORRUPT_LINES_NAMED) {
        corrupt.push(`${this.#runsFile}:${lineNo}`);
        this.#log.warn(
          `${this.#runsFile}:${lineNo}: corrupt run journal line skipped (${problem})`,
        );
      }
    }
    if (corruptCount > RUNS_CORRUPT_LINES_NAMED) {
      this.#log.warn(
        `${this.#runsFile}: ${corruptCount - RUNS_CORRUPT_LINES_NAMED} more corrupt run journal ` +
          `lines skipped (${corruptCount} in all; the first ${RUNS_CORRUPT_LINES_NAMED} named)`,
      );
    }
    this.#journalLines = lineNo;
    this.#journalCount++;
    this.#report = {
      corruptLines: corrupt,
      corruptLineCount: corruptCount,
      abandonedRunIds: [],
      orphanedEventFiles: [],
    };
  }

  /** Applies one journal line; returns why it was rejected, or null. */
  #applyJournalLine(line: string): string | null {
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      return "not JSON";
    }
    if (!isObject(rec)) return "not an object";
    if (exceedsJsonDepth(rec, MAX_STORED_JSON_DEPTH)) {
      return `nested deeper than ${MAX_STORED_JSON_DEPTH} levels`;
    }
    if (rec.op === "open") {
      const run = parseRun(rec.run);
      if (!run) return "open record without a valid run";
      if (this.#runs.has(run.run_id)) return `duplicate open of ${run.run_id}`;
      this.#runs.set(run.run_id, run);
      this.#order.push(run.run_id);
      this.#replayedBetween = null; // in its run_opened
      return null;
    }
    if (rec.op === "between_runs") {
      const between = parseBetweenRuns(rec);
      if (between === null) return "between_runs record without counts and times";
      this.#replayedBetween = between;
      return null;
    }
    if (rec.op === "close") {
      const run = typeof rec.run_id === "string" ? this.#runs.get(rec.run_id) : undefined;
      if (!run) return "close record for an unknown run";
      if (!(CLOSE_REASONS as readonly unknown[]).includes(rec.close_reason)) {
        return "close record with an unknown reason";
      }
      if (typeof rec.ended_at_epoch_ms !== "number") return "close record without ended_at";
      run.state = "closed";
      run.close_reason = rec.close_reason as CloseReason;
      run.ended_at_epoch_ms = rec.ended_at_epoch_ms;
      const bytes = rec.event_bytes;
      if (typeof bytes === "number" && Number.isSafeInteger(bytes) && bytes >= 0) {
        this.#recordedBytes.set(run.run_id, bytes);
      }
      return null;
    }
    if (rec.op === "in_flight") {
      const run = typeof rec.run_id === "string" ? this.#runs.get(rec.run_id) : undefined;
      if (!run) return "in_flight record for an unknown run";
      const ids = rec.intents;
      if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string")) {
        return "in_flight record without its write-ahead ids";
      }
      if (run.state === "open") this.#savedInFlight.set(run.run_id, new Set(ids));
      return null;
    }
    if (rec.op === "not_recorded") {
      const run = typeof rec.run_id === "string" ? this.#runs.get(rec.run_id) : undefined;
      if (!run) return "not_recorded record for an unknown run";
      const { count, at_epoch_ms: at } = rec;
      if (
        typeof count !== "number" || !Number.isSafeInteger(count) || count < 0 ||
        typeof at !== "number" || !Number.isSafeInteger(at)
      ) {
        return "not_recorded record without a count and time";
      }
      // Of a run still open (its close, written after, counted what it left out itself).
      if (run.state === "open") {
        this.#savedNotRecorded.set(run.run_id, { count, at, shutdown: rec.shutdown === true });
      }
      return null;
    }
    return "unknown op";
  }

  /**
   * Writes run_closed + the close record (both fsync'd), then updates memory. A run_closed already
   * in the event file (written by a close whose record failed, in this process or the one before)
   * is not written again: the record takes its reason and time. `interrupted`: a run found open
   * at start, the calls in flight when its process ended, written before its run_closed (not when
   * it has one). Returns the reason recorded. `goesOn`: asked before each write (a start's close
   * of a run found open, ended by a shutdown meanwhile: #startGoesOn); throwing writes nothing.
   */
  async #closeRun(
    run: Run,
    reason: CloseReason,
    now: number,
    interruptedCalls: readonly InterruptedCall[] = [],
    goesOn: () => void = () => {},
  ): Promise<CloseReason> {
    const open = this.#open?.run === run ? this.#open : null;
    if (now < run.started_at_epoch_ms) {
      // Never an end before the start (the wall clock stepped back since the open, or a previous
      // process's clock was ahead of this one's): the start plus what the monotonic clock counted
      // since (a run of this process), else the start itself.
      const elapsed = open
        ? Math.max(0, Math.round(this.#opts.clock.monoMs() - open.startedMono))
        : 0;
      now = run.started_at_epoch_ms + elapsed;
    }
    // A run found open at start-up: its event file is continued after the last good line (the
    // writer starts on a new line after a torn one).
    let interrupted = interruptedCalls.map((c) => c.call);
    // Room for its interrupted calls and the run_closed, queued together (one write).
    const writer = open?.writer ??
      this.#writer(this.#eventFile(run.run_id), interrupted.length + 1);
    try {
      let event: RunEvent | null = null;
      let sequence = 0;
      let ended = now;
      // When the lines written here were recorded (their recorded_at_epoch_ms).
      let recorded = now;
      let endPayload: Record<string, unknown> = {};
      let left = 0;
      const callsWritten: Promise<JournalAppendResult>[] = [];
      if (open) {
        if (open.closedEvent === null) this.#settleCalls(); // before run_closed: its last events
        this.#stopSaving(open);
        // A retry of a close whose run_closed is written: the run ended on disk at the failed
        // try, its events are dropped and counted until the record is written, as between them.
        open.closing = open.closedEvent === null;
        open.whileClosing = 0;
        open.safetyWhileClosing = null;
        event = open.closedEvent;
        if (event === null) {
          sequence = open.nextSequence++;
          // Its lines on their way (a write under way, or queued behind it) are written first:
          // one whose write fails is counted by now (#queueEvent), so in the count taken next.
          await open.writer.flush();
        }
        // Taken after them: what they could not record is counted too.
        left = open.notRecorded;
        if (event === null) {
          // Never recorded, nor ended, before an event of the run (a wall clock stepped back
          // since it was recorded; the calls settled above included): at that event's time then.
          recorded = this.#recordedAt(open, now);
          ended = recorded;
        }
      } else {
        const keyed = await this.#keyedEvents(run.run_id, true);
        const last = await lastKeyed(keyed);
        event = last === null ? null : this.#closedEventOf(last.line, run.run_id);
        sequence = (last?.key ?? 0) + 1;
        const saved = this.#savedNotRecorded.get(run.run_id);
        if (event === null && interruptedCalls.length > 0) {
          // Its process ended during a close, after that close listed its calls in flight: those
          // have their ending (`in_flight`) in the file already.
          const listed = await this.#inFlightAtEnd(run.run_id, keyed);
          // And those a close of it that failed listed (in its file before later events).
          const saved = this.#savedInFlight.get(run.run_id);
          interrupted = interruptedCalls
            .filter((c) =>
              c.intent === undefined || !(listed.has(c.intent) || saved?.has(c.intent))
            )
            .map((c) => c.call);
        }
        if (event === null && reason === "abandoned") {
          // Its process ended unseen: the run ends at its last known activity, not now.
          const lastEvent = last && eventOfLine(last.line, this.#eventRules(run.run_id), true);
          ended = lastActivity(run, lastEvent, interrupted, saved?.at);
          // Never recorded before its last event (the wall clock stepped back between that event
          // and this start, or the previous process's clock was ahead of this one's): at its last
          // known activity then, so recorded times ascend along the file as its sequence does.
          recorded = Math.max(now, ended);
          // Its process stopped gracefully: it recorded the run until then (its last save).
          endPayload = { end_basis: saved?.shutdown === true ? "shutdown" : "last_event" };
          if (saved !== undefined && saved.count > 0) {
            // What its process counted past the bound, as saved last (RUN_NOT_RECORDED_SAVE_MS).
            left += saved.count;
            endPayload = { ...endPayload, events_not_recorded_saved_at_epoch_ms: saved.at };
          }
        }
        // Read while the disk hung, maybe past a shutdown: the run's file is not written then.
        goesOn();
        let bytes = keyed.end;
        for (const call of event === null ? interrupted : []) {
          const e = this.#event(
            run.run_id,
            sequence,
            "call",
            callType(call),
            call.first_time_epoch_ms,
            recorded,
            { ...call },
          );
          const { line } = fitEvent(e, MAX_RECORD_BYTES);
          if (bytes + utf8Length(line) + 1 > this.#maxRunBytes) {
            left++;
            continue;
          }
          // Queued in the same tick as the run_closed that follows: one write and one fsync,
          // so a failed fsync cuts them back with it (a retried start writes them once).
          callsWritten.push(writer.append(line));
          bytes += utf8Length(line) + 1;
          sequence++;
        }
      }
      if (event === null) {
        // Always written, past the bound too: the run's end, and what the bound left out.
        const payload = left > 0 ? { ...endPayload, events_not_recorded: left } : endPayload;
        event = this.#event(run.run_id, sequence, "run_closed", reason, ended, recorded, payload);
        now = ended;
        // Not counted as lost by the writer (its "lines were lost" WARN) when it fails: the close
        // is answered with the error, the run stays open, and the close tried next writes its
        // run_closed (a start's, of a run found open: the next start's).
        const closing = writer.append(JSON.stringify(event), { sync: true, counted: false });
        for (const r of await Promise.all(callsWritten)) written(r);
        const result = await closing;
        // A failed fsync leaves the line in the file (the OS has it): the run has ended there.
        if (open && (result.ok || await this.#endsWith(run.run_id, event))) {
          open.closedEvent = event;
        }
        written(result);
      } else {
        // Written earlier, perhaps not fsync'd (its fsync failed): fsync'd before the record.
        await this.#syncFile(this.#eventFile(run.run_id));
        reason = event.type as CloseReason;
        now = event.occurred_at_epoch_ms;
      }
      // The file's final size, for retention (a start reads it here instead of from the disk).
      const eventBytes = await this.#opts.files.fileSize(this.#eventFile(run.run_id))
        .catch(() => null);
      goesOn();
      await this.#appendJournal(JSON.stringify({
        v: SCHEMA_VERSION,
        op: "close",
        run_id: run.run_id,
        close_reason: reason,
        ended_at_epoch_ms: now,
        ...(eventBytes === null ? {} : { event_bytes: eventBytes }),
      }));
      if (eventBytes !== null) this.#recordedBytes.set(run.run_id, eventBytes);
      run.state = "closed";
      run.close_reason = reason;
      run.ended_at_epoch_ms = now;
      if (open) {
        this.#lastEnd = { wall: now, mono: this.#opts.clock.monoMs() };
        this.#open = null;
        // What came while its run_closed was written is of no run: the next run's run_opened.
        this.#mergeBetween(open.safetyWhileClosing);
      }
      await writer.close();
      this.#ioWritten();
      this.#log.info(`run ${run.run_id} closed (${reason})`);
      this.#emit(event, run);
      if (this.#state === "ready") await this.#retain(run.run_id);
      return reason;
    } catch (err) {
      if (open) {
        // The run stays open: the events left out while it was closing are lost, and counted
        // (and so is every later one when its run_closed was written: nothing may follow it).
        open.closing = false;
        // Of no run when its run_closed is written (it has ended on disk), else counted below.
        if (open.closedEvent !== null) {
          this.#mergeBetween(open.safetyWhileClosing);
        }
        open.safetyWhileClosing = null;
        for (; open.whileClosing > 0; open.whileClosing--) {
          this.#droppedBusEvent(`they came while run_closed was written, which failed`);
          // Of the run still open, whose record (a later run_closed) counts them.
          if (open.closedEvent === null) this.#countNotRecorded(open);
        }
        // What was counted while it was closing (its writes failing then) was not saved: a
        // crash before the next save would close it as abandoned without that count.
        this.#saveNotRecorded(open);
        // The calls it listed in_flight (in its file now, or counted): not interrupted calls of
        // the run at a start after a crash. Queued now, awaited below: the failed close answers
        // once the record is on disk (bounded), so no crash after its answer gives such a call a
        // second ending.
        const inFlightSaved = open.closedEvent === null ? this.#saveInFlight(open) : null;
        try {
          this.#opts.closeFailed?.();
        } catch (e) {
          this.#log.error(`runs: a failed close's calls not noted: ${errorMessage(e)}`);
        }
        if (inFlightSaved !== null) await inFlightSaved;
      } else await writer.close();
      throw this.#ioError("close run", err);
    }
  }

  /**
   * The write-ahead ids of the `in_flight` call events at the end of a run's event file (after its
   * last other event): those a close wrote before its run_closed, when the process ended in
   * between. Reads back from the end only as far as they go (at most the calls the audit trail
   * lists as a run closes: AUDIT_MAX_UNSETTLED and as many repeats).
   */
  async #inFlightAtEnd(runId: string, keyed: KeyedLines): Promise<Set<string>> {
    const rules = this.#eventRules(runId);
    const inFlight = (e: RunEvent): boolean =>
      e.category === "call" && e.payload.outcome === "in_flight";
    const before = await lastKeyed({
      ...keyed,
      key: (line) => {
        const e = eventOfLine(line, rules, true);
        return e === null || inFlight(e) ? null : e.sequence;
      },
    });
    const intents = new Set<string>();
    const read = this.#opts.files.readLinesAt(keyed.path, {
      maxLineBytes: MAX_LINE_BYTES,
      startByte: before?.line.end ?? 0,
    });
    for await (const line of read) {
      if (line.start >= keyed.end) break;
      const e = eventOfLine(line, rules, true);
      const intent = e !== null && inFlight(e) ? e.payload.intent : undefined;
      if (typeof intent === "string") intents.add(intent);
    }
    return intents;
  }

  /** Whether the run's event file ends with `event` (its sequence, as run_closed); never throws. */
  async #endsWith(runId: string, event: RunEvent): Promise<boolean> {
    try {
      const last = await lastKeyed(await this.#keyedEvents(runId, true));
      return last !== null && this.#closedEventOf(last.line, runId)?.sequence === event.sequence;
    } catch {
      return false;
    }
  }

  /** fsyncs a file written through a writer that has let go of it (its fsync failed). */
  async #syncFile(path: string): Promise<void> {
    const handle = await this.#opts.files.openAppend(path);
    try {
      await handle.sync();
    } finally {
      // A close that throws neither hides a failed fsync nor fails one that worked.
      closeHandle(handle, (err) => {
        this.#log.warn(`closing ${path} failed (${errorMessage(err)}): it is let go`);
      });
    }
  }

  /** The run_closed event of a stored line (its reason one of CLOSE_REASONS), or null. */
  #closedEventOf(line: JournalLine, runId: string): RunEvent | null {
    const e = eventOfLine(line, this.#eventRules(runId), true);
    if (
      e === null || e.category !== "run_closed" ||
      !(CLOSE_REASONS as readonly unknown[]).includes(e.type) ||
      !Number.isSafeInteger(e.recorded_at_epoch_ms)
    ) {
      return null;
    }
    return e;
  }

  /**
   * A writer of one of the registry's files. `ownerReports`: every append's failure is logged by
   * the registry (a dropped bus event, a marker or close answered with its error), so the writer
   * adds no line of its own to the same event.
   */
  #writer(path: string, maxQueuedLines: number, ownerReports = false): JournalWriter {
    return new JournalWriter({
      files: this.#opts.files,
      target: { path },
      name: `run journal ${path.slice(path.lastIndexOf("/runs") + 1)}`,
      log: this.#log,
      clock: this.#opts.clock,
      maxQueuedLines,
      syncIntervalMs: BUS_EVENT_SYNC_DELAY_MS,
      reportWriteFailures: !ownerReports,
      lineCount: this.journalLineCount,
    });
  }

  /**
   * The writer of runs.jsonl. Every record's failure is said by the registry (an open or a close
   * answers with its error, #ioError; a saved count or in_flight ids, their own WARN): the
   * writer's ERROR for the same failure was a second line for one event.
   */
  #runsWriter(): JournalWriter {
    return this.#writer(this.#runsFile, MAX_PENDING_RUN_RECORDS, true);
  }

  /**
   * A run's start at wall time `wall` (monotonic `mono`): never before the end of the run this
   * process closed last -- after a step back of the wall clock (NTP) since that close, that end plus
   * the monotonic time since, as a close after a step back is dated from its start -- so a run listed
   * newer does not read as started before the one before it ended; nor before the latest safety
   * event this process noted of those its run_opened lists (`between`): after a step back since it,
   * at that event's time, as a close is no earlier than its events' recording.
   */
  #startAt(wall: number, mono: number, between: SafetyBetweenRuns | null): number {
    const last = this.#lastEnd;
    const after = last === null
      ? wall
      : Math.max(wall, last.wall + Math.max(0, Math.round(mono - last.mono)));
    return Math.max(after, between?.ownLastAt ?? after);
  }

  #eventRules(runId: string): EventLineRules {
    return { runId, maxLineBytes: MAX_LINE_BYTES, maxDepth: MAX_STORED_JSON_DEPTH };
  }

  #newRun(
    runId: string,
    now: number,
    params: Record<string, unknown>,
    tagScope: TagScope,
    experimentLabel: string | null,
  ): Run {
    return {
      schema_version: SCHEMA_VERSION,
      run_id: runId,
      state: "open",
      close_reason: null,
      started_at_epoch_ms: now,
      ended_at_epoch_ms: null,
      automation_version: this.#automationVersion(),
      runtime_version: this.#opts.runtimeVersion ?? RUNTIME_VERSION,
      polling_interval_ms: this.#pollingIntervalMs,
      params,
      tag_scope: tagScope,
      experiment_label: experimentLabel,
    };
  }

  /**
   * Appends a record (a run's open or close) to runs.jsonl and fsyncs it; throws when that fails.
   * Not counted as lost by the writer (its "lines were lost" WARN): the open or close is answered
   * with the error and tried again (a failed open is no run; a failed close's run stays open and
   * the next close writes its record).
   */
  async #appendJournal(line: string): Promise<void> {
    const journal = this.#journal;
    if (!journal) throw unavailable("run journal is not open");
    written(await journal.append(line, { sync: true, counted: false }));
    this.#journalLines++;
  }

  #event(
    runId: string,
    sequence: number,
    category: RunEventCategory,
    type: string,
    occurred: number,
    recorded: number,
    payload: Record<string, unknown>,
  ): RunEvent {
    return {
      schema_version: SCHEMA_VERSION,
      run_id: runId,
      sequence,
      category,
      type,
      occurred_at_epoch_ms: occurred,
      recorded_at_epoch_ms: recorded,
      payload,
    };
  }

  /**
   * The time of a loss or a save of the open run's count of events left out: no earlier than its
   * last loss or save (both start at its open), so the saves in runs.jsonl never fall when the wall
   * clock steps back (NTP): the last one, which a start after a crash reads (lastActivity), is then
   * the latest, and a rewrite copies a time no earlier than the save it drops.
   */
  #countAt(open: OpenRun): number {
    return Math.max(this.#opts.clock.nowMs(), open.lastLossAt, open.savedNotRecordedAt);
  }

  /**
   * The recorded_at_epoch_ms of the open run's next event, the wall clock reading `now`: never
   * before the latest its events were given (OpenRun.recordedAt), which it becomes.
   */
  #recordedAt(open: OpenRun, now: number): number {
    open.recordedAt = Math.max(now, open.recordedAt);
    return open.recordedAt;
  }

  #settleCalls(): void {
    try {
      this.#opts.settleEvents?.();
    } catch (err) {
      this.#log.error(
        `runs: events not settled before a run opened or closed: ${errorMessage(err)}`,
      );
    }
    try {
      this.#opts.settleCalls?.();
    } catch (err) {
      this.#log.error(
        `runs: calls not settled before a run opened or closed: ${errorMessage(err)}`,
      );
    }
  }

  #emit(event: RunEvent, run: Run): void {
    const sink = this.#opts.telemetrySink;
    if (!sink) return;
    try {
      sink(structuredClone(event), structuredClone(run));
    } catch (err) {
      this.#log.error(`run telemetry sink failed: ${errorMessage(err)}`);
    }
  }

  #automationVersion(): AutomationVersion | null {
    try {
      const v = this.#opts.automationVersion?.() ?? null;
      return v === null ? null : { ...v };
    } catch (err) {
      this.#log.warn(`automation version unavailable: ${errorMessage(err)}`);
      return null;
    }
  }

  #eventFile(runId: string): string {
    return `${this.#eventsDir}/${runId.slice(-26)}.jsonl`;
  }

  #runOrThrow(runId: string): Run {
    const run = this.#runs.get(runId);
    if (!run) throw notFound(`Run not found: ${runId}`);
    return run;
  }

  /** NOT_FOUND when `run` is no longer the registry's run `runId` (retention removed it). */
  #throwIfRemoved(runId: string, run: Run): void {
    if (this.#runs.get(runId) !== run) throw notFound(`Run not found: ${runId}`);
  }

  /** Throws FAILED_PRECONDITION with openRefusal's reason, when it gives one. */
  #refuseOpenIfAsked(): void {
    const why = this.#opts.openRefusal?.() ?? null;
    if (why !== null) throw failedPrecondition(`refusing to open a run: ${why}`);
  }

  #requireReady(): void {
    if (this.#state !== "ready") {
      throw unavailable(`Run registry unavailable: ${this.#unavailableReason ?? "not started"}`);
    }
  }

  /**
   * The answer to a request whose journal I/O failed. A failed write (a marker, an open, a close)
   * is logged once per failing spell (ERROR; DEBUG for the next ones, until #ioWritten): a full
   * disk and a client retrying every second is not an ERROR a second. A failed read (a run's
   * events) likewise, in a spell of its own (#readFailures).
   */
  #ioError(what: string, err: unknown, write = true): RuntimeError {
    if (err instanceof RuntimeError) return err;
    const line = `run journal: ${what} failed: ${errorMessage(err)}`;
    (write ? this.#writeFailures : this.#readFailures).fail(line);
    return unavailable(`Run journal I/O failed (${what}): ${errorMessage(err)}`, err);
  }

  /** A marker, an open or a close was written: the failing spell (if any) is over, said once. */
  #ioWritten(): void {
    this.#writeFailures.ok();
  }

  /** Runs `fn` after every earlier operation (journal order = call order). */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#chain.then(fn);
    this.#chain = result.then(() => {}, () => {});
    return result;
  }
}

/**
 * When a run its process left open (a crash) last showed life: the latest of its start, its last
 * recorded event's recording, the calls found in flight (made, or last repeated, before the end)
 * and the last save of its count of events left out past the bound. A quiet run may have lived on
 * after it: nothing records that.
 */
function lastActivity(
  run: Run,
  lastEvent: RunEvent | null,
  interrupted: readonly RunCallEntry[],
  countSavedAt: number | undefined,
): number {
  let at = run.started_at_epoch_ms;
  const later = (t: unknown) => {
    if (typeof t === "number" && Number.isSafeInteger(t) && t > at) at = t;
  };
  // The last event suffices: recorded times never fall along a run's file (OpenRun.recordedAt;
  // the calls a start writes before its run_closed are recorded no earlier than this), so its
  // last event's is the latest. (A file an older version wrote across a wall clock stepped back
  // may hold a later one before it: that run ends at its last event's time all the same.)
  later(lastEvent?.recorded_at_epoch_ms);
  later(countSavedAt); // the latest of its saves: their times never fall (#countAt)
  for (const call of interrupted) {
    later(call.first_time_epoch_ms);
    later(call.last_time_epoch_ms);
  }
  return at;
}

/**
 * The runs.jsonl record of the write-ahead ids of a run's `in_flight` call events, and how many
 * past RUN_IN_FLIGHT_IDS_KEPT it forgot (`forgotten`, when any).
 */
function inFlightRecord(runId: string, ids: ReadonlySet<string>, forgotten: number): string {
  return JSON.stringify({
    v: SCHEMA_VERSION,
    op: "in_flight",
    run_id: runId,
    intents: [...ids],
    ...(forgotten > 0 ? { forgotten } : {}),
  });
}

/** The runs.jsonl record of the count of safety events between runs. */
function betweenRunsRecord(b: SafetyBetweenRuns): string {
  return JSON.stringify({
    v: SCHEMA_VERSION,
    op: "between_runs",
    count: b.count,
    estop_triggers: b.estopTriggers,
    first_at_epoch_ms: b.firstAt,
    last_at_epoch_ms: b.lastAt,
  });
}

/** A `between_runs` record's counts; null when one is missing or wrong. */
function parseBetweenRuns(rec: Body): SafetyBetweenRuns | null {
  const { count, estop_triggers: triggers, first_at_epoch_ms: first, last_at_epoch_ms: last } = rec;
  const whole = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);
  if (
    !whole(count) || count < 1 || !whole(triggers) || triggers < 0 || triggers > count ||
    !whole(first) || !whole(last)
  ) {
    return null;
  }
  return { count, estopTriggers: triggers, firstAt: first, lastAt: last, ownLastAt: null };
}

/** A `call` event's type: `device_handle function`. */
function callType(entry: RunCallEntry): string {
  return `${entry.device_handle ?? ""} ${entry.function ?? ""}`.trim();
}

/**
 * JSON text of `value` with every object's members in key order: the same text for the same value,
 * whatever order a client's serializer wrote its members in (they have none, RFC 8259); arrays
 * keep theirs.
 */
function memberOrderedJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v: unknown) =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(
          Object.entries(v).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0),
        )
        : v,
  );
}

/** SHA-256 of `text` (UTF-8) as hex. */
async function sha256Hex(text: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Throws the reason of a line that was not written (and fsync'd). */
function written(result: JournalAppendResult): void {
  if (!result.ok) throw new Error(result.reason);
}

/** `fn()` as a promise: its value resolves it, its exception rejects it. */
function settled<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

/** A typed value whose bigint member (an integer beyond 2^53) is written as its digits. */
function jsonSafeValue(v: TypedValue): Record<string, unknown> {
  const out: Record<string, unknown> = { ...v };
  for (const [k, x] of Object.entries(out)) if (typeof x === "bigint") out[k] = x.toString();
  return out;
}
