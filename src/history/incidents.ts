/**
 * Incident capture (docs/history.md "Incidents"): on every e-stop, FAULT entry, alarm raise and
 * device loss, the full-rate window from `history.incident_before_s` before the trigger to
 * `history.incident_after_s` after it is written once as an incident record: the trigger, its
 * cause, and every signal of the devices involved (all devices when the trigger is machine-wide).
 *
 * The trigger arrives on the event bus (synchronous): the listener only notes it and sets a timer,
 * so the e-stop never waits for it; the window is read from the ring and written when the timer
 * fires (after `incident_after_s`), or at stop. Triggers within MERGE_WINDOW_MS of a pending one
 * join it (an e-stop is also a FAULT entry: one incident, the e-stop its trigger, the FAULT in
 * `also`; at most INCIDENT_MAX_TRIGGERS listed there, the rest counted); at most
 * MAX_PENDING_INCIDENTS wait, more are dropped, but an e-stop or FAULT entry
 * makes room by writing the oldest at once. Records are files
 * `<data_dir>/history/incidents/<id>.jsonl` (JSON Lines: a header, then one line per signal with
 * its samples `[t_ms, value, quality]`), the JSONL export as stored; bounded by
 * `incident_max_count` and `incident_max_bytes` (the oldest are removed, e-stops' last).
 */
import {
  type Clock,
  deviceHandle,
  errorMessage,
  invalidArgument,
  type Logger,
  neverThrowing,
  notFound,
  pageBounds,
  providerTextWithin,
  quoteProviderTextWithin,
  raceTimeout,
  type SignalSpec,
  SpellLog,
  type TimerId,
  toJsonText,
  utf8Length,
  WALL_STEP_MS,
} from "../common/mod.ts";
import type { HistoryConfig } from "../config/mod.ts";
import type { EventBus, RuntimeEvent } from "../events/mod.ts";
import type { DeviceConditionChange, DeviceOutages, InventoryReader } from "../state/mod.ts";
import { closeHandle, type JournalFiles, replaceWhole } from "../journal/mod.ts";
import { typedValueScalar } from "./buckets.ts";
import {
  type History,
  HISTORY_QUOTED_SIGNAL_CHARS,
  type HistoryRedeclared,
  qualityName,
} from "./history.ts";
import type { RingSample } from "./ring.ts";

/** Triggers this close to a pending incident join it instead of starting another. */
export const MERGE_WINDOW_MS = 1000;
/**
 * Triggers an incident lists besides its lead (its header's `also`, and so its run's
 * `incident_trigger` events): an alarm flapping or an e-stop pressed again and again within
 * MERGE_WINDOW_MS joins it each time. Past it the weakest of them, of those the last to join, is
 * left out and counted (`triggers_not_listed`): an e-stop or a FAULT entry is never left out while
 * an alarm or a device loss is listed.
 */
export const INCIDENT_MAX_TRIGGERS = 32;
/**
 * Ids of incidents whose record is not kept -- it could not be written (a full disk), or the
 * bounds (incident_max_count, incident_max_bytes) removed it -- kept with why, to say so (the 404
 * of their run's link); the oldest forgotten first.
 */
export const INCIDENT_GONE_IDS_MAX = 256;
/**
 * The file beside the records that keeps the INCIDENT_GONE_IDS_MAX ids not kept, with why, across
 * restarts (one line `{"incident_id", "why"}` each, oldest first; no record's name): replaced whole
 * when they change.
 */
export const INCIDENT_GONE_FILE = "gone.jsonl";
/** Longest line of INCIDENT_GONE_FILE read back (a longer one is no line written here: skipped). */
export const INCIDENT_GONE_LINE_MAX_BYTES = 1024;
/**
 * Page sizes of GET /v0/incidents (IncidentRecorder.page). The default lists every record the
 * default history.incident_max_count (100) keeps in one page, as the list did before it was paged;
 * the largest bounds one answer: a machine-wide record's header names every device (1024 at most,
 * some tens of kB), so 200 of them stay within a few MB.
 */
export const INCIDENTS_PAGE_LIMIT = { default: 100, max: 200 } as const;
/** Characters of a bad `before` an error message quotes (longer is cut, "\u2026"). */
export const INCIDENT_QUOTED_ID_CHARS = 64;

/** A page of GET /v0/incidents (IncidentRecorder.page). */
export interface IncidentsPageRequest {
  /** Headers at most (INCIDENTS_PAGE_LIMIT). */
  readonly limit?: number;
  /** Headers skipped (from `before` when given). */
  readonly offset?: number;
  /** Only incidents noted before this id (by the counter of its id): a cursor. */
  readonly before?: string;
}

/** Incidents waiting for their window to end at most; more are dropped and counted. */
export const MAX_PENDING_INCIDENTS = 16;
/**
 * Failing devices that hold every device's marks at their first failed read and incident_after_s
 * past it (FailingAt.marks, LossMarks): a machine-wide trigger joining the incident of such a
 * device's loss cuts every device's window there by poll order. Devices x failing devices, at
 * most 16 x devices marks (two numbers each), and as many again kept by the waiting incidents
 * their losses began (at most MAX_PENDING_INCIDENTS): for 1024 devices, 2 x 16 x 1024 marks,
 * 65,536 numbers at most. One failing past them holds none: a machine-wide trigger joining its
 * loss notes the devices from its own time, as before.
 */
export const INCIDENT_LOSS_MARKS_MAX = 16;
/**
 * Devices lost and not up since (IncidentRecorder.#outageOf: `provider/device` -> the incident of
 * their loss) at most: a later loss of one of them (its provider crashed and came back with the
 * device failing still) is the same outage, no new incident. Past it the device noted longest ago
 * is forgotten first: a later loss of it begins an incident of its own, as before.
 */
export const INCIDENT_OUTAGES_MAX = 1024;
/** How long stop() waits for records still being written (a hung disk must not hold the stop). */
export const INCIDENT_STOP_WAIT_MS = 2000;
/**
 * How long an e-stop's record waits past its window for the e-stop's reason still arriving (an
 * HTTP body, itself read for at most ESTOP_REASON_READ_TIMEOUT_MS): then it is written without.
 */
export const INCIDENT_REASON_WAIT_MS = 1500;
/** Characters of an e-stop's reason kept in an incident's cause (longer ones are cut, "\u2026"). */
export const INCIDENT_REASON_MAX_CHARS = 200;
/**
 * Longest cause a log line of the recorder quotes (longer is cut, "\u2026"): it holds text of
 * peers (a provider's device id, an e-stop's reason), JSON-quoted so it cannot end the line. An
 * e-stop's cause, its reason cut to INCIDENT_REASON_MAX_CHARS, fits unless the reason holds
 * characters beyond U+FFFF (two UTF-16 units each).
 */
export const INCIDENT_QUOTED_CAUSE_CHARS = 300;
/** Longest line of an incident file read back. */
export const INCIDENT_MAX_LINE_BYTES = 4 * 1024 * 1024;
/**
 * Characters of a signal's declared unit kept in an incident record (longer ones are cut,
 * "\u2026"): a provider's text, so a unit of any length cannot take a record's line.
 */
export const INCIDENT_UNIT_MAX_CHARS = 100;

/** What started an incident, strongest first (the strongest of merged triggers leads). */
export const INCIDENT_TRIGGERS = ["estop", "fault", "alarm", "device_loss"] as const;
export type IncidentTrigger = (typeof INCIDENT_TRIGGERS)[number];

/**
 * Why a kept record is not whole: `torn` (its file is shorter than its header's `bytes`: a power
 * cut while it was written), `damaged` (a signal line that does not parse, or fewer than its
 * header's `signals`).
 */
export type IncidentIncomplete = "torn" | "damaged";

/** One trigger of an incident. */
export interface IncidentCause {
  readonly trigger: IncidentTrigger;
  readonly cause: string;
  readonly at_epoch_ms: number;
}

/**
 * Where a trigger's own time lies against its record's window when outside it: `before`
 * from_epoch_ms (a device loss dated back to its first failed read, found down after a later
 * incident began -- by as much as its detection took, 3 x polling.interval_ms -- joins that
 * incident within MERGE_WINDOW_MS of its finding) or `after` until_epoch_ms (not known to happen
 * but across a step of the wall clock; said all the same). The trigger keeps its own time, as its
 * run's `incident_trigger` event does: the record holds no samples around it there, only the
 * window's.
 */
export type OutsideWindow = "before" | "after";

/** A trigger an incident's header lists in `also`: its own time, and where it lies if outside. */
export interface ListedCause extends IncidentCause {
  /** Present only when `at_epoch_ms` lies outside the record's from..until. */
  readonly outside_window?: OutsideWindow;
}

/** Where `atMs` lies against the window from..until: null within it. */
function outsideWindow(atMs: number, from: number, until: number): OutsideWindow | null {
  return atMs < from ? "before" : atMs > until ? "after" : null;
}

/** The header of an incident record (its first line; GET /v0/incidents lists these). */
export interface IncidentHeader {
  readonly incident_id: string;
  /** Its lead: the strongest of its triggers. */
  readonly trigger: IncidentTrigger;
  readonly cause: string;
  /**
   * When the incident began (its first trigger): the anchor of its window, which runs
   * incident_before_s before it to incident_after_s after it.
   */
  readonly at_epoch_ms: number;
  /**
   * When its lead trigger happened: `at_epoch_ms` unless a stronger trigger joined (an e-stop
   * within MERGE_WINDOW_MS of an alarm's incident). Records written before it was kept read
   * back with `at_epoch_ms`.
   */
  readonly trigger_at_epoch_ms: number;
  /**
   * Present only when `trigger_at_epoch_ms` lies outside from_epoch_ms..until_epoch_ms: on which
   * side (OutsideWindow).
   */
  readonly trigger_outside_window?: OutsideWindow;
  /**
   * Other triggers that joined it (within MERGE_WINDOW_MS), at most INCIDENT_MAX_TRIGGERS: the
   * strongest, of equally strong ones those that joined first. Each keeps its own time, which may
   * lie outside the window (`outside_window` says so).
   */
  readonly also: readonly ListedCause[];
  /**
   * Triggers that joined it beyond INCIDENT_MAX_TRIGGERS, not in `also` (0 in records written
   * before it was kept).
   */
  readonly triggers_not_listed: number;
  /** `machine`: every device's signals; `devices`: those of `devices`. */
  readonly scope: "machine" | "devices";
  /** `provider/device` of every device whose signals it holds. */
  readonly devices: readonly string[];
  readonly from_epoch_ms: number;
  readonly until_epoch_ms: number;
  /** Signals of the record (of a torn or damaged one: those readable). */
  readonly signals: number;
  /** Samples of the record (of a torn or damaged one: those readable). */
  readonly samples: number;
  /** Bytes of the record (of a torn one: of its file). */
  readonly bytes: number;
  /** null: the record is whole (a record is written with null); else why it is not. */
  readonly incomplete: IncidentIncomplete | null;
}

/** One signal of an incident: samples `[t_ms, value, quality]`. */
export interface IncidentSignal {
  readonly provider_id: string;
  readonly device_id: string;
  readonly signal_id: string;
  readonly value_type: string;
  /**
   * Its unit as its samples were polled in when the incident began (SignalSpec.unit as the ring
   * noted it at the device's last poll, the inventory's for a signal never polled; cut to
   * INCIDENT_UNIT_MAX_CHARS); "" when it declared none. Absent in records written before units
   * were kept.
   */
  readonly unit?: string;
  /**
   * Where its samples begin when the ring had lost its earlier changes in the window (while the
   * device's polls were kept: memory_max_bytes trimmed this signal alone, its ring was made
   * without room, a value too large was not kept), or a retype or a unit change within the window
   * before the trigger began its line (a line has one type and one unit): the record holds none of
   * it before (the window's end when it holds none). Absent when its samples cover the window.
   */
  readonly from_epoch_ms?: number;
  readonly samples: readonly (readonly [number, number | bigint | string | null, string])[];
}

/**
 * An incident as its onIncident listeners are told of it, once the triggers of its first step
 * have joined: its lead trigger (its cause) at the incident's time (`at_epoch_ms`), and the
 * triggers that joined it in that step (`also`, each with its own time).
 */
export interface IncidentBegun extends IncidentCause {
  readonly incident_id: string;
  readonly also: readonly IncidentCause[];
  /**
   * Triggers of that step beyond INCIDENT_MAX_TRIGGERS, not in `also` (a provider's many devices
   * lost at once): as its header's `triggers_not_listed` then.
   */
  readonly triggers_not_listed: number;
}

/** A trigger that joined an incident already told (onIncidentJoined), at its own time. */
export interface IncidentJoined extends IncidentCause {
  readonly incident_id: string;
  /** Whether it leads the incident now (the strongest of its triggers so far). */
  readonly leads: boolean;
}

