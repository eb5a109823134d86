/**
 * The audit trail (issue 21): every decision on an actuating call, mode change, parameter set,
 * e-stop and clear, with who asked (AuditOrigin), kept in an append-only JSONL journal under
 * `<runtime.data_dir>/audit/` and served by GET /v0/audit.
 *
 * - Recording never blocks and never throws: `record` builds the entry synchronously and queues
 *   it (at most AUDIT_QUEUE_MAX_ENTRIES wait for the disk; more are dropped and counted). One
 *   writer appends each batch in one write per file and fsyncs within AUDIT_SYNC_INTERVAL_MS. A write that fails (full disk, read-only folder) is
 *   counted, shown in status() (GET /v0/providers/health `audit`) and metrics, and the entries
 *   of that batch are dropped; the next batch tries again.
 * - Collapse: consecutive identical call decisions (same action, origin, device, function, args,
 *   outcome, reason and mode) are one entry with `count` and first/last times. The open entry is
 *   closed by a different decision, after AUDIT_COLLAPSE_MAX_OPEN_MS, by a read (GET /v0/audit)
 *   and at shutdown. Calls and untrusted refusals (below) collapse; mode, parameter and e-stop
 *   entries are written as they happen.
 * - Untrusted refusals (refusedUntrusted: a request with no valid token, from a foreign web page,
 *   or under a role without the right; anyone who can reach the port can cause them): at most
 *   AUDIT_UNTRUSTED_PER_WINDOW entries per AUDIT_UNTRUSTED_WINDOW_MS are written one by one
 *   (identical consecutive ones collapse and count once); the rest of the window is summed up in
 *   one entry, so that a flood of refused requests can neither rotate the record of what was done
 *   out of the journal nor fill its queue.
 * - Rotation: segments `audit-00000001.jsonl`, `audit-00000002.jsonl`, ... A segment that would
 *   grow past `audit.max_file_bytes` is closed and the next one begun; beyond `audit.max_files`
 *   segments the oldest is removed. Segment numbers never repeat, so a cursor (segment, byte
 *   offset) stays valid across rotation; a cursor into a removed segment resumes at the oldest.
 * - Without a journal (openJournal not called: a runtime embedded in tests) the trail keeps
 *   the last AUDIT_MEMORY_ENTRIES entries in memory and answers queries from them.
 */
import { type Clock, invalidArgument, type Logger, toJsonText } from "../common/mod.ts";
import type {
  AuditAction,
  AuditDecision,
  AuditOrigin,
  AuditOriginKind,
  AuditOutcome,
  AuditSink,
} from "../control/mod.ts";
import type { JournalAppendHandle } from "../journal/mod.ts";
import type { AuditFiles } from "./audit_files.ts";

/** Entries waiting for the disk; past it new entries are dropped and counted. */
export const AUDIT_QUEUE_MAX_ENTRIES = 1000;
/** Entries kept in memory when there is no journal. */
export const AUDIT_MEMORY_ENTRIES = 1000;
/** Longest time a collapsed entry stays open (unwritten) after its first call. */
export const AUDIT_COLLAPSE_MAX_OPEN_MS = 5000;
/** Untrusted refusals written one by one per AUDIT_UNTRUSTED_WINDOW_MS; the rest are summed up. */
export const AUDIT_UNTRUSTED_PER_WINDOW = 60;
/** The window of AUDIT_UNTRUSTED_PER_WINDOW, in ms. */
export const AUDIT_UNTRUSTED_WINDOW_MS = 60_000;
/** Page sizes of GET /v0/audit. */
export const AUDIT_PAGE_LIMIT = { default: 100, max: 1000 } as const;
/** Bytes of journal one GET /v0/audit reads at most; past it the page ends with a cursor. */
export const AUDIT_SCAN_MAX_BYTES = 8 * 1024 * 1024;
/** Largest journal line; longer entries have their args and result replaced by a note. */
export const AUDIT_MAX_ENTRY_BYTES = 16 * 1024;
/** How long a recorded entry may wait for the writer (entries are written in batches). */
export const AUDIT_WRITE_BATCH_MS = 50;
/** Longest time between an entry's write and its fsync. */
export const AUDIT_SYNC_INTERVAL_MS = 1000;
/** How long a read waits for queued entries to reach the journal before it reads anyway. */
export const AUDIT_READ_FLUSH_TIMEOUT_MS = 2000;
/** Defaults of `audit.max_file_bytes` and `audit.max_files`. */
export const AUDIT_DEFAULTS = { maxFileBytes: 16 * 1024 * 1024, maxFiles: 8 } as const;