/** Counters (GET /metrics). */
export interface IncidentStatus {
  readonly count: number;
  readonly bytes: number;
  readonly pending: number;
  /** Triggers dropped (too many pending) and records that could not be written, since start. */
  readonly dropped: number;
}

/** A signal's declared unit and type (SignalSpec's, or as History.declaredUnits keeps them). */
type UnitSpec = Pick<SignalSpec, "signalId" | "unit" | "valueType">;

/** A device as `[providerId, deviceId]`. */
type DeviceParts = readonly [string, string];

interface Pending {
  readonly id: string;
  /** Monotonic time of its first trigger: what later triggers join by (MERGE_WINDOW_MS). */
  readonly atMono: number;
  /**
   * Monotonic time its window closes (its timer's due time): a 404 of it says when, on the wall
   * clock of the question (#notYet), right after a wall clock step too. Moved to a machine-wide
   * trigger's own incident_after_s when it joins after the window ended (Pending.resumed).
   */
  closesMono: number;
  /** Wall time at its first trigger (its `at` may be earlier: a device loss is dated back). */
  readonly atWall: number;
  /**
   * How far its `at` (atMs) is ahead of the wall clock that stamped the ring's polls then (atWall):
   * a trigger not dated back whose date its own thing held at its transition before (the e-stop's
   * at its release, the mode's, an alarm's: transitionDate) after a step back of the wall clock
   * (NTP). Its window is read from the polls stamped that much earlier and dated by `at`
   * (#readWindow). 0 otherwise.
   */
  leadMs: number;
  /**
   * Its first trigger's `at_epoch_ms`: the anchor of its window (the header's `at_epoch_ms`),
   * kept when a stronger trigger joins and leads with a time of its own; an e-stop that began it
   * re-dated to its own FAULT entry's time moves it there (#faultEntered).
   */
  atMs: number;
  lead: IncidentCause;
  /** The triggers listed besides the lead: at most INCIDENT_MAX_TRIGGERS (#list). */
  readonly also: IncidentCause[];
  /** Triggers that joined beyond INCIDENT_MAX_TRIGGERS, not listed. */
  notListed: number;
  /**
   * The lead's and each listed trigger's place in the order they joined (0: the first): of
   * equally strong ones, the last to join is left out first. Bounded as `also`.
   */
  readonly joinOrder: Map<IncidentCause, number>;
  /** Triggers that joined it so far, the first included (the next one's joinOrder). */
  joins: number;
  /**
   * `provider/device` -> its parts (as the trigger named them: a provider or device id may hold a
   * "/", so the joined text is never split back); null: machine-wide.
   */
  devices: Map<string, DeviceParts> | null;
  timer: TimerId | null;
  /**
   * `provider/device` -> the sequence number of its first poll after the trigger (History
   * nextPollSeq): the record takes those polls whatever their times, a step back of the wall clock
   * since the trigger stamping them before it. Bounded by the devices listed.
   */
  readonly afterSeq: Map<string, number>;
  /**
   * `provider/device` -> the time of the trigger that noted its afterSeq: its polls before that
   * one are dated back from it, not from the incident's first trigger (a device an e-stop named
   * 900 ms after an alarm's incident began has its polls of those 900 ms before it), in the
   * record's frame (Pending.leadMs: a trigger held ahead by another amount is where the ring
   * stamped its polls, moved by the incident's lead). Bounded as afterSeq.
   */
  readonly afterAt: Map<string, number>;
  /** E-stops' reasons still arriving: the record waits for them (INCIDENT_REASON_WAIT_MS). */
  readonly reasons: Set<Promise<void>>;
  /**
   * `provider/device` (deviceHandle) -> its signals' units and types as its samples were polled in
   * when a trigger named it (#unitSpecs; the units the record keeps: a reload may remove the
   * device or change a unit before the record is written); bounded by the devices listed.
   */
  readonly specs: Map<string, readonly UnitSpec[]>;
  /**
   * Whether its listeners were told it began (onIncident, a microtask after its first trigger, or
   * sooner: tellNow): a trigger joining it since is told on its own (onIncidentJoined).
   */
  told: boolean;
  /**
   * Where the window of a trigger dated back past incident_after_s ended (a device loss found
   * after its window: captured at once), as the ring stamps polls (a step of the wall clock since
   * its date added, ahead or back): its polls after that are not the record's. Null otherwise.
   */
  readonly endedMs: number | null;
  /**
   * With endedMs, each lost device's first poll after its window's end by the monotonic clock,
   * when it was noted then (FailingAt.endSeq), by `provider/device` (deviceHandle): its cut by
   * poll order, which a wall clock step after the end (before the loss was found) does not move
   * as it moves endedMs -- the device that began the incident and each late-found loss joining it
   * (several devices lost together). One absent: endedMs cuts. Bounded by the incident's devices.
   */
  readonly endedSeq: Map<string, number>;
  /**
   * The marks of the device loss that began it (FailingAt.marks), null for none: a machine-wide
   * trigger joining it notes every device's polls from the loss's first failed read (and, found
   * after its window, cuts them where that window ended), by poll order. Shared with the failing
   * device's FailingAt (INCIDENT_LOSS_MARKS_MAX).
   */
  readonly lossMarks: LossMarks | null;
  /**
   * The after-window of a machine-wide trigger (an e-stop, a FAULT entry) that joined after its
   * window ended (endedMs: a device loss found after it): its time, its monotonic time, and each
   * device's first poll after it (`provider/device` -> sequence number; bounded by the devices
   * the ring held then). The record holds those polls too, up to incident_after_s past it (the
   * incident closes then), the polls between the window's end and it left out. Null otherwise.
   */
  resumed:
    | {
      readonly atMs: number;
      readonly mono: number;
      /** The wall clock then: a step ahead since moves its end (#readWindow), as `ahead`. */
      readonly wall: number;
      readonly seq: Map<string, number>;
    }
    | null;
}

/** A device lost again while its outage's record was being written (#lostWhileWriting). */
interface LostWhileWriting {
  /** Its cause, as the INFO line of the same outage says it once that record is written. */
  readonly cause: IncidentCause;
  /** Begins its own incident: that record was not written. */
  readonly begin: () => void;
  /**
   * Its provider is no longer configured (providerUnconfigured, or the device told
   * `unconfigured`): its own incident, begun, notes no outage of it (#outageOf) -- a device of its
   * id the provider configured again lists is another device.
   */
  gone: boolean;
}

/**
 * Every device's place in poll order (`provider/device` -> sequence number) at a failing device's
 * first failed read (`from`: its first poll at or after it) and, once noted, incident_after_s past
 * it on the monotonic clock (`end`: its next poll then; null before). Bounded by the devices the
 * ring held then. A device it did not hold then (added by a reload, or first polled since) has all
 * its polls after that place: they begin at `newSeq` (History.newDevicePollSeq) or later.
 */
interface LossMarks {
  readonly from: Map<string, number>;
  readonly fromNewSeq: number;
  end: { readonly seq: Map<string, number>; readonly newSeq: number } | null;
}

/** A failing device's first failed read (IncidentRecorder.#failingAt). */
interface FailingAt {
  /** The time the ring stamped it with; null: its next poll (failing as it came back). */
  readonly wallMs: number | null;
  /** Its sequence number. */
  readonly seq: number;
  /**
   * When this spell began (monotonic): its first failed read as told (null: not known); failing
   * as it came back, when it came back, then its next poll's once recorded. A loss ending the
   * spell is dated no earlier: DeviceOutages dates a device down again, not up since an earlier
   * loss, from that loss, but this loss is the spell's.
   */
  sinceMono: number | null;
  /** Its next poll once incident_after_s passed since it (a timer, on the monotonic clock). */
  endSeq: number | null;
  timer: TimerId | null;
  /**
   * With `wallMs` null, the watch of its next poll (History.onNextPoll) that arms `timer` from
   * that poll's monotonic time; null once told or when not watching.
   */
  unwatch: (() => void) | null;
  /**
   * Every device's marks at this first failed read (LossMarks); null when past
   * INCIDENT_LOSS_MARKS_MAX, or, failing as it came back, until its next poll is recorded.
   */
  marks: LossMarks | null;
}

/** An e-stop's trigger in its pending incident. */
interface EstopTrigger {
  readonly p: Pending;
  /** Its cause as the incident holds it now (replaced when re-dated or its reason arrives). */
  c: IncidentCause;
  /** What latched it (`api`, `alarm:<id>`). */
  readonly by: string;
  /** Its latch's time (its estop_change's `timestamp_ms`). */
  readonly latchedAtMs: number;
  /** Whether it began its incident (else it joined one). */
  readonly began: boolean;
}

export interface IncidentOptions {
  readonly config: HistoryConfig;
  readonly history: History;
  readonly files: JournalFiles;
  /** `<data_dir>/history/incidents`. */
  readonly dir: string;
  readonly clock: Clock;
  readonly log: Logger;
  /**
   * Where device losses come from: a device going down (DeviceOutages: failing reads for
   * `deviceDownAfterMs`, its provider down, or no longer listed), as for the device-loss latch.
   * Absent: every `device_availability` false event (a single failed poll) is a loss.
   */
  readonly outages?: Pick<DeviceOutages, "onChange">;
  /**
   * Where a signal's declared unit comes from when the history ring notes none of it (never
   * polled); the record keeps each unit as its samples were polled in when the incident began.
   * Absent: records carry no units.
   */
  readonly inventory?: Pick<InventoryReader, "capabilities">;
}

/** Captures, keeps and reads incident records. */
export class IncidentRecorder {
  readonly #o: IncidentOptions;
  /** Kept records, oldest first. */
  #index: IncidentHeader[] = [];
  readonly #pending: Pending[] = [];
  readonly #writes = new Set<Promise<void>>();
  readonly #listeners: ((h: IncidentBegun) => void)[] = [];
  readonly #joinListeners: ((j: IncidentJoined) => void)[] = [];
  /**
   * Its lines never throw: one that throws (a custom logger) must not skip what follows it -- the
   * listeners after one that failed (the run registry's), a waiting incident written early for an
   * e-stop's, a record's write -- nor throw out of tellNow (a run's open or close settles the
   * incidents through it; its microtask would end the runtime).
   */
  readonly #log: Logger;
  /**
   * What is still to be told of this step (an incident begun, a trigger joined), in order: told a
   * microtask after it, or sooner by tellNow (bounded by the triggers of one step).
   */
  readonly #untold: (() => void)[] = [];
  #unsubscribe: (() => void) | null = null;
  #unsubscribeOutages: (() => void) | null = null;
  /** Removes the watch of retypes and unit changes (History.onRedeclare; #onRedeclare). */
  #unwatchRedeclares: (() => void) | null = null;
  /** Stops so far: a start under way when one came goes no further (start). */
  #stops = 0;
  /**
   * Set when a stop left writes behind (INCIDENT_STOP_WAIT_MS), until the next start: a record
   * written at last then prunes nothing and writes no INCIDENT_GONE_FILE (a later runtime's folder
   * now, which this recorder's list no longer describes).
   */
  #leftBehind = false;
  /**
   * `provider/device` -> the wall time its reads began failing, told at that read (with
   * `outages`): the time the ring stamped that read with, whatever the wall clock did since; and
   * the sequence number of its first poll at or after that time, found then (a step back of the
   * wall clock before its loss is found would hide that poll from a search by time: the time
   * searches see only the polls since the last step back). A device failing as it comes back
   * (from down: its provider is up again, or lists it again) is told so before any read: its
   * next poll is its first failed read, `wallMs` null (its time is read from the ring when the
   * loss is found) -- unless its spell's start is told first (its provider's health reporting it
   * UNREACHABLE between polls): then dated at that. Held only while the device is failing, or
   * taken out failing by a reload restarting its provider until that reload's outcome is told
   * (#onCondition), and the recorder runs (bounded by the devices listed; stop() forgets them),
   * with its timer noting where its window ends (FailingAt.endSeq: one per failing device).
   */
  readonly #failingAt = new Map<string, FailingAt>();
  /**
   * `provider/device` -> the incident of its loss, while it has not been up since (with
   * `outages`): a later loss of it joins that incident while it waits for its window, and begins
   * none once it is written (one outage, one incident). Forgotten when the device is up again or
   * no longer configured (told `unconfigured`, or its provider dropped: providerUnconfigured),
   * when that incident's record is not kept (not written, removed by a bound: #noteGone), and at
   * stop; at most INCIDENT_OUTAGES_MAX, the oldest forgotten first.
   */
  readonly #outageOf = new Map<string, string>();
  /**
   * Per incident whose record is being written (#writingIds), its devices lost again meanwhile,
   * not up since (`provider/device` -> begins that loss's own incident): written, the outage has
   * its record (said then); not written, each begins its own. One per device of #outageOf at most
   * (INCIDENT_OUTAGES_MAX in all); let go with the write's outcome, or at the next start.
   */
  readonly #lostWhileWriting = new Map<string, Map<string, LostWhileWriting>>();
  #dropped = 0;
  /**
   * Ids of the records not kept (not written, removed by a bound) -> why, oldest first
   * (INCIDENT_GONE_IDS_MAX): their run's `incident` event links to them, and the 404 says why
   * there is none.
   */
  readonly #goneIds = new Map<string, string>();
  /**
   * Ids of the incidents whose window passed and whose record is being written (waiting for an
   * e-stop's reason, or its write under way): a 404 for one says so (#notYet). Bounded by
   * MAX_PENDING_INCIDENTS and the writes under way; those a stop left behind are let go.
   */
  readonly #writingIds = new Set<string>();
  /** #goneIds changed since INCIDENT_GONE_FILE was last written (or its write failed). */
  #goneChanged = false;
  /** A write of INCIDENT_GONE_FILE is under way (it writes again while #goneChanged). */
  #goneSaving = false;
  /**
   * INCIDENT_GONE_FILE could not be read at start: left as it is (never written over with only
   * the ids noted since), so a start that reads it again finds the reasons of the boots before.
   */
  #goneUnread = false;
  /** Records not written since one last was (a failing disk): its WARN said once per spell. */
  readonly #unwritten: SpellLog;
  /**
   * Whether a trigger was refused since the waiting list last filled: said once per time it
   * fills (not once per process: `#dropped` also counts records that could not be written).
   */
  #refusalSaid = false;
  #counter = 0;
  /** The e-stop trigger of the bus event being handled now (estopReason attaches to it). */
  #lastEstop: EstopTrigger | null = null;
  /**
   * The last e-stop whose incident holds no FAULT entry of its own yet (its FAULT entry may be
   * delivered after it): that FAULT entry, dated at or after its latch, re-dates it. Null once
   * paired, or released (a FAULT entry after the release is not its own).
   */
  #awaitingOwnFault: EstopTrigger | null = null;

  constructor(o: IncidentOptions) {
    this.#o = o;
    this.#log = neverThrowing(o.log);
    // Once per failing spell: a flapping device on a full disk would otherwise log a WARN per
    // record, every line taking more of the disk that is full (journald's included).
    this.#unwritten = new SpellLog({
      log: this.#log,
      firstNote: "records that cannot be written are counted (runtime_incidents_dropped_total) " +
        "and said again once one is written",
      restLevel: "debug",
      recovered: (failed, id) =>
        `incident records written again: ${failed} not written before ${id}`,
      recoveredLevel: "warn",
    });
  }

  /**
   * Reads the kept records' headers and follows the bus. A stop while the folder is read (a start
   * abandoned on a hung mount that answers after the stop) ends it there: the stopped recorder
   * neither follows the bus nor prunes or rewrites the folder (a later runtime's now).
   */
  async start(bus: EventBus): Promise<void> {
    const stops = this.#stops;
    this.#leftBehind = false;
    this.#lostWhileWriting.clear(); // a stop's left-behind writes: their outages are forgotten
    await this.#loadIndex(() => this.#stops !== stops);
    if (this.#stops !== stops) return;
    this.#unsubscribe ??= bus.subscribe((e) => this.#onEvent(e.event));
    this.#unsubscribeOutages ??= this.#o.outages?.onChange((c) => this.#onCondition(c)) ?? null;
    this.#unwatchRedeclares ??= this.#o.history.onRedeclare((provider, device, r) =>
      this.#onRedeclare(provider, device, r)
    );
  }

  /**
   * Captures every pending incident now (with what the ring has) and waits for the writes, at
   * most INCIDENT_STOP_WAIT_MS (a record still unwritten then is lost, and said so; written at
   * last, it prunes nothing and rewrites no INCIDENT_GONE_FILE: #leftBehind).
   */
  async stop(): Promise<void> {
    this.#stops++;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#unsubscribeOutages?.();
    this.#unsubscribeOutages = null;
    this.#unwatchRedeclares?.();
    this.#unwatchRedeclares = null;
    // Forgotten: a stopped recorder is told no condition, so an entry kept would outlive its
    // failing spell (the device up again untold) and date a later start's loss of the device from
    // before the stop. A device still failing then is told anew by its loss (dated back from it).
    for (const key of [...this.#failingAt.keys()]) this.#forgetFailingAt(key);
    // So too its outages: a device down still is told anew by its loss after the next start.
    this.#outageOf.clear();
    for (const p of [...this.#pending]) {
      if (p.timer !== null) this.#o.clock.clearTimer(p.timer);
      this.#capture(p);
    }
    let timer: TimerId | null = null;
    const late = new Promise<"late">((r) => {
      timer = this.#o.clock.setTimer(() => r("late"), INCIDENT_STOP_WAIT_MS);
    });
    const outcome = await Promise.race([this.settled(), late]);
    this.#o.clock.clearTimer(timer);
    if (outcome === "late") {
      const records = this.recordsPending;
      if (records > 0) {
        this.#log.warn(
          `${records} incident record(s) not written within ${INCIDENT_STOP_WAIT_MS} ms ` +
            `of the stop (INCIDENT_STOP_WAIT_MS): left behind`,
        );
      }
      // Left behind: no longer said to be being written (a 404 asks again for none), and what
      // they change once written is their own record only (#leftBehind).
      this.#writingIds.clear();
      this.#leftBehind = true;
      if (this.#goneSaving) {
        this.#log.warn(
          `incident ids not kept: ${INCIDENT_GONE_FILE} not written within ` +
            `${INCIDENT_STOP_WAIT_MS} ms of the stop (INCIDENT_STOP_WAIT_MS): left as it was`,
        );
      }
    }
  }

  /**
   * Incident records captured and not written yet (being written, or waiting for the disk): the
   * write of INCIDENT_GONE_FILE is no record of its own.
   */
  get recordsPending(): number {
    return this.#writes.size - (this.#goneSaving ? 1 : 0);
  }

  /**
   * Whether a write is under way: a record (or INCIDENT_GONE_FILE) being written, also one a stop
   * left behind (INCIDENT_STOP_WAIT_MS) that may still land.
   */
  get writing(): boolean {
    return this.#writes.size > 0;
  }

  /** Resolves once every capture begun so far is written. */
  async settled(): Promise<void> {
    while (this.#writes.size > 0) await Promise.all([...this.#writes]);
  }

  /**
   * Told when an incident begins (its id is known then; the record is written later), with its
   * lead trigger once the triggers of the same step have joined it, and those others (`also`).
   */
  onIncident(listener: (h: IncidentBegun) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Told when a trigger joins an incident already told (onIncident): one that came in a later
   * step (an e-stop within MERGE_WINDOW_MS of an alarm's incident), so that what was told of the
   * incident names all of its triggers.
   */
  onIncidentJoined(listener: (j: IncidentJoined) => void): void {
    this.#joinListeners.push(listener);
  }

  /**
   * Tells now what is still to be told (the incidents begun and the triggers joined in this step,
   * told a microtask after it otherwise): a run that opens or closes next takes what came before
   * it, not after (RunRegistry's settleEvents). A trigger later in the step is told on its own.
   */
  tellNow(): void {
    for (let tell = this.#untold.shift(); tell !== undefined; tell = this.#untold.shift()) tell();
  }

  /** Tells `tell` a microtask after this step, in turn (tellNow: sooner). */
  #toTell(tell: () => void): void {
    this.#untold.push(tell);
    queueMicrotask(() => this.tellNow());
  }

  status(): IncidentStatus {
    return {
      count: this.#index.length,
      bytes: this.#index.reduce((n, h) => n + h.bytes, 0),
      pending: this.#pending.length,
      dropped: this.#dropped,
    };
  }

  /**
   * Kept records in the order noted (their ids' counter), the last first: not by time (a device
   * loss found late is dated back before incidents noted before it).
   */
  list(): IncidentHeader[] {
    return [...this.#index].reverse();
  }

  /**
   * GET /v0/incidents: a page of list(), the last noted first. `before` (an incident id, the last
   * of the previous page) starts below it by the counter of its id, whether or not its record is
   * still kept: incidents noted meanwhile (above it) and records the bounds removed (the oldest)
   * shift no page after it. `offset` counts from there. `limit`: absent or below 1 the default,
   * above the largest cut to it (INCIDENTS_PAGE_LIMIT). A `before` that is no incident id is
   * INVALID_ARGUMENT.
   */
  page(request: IncidentsPageRequest = {}): IncidentHeader[] {
    const { limit, offset } = pageBounds(request, INCIDENTS_PAGE_LIMIT);
    let from = this.#index.length;
    if (request.before !== undefined) {
      if (!INCIDENT_ID.test(request.before)) {
        // The client's text quoted and cut: it can neither make the answer long nor forge it.
        throw invalidArgument(
          `before: must be an incident id (inc-<ms>-<counter>), got ${
            quoteProviderTextWithin(request.before, INCIDENT_QUOTED_ID_CHARS)
          }`,
        );
      }
      // #index is in the order of the counters (ascending): those noted before the cursor's, found
      // by bisection (up to incident_max_count, 100,000, records).
      const n = idCounter(request.before);
      let lo = 0;
      while (lo < from) {
        const mid = (lo + from) >>> 1;
        if (idCounter(this.#index[mid]!.incident_id) < n) lo = mid + 1;
        else from = mid;
      }
    }
    const out: IncidentHeader[] = [];
    for (let i = from - 1 - offset; i >= 0 && out.length < limit; i--) out.push(this.#index[i]!);
    return out;
  }

  /**
   * One record: its header and its signals. NOT_FOUND when it is not kept. A record whose signal
   * lines do not all parse, or are fewer than its header says, is given with those that do, its
   * header saying so (`incomplete`, `signals` and `samples` those readable), and listed so from
   * then on.
   */
  async get(id: string): Promise<{ incident: IncidentHeader; signals: IncidentSignal[] }> {
    const { header, signals } = await this.#readChecked(id);
    return { incident: header, signals };
  }

  /**
   * The record as stored (JSON Lines). NOT_FOUND when it is not kept. Checked as get() checks it,
   * so a damaged record is listed so (and its export marked: X-Incident-Incomplete) whatever was
   * asked of it first.
   */
  async jsonl(id: string): Promise<string> {
    return (await this.jsonlRecord(id)).text;
  }

  /**
   * The record as stored (jsonl) and its header as that read found it (`incomplete`: the
   * export's X-Incident-Incomplete): the read's own, not the listing's afterwards, which a bound
   * may have pruned the record from meanwhile.
   */
  async jsonlRecord(id: string): Promise<{ incident: IncidentHeader; text: string }> {
    const { header, lines } = await this.#readChecked(id);
    return { incident: header, text: lines.map((line) => `${line}\n`).join("") };
  }

  /**
   * A kept record's header, stored lines and readable signals; a damaged one (a signal line that
   * does not parse, fewer than its header says) is marked `damaged` in the listing, with one WARN.
   */
  async #readChecked(
    id: string,
  ): Promise<{ header: IncidentHeader; lines: string[]; signals: IncidentSignal[] }> {
    const { header, lines } = await this.#read(id);
    const signals: IncidentSignal[] = [];
    for (const line of lines.slice(1)) {
      const signal = readableSignal(line);
      if (signal !== null) signals.push(signal); // a damaged line is left out
    }
    if (
      header.incomplete !== null || signals.length === lines.length - 1 &&
        signals.length >= header.signals
    ) {
      return { header, lines, signals };
    }
    const samples = signals.reduce((n, x) => n + x.samples.length, 0);
    const damaged: IncidentHeader = {
      ...header,
      incomplete: "damaged",
      signals: signals.length,
      samples,
    };
    const i = this.#index.indexOf(header);
    if (i >= 0) this.#index[i] = damaged;
    this.#log.warn(
      `incident ${id}: damaged (${signals.length} of its ${header.signals} signal(s) readable, ` +
        `${samples} of ${header.samples} samples), listed as incomplete`,
    );
    return { header: damaged, lines, signals };
  }

  /**
   * A kept record's header and stored lines (its header line first). NOT_FOUND when it is not
   * kept, or when its file is gone (removed by hand, or by the count bound meanwhile): a missing
   * file reads as no line at all, never an empty record, and the record is no longer kept (the
   * listing and the counters drop it at once, not at the next start).
   */
  async #read(id: string): Promise<{ header: IncidentHeader; lines: string[] }> {
    const header = this.#index.find((h) => h.incident_id === id);
    if (header === undefined) {
      const why = this.#goneIds.get(id) ?? this.#notYet(id);
      throw notFound(`Incident not found: ${id}${why === undefined ? "" : ` (${why})`}`);
    }
    const lines: string[] = [];
    for await (const line of this.#o.files.readLines(this.#path(id), INCIDENT_MAX_LINE_BYTES)) {
      lines.push(line);
    }
    if (lines.length === 0) {
      const i = this.#index.indexOf(header);
      if (i >= 0) {
        this.#index.splice(i, 1);
        this.#log.warn(`incident ${id}: its file is gone, no longer listed`);
        this.#noteGone(id, "its file is gone");
      }
      // A bound that removed it while it was read says so, as it does to every later question.
      throw notFound(`Incident not found: ${id} (${this.#goneIds.get(id) ?? "its file is gone"})`);
    }
    return { header, lines };
  }

  /**
   * Why there is no record of an incident noted but not written yet (its run's `incident` event
   * links to it as it begins): its window is still open, or its record is being written.
   */
  #notYet(id: string): string | undefined {
    const p = this.#pending.find((x) => x.id === id);
    if (p === undefined) {
      return this.#writingIds.has(id)
        ? "not written yet: its window has closed, its record is being written; ask again"
        : undefined;
    }
    // Its timer runs on the monotonic clock: a wall clock stepped since it began (or an e-stop
    // re-dated to its FAULT entry) does not move when it closes.
    const clock = this.#o.clock;
    const closes = new Date(clock.nowMs() + Math.max(0, p.closesMono - clock.monoMs()))
      .toISOString();
    return `not written yet: its window closes at ${closes} (history.incident_after_s after ` +
      `it began); ask again then`;
  }

  // ---- triggers ------------------------------------------------------------------------------

  /** Every event of the bus passes here (state updates above all): one switch, nothing else. */
  #onEvent(e: RuntimeEvent): void {
    switch (e.kind) {
      case "estop_change":
        if (e.latched) this.#estopLatched(e.reason, e.cause ?? "unknown", e.timestamp_ms);
        else this.#awaitingOwnFault = null;
        return;
      case "mode_change":
        if (e.new_mode === "FAULT" && e.previous_mode !== "FAULT") {
          this.#faultEntered(`mode ${e.previous_mode} -> FAULT`, e.timestamp_ms);
        }
        return;
      case "alarm": {
        if (e.transition !== "raise") return;
        const device = alarmDevice(e.signal);
        // At its transition's time (its event's), not when the recorder is told.
        this.#trigger(
          "alarm",
          `alarm ${e.alarm_id}: ${e.cause ?? ""} ${e.message}`.trim(),
          device === null ? null : [device],
          e.timestamp_ms,
        );
        return;
      }
      case "device_availability":
        // With `outages`, a device is lost when it goes down (#onCondition).
        if (this.#o.outages !== undefined) return;
        // A device a reload took out left on purpose: not a loss.
        if (!e.available && e.reason !== "removed") {
          // At its failed poll's time (its event's), not when the recorder is told.
          this.#trigger(
            "device_loss",
            `device ${e.provider_id}/${e.device_id} lost`,
            [[e.provider_id, e.device_id]],
            e.timestamp_ms,
          );
        }
        return;
      default:
        return;
    }
  }

  /**
   * An e-stop latched at `latchedAtMs` (its estop_change's time) by `by`. It commits its FAULT
   * entry in the same step, that entry dated at or after the latch (read after it): the e-stop is
   * at that FAULT entry's time (its incident begins with both), whichever of the two events the
   * bus delivers first and however many turns apart. Its FAULT entry delivered before it is a
   * `fault` of the incident it joins dated at or after the latch; one delivered after it re-dates
   * it (#faultEntered). Latched in FAULT entered before it, it has none: it keeps its own time.
   */
  #estopLatched(reason: string | null, by: string, latchedAtMs: number): void {
    const pending = this.#joinable(this.#o.clock.monoMs());
    const own = pending === undefined
      ? undefined
      : [pending.lead, ...pending.also].find((c) =>
        c.trigger === "fault" && c.at_epoch_ms >= latchedAtMs
      );
    const t = this.#trigger("estop", estopCause(reason, by), null, own?.at_epoch_ms ?? latchedAtMs);
    const estop = t === null ? null : { p: t.p, c: t.c, by, latchedAtMs, began: t.began };
    this.#lastEstop = estop;
    this.#awaitingOwnFault = own === undefined ? estop : null;
  }

  /**
   * FAULT entered at `atMs` (its mode_change's time, not a clock read when it is delivered). The
   * FAULT entry of the e-stop awaiting its own (dated at or after its latch, of its incident)
   * re-dates that e-stop to its time, and the incident's when the e-stop began it.
   */
  #faultEntered(cause: string, atMs: number): void {
    const t = this.#trigger("fault", cause, null, atMs);
    const estop = this.#awaitingOwnFault;
    if (t === null || estop === null || estop.p !== t.p || atMs < estop.latchedAtMs) return;
    this.#awaitingOwnFault = null;
    if (estop.began) {
      estop.p.atMs = atMs;
      estop.p.leadMs = Math.max(0, atMs - estop.p.atWall);
    }
    this.#replaceCause(estop, { ...estop.c, at_epoch_ms: atMs });
  }

  /** Replaces an e-stop's cause in its incident (re-dated, or its reason arrived). */
  #replaceCause(estop: EstopTrigger, next: IncidentCause): void {
    const p = estop.p;
    if (p.lead === estop.c) p.lead = next;
    else {
      const i = p.also.indexOf(estop.c);
      if (i >= 0) p.also[i] = next;
    }
    const n = p.joinOrder.get(estop.c);
    if (n !== undefined) {
      p.joinOrder.delete(estop.c);
      p.joinOrder.set(next, n);
    }
    estop.c = next;
  }

  /**
   * A device went down (with `outages`): a device loss, dated from when its reads began failing
   * (its provider went down), so the window holds the failures that led to it. Not for a device
   * whose provider a reload took out or is restarting (one it restarts is followed afresh once
   * it is up again) -- but one whose restart the reload failed, or whose restarted provider no
   * longer lists it, is lost from when it was taken out.
   */
  #onCondition(c: DeviceConditionChange): void {
    const key = `${c.providerId}/${c.deviceId}`;
    if (c.condition.kind === "failing") {
      // Failing still, its start now known (DeviceOutages: failing as it came back, then its first
      // failed read or its provider's health reporting it UNREACHABLE): told at that start, as one
      // from up is -- a report between polls begins the spell before its next poll.
      const dated = c.previous === "failing" && c.condition.sinceMono !== null;
      if (c.previous === "up" || dated) {
        // Told before or after the ring records that read: its poll either way (none with a time
        // at or after it but that read, the wall clock stepped back or not); told at a report,
        // its next poll. Begun by a read, dated by its arrival (sinceWallMs), as the ring records
        // it and the cache dates its device_availability: one held behind another device's hung
        // read is told later.
        const wallMs = c.sinceWallMs ?? c.atWallMs;
        const seq = this.#o.history.pollSeqAtOrAfter(c.providerId, c.deviceId, wallMs);
        this.#setFailingAt(c, {
          wallMs,
          seq,
          sinceMono: c.condition.sinceMono,
          endSeq: null,
          timer: null,
          unwatch: null,
          marks: null,
        });
      } else if (c.previous === "down" && c.condition.sinceMono === null) {
        // Back, and failing before any read (it has not answered since): its next poll is its
        // first failed read, by poll order, whatever the wall clock does before its loss is found.
        const seq = this.#o.history.nextPollSeq(c.providerId, c.deviceId);
        this.#setFailingAt(c, {
          wallMs: null,
          seq,
          sinceMono: this.#o.clock.monoMs(),
          endSeq: null,
          timer: null,
          unwatch: null,
          marks: null,
        });
      }
      return;
    }
    const failingAt = this.#failingAt.get(key);
    const { kind, unconfigured, reloading } = c.condition;
    // Up again (a good answer), or no longer configured: its outage has ended.
    if (kind === "up" || unconfigured === true) this.#outageOf.delete(key);
    if (unconfigured === true) this.#lostWhileWritingGone((k) => k === key);
    // Failing as a reload restarting its provider takes it out: its spell's start is kept until
    // the reload's outcome is told -- lost (previousReloading), it is dated from its first failed
    // read, as one whose provider went down while it failed; listed again or gone, forgotten then.
    if (kind === "down" && reloading === true && unconfigured !== true) return;
    this.#forgetFailingAt(key);
    // A device whose provider a reload removes or restarts left on purpose: not lost -- unless
    // the reload then failed to start the provider it restarted, or its new process is up without
    // the device (previousReloading).
    const wasDown = c.previous === "down" && c.previousReloading !== true;
    if (kind !== "down" || wasDown || unconfigured || reloading) return;
    // This loss's own start: as told, but not before its failing spell began (FailingAt.sinceMono:
    // the condition's date may be an earlier loss's, the device not up since).
    const own = failingAt?.sinceMono ?? null;
    const told = c.condition.sinceMono;
    const since = own === null ? told : told === null ? own : Math.max(own, told);
    // How long ago it began, on the monotonic clock (a wall clock step does not change it).
    const ago = since === null ? 0 : Math.max(0, Math.round(this.#o.clock.monoMs() - since));
    // Dated as the ring stamped its first failed read (a wall clock step since then would move a
    // date counted back on the monotonic clock away from the samples), else by that read's
    // arrival when this change is its (down at once: held behind another device's hung read
    // longer than the bound -- also failing as it came back, whose FailingAt waits for that read,
    // which the ring records only after this is told: the outages are told of a poll first),
    // else counted back.
    const stamped = failingAt === undefined
      ? null
      : failingAt.wallMs ?? this.#o.history.pollTimeMs(c.providerId, c.deviceId, failingAt.seq);
    const at = stamped ?? c.sinceWallMs ?? c.atWallMs - ago;
    const why = c.condition.reason === "" ? "" : `: ${c.condition.reason}`;
    // Begins this loss's incident, `laterMs` after it was found (a write failing meanwhile); its
    // outage noted unless its provider is no longer configured by then (`gone`).
    const begin = (laterMs: number, gone = false) => {
      const t = this.#trigger(
        "device_loss",
        `device ${key} lost${why}`,
        [[c.providerId, c.deviceId]],
        at,
        ago + laterMs,
        stamped === null ? undefined : failingAt?.seq,
        failingAt?.endSeq ?? undefined,
        stamped === null ? undefined : failingAt?.marks ?? undefined,
      );
      if (t === null) return; // dropped: no incident to join
      this.#outageOf.delete(key);
      if (gone) return;
      if (this.#outageOf.size >= INCIDENT_OUTAGES_MAX) {
        this.#outageOf.delete(this.#outageOf.keys().next().value!);
      }
      this.#outageOf.set(key, t.p.id);
    };
    const outage = this.#outageOf.get(key);
    if (outage !== undefined) {
      const cause: IncidentCause = {
        trigger: "device_loss",
        cause: `device ${key} lost${why}`,
        at_epoch_ms: at,
      };
      // Its record being written: the same outage only if it is written (#write says which).
      if (this.#writingIds.has(outage) && !this.#pending.some((x) => x.id === outage)) {
        const foundMono = this.#o.clock.monoMs();
        let lost = this.#lostWhileWriting.get(outage);
        if (lost === undefined) this.#lostWhileWriting.set(outage, lost = new Map());
        // Lost again once more meanwhile: the first of them is where its own outage began.
        if (!lost.has(key)) {
          const l: LostWhileWriting = {
            cause,
            begin: () => begin(Math.max(0, Math.round(this.#o.clock.monoMs() - foundMono)), l.gone),
            gone: false,
          };
          lost.set(key, l);
        }
        return;
      }
      // Not up since its loss (its provider crashed and came back, the device failing still):
      // the same outage -- it joins that loss's incident, or, that one written, begins none.
      this.#lossAgain(outage, cause);
      return;
    }
    begin(0);
  }

  /**
   * A device lost again, not up since its loss began incident `id`: listed in that incident while
   * it waits for its window (its window as it was: the device is in it already), else no incident
   * at all -- its outage has its record -- and one INFO line says so.
   */
  #lossAgain(id: string, c: IncidentCause): void {
    const p = this.#pending.find((x) => x.id === id);
    if (p === undefined) {
      this.#log.info(
        `incident ${id}: ${quoteCause(c.cause)} again, not up since that loss: the same ` +
          `outage, no new incident`,
      );
      return;
    }
    p.joinOrder.set(c, p.joins++);
    // A device loss, the weakest trigger: it never leads.
    const listed = this.#list(p, c);
    if (p.told && listed) {
      const j: IncidentJoined = { ...c, incident_id: p.id, leads: false };
      this.#toTell(() => this.#tell(this.#joinListeners, j));
    }
  }

  /**
   * Holds where a failing device's reads began (#failingAt) and, for one whose first failed read
   * is its time (`sinceMono`), notes its next poll incident_after_s later on the monotonic clock
   * (FailingAt.endSeq): a loss found after that holds the polls before it, whatever the wall clock
   * did in between.
   */
  #setFailingAt(c: DeviceConditionChange, f: FailingAt): void {
    const key = `${c.providerId}/${c.deviceId}`;
    this.#forgetFailingAt(key);
    const history = this.#o.history;
    // Every device's marks, within INCIDENT_LOSS_MARKS_MAX failing devices holding them: counted
    // when they are taken (failing as it came back, at its next poll: those coming back together
    // hold none until then, so a count taken when each was told would let them all mark).
    const marking = () => {
      let held = 0;
      for (const other of this.#failingAt.values()) if (other.marks !== null) held++;
      return held < INCIDENT_LOSS_MARKS_MAX;
    };
    // Every device's first poll at or after `wallMs`, found now: the wall clock has not stepped
    // since that read (told in its step, or, failing as it came back, as it is recorded).
    const markFrom = (wallMs: number | null) => {
      const from = new Map<string, number>();
      for (const [providerId, deviceId] of history.devices()) {
        from.set(
          deviceHandle(providerId, deviceId),
          wallMs === null
            ? history.nextPollSeq(providerId, deviceId)
            : history.pollSeqAtOrAfter(providerId, deviceId, wallMs),
        );
      }
      f.marks = { from, fromNewSeq: history.newDevicePollSeq(), end: null };
    };
    const arm = (since: number) => {
      f.timer = this.#o.clock.setTimer(() => {
        f.timer = null;
        f.endSeq = history.nextPollSeq(c.providerId, c.deviceId);
        if (f.marks === null) return;
        const end = new Map<string, number>();
        for (const [providerId, deviceId] of history.devices()) {
          end.set(deviceHandle(providerId, deviceId), history.nextPollSeq(providerId, deviceId));
        }
        f.marks.end = { seq: end, newSeq: history.newDevicePollSeq() };
      }, Math.max(0, since + this.#o.config.incidentAfterS * 1000 - this.#o.clock.monoMs()));
    };
    const since = c.condition.sinceMono;
    if (f.wallMs !== null && marking()) markFrom(f.wallMs);
    if (f.wallMs !== null && since !== null) arm(since);
    else if (f.wallMs === null) {
      // Failing as it comes back: its first failed read is its next poll, timed when recorded.
      f.unwatch = history.onNextPoll(c.providerId, c.deviceId, (mono) => {
        f.unwatch = null;
        f.sinceMono = mono;
        if (marking()) markFrom(history.pollTimeMs(c.providerId, c.deviceId, f.seq));
        arm(mono);
      });
    }
    this.#failingAt.set(key, f);
  }

  /** Forgets a device's #failingAt, its timer cleared. */
  #forgetFailingAt(key: string): void {
    const f = this.#failingAt.get(key);
    if (f === undefined) return;
    if (f.timer !== null) this.#o.clock.clearTimer(f.timer);
    f.unwatch?.();
    this.#failingAt.delete(key);
  }

  /**
   * A provider the configuration no longer has (ProviderRegistry.onUnconfigured): the outages of
   * its devices end (#outageOf), as each listed one's does when told `unconfigured` -- also those
   * DeviceOutages tells nothing of (one a restart left out whose date it let go past
   * MAX_UNLISTED_DEVICE_DATES): a device of the same id that a provider configured again under
   * the id lists is another device, its loss an incident of its own; so does that of one lost
   * again while its loss's record is being written (#lostWhileWritingGone). Scans #outageOf (at
   * most INCIDENT_OUTAGES_MAX).
   */
  providerUnconfigured(providerId: string): void {
    const prefix = `${providerId}/`;
    for (const key of this.#outageOf.keys()) {
      if (key.startsWith(prefix)) this.#outageOf.delete(key);
    }
    this.#lostWhileWritingGone((key) => key.startsWith(prefix));
  }

  /**
   * Its devices lost again while a record is being written (#lostWhileWriting) whose provider is
   * no longer configured: that record not written, each still begins its own incident (lost
   * before the removal, as a pending incident of theirs is still written), but notes no outage
   * of a device that is gone. Scans #lostWhileWriting (at most INCIDENT_OUTAGES_MAX devices).
   */
  #lostWhileWritingGone(of: (key: string) => boolean): void {
    for (const lost of this.#lostWhileWriting.values()) {
      for (const [key, l] of lost) if (of(key)) l.gone = true;
    }
  }

  /**
   * An e-stop's reason still arriving (Estop.onReasonArriving, told in the step of its
   * `estop_change`): once it arrives it is the cause of that e-stop in its incident, whose record
   * waits for it (INCIDENT_REASON_WAIT_MS at most past its window).
   */
  estopReason(reason: Promise<string | null>): void {
    const t = this.#lastEstop;
    this.#lastEstop = null;
    if (t === null || !this.#pending.includes(t.p)) return;
    const p = t.p;
    const wait = reason.then((r) => {
      p.reasons.delete(wait);
      if (!r) return;
      this.#replaceCause(t, { ...t.c, cause: estopCause(r, t.by) });
    });
    p.reasons.add(wait);
  }

  /**
   * Notes a trigger: joins a pending incident or starts one. Gives the incident and the cause as
   * it holds it; null when dropped. A trigger dated `agoMs` back (a device loss, from its first
   * failed read) is read from the ring incident_after_s after that date, not after now: the ring
   * then needs to hold incident_before_s + incident_after_s, not the detection delay besides.
   * `fromSeq`: its first poll after that date, when known (its one device's: #noteAfterSeq).
   */
  #trigger(
    trigger: IncidentTrigger,
    cause: string,
    devices: DeviceParts[] | null,
    now = this.#o.clock.nowMs(),
    agoMs = 0,
    fromSeq?: number,
    endSeq?: number,
    lossMarks?: LossMarks,
  ): { p: Pending; c: IncidentCause; began: boolean } | null {
    const mono = this.#o.clock.monoMs();
    const c: IncidentCause = { trigger, cause, at_epoch_ms: now };
    const joined = this.#joinable(mono);
    if (joined !== undefined) {
      joined.joinOrder.set(c, joined.joins++);
      // A stronger trigger leads with its own time; the window stays around the first one's.
      let listed = true;
      if (rank(trigger) < rank(joined.lead.trigger)) {
        this.#list(joined, joined.lead);
        joined.lead = c;
      } else listed = this.#list(joined, c);
      if (devices === null) joined.devices = null;
      else if (joined.devices !== null) {
        for (const d of devices) joined.devices.set(`${d[0]}/${d[1]}`, d);
      }
      this.#noteAfterSeq(joined, devices, now, agoMs, fromSeq);
      this.#noteEndedSeq(joined, devices, agoMs, endSeq);
      if (devices === null) this.#resume(joined, now, mono);
      // Told once begun (the listeners were told of the incident without it): told it joined,
      // after this step too (the bus's listener does no more than queue it). One not listed is
      // not told either (the record counts it): the run's events follow the record's bound.
      if (joined.told && listed) {
        const j: IncidentJoined = { ...c, incident_id: joined.id, leads: joined.lead === c };
        this.#toTell(() => this.#tell(this.#joinListeners, j));
      }
      return { p: joined, c, began: false };
    }
    if (this.#pending.length >= MAX_PENDING_INCIDENTS && devices === null) {
      // An e-stop or a FAULT entry is never dropped for weaker triggers waiting (a flapping
      // device or alarm): the oldest waiting incident is written now, with the window so far.
      const oldest = this.#pending[0]!;
      this.#o.clock.clearTimer(oldest.timer);
      oldest.timer = null;
      this.#log.warn(
        `incident ${oldest.id} written early: ${MAX_PENDING_INCIDENTS} incidents are waiting ` +
          `for their window (MAX_PENDING_INCIDENTS) and ${trigger} needs one`,
      );
      this.#capture(oldest);
    }
    if (this.#pending.length >= MAX_PENDING_INCIDENTS) {
      this.#dropped++;
      if (!this.#refusalSaid) {
        this.#refusalSaid = true;
        this.#log.warn(
          `incident not captured: ${MAX_PENDING_INCIDENTS} incidents are waiting for their window ` +
            `(MAX_PENDING_INCIDENTS); ${trigger} ${quoteCause(cause)}`,
        );
      }
      return null;
    }
    const afterMs = this.#o.config.incidentAfterS * 1000;
    const atWall = this.#o.clock.nowMs();
    // The wall clock's step since the date, ahead or back (its reads' stamps move by as much).
    const stepped = atWall - (now + agoMs);
    const p: Pending = {
      id: `inc-${now}-${++this.#counter}`,
      atMono: mono,
      closesMono: mono + Math.max(0, afterMs - agoMs),
      atWall,
      leadMs: agoMs === 0 ? Math.max(0, now - atWall) : 0,
      atMs: now,
      lead: c,
      also: [],
      notListed: 0,
      joinOrder: new Map([[c, 0]]),
      joins: 1,
      devices: devices === null ? null : new Map(devices.map((d) => [`${d[0]}/${d[1]}`, d])),
      timer: null,
      afterSeq: new Map(),
      afterAt: new Map(),
      reasons: new Set(),
      specs: new Map(),
      told: false,
      endedMs: agoMs === 0 || agoMs < afterMs
        ? null
        : now + afterMs + (Math.abs(stepped) >= WALL_STEP_MS ? stepped : 0),
      endedSeq: new Map(),
      lossMarks: lossMarks ?? null,
      resumed: null,
    };
    this.#noteEndedSeq(p, devices, agoMs, endSeq);
    this.#noteAfterSeq(p, devices, now, agoMs, fromSeq);
    this.#pending.push(p);
    p.timer = this.#o.clock.setTimer(() => {
      p.timer = null;
      this.#capture(p);
    }, p.closesMono - mono);
    // Told once the triggers of this same step have joined (an e-stop publishes its FAULT entry
    // first, then its own event): the run's event names the incident's lead trigger.
    this.#toTell(() => {
      p.told = true;
      this.#tell(this.#listeners, {
        ...p.lead,
        at_epoch_ms: p.atMs,
        incident_id: p.id,
        also: [...p.also],
        triggers_not_listed: p.notListed,
      });
    });
    return { p, c, began: true };
  }

  /**
   * A machine-wide trigger at `atMs` (monotonic `mono`) joining an incident whose window ended
   * before it (a device loss found after its window: Pending.endedMs) gets an after-window of its
   * own: every device's polls from its next one on, the incident closing incident_after_s after
   * it -- so its own FAULT entry delivered a turn later joins it rather than beginning another.
   * The first such trigger's only: a later one within it is in it already.
   */
  #resume(p: Pending, atMs: number, mono: number): void {
    if (p.endedMs === null || p.resumed !== null) return;
    const history = this.#o.history;
    const seq = new Map<string, number>();
    for (const [providerId, deviceId] of history.devices()) {
      seq.set(deviceHandle(providerId, deviceId), history.nextPollSeq(providerId, deviceId));
    }
    p.resumed = { atMs, mono, wall: this.#o.clock.nowMs(), seq };
    const closes = mono + this.#o.config.incidentAfterS * 1000;
    if (closes <= p.closesMono) return;
    p.closesMono = closes;
    this.#o.clock.clearTimer(p.timer);
    p.timer = this.#o.clock.setTimer(() => {
      p.timer = null;
      this.#capture(p);
    }, closes - mono);
  }

  /**
   * Notes where a device loss found after its window (`agoMs` past incident_after_s) ends by poll
   * order (Pending.endedSeq), when its first failed read's timer noted it (`endSeq`): for the
   * loss that begins an incident cut by endedMs, and for one joining it.
   */
  #noteEndedSeq(
    p: Pending,
    devices: DeviceParts[] | null,
    agoMs: number,
    endSeq: number | undefined,
  ): void {
    const afterMs = this.#o.config.incidentAfterS * 1000;
    if (p.endedMs === null || endSeq === undefined || agoMs === 0 || agoMs < afterMs) return;
    if (devices?.length !== 1) return;
    p.endedSeq.set(deviceHandle(devices[0]![0], devices[0]![1]), endSeq);
  }

  /**
   * Lists `c` among the incident's other triggers (`also`), within INCIDENT_MAX_TRIGGERS: past it
   * the weakest of them and `c`, of those the last to join, is left out and counted. False when
   * that is `c`.
   */
  #list(p: Pending, c: IncidentCause): boolean {
    if (p.also.length < INCIDENT_MAX_TRIGGERS) {
      p.also.push(c);
      return true;
    }
    p.notListed++;
    const order = (x: IncidentCause) => p.joinOrder.get(x) ?? Infinity;
    let out = -1; // the index in `also` of the one left out; -1: `c`
    let worst = c;
    p.also.forEach((x, i) => {
      const weaker = rank(x.trigger) - rank(worst.trigger);
      if (weaker > 0 || weaker === 0 && order(x) > order(worst)) {
        out = i;
        worst = x;
      }
    });
    p.joinOrder.delete(worst);
    if (out < 0) return false;
    p.also.splice(out, 1);
    p.also.push(c);
    return true;
  }

  #tell<T>(listeners: readonly ((x: T) => void)[], x: T): void {
    for (const l of listeners) {
      try {
        l(x);
      } catch (err) {
        this.#log.warn(`incident listener failed: ${errorMessage(err)}`);
      }
    }
  }

  /**
   * The pending incident a trigger now joins: on the monotonic clock, so a step of the wall clock
   * between two triggers neither splits one incident nor joins two.
   */
  #joinable(mono: number): Pending | undefined {
    return this.#pending.find((p) => mono - p.atMono <= MERGE_WINDOW_MS);
  }

  /**
   * Notes where each device's polls after a trigger begin (Pending.afterSeq), and its signals as
   * declared now (Pending.specs), for the devices it names (every device the ring holds:
   * machine-wide), those noted by an earlier trigger of the incident kept. A trigger dated back
   * (`agoMs`, a device loss) begins at its first poll at or after its date: `fromSeq` when given
   * (found by poll order at its first failed read), else found by time now (among the polls since
   * the wall clock last stepped back).
   */
  #noteAfterSeq(
    p: Pending,
    devices: DeviceParts[] | null,
    at: number,
    agoMs: number,
    fromSeq?: number,
  ): void {
    const history = this.#o.history;
    // A machine-wide trigger joining a device loss's incident: each device marked at the loss's
    // first failed read is noted from there, by poll order, dated back from the loss's date, and
    // (found after its window) cut where that window ended -- not from the trigger's own time,
    // which lies past the loss's window (a step back of the wall clock since: before its date).
    // So too a device-scope trigger (an alarm) joining such an incident found after its window: by
    // its own time, past that window, its device's polls would be those between the window's end
    // and it, none of the window's (and after a step back of the wall clock since, none at all).
    const marks = devices === null || agoMs === 0 && p.endedMs !== null ? p.lossMarks : null;
    // Its time as the record dates the polls (Pending.leadMs): a trigger held ahead of the wall
    // clock by another amount than the incident's first one (an e-stop at its release before, an
    // alarm not held) is where the ring stamped its polls, moved by the incident's lead -- its own
    // date would date the polls before it from a time it did not happen at.
    const dated = (agoMs > 0 ? at : Math.min(at, this.#o.clock.nowMs())) + p.leadMs;
    for (const [providerId, deviceId] of devices ?? history.devices()) {
      const key = deviceHandle(providerId, deviceId);
      if (p.afterSeq.has(key)) continue;
      // Its units as its samples so far were polled in (a copy bounded by its signals).
      const specs = this.#unitSpecs(providerId, deviceId);
      if (specs !== undefined) p.specs.set(key, specs);
      if (marks !== null) {
        // One the ring did not hold at a mark (added by a reload, or first polled since): all its
        // polls lie after it (LossMarks.fromNewSeq, end.newSeq).
        p.afterSeq.set(key, marks.from.get(key) ?? marks.fromNewSeq);
        p.afterAt.set(key, p.atMs);
        const end = marks.end === null ? undefined : marks.end.seq.get(key) ?? marks.end.newSeq;
        if (p.endedMs !== null && end !== undefined && !p.endedSeq.has(key)) {
          p.endedSeq.set(key, end);
        }
        continue;
      }
      p.afterSeq.set(
        key,
        fromSeq ??
          (agoMs > 0
            ? history.pollSeqAtOrAfter(providerId, deviceId, at)
            : history.nextPollSeq(providerId, deviceId)),
      );
      p.afterAt.set(key, dated);
    }
  }

  /**
   * A device's signals' units and types as its samples were polled in, undefined when not known
   * (no inventory, or a device neither the ring nor the inventory knows). One rule: a signal the
   * ring notes units of has those its polls were recorded in (History.declaredUnits) -- a
   * rediscovery declaring another unit is not yet in its samples before the device's next poll,
   * and a provider restarting or failing to start lists it not at all -- and one it does not (a
   * signal never polled yet) has the inventory's. A copy, bounded by the device's signals.
   */
  #unitSpecs(providerId: string, deviceId: string): readonly UnitSpec[] | undefined {
    const inventory = this.#o.inventory;
    if (inventory === undefined) return undefined;
    const polled = this.#o.history.declaredUnits(providerId, deviceId);
    const declared = inventory.capabilities(providerId, deviceId)?.signals;
    if (polled === undefined || declared === undefined) return polled ?? declared;
    const held = new Set(polled.map((s) => s.signalId));
    return [...polled, ...declared.filter((s) => !held.has(s.signalId))];
  }

  /**
   * A rediscovery declares signals of a device with another type or unit (History.onRedeclare),
   * before a retyped signal's old series is released and before a sample of the new declaration is
   * recorded: each waiting incident whose window holds the device is written now, its window
   * ending here, so its record keeps those signals' lead-up in the type and unit they were polled
   * in. Their samples in the new type or unit are left out (a line has one type and one unit, and
   * a retype and a unit change are one rule): said here.
   */
  #onRedeclare(providerId: string, deviceId: string, r: HistoryRedeclared): void {
    const key = deviceHandle(providerId, deviceId);
    const first = (ids: readonly string[]) =>
      quoteProviderTextWithin(ids[0]!, HISTORY_QUOTED_SIGNAL_CHARS);
    const what = [
      ...(r.retyped.length > 0
        ? [`${r.retyped.length} signal(s) of another type, the first ${first(r.retyped)}`]
        : []),
      ...(r.unitChanged.length > 0
        ? [`${r.unitChanged.length} signal(s) in another unit, the first ${first(r.unitChanged)}`]
        : []),
    ].join(" and ");
    for (const p of [...this.#pending]) {
      if (p.devices !== null && !p.devices.has(key)) continue;
      if (p.timer !== null) this.#o.clock.clearTimer(p.timer);
      p.timer = null;
      this.#log.warn(
        `incident ${p.id} written early: its device ${
          quoteProviderTextWithin(`${providerId}/${deviceId}`, HISTORY_QUOTED_SIGNAL_CHARS)
        } was rediscovered with ${what}: the record keeps their samples up to now, in the type ` +
          `and unit they were polled in, and none after`,
      );
      this.#capture(p);
    }
  }

  // ---- capture -------------------------------------------------------------------------------

  #capture(p: Pending): void {
    const i = this.#pending.indexOf(p);
    if (i < 0) return;
    this.#pending.splice(i, 1);
    this.#refusalSaid = false; // a place is free: the next refusal is news
    this.#writingIds.add(p.id);
    if (p.reasons.size > 0) {
      // An e-stop's reason is still arriving: the record waits for it, bounded -- its window is
      // read now, as it closed: not one grown by the wait (the polls taken meanwhile), nor one the
      // ring let go of the start of (memory_seconds) or a rediscovery took signals from meanwhile.
      const writeRecord = this.#readWindow(p);
      const write = raceTimeout(
        this.#o.clock,
        Promise.all(p.reasons),
        INCIDENT_REASON_WAIT_MS,
        null,
      )
        .then(writeRecord);
      this.#writes.add(write);
      void write.finally(() => {
        this.#writes.delete(write);
        this.#writingIds.delete(p.id);
      });
      return;
    }
    const write = this.#readWindow(p)();
    this.#writes.add(write);
    void write.finally(() => {
      this.#writes.delete(write);
      this.#writingIds.delete(p.id);
    });
  }

  /**
   * Reads the incident's window from the ring now, and gives the write of its record: its header
   * (the triggers, their causes) is taken when it is written, an e-stop's reason arrived. The
   * window is clamped to what the ring holds: a device loss found long after its date (a device
   * polled once a minute) has a window older than memory_seconds, which the ring let go of; its
   * record then holds what the ring still has of the device up to now (its last reads, the
   * failure among them), from and until saying so, rather than a window with no sample in it.
   */
  #readWindow(p: Pending): () => Promise<void> {
    const at = p.atMs;
    // Written before its window passed (at stop, or early to make room for an e-stop): the record
    // ends where its samples do, now (counted on the monotonic clock from the trigger), not at
    // the end of a window it never saw.
    const mono = this.#o.clock.monoMs();
    const wall = this.#o.clock.nowMs();
    // A date held ahead of the wall clock (Pending.leadMs): the ring's polls are stamped `lead`
    // earlier than the record dates them.
    const lead = p.leadMs;
    const seen = p.atWall + lead + (mono - p.atMono);
    // A step of the wall clock ahead since the trigger (the first NTP synchronisation of a board
    // without a real-time clock): the polls since the step carry times later by the step, so the
    // window's end moves with it, or the rest of the window's polls would be left out.
    const step = wall - mono - (p.atWall - p.atMono);
    const ahead = step >= WALL_STEP_MS ? step : 0;
    const history = this.#o.history;
    const devices: readonly DeviceParts[] = p.devices === null
      ? history.devices()
      : [...p.devices.values()];
    // What the ring still holds: memory_seconds back from now, or from an older poll it kept (a
    // forward step of the wall clock leaves polls stamped before it: ring.ts).
    let held = wall - this.#o.config.memorySeconds * 1000;
    for (const [providerId, deviceId] of devices) {
      const oldest = history.oldestPollMs(providerId, deviceId);
      if (oldest !== null) held = Math.min(held, oldest);
    }
    held += lead;
    let from = Math.max(at - this.#o.config.incidentBeforeS * 1000, held);
    let until = Math.max(at, Math.min(at + this.#o.config.incidentAfterS * 1000, seen)) + ahead;
    // A device loss found after its window (Pending.endedMs): that window passed on the monotonic
    // clock, so it ends incident_after_s past its date -- not at the wall clock of its finding
    // counted back, which a step back between its date and its finding puts before that end.
    if (p.endedMs !== null) until = Math.max(until, at + this.#o.config.incidentAfterS * 1000);
    // The window read by poll order (below); not a window older than the ring (by time then).
    let byPolls = true;
    if (until < from) {
      byPolls = false;
      this.#log.warn(
        `incident ${p.id}: its window (${this.#o.config.incidentBeforeS} s before its ` +
          `first trigger at ${new Date(at).toISOString()}, ${this.#o.config.incidentAfterS} s ` +
          `after) is older than history.memory_seconds (${this.#o.config.memorySeconds}), found ` +
          `${Math.round((seen - at) / 1000)} s after it: the record holds what the ring still has`,
      );
      from = held;
      until = Math.max(held, seen + ahead);
    }
    // A machine-wide trigger's own after-window, after the window's end (Pending.resumed): up to
    // incident_after_s past it, or now when written before (on the monotonic clock), later by a
    // step of the wall clock ahead since it (its polls since carry times later by the step).
    const resumed = byPolls ? p.resumed : null;
    if (resumed !== null) {
      const afterMs = this.#o.config.incidentAfterS * 1000;
      const stepSince = wall - mono - (resumed.wall - resumed.mono);
      until = Math.max(
        until,
        resumed.atMs + Math.min(afterMs, Math.max(0, mono - resumed.mono)) +
          (stepSince >= WALL_STEP_MS ? stepSince : 0),
      );
    }
    from = Math.round(from);
    until = Math.round(until);
    const lines: string[] = [];
    let samples = 0;
    let latest = until;
    let lostSignals = 0;
    let firstLost: string | null = null;
    let droppedSignals = 0;
    let firstDropped: string | null = null;
    for (const [providerId, deviceId] of devices) {
      // The polls after the trigger are the window's whatever their times: a step back of the
      // wall clock since the trigger stamps them before it (by as much as the step).
      const afterSeq = p.afterSeq.get(deviceHandle(providerId, deviceId)) ?? Infinity;
      // Its polls taken after the window of a device loss found after it are not the window's.
      const closedSeq = p.endedMs === null || !byPolls ? Infinity : Math.max(
        afterSeq,
        p.endedSeq.get(deviceHandle(providerId, deviceId)) ??
          history.pollSeqAfter(providerId, deviceId, p.endedMs + ahead),
      );
      // ... but for those of a machine-wide trigger's own after-window (Pending.resumed).
      const resumedSeq = closedSeq === Infinity
        ? Infinity
        : resumed?.seq.get(deviceHandle(providerId, deviceId)) ?? Infinity;
      // The polls before the trigger are those of the time before it that passed, whatever their
      // times: a step back of the wall clock within it stamps the polls before the step ahead of
      // the trigger (DeviceRing.datesBefore), and dated by that -- the trigger that named the
      // device, when it joined after the first one (Pending.afterAt).
      const noted = Math.max(at, p.afterAt.get(deviceHandle(providerId, deviceId)) ?? at);
      const before = byPolls && afterSeq !== Infinity
        ? history.datesBefore(providerId, deviceId, afterSeq, noted - lead, noted - from)
        : null;
      // Units (and types) as its samples were polled in when a trigger named the device
      // (#unitSpecs); one the ring took up since, or a signal declared since (a reload added it),
      // as the same rule has them now.
      const declared = declarationsOf(
        p.specs.get(deviceHandle(providerId, deviceId)) ?? this.#unitSpecs(providerId, deviceId),
      );
      let declaredNow: ReturnType<typeof declarationsOf> | undefined;
      const declarationOf = (signalId: string) =>
        declared?.get(signalId) ??
          (declaredNow ??= declarationsOf(this.#unitSpecs(providerId, deviceId)))?.get(signalId);
      // The device's first poll the window reads: a signal whose ring lost changes from there on
      // (trimmedToSeq) has its samples begin later, and its line says where (from_epoch_ms).
      const windowFromSeq = before !== null
        ? before.fromSeq
        : history.pollSeqAtOrAfter(providerId, deviceId, from - lead);
      for (const signalId of history.signalIds(providerId, deviceId)) {
        const rows: [number, number | bigint | string | null, string][] = [];
        // A line has one unit, as it has one type: a signal whose unit a rediscovery changed
        // within the window, before the trigger, begins at the device's first poll in the new
        // unit, as a retyped one begins at its new series (a change after the trigger writes the
        // record before it: #onRedeclare) -- its samples polled in the old unit are left out, and
        // its line says where it begins (from_epoch_ms), never labelled with a unit not theirs.
        const unitFromSeq = history.unitSinceSeq(providerId, deviceId, signalId);
        // Times in poll order never fall: a poll after a step back is dated no earlier than the
        // one before it (as a run's events are).
        let last = -Infinity;
        const row = (s: RingSample) => {
          if (s.seq >= closedSeq && s.seq < resumedSeq) return;
          if (s.seq < unitFromSeq) return;
          const v = !s.hasValue ? null : s.ref !== null ? typedValueScalar(s.ref) : s.num;
          const date = lead +
            (before !== null && s.seq < afterSeq
              ? before.dates[s.seq - before.fromSeq]!
              : s.timeMs);
          last = Math.max(last, date);
          rows.push([
            last,
            typeof v === "number" && !Number.isFinite(v) ? null : v,
            qualityName(s.quality),
          ]);
        };
        const type = before !== null
          ? history.eachSampleFrom(providerId, deviceId, signalId, before.fromSeq, row)
          : history.eachSample(
            providerId,
            deviceId,
            signalId,
            from - lead,
            until - lead,
            row,
            afterSeq,
          );
        latest = Math.max(latest, last);
        // The ring lost this signal's changes at the window's first polls, not the device's (or
        // its unit changed within the window, above): the record has none of it before its first
        // sample (the window's end when it has none).
        const lost = unitFromSeq > windowFromSeq ||
          history.signalLostBeforeSeq(providerId, deviceId, signalId, windowFromSeq) >
            windowFromSeq;
        if (lost) {
          lostSignals++;
          firstLost ??= `${providerId}/${deviceId}/${signalId}`;
        }
        const line = {
          provider_id: providerId,
          device_id: deviceId,
          signal_id: signalId,
          // Its samples' type; a signal with none in the ring (never reported), as declared.
          value_type: type ?? declarationOf(signalId)?.type ?? "unknown",
          ...(declared === null ? {} : { unit: declarationOf(signalId)?.unit ?? "" }),
          ...(lost ? { from_epoch_ms: rows.length > 0 ? rows[0]![0] : until } : {}),
          samples: rows,
        };
        let text = toJsonText(line);
        if (utf8Length(text) > INCIDENT_MAX_LINE_BYTES) {
          const all = rows.length;
          line.samples = fitLine(rows, at, utf8Length(text));
          text = toJsonText(line);
          this.#log.warn(
            `incident ${p.id}: signal ${
              quoteProviderTextWithin(
                `${providerId}/${deviceId}/${signalId}`,
                HISTORY_QUOTED_SIGNAL_CHARS,
              )
            } keeps ${line.samples.length} ` +
              `of its ${all} samples, those nearest the trigger: a record's line is read back ` +
              `up to ${INCIDENT_MAX_LINE_BYTES} bytes (INCIDENT_MAX_LINE_BYTES)`,
          );
        }
        samples += line.samples.length;
        lines.push(text);
      }
      // Signals its device no longer declares since the window's first poll (a provider
      // restarted or reloaded describing it without them): their samples went with their rings.
      for (const signalId of history.releasedSince(providerId, deviceId, windowFromSeq)) {
        droppedSignals++;
        firstDropped ??= `${providerId}/${deviceId}/${signalId}`;
      }
    }
    if (firstDropped !== null) {
      this.#log.warn(
        `incident ${p.id}: no line for ${droppedSignals} signal(s) its devices stopped ` +
          `declaring within its window, the first ${
            quoteProviderTextWithin(firstDropped, HISTORY_QUOTED_SIGNAL_CHARS)
          } (a rediscovery -- its provider restarted or reloaded -- left them out: the ring ` +
          `released their samples)`,
      );
    }
    if (firstLost !== null) {
      this.#log.warn(
        `incident ${p.id}: the lines of ${lostSignals} signal(s) do not hold the start of the ` +
          `window, the first ${
            quoteProviderTextWithin(firstLost, HISTORY_QUOTED_SIGNAL_CHARS)
          } (the ring lost their older changes -- history.memory_max_bytes, a value too large ` +
          `to keep -- or a retype or a unit change began their line: a line has one type and ` +
          `one unit): each one's from_epoch_ms says where its samples begin`,
      );
    }
    const body = lines.map((l) => `${l}\n`).join("");
    const deviceNames = devices.map(([a, b]) => `${a}/${b}`);
    return () => {
      // Each trigger at its own time, said when it lies outside the window (OutsideWindow).
      const leadOutside = outsideWindow(p.lead.at_epoch_ms, from, latest);
      const headerBase = {
        incident_id: p.id,
        trigger: p.lead.trigger,
        cause: p.lead.cause,
        at_epoch_ms: at,
        trigger_at_epoch_ms: p.lead.at_epoch_ms,
        ...(leadOutside === null ? {} : { trigger_outside_window: leadOutside }),
        // A copy: a reason arriving after the record is written must not change its listing.
        also: p.also.map((c): ListedCause => {
          const outside = outsideWindow(c.at_epoch_ms, from, latest);
          return outside === null ? { ...c } : { ...c, outside_window: outside };
        }),
        triggers_not_listed: p.notListed,
        scope: p.devices === null ? "machine" as const : "devices" as const,
        devices: deviceNames,
        from_epoch_ms: from,
        until_epoch_ms: latest,
        signals: lines.length,
        samples,
        incomplete: null,
      };
      const bytesOf = (h: object) => utf8Length(JSON.stringify(h)) + 1 + utf8Length(body);
      // The header holds its own size: the digits of the size may change the size once.
      let bytes = bytesOf({ ...headerBase, bytes: 0 });
      bytes = bytesOf({ ...headerBase, bytes });
      const header: IncidentHeader = { ...headerBase, bytes };
      return this.#write(header, `${JSON.stringify(header)}\n${body}`);
    };
  }

  async #write(header: IncidentHeader, text: string): Promise<void> {
    const files = this.#o.files;
    try {
      await files.ensureDir(this.#o.dir);
      const path = this.#path(header.incident_id);
      const h = await files.openAppend(path);
      try {
        await h.append(text);
        await h.sync();
      } finally {
        // A close that throws neither hides a failed write nor drops a record written and fsync'd.
        closeHandle(h, (err) => {
          this.#log.warn(`closing ${path} failed (${errorMessage(err)}): it is let go`);
        });
      }
    } catch (err) {
      this.#dropped++;
      this.#noteGone(header.incident_id, "its record could not be written; the log says why");
      this.#unwritten.fail(`incident ${header.incident_id} not written: ${errorMessage(err)}`);
      // Its devices lost again meanwhile: their outage has no record, so each begins its own.
      const lost = this.#lostWhileWriting.get(header.incident_id);
      this.#lostWhileWriting.delete(header.incident_id);
      // (Not once stopped: a stopped recorder begins none.)
      if (this.#unsubscribeOutages !== null) { for (const l of lost?.values() ?? []) l.begin(); }
      await files.remove(this.#path(header.incident_id)).catch(() => {});
      return;
    }
    this.#unwritten.ok(header.incident_id);
    const lost = this.#lostWhileWriting.get(header.incident_id);
    this.#lostWhileWriting.delete(header.incident_id);
    // Its devices lost again meanwhile: the same outage, which has its record now.
    for (const l of lost?.values() ?? []) this.#lossAgain(header.incident_id, l.cause);
    this.#saveGone(); // one that failed with the disk before
    // In the order recorded (by the counter of its id), whatever order the writes ended in: an
    // e-stop's record waiting for its reason may be written after a later incident's.
    const n = idCounter(header.incident_id);
    let at = this.#index.length;
    while (at > 0 && idCounter(this.#index[at - 1]!.incident_id) > n) at--;
    this.#index.splice(at, 0, header);
    this.#log.info(
      `incident ${header.incident_id} recorded: ${header.trigger} ${quoteCause(header.cause)}, ` +
        `${header.signals} signal(s), ${header.samples} sample(s)`,
    );
    await this.#prune(header.incident_id);
  }

  /**
   * Notes a record not kept and why (#goneIds), forgetting the oldest past the bound, and has
   * INCIDENT_GONE_FILE say so (a restart's 404 says why as this process's does).
   */
  #noteGone(id: string, why: string): void {
    this.#keepGone(id, why);
    // An outage whose record is not kept has none: a later loss of its device begins its own.
    for (const [key, of] of this.#outageOf) if (of === id) this.#outageOf.delete(key);
    this.#goneChanged = true;
    this.#saveGone();
  }

  /** Keeps why a record is not kept in #goneIds, forgetting the oldest past the bound. */
  #keepGone(id: string, why: string): void {
    this.#goneIds.set(id, why);
    if (this.#goneIds.size > INCIDENT_GONE_IDS_MAX) {
      this.#goneIds.delete(this.#goneIds.keys().next().value!);
    }
  }

  /**
   * Writes INCIDENT_GONE_FILE while #goneIds has changes it lacks, one write at a time (waited for
   * as the records' writes are: settled(), stop()). A failed write (a full disk, whose records'
   * WARN says so) is said at DEBUG and tried again at the next change or record written.
   */
  #saveGone(): void {
    if (this.#goneSaving || !this.#goneChanged || this.#goneUnread || this.#leftBehind) return;
    this.#goneSaving = true;
    const save = (async () => {
      try {
        while (this.#goneChanged && !this.#leftBehind) {
          this.#goneChanged = false;
          await this.#writeGone();
        }
      } catch (err) {
        this.#goneChanged = true;
        this.#log.debug(
          `incident ids not kept: ${INCIDENT_GONE_FILE} not written: ${errorMessage(err)}`,
        );
      } finally {
        this.#goneSaving = false;
      }
    })();
    this.#writes.add(save);
    void save.finally(() => this.#writes.delete(save));
  }

  /** Replaces INCIDENT_GONE_FILE with #goneIds (replaceWhole: the old file stays if it fails). */
  async #writeGone(): Promise<void> {
    let text = "";
    for (const [id, why] of this.#goneIds) text += `${JSON.stringify({ incident_id: id, why })}\n`;
    await this.#o.files.ensureDir(this.#o.dir);
    await replaceWhole(this.#o.files, `${this.#o.dir}/${INCIDENT_GONE_FILE}`, text, {
      log: this.#log,
    });
  }

  /**
   * Reads INCIDENT_GONE_FILE into #goneIds (before the records: what the start's pruning notes
   * comes after); new ids go on past their counters. A line that does not parse as one written
   * here is left out; a file that cannot be read leaves the 404s without their reason (WARN) and
   * is left as it is (#goneUnread).
   */
  async #loadGone(): Promise<void> {
    const path = `${this.#o.dir}/${INCIDENT_GONE_FILE}`;
    try {
      for await (const line of this.#o.files.readLines(path, INCIDENT_GONE_LINE_MAX_BYTES)) {
        let entry: { incident_id?: unknown; why?: unknown };
        try {
          entry = JSON.parse(line);
        } catch {
          continue;
        }
        if (typeof entry?.incident_id !== "string" || typeof entry.why !== "string") continue;
        if (!INCIDENT_ID.test(entry.incident_id)) continue;
        this.#keepGone(entry.incident_id, entry.why);
        // Ids go on past these too (as past the records'): a run's link to one must never lead
        // to a new record a repeated millisecond gave its id.
        const n = idCounter(entry.incident_id);
        if (n < 2 ** 32) this.#counter = Math.max(this.#counter, n);
      }
    } catch (err) {
      this.#goneUnread = true;
      this.#log.warn(
        `incident ids not kept: ${path} not read: ${errorMessage(err)}; left as it is (the ids ` +
          `not kept from now on are said in 404s until a restart only)`,
      );
    }
  }

  /**
   * Removes records beyond incident_max_count and incident_max_bytes: the oldest that is not an
   * e-stop's first (a flapping device's losses must not push the e-stops out), an e-stop's only
   * when every record kept is one. One record is always kept, whatever its size. The record just
   * written (`written`) removed so is said (WARN): it was listed as recorded a moment before, and
   * its run's `incident` event links to it. A start's (`stopped`: the recorder stopped since it
   * began) and a write's stop() left behind (#leftBehind) remove no more once stopped.
   */
  async #prune(written: string | null = null, stopped = () => false): Promise<void> {
    const { incidentMaxCount, incidentMaxBytes } = this.#o.config;
    // The total is taken again after each removal waited for: another write's prune may have
    // removed records meanwhile (a total from before would remove one record too many).
    const bytes = () => this.#index.reduce((n, h) => n + h.bytes, 0);
    while (
      !this.#leftBehind && !stopped() &&
      this.#index.length > 1 &&
      (this.#index.length > incidentMaxCount || bytes() > incidentMaxBytes)
    ) {
      const bound = this.#index.length > incidentMaxCount
        ? `history.incident_max_count, ${incidentMaxCount}`
        : `history.incident_max_bytes, ${incidentMaxBytes}`;
      const i = this.#index.findIndex((h) => h.trigger !== "estop");
      const old = this.#index.splice(i < 0 ? 0 : i, 1)[0]!;
      this.#noteGone(
        old.incident_id,
        `removed by ${bound}: the oldest records make way for new ones`,
      );
      if (old.incident_id === written) {
        this.#log.warn(
          `incident ${written} removed as soon as written: every other record kept is an ` +
            `e-stop's (history.incident_max_count ${incidentMaxCount}, ` +
            `history.incident_max_bytes ${incidentMaxBytes}); raise them to keep more`,
        );
      }
      await this.#o.files.remove(this.#path(old.incident_id)).catch((err) =>
        this.#log.warn(`incident ${old.incident_id} not removed: ${errorMessage(err)}`)
      );
    }
  }

  /**
   * Reads the kept records' headers. A folder or a record that cannot be read (an I/O error, a
   * file where the folder should be) is the recorder's own trouble, never the start's (as a disk
   * tier that cannot be opened is the history's): a WARN, and what was not read is not listed.
   * Once `stopped` (the recorder stopped meanwhile) it changes nothing on disk: no file removed
   * (a removal under way, of a damaged file or by the bound, ends), INCIDENT_GONE_FILE not written.
   */
  async #loadIndex(stopped: () => boolean): Promise<void> {
    const files = this.#o.files;
    const headers: { header: IncidentHeader; n: number }[] = [];
    await this.#loadGone();
    let names: string[];
    try {
      names = await files.listNames(this.#o.dir);
    } catch (err) {
      this.#log.warn(
        `incident records not read: ${this.#o.dir}: ${errorMessage(err)}; none listed, new ` +
          `ones are written if the folder can be`,
      );
      return;
    }
    for (const name of names) {
      if (stopped()) return;
      const m = /^(inc-\d+-(\d+))\.jsonl$/.exec(name);
      if (!m) continue;
      // Ids go on from the highest counter on disk: a wall clock that repeats a millisecond of an
      // earlier process (a board without a real-time clock, a clock stepped back) must not give
      // a new incident the id, and so the file, of a kept one.
      const n = Number(m[2]);
      if (n < 2 ** 32) this.#counter = Math.max(this.#counter, n);
      let damage = "empty";
      try {
        // A record torn by a power cut after its header was written is shorter than the header
        // says: listed with what is readable of it, never as whole.
        const size = await files.fileSize(this.#path(m[1]!));
        let header: IncidentHeader | null = null;
        let signals = 0;
        let samples = 0;
        for await (const line of files.readLines(this.#path(m[1]!), INCIDENT_MAX_LINE_BYTES)) {
          if (header !== null) {
            const signal = readableSignal(line);
            if (signal !== null) {
              signals++;
              samples += signal.samples.length;
            }
            continue;
          }
          try {
            const h = JSON.parse(line) as IncidentHeader;
            if (h.incident_id === m[1] && typeof h.at_epoch_ms === "number") {
              // A record written before the lead's own time was kept: its lead began it.
              const triggerAt = typeof h.trigger_at_epoch_ms === "number"
                ? h.trigger_at_epoch_ms
                : h.at_epoch_ms;
              header = {
                ...h,
                trigger_at_epoch_ms: triggerAt,
                // Records written before the bound was kept list every trigger.
                triggers_not_listed: typeof h.triggers_not_listed === "number"
                  ? h.triggers_not_listed
                  : 0,
                incomplete: null,
              };
              damage = "";
            } else damage = "a header not of this incident";
          } catch {
            damage = "a damaged header";
          }
          if (header === null || !(size < header.bytes)) break;
        }
        if (header !== null && size < header.bytes) {
          this.#log.warn(
            `incident file ${name}: torn (${size} of its ${header.bytes} bytes; ${signals} of ` +
              `its ${header.signals} signal(s) readable, ${samples} of ${header.samples} ` +
              `samples), listed as incomplete`,
          );
          header = { ...header, incomplete: "torn", signals, samples, bytes: size };
        }
        if (header !== null) headers.push({ header, n });
      } catch (err) {
        // Not known to be damaged: left where it is, not listed.
        this.#log.warn(`incident file ${name}: not read (${errorMessage(err)}), not listed`);
        continue;
      }
      if (damage === "" || stopped()) continue;
      // Never listed nor served, and counted by no bound (a crash while it was written): without
      // this its bytes would hold disk beyond incident_max_bytes for good.
      await files.remove(this.#path(m[1]!)).then(
        () => this.#log.warn(`incident file ${name}: ${damage}, removed`),
        (err) =>
          this.#log.warn(
            `incident file ${name}: ${damage}, left out; not removed: ${errorMessage(err)}`,
          ),
      );
    }
    // In the order they were recorded: by the counter of their ids, which goes on across
    // restarts. Their wall times may say otherwise (a board that booted without its real-time
    // clock stamps a newer record earlier), and the bound removes the oldest first.
    if (stopped()) return;
    this.#index = headers.sort((a, b) => a.n - b.n || a.header.at_epoch_ms - b.header.at_epoch_ms)
      .map((e) => e.header);
    // A record put back by hand is kept, not gone: its id leaves INCIDENT_GONE_FILE (a removal
    // later notes it again as the newest, not in the place of its first).
    for (const h of this.#index) {
      if (!this.#goneIds.delete(h.incident_id)) continue;
      this.#goneChanged = true;
      this.#log.info(
        `incident ${h.incident_id}: its record is back, no longer listed as not kept`,
      );
    }
    this.#saveGone();
    await this.#prune(null, stopped);
  }

  #path(id: string): string {
    return `${this.#o.dir}/${id}.jsonl`;
  }
}