const SEGMENT_RE = /^audit-(\d{8})\.jsonl$/;

/** One entry as written to the journal and served by GET /v0/audit. */
export interface AuditEntry {
  /** Runtime-wide order of closing (restarts at 1 with the process; not an id across restarts). */
  seq: number;
  /** The first decision's time (= first_time_epoch_ms). */
  time_epoch_ms: number;
  first_time_epoch_ms: number;
  last_time_epoch_ms: number;
  /** Decisions this entry stands for (> 1: collapsed). */
  count: number;
  origin: AuditOrigin;
  action: AuditAction;
  device_handle: string | null;
  function: string | null;
  args: Readonly<Record<string, unknown>> | null;
  /** The runtime mode when the (first) decision was made. */
  mode: string;
  outcome: AuditOutcome;
  reason: string | null;
  refused_by: string | null;
  /** The last decision's result. */
  result: Readonly<Record<string, unknown>> | null;
  /** The last decision's latency. */
  latency_ms: number | null;
}

/** Journal health (GET /v0/providers/health `audit`). */
export interface AuditStatus {
  /** `memory`: no journal (entries in memory only); `ok`; `failing`: the last write failed. */
  journal: "memory" | "ok" | "failing";
  /** The journal folder, or null without one. */
  path: string | null;
  entries_total: number;
  write_errors_total: number;
  dropped_total: number;
  queued: number;
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

/** A page of entries, oldest first; `next_cursor` null when nothing follows (yet). */
export interface AuditPage {
  entries: AuditEntry[];
  next_cursor: string | null;
}

/** Timers for the collapse bound (injected so tests can run them by hand). */
export interface AuditTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export interface AuditTrailOptions {
  readonly clock: Clock;
  readonly log: Logger;
  /** The current runtime mode, stamped on every entry. */
  readonly mode: () => string;
  readonly timers?: AuditTimers;
}

/** Where the journal lives and its bounds (`audit.*`). */
export interface AuditJournalOptions {
  /** Absolute folder (`<runtime.data_dir>/audit`). */
  readonly dir: string;
  readonly files: AuditFiles;
  readonly maxFileBytes: number;
  readonly maxFiles: number;
}

/** Called with every entry once it is closed (the run registry records calls as run events). */
export type AuditEntryListener = (entry: AuditEntry) => void;

interface Journal extends AuditJournalOptions {
  segment: number;
  size: number;
  handle: JournalAppendHandle | null;
  needsNewline: boolean;
}

const defaultTimers: AuditTimers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as number),
};