/**
 * The samples of a signal whose line (`bytes` long with all of them) would be longer than
 * INCIDENT_MAX_LINE_BYTES: those farthest in time from the trigger (`atMs`) are left out, from
 * either end, until the line fits (a sample too long on its own leaves none).
 */
function fitLine<T extends readonly [number, unknown, string]>(
  rows: readonly T[],
  atMs: number,
  bytes: number,
): T[] {
  let lo = 0;
  let hi = rows.length; // rows[lo, hi) are kept
  while (bytes > INCIDENT_MAX_LINE_BYTES && lo < hi) {
    const i = atMs - rows[lo]![0] >= rows[hi - 1]![0] - atMs ? lo++ : --hi;
    bytes -= utf8Length(toJsonText(rows[i])) + 1; // and its comma
  }
  return rows.slice(lo, hi);
}

/** A signal line of a record, or null when it does not parse as one (torn, damaged). */
function readableSignal(line: string): IncidentSignal | null {
  try {
    const s = parseSignalLine(line);
    return typeof s === "object" && s !== null && Array.isArray(s.samples) ? s : null;
  } catch {
    return null;
  }
}

/** A run of digits longer than any integer a double holds exactly (2^53 has 16 digits). */
const LONG_DIGITS = /\d{16}/;
const INTEGER_TEXT = /^-?\d+$/;

/**
 * A signal line of a record. A sample's value that is an integer no double holds (an int64 or
 * uint64 beyond +/-2^53, written with every digit) is read back as a bigint, so the answers write
 * it as stored; lines without a long run of digits are parsed the fast way.
 */
function parseSignalLine(line: string): IncidentSignal {
  if (!LONG_DIGITS.test(line)) return JSON.parse(line) as IncidentSignal;
  return JSON.parse(line, function (
    this: unknown,
    key: string,
    value: unknown,
    context?: { readonly source?: string },
  ) {
    // Element 1 of a sample `[t_ms, value, quality]`.
    if (
      key === "1" && typeof value === "number" && !Number.isSafeInteger(value) &&
      Array.isArray(this) && this.length === 3 && context?.source !== undefined &&
      INTEGER_TEXT.test(context.source)
    ) return BigInt(context.source);
    return value;
  }) as IncidentSignal;
}

/**
 * A device's declared units by signal (cut to INCIDENT_UNIT_MAX_CHARS), "" for none, with their
 * declared types (null: unspecified or not known); null when its declaration is not known (no
 * inventory, a device it never described).
 */
function declarationsOf(
  specs: readonly UnitSpec[] | undefined,
): Map<string, { unit: string; type: SignalSpec["valueType"] }> | null {
  if (specs === undefined) return null;
  return new Map(
    specs.map((s) => [
      s.signalId,
      { unit: providerTextWithin(s.unit, INCIDENT_UNIT_MAX_CHARS), type: s.valueType },
    ]),
  );
}