/** The audit trail; the AuditSink of the router, modes, parameters and e-stop. */
export class AuditTrail implements AuditSink {
  readonly #o: AuditTrailOptions;
  readonly #log: Logger;
  readonly #timers: AuditTimers;
  #open: { key: string; entry: AuditEntry; timer: unknown } | null = null;
  /** Untrusted refusals: this window's start and entries written; the summing-up entry. */
  #untrusted: {
    windowStart: number;
    written: number;
    over: { entry: AuditEntry; firstReason: string; timer: unknown } | null;
  } = { windowStart: -Infinity, written: 0, over: null };
  #seq = 0;
  #entriesTotal = 0;
  #writeErrors = 0;
  #dropped = 0;
  #lastError: string | null = null;
  #lastErrorAt: number | null = null;
  #failing = false;
  readonly #memory: AuditEntry[] = [];
  #journal: Journal | null = null;
  #queue: AuditEntry[] = [];
  #writing: Promise<void> | null = null;
  readonly #listeners: AuditEntryListener[] = [];
  /** After seal(): nothing collapses any more (no timer outlives the runtime). */
  #sealed = false;
  #syncTimer: unknown = null;
  #batchTimer: unknown = null;
  /** An fsync is due (the sync timer fired, or close()). */
  #syncDue = false;

  constructor(options: AuditTrailOptions) {
    this.#o = options;
    this.#log = options.log.child("audit");
    this.#timers = options.timers ?? defaultTimers;
  }

  /** Records one decision (collapsing a repeat of the open call entry). Never throws. */
  record(d: AuditDecision): void {
    try {
      const now = this.#o.clock.nowMs();
      const mode = this.#o.mode();
      this.#record(d, d.action === "call" ? this.#key(d, mode) : null, now, mode);
    } catch (err) {
      // Never let the record break a call or a stop.
      this.#log.error(`audit entry not recorded: ${err instanceof Error ? err.message : err}`);
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
      const now = this.#o.clock.nowMs();
      const mode = this.#o.mode();
      const key = this.#key(decision, mode);
      const u = this.#untrusted;
      if (now - u.windowStart >= AUDIT_UNTRUSTED_WINDOW_MS) {
        this.#closeUntrusted();
        u.windowStart = now;
        u.written = 0;
      }
      // An identical refusal counts into the open entry (there is none once refusals are being
      // summed up: the first of them closed it).
      if (this.#sealed || this.#collapses(key, now)) {
        this.#record(decision, key, now, mode);
        return;
      }
      if (u.written < AUDIT_UNTRUSTED_PER_WINDOW) {
        u.written++;
        this.#record(decision, key, now, mode);
        return;
      }
      if (u.over !== null) {
        u.over.entry.count++;
        u.over.entry.last_time_epoch_ms = now;
        return;
      }
      // A different decision closes the open entry, as in #record.
      this.#closeOpen();
      const entry = this.#entry(decision, now, mode);
      const timer = this.#timers.set(
        () => this.#closeUntrusted(),
        u.windowStart + AUDIT_UNTRUSTED_WINDOW_MS - now,
      );
      u.over = { entry, firstReason: decision.reason ?? "", timer };
    } catch (err) {
      this.#log.error(`audit entry not recorded: ${err instanceof Error ? err.message : err}`);
    }
  }

  /** Subscribes to closed entries. */
  onEntry(listener: AuditEntryListener): void {
    this.#listeners.push(listener);
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

  /** True when a decision with this key counts into the open entry. */
  #collapses(key: string, now: number): boolean {
    const open = this.#open;
    return open !== null && open.key === key &&
      now - open.entry.first_time_epoch_ms < AUDIT_COLLAPSE_MAX_OPEN_MS;
  }

  /**
   * Records `d` at `now` in `mode`: counted into the open entry when `key` matches it, else a new
   * entry, kept open for repeats when it has a key (calls, untrusted refusals), written at once
   * when not (`key` null).
   */
  #record(d: AuditDecision, key: string | null, now: number, mode: string): void {
    const open = this.#open;
    if (open !== null && key !== null && this.#collapses(key, now)) {
      const e = open.entry;
      e.count++;
      e.last_time_epoch_ms = now;
      e.result = d.result ?? null;
      e.latency_ms = d.latency_ms ?? null;
      return;
    }
    this.#closeOpen();
    const entry = this.#entry(d, now, mode);
    if (key === null || this.#sealed) {
      this.#emit(entry);
      return;
    }
    const timer = this.#timers.set(() => {
      if (this.#open?.entry === entry) this.#closeOpen();
    }, AUDIT_COLLAPSE_MAX_OPEN_MS);
    this.#open = { key, entry, timer };
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
    this.#timers.clear(over.timer);
    const e = over.entry;
    e.reason = `${e.count} refusal${e.count === 1 ? "" : "s"} of requests not allowed to act, ` +
      `over the ${AUDIT_UNTRUSTED_PER_WINDOW} per ${AUDIT_UNTRUSTED_WINDOW_MS / 1000} s ` +
      `written one by one, summed up here (origins, actions and reasons may differ); ` +
      `the first: ${over.firstReason}`;
    this.#closeOpen();
    this.#emit(e);
  }

  /** Closes the open (collapsing) entry: it is queued for the journal. */
  #closeOpen(): void {
    const open = this.#open;
    if (!open) return;
    this.#open = null;
    this.#timers.clear(open.timer);
    this.#emit(open.entry);
  }

  #emit(entry: AuditEntry): void {
    entry.seq = ++this.#seq;
    this.#entriesTotal++;
    for (const listener of this.#listeners) {
      try {
        listener(entry);
      } catch (err) {
        this.#log.error(`audit listener failed: ${err instanceof Error ? err.message : err}`);
      }
    }
    if (!this.#journal) {
      this.#memory.push(entry);
      if (this.#memory.length > AUDIT_MEMORY_ENTRIES) this.#memory.shift();
      return;
    }
    if (this.#queue.length >= AUDIT_QUEUE_MAX_ENTRIES) {
      if (this.#dropped++ === 0) {
        this.#log.error(
          `audit journal too slow: ${AUDIT_QUEUE_MAX_ENTRIES} entries waiting, new ones are dropped`,
        );
      }
      return;
    }
    this.#queue.push(entry);
    // Entries are written in batches: a burst of calls costs one write, not one per call.
    if (this.#queue.length >= AUDIT_QUEUE_MAX_ENTRIES / 2) this.#kick();
    else if (this.#batchTimer === null) {
      this.#batchTimer = this.#timers.set(() => {
        this.#batchTimer = null;
        this.#kick();
      }, AUDIT_WRITE_BATCH_MS);
    }
  }

  /**
   * Starts journaling into `options.dir` (created when missing): appends to the newest segment
   * when it has room. Entries recorded before (memory) are queued for it. Never throws: a folder
   * that cannot be used is reported like a failed write, and writing is retried per batch.
   */
  async openJournal(options: AuditJournalOptions): Promise<void> {
    const journal: Journal = { ...options, segment: 1, size: 0, handle: null, needsNewline: false };
    try {
      await options.files.ensureDir(options.dir);
      const segments = await this.#segments(journal);
      if (segments.length > 0) journal.segment = segments[segments.length - 1];
    } catch (err) {
      this.#writeFailed(err, 0);
    }
    this.#journal = journal;
    this.#queue.push(...this.#memory.splice(0));
    this.#kick();
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

  /** Seals, writes what is queued (one more try after a failure) and closes the journal. */
  async close(): Promise<void> {
    this.seal();
    if (this.#syncTimer !== null) this.#timers.clear(this.#syncTimer);
    if (this.#batchTimer !== null) this.#timers.clear(this.#batchTimer);
    this.#syncTimer = null;
    this.#batchTimer = null;
    this.#syncDue = this.#journal?.handle != null;
    this.#kick();
    await this.#writing;
    this.#kick(); // what was queued while the last batch was written
    await this.#writing;
    this.#journal?.handle?.close();
    if (this.#journal) this.#journal.handle = null;
  }

  /** Closes the open entry (a read or a test wants everything recorded so far). */
  flushOpen(): void {
    this.#closeOpen();
    this.#closeUntrusted();
  }

  status(): AuditStatus {
    return {
      journal: this.#journal === null ? "memory" : this.#failing ? "failing" : "ok",
      path: this.#journal?.dir ?? null,
      entries_total: this.#entriesTotal,
      write_errors_total: this.#writeErrors,
      dropped_total: this.#dropped,
      queued: this.#queue.length,
      last_error: this.#lastError,
      last_error_at_epoch_ms: this.#lastErrorAt,
    };
  }

  // ---- writing ----------------------------------------------------------------------------------

  #kick(): void {
    if (this.#writing || !this.#journal) return;
    this.#writing = this.#drain().finally(() => {
      this.#writing = null;
      // Entries queued while the last batch was failing wait for the next record (no hot loop).
    });
  }

  async #drain(): Promise<void> {
    const journal = this.#journal!;
    while (this.#queue.length > 0 || this.#syncDue) {
      const batch = this.#queue.splice(0);
      try {
        if (batch.length > 0) {
          await this.#append(journal, batch.map(entryLine));
          this.#scheduleSync();
        } else if (this.#syncDue) {
          this.#syncDue = false;
          await journal.handle?.sync();
        }
        if (this.#failing) {
          this.#failing = false;
          this.#log.info(`audit journal writable again: ${journal.dir}`);
        }
      } catch (err) {
        journal.handle?.close();
        journal.handle = null;
        this.#syncDue = false;
        this.#writeFailed(err, batch.length);
        return;
      }
    }
  }

  /** Entries reach the OS at once; fsync follows within AUDIT_SYNC_INTERVAL_MS (and at close). */
  #scheduleSync(): void {
    if (this.#syncTimer !== null) return;
    this.#syncTimer = this.#timers.set(() => {
      this.#syncTimer = null;
      this.#syncDue = true;
      this.#kick();
    }, AUDIT_SYNC_INTERVAL_MS);
  }

  /** Appends the lines, as many per write as fit the current segment (at least one). */
  async #append(journal: Journal, lines: string[]): Promise<void> {
    let i = 0;
    while (i < lines.length) {
      await this.#openSegment(journal, utf8Length(lines[i]));
      let text = journal.needsNewline ? "\n" : "";
      let size = journal.size + text.length;
      do {
        text += lines[i];
        size += utf8Length(lines[i]);
        i++;
      } while (i < lines.length && size + utf8Length(lines[i]) <= journal.maxFileBytes);
      await journal.handle!.append(text);
      journal.needsNewline = false;
      journal.size = size;
    }
  }

  /** Makes the current segment ready for a line of `bytes`: rotates when it would overflow. */
  async #openSegment(journal: Journal, bytes: number): Promise<void> {
    if (
      journal.handle !== null && journal.size > 0 && journal.size + bytes > journal.maxFileBytes
    ) {
      await journal.handle.sync();
      journal.handle.close();
      journal.handle = null;
      journal.segment++;
      await this.#prune(journal);
    }
    while (journal.handle === null) {
      const path = segmentPath(journal, journal.segment);
      await journal.files.ensureDir(journal.dir);
      journal.size = await journal.files.fileSize(path);
      if (journal.size > 0 && journal.size + bytes > journal.maxFileBytes) {
        journal.segment++;
        await this.#prune(journal);
        continue;
      }
      journal.needsNewline = !(await journal.files.endsWithNewline(path));
      journal.handle = await journal.files.openAppend(path);
    }
  }

  /** Removes the oldest segments so at most max_files remain, counting the current one. */
  async #prune(journal: Journal): Promise<void> {
    for (const n of await this.#segments(journal)) {
      if (n <= journal.segment - journal.maxFiles) {
        await journal.files.remove(segmentPath(journal, n));
      }
    }
  }

  #writeFailed(err: unknown, entries: number): void {
    this.#writeErrors++;
    this.#dropped += entries;
    this.#lastError = err instanceof Error ? err.message : String(err);
    this.#lastErrorAt = this.#o.clock.nowMs();
    if (!this.#failing) {
      this.#failing = true;
      this.#log.error(`audit journal write failed (entries dropped): ${this.#lastError}`);
    }
  }

  async #segments(journal: AuditJournalOptions): Promise<number[]> {
    const out: number[] = [];
    for (const name of await journal.files.listNames(journal.dir)) {
      const m = SEGMENT_RE.exec(name);
      if (m) out.push(Number(m[1]));
    }
    return out.sort((a, b) => a - b);
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
    await this.#waitWritten();
    return await this.#queryJournal(journal, q, cursor);
  }

  async #waitWritten(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((r) => timer = setTimeout(r, AUDIT_READ_FLUSH_TIMEOUT_MS));
    try {
      this.#kick();
      while (this.#writing) {
        const done = await Promise.race([
          this.#writing.then(() => true),
          timeout.then(() => false),
        ]);
        if (!done || this.#failing) return;
        if (this.#queue.length > 0) this.#kick();
      }
    } finally {
      clearTimeout(timer);
    }
  }

  #queryMemory(q: AuditQuery, afterSeq: number): AuditPage {
    const entries: AuditEntry[] = [];
    for (const e of this.#memory) {
      if (e.seq <= afterSeq || !matches(e, q)) continue;
      if (entries.length === q.limit) {
        return { entries, next_cursor: encodeCursor({ kind: "memory", seq: entries.at(-1)!.seq }) };
      }
      entries.push(e);
    }
    return { entries, next_cursor: null };
  }

  async #queryJournal(
    journal: Journal,
    q: AuditQuery,
    cursor: Cursor | null,
  ): Promise<AuditPage> {
    const entries: AuditEntry[] = [];
    let scanned = 0;
    const segments = await this.#segments(journal).catch(() => [] as number[]);
    for (const n of segments) {
      let start = 0;
      if (cursor?.kind === "file") {
        if (n < cursor.segment) continue;
        if (n === cursor.segment) start = cursor.offset;
      }
      const path = segmentPath(journal, n);
      // Nothing past `start` (an empty file; a device file standing in for one reads as empty).
      if ((await journal.files.fileSize(path).catch(() => 0)) <= start) continue;
      const lines = journal.files.readLinesAt(path, {
        maxLineBytes: AUDIT_MAX_ENTRY_BYTES * 2,
        startByte: start,
      });
      for await (const line of lines) {
        if (!line.terminated) break; // being written (or torn): read next time
        scanned += line.end - line.start;
        const entry = parseEntry(line.text);
        if (entry && matches(entry, q)) entries.push(entry);
        if (entries.length === q.limit || scanned >= AUDIT_SCAN_MAX_BYTES) {
          const next = encodeCursor({ kind: "file", segment: n, offset: line.end });
          return { entries, next_cursor: next };
        }
      }
    }
    return { entries, next_cursor: null };
  }
}