/** A cause in a log line: quoted and cut (INCIDENT_QUOTED_CAUSE_CHARS). */
function quoteCause(cause: string): string {
  return quoteProviderTextWithin(cause, INCIDENT_QUOTED_CAUSE_CHARS);
}

/** An e-stop's cause: its reason (cut to INCIDENT_REASON_MAX_CHARS) and what latched it. */
function estopCause(reason: string | null, by: string): string {
  if (!reason) return `e-stop (${by})`;
  const chars = [...reason];
  const text = chars.length > INCIDENT_REASON_MAX_CHARS
    ? `${chars.slice(0, INCIDENT_REASON_MAX_CHARS).join("")}\u2026`
    : reason;
  return `e-stop: ${text} (${by})`;
}

/**
 * The device of an alarm's `provider/device/signal`, split as the configuration reads it (a
 * provider and a signal id hold no "/", a device id may); null when it is not of that shape.
 */
function alarmDevice(signal: string): DeviceParts | null {
  const first = signal.indexOf("/");
  const last = signal.lastIndexOf("/");
  if (first <= 0 || last <= first + 1 || last === signal.length - 1) return null;
  return [signal.slice(0, first), signal.slice(first + 1, last)];
}

/** An incident id: `inc-<ms>-<counter>`. */
const INCIDENT_ID = /^inc-\d+-\d+$/;

/** The counter of an incident id (`inc-<ms>-<counter>`): the order incidents were recorded in. */
function idCounter(id: string): number {
  return Number(id.slice(id.lastIndexOf("-") + 1));
}

function rank(t: IncidentTrigger): number {
  return INCIDENT_TRIGGERS.indexOf(t);
}

/**
 * An incident as CSV: `provider_id,device_id,signal_id,t_ms,value,quality,unit,from_epoch_ms`;
 * `unit` is the signal's unit as the record keeps it, empty when it declared none (or the record
 * keeps none); `from_epoch_ms` the signal line's (where its samples begin when the ring had lost
 * its earlier changes in the window, or a retype or a unit change began its line), empty when its
 * samples cover the record's window. One line
 * per sample: a signal with none has no line.
 */
export function incidentCsv(signals: readonly IncidentSignal[]): string {
  let out = "provider_id,device_id,signal_id,t_ms,value,quality,unit,from_epoch_ms\r\n";
  for (const s of signals) {
    const unit = csvField(s.unit ?? "");
    const from = typeof s.from_epoch_ms === "number" ? String(s.from_epoch_ms) : "";
    for (const [t, v, q] of s.samples) {
      out += `${csvField(s.provider_id)},${csvField(s.device_id)},${csvField(s.signal_id)},${t},${
        v === null ? "" : csvField(String(v))
      },${q},${unit},${from}\r\n`;
    }
  }
  return out;
}

/** One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. */
export function csvField(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