// ---- entries, lines and cursors -----------------------------------------------------------------

function entryLine(entry: AuditEntry): string {
  return `${boundedEntryText(entry)}\n`;
}

/**
 * The JSON text of an entry, at most AUDIT_MAX_ENTRY_BYTES: a larger one has its args and result
 * replaced by a note saying so. 64-bit integers beyond 2^53 are written exactly.
 */
export function boundedEntryText(entry: AuditEntry): string {
  const line = toJsonText(entry);
  if (utf8Length(line) <= AUDIT_MAX_ENTRY_BYTES) return line;
  const note = { truncated: `entry exceeded ${AUDIT_MAX_ENTRY_BYTES} bytes` };
  return toJsonText({ ...entry, args: note, result: entry.result === null ? null : note });
}

function parseEntry(text: string): AuditEntry | null {
  try {
    const v = JSON.parse(text);
    return typeof v === "object" && v !== null && typeof v.time_epoch_ms === "number" ? v : null;
  } catch {
    return null; // a corrupt or cut line is skipped
  }
}

function matches(e: AuditEntry, q: AuditQuery): boolean {
  if (q.sinceMs !== undefined && e.last_time_epoch_ms < q.sinceMs) return false;
  if (q.untilMs !== undefined && e.first_time_epoch_ms > q.untilMs) return false;
  if (q.origin !== undefined && e.origin?.kind !== q.origin) return false;
  if (q.deviceId !== undefined) {
    const h = e.device_handle;
    if (h === null || (h !== q.deviceId && !h.endsWith(`/${q.deviceId}`))) return false;
  }
  return true;
}

function segmentPath(journal: AuditJournalOptions, n: number): string {
  return `${journal.dir}/audit-${String(n).padStart(8, "0")}.jsonl`;
}

const NON_ASCII = /[^ -~\t\n\r]/; // anything but printable ASCII and common whitespace

function utf8Length(text: string): number {
  if (!NON_ASCII.test(text)) return text.length; // the common case, without a loop in JS
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

type Cursor =
  | { kind: "file"; segment: number; offset: number }
  | { kind: "memory"; seq: number };

function encodeCursor(c: Cursor): string {
  const text = c.kind === "file" ? `f.${c.segment}.${c.offset}` : `m.${c.seq}`;
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

function parseCursor(raw: string): Cursor {
  let text = "";
  try {
    text = atob(raw.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    // not base64: reported below
  }
  const f = /^f\.(\d{1,12})\.(\d{1,15})$/.exec(text);
  if (f) return { kind: "file", segment: Number(f[1]), offset: Number(f[2]) };
  const m = /^m\.(\d{1,15})$/.exec(text);
  if (m) return { kind: "memory", seq: Number(m[1]) };
  throw invalidArgument("cursor: not a cursor returned by GET /v0/audit");
}
