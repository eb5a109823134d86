/**
 * The run-journal fault rig shared by tests/runs/run_fsync_faults_test.ts and
 * run_close_faults_test.ts: in-memory files with the FaultyMemoryFiles switches (full, syncFails,
 * truncateFails) plus faults of runs.jsonl alone and appends held back as a write under way; a
 * RunRegistry on them with a manual clock; and the events an event file holds. Also the rewrite
 * rig of run_compact_counts_test.ts and run_rewrite_one_handle_test.ts: files whose rewrite of
 * runs.jsonl can be held in its write, FAULT entries between runs, runs.jsonl filled to the
 * length a running registry tolerates. And what the saved-count tests share (a call left out past
 * runs.max_run_bytes, the start after a crash or a restart), the e-stop trigger the start tests
 * publish, and a start held by a hung mount that a shutdown overtakes.
 */
import type { JournalAppendHandle, JournalFiles } from "../../src/journal/mod.ts";
import { BETWEEN_RUNS_SAVE_MS, RunRegistry } from "../../src/runs/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { diskFullError } from "../helpers/journal_files.ts";
import assert from "node:assert/strict";

/** Faulty in-memory files with faults of runs.jsonl alone and appends that can be held back. */
export class RunJournalFaultFiles extends FaultyMemoryFiles {
  /** While set, appends to runs.jsonl fail with ENOSPC (the event files are written). */
  journalFails = false;
  /** Appends to runs.jsonl that failed (journalFails). */
  journalAppendFailures = 0;
  /** While set, fsyncs of runs.jsonl fail with ENOSPC. */
  journalSyncFails = false;
  /** While set, every append waits for it first (a write under way). */
  gate: Promise<void> | null = null;
  /** Appends waiting at `gate` now. */
  held = 0;
  /**
   * How many of the next appends to event files (not runs.jsonl) fail (WriteZero, "no space left
   * on device"), once past `gate`: nothing of them is written.
   */
  eventAppendsToFail = 0;

  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    const journal = path.endsWith("/runs.jsonl");
    return {
      ...h,
      append: async (text: string) => {
        if (this.gate) {
          this.held++;
          await this.gate.finally(() => this.held--);
        }
        if (journal && this.journalFails) {
          this.journalAppendFailures++;
          throw diskFullError();
        }
        if (!journal && this.eventAppendsToFail > 0) {
          this.eventAppendsToFail--;
          throw new Deno.errors.WriteZero("no space left on device");
        }
        await h.append(text);
      },
      sync: async () => {
        if (journal && this.journalSyncFails) throw diskFullError();
        await h.sync();
      },
    };
  }
}

/** A registry on `files` under /data, runtime "lab1", with a manual clock at 1_700_000_000_000. */
export function registryOn(
  files: JournalFiles,
  options: Partial<ConstructorParameters<typeof RunRegistry>[0]> = {},
): RunRegistry {
  return new RunRegistry({
    dataDir: "/data",
    runtimeName: "lab1",
    pollingIntervalMs: 500,
    files,
    clock: new ManualClock(0, 1_700_000_000_000),
    logger: testLogger(),
    automationVersion: () => null,
    telemetrySink: () => {},
    random: (b) => b.fill(1),
    ...options,
  });
}

/** The run's event file as [sequence, category, type] per line. */
export function eventsOnDisk(files: FaultyMemoryFiles, runId: string): [number, string, string][] {
  return files.text(`/data/runs/${runId.slice(-26)}.jsonl`).split("\n").filter(Boolean)
    .map((l) => JSON.parse(l)).map((e) => [e.sequence, e.category, e.type]);
}

/** The lines of /data/runs.jsonl. */
export function runsJsonlLines(files: FaultyMemoryFiles): string[] {
  return files.text("/data/runs.jsonl").split("\n").filter(Boolean);
}

/** In-memory files whose appends to the rewrite's new file (runs.jsonl.tmp) wait for `tmpGate`. */
export class HeldRewriteFiles extends FaultyMemoryFiles {
  tmpGate: Promise<void> | null = null;
  /** Appends to runs.jsonl.tmp that reached `tmpGate`. */
  tmpHeld = 0;

  /** Holds the appends to runs.jsonl.tmp from now on: answers their release. */
  holdRewrite(): () => void {
    let release!: () => void;
    this.tmpGate = new Promise((r) => release = r);
    return () => {
      this.tmpGate = null;
      release();
    };
  }

  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    return {
      ...h,
      append: async (text: string) => {
        if (this.tmpGate !== null && path.endsWith("/runs.jsonl.tmp")) {
          this.tmpHeld++;
          await this.tmpGate;
        }
        await h.append(text);
      },
    };
  }
}

/**
 * `registry` attached to a bus: fault() publishes a FAULT entry between runs, then advances
 * `clock` to the next save of their count; published() answers how many it published.
 */
export function faultsBetweenRuns(
  registry: RunRegistry,
  clock: ManualClock,
): { fault: () => Promise<void>; published: () => number } {
  const bus = new EventBus();
  registry.attach(bus);
  let published = 0;
  return {
    fault: async () => {
      bus.publish({
        kind: "mode_change",
        previous_mode: "MANUAL",
        new_mode: "FAULT",
        timestamp_ms: ++published,
      });
      await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    },
    published: () => published,
  };
}

/** How many saves fillRunsJsonl makes at the most. */
const FILL_SAVES_MAX = 200;

/**
 * Saves a count (`save()`) and waits for runs.jsonl to end with it (`count()`), until runs.jsonl
 * holds `tolerated` lines (at most FILL_SAVES_MAX saves); asserts it holds that many.
 */
export async function fillRunsJsonl(
  files: FaultyMemoryFiles,
  tolerated: number,
  save: () => Promise<void>,
  count: () => number,
): Promise<void> {
  for (let i = 0; i < FILL_SAVES_MAX && runsJsonlLines(files).length < tolerated; i++) {
    await save();
    await waitFor(
      "the count saved",
      () => runsJsonlLines(files).at(-1)!.includes(`"count":${count()}`),
    );
  }
  assert.equal(runsJsonlLines(files).length, tolerated);
}

/** runs.max_run_bytes of the registries whose calls are left out (recordCallPastMaxRunBytes). */
export const SMALL_MAX_RUN_BYTES = 400;

/**
 * Records a call on `registry` (made with maxRunBytes: SMALL_MAX_RUN_BYTES, a run open) larger
 * than runs.max_run_bytes: counted as left out, not recorded.
 */
export function recordCallPastMaxRunBytes(registry: RunRegistry, clock: ManualClock): void {
  registry.recordCall({
    first_time_epoch_ms: clock.nowMs(),
    device_handle: "sim0/motorctl0",
    function: "set_motor_duty",
    outcome: "ok",
    args: { duty: "x".repeat(SMALL_MAX_RUN_BYTES) },
  });
}

/**
 * A start on `files` (a restart, or the start after a crash): the first event of the first run it
 * opens, whose payload holds the safety events between runs it was given.
 */
export async function openedAfterRestart(
  files: JournalFiles,
  clock: ManualClock,
): Promise<{ type: string; payload: Record<string, unknown> }> {
  const next = registryOn(files, { clock });
  await next.start();
  try {
    const { run } = await next.open({});
    return (await next.listEvents(run.run_id, { limit: 1 })).events[0]!;
  } finally {
    await next.shutdown();
  }
}

/** A start on `files` (a restart, or the start after a crash): the last event of run `runId`. */
export async function closedAfterRestart(
  files: JournalFiles,
  clock: ManualClock,
  runId: string,
): Promise<{ type: string; payload: Record<string, unknown> }> {
  const next = registryOn(files, { clock });
  await next.start();
  try {
    return (await next.listEvents(runId)).events.at(-1)!;
  } finally {
    await next.shutdown();
  }
}

/** An e-stop trigger at `at` on `bus` (what the safety layer publishes when the e-stop latches). */
export function pressEstop(bus: EventBus, at: number): void {
  bus.publish({
    kind: "estop_change",
    latched: true,
    reason: "leak",
    cause: "api",
    timestamp_ms: at,
  });
}

/**
 * In-memory files whose held operation (a subclass's: `hold()`) waits while `held` is set (a hung
 * mount), `waiting` counting those that did; append handles counted (`opened`, `closed`).
 */
export class HeldCountedFiles extends FaultyMemoryFiles {
  held: Promise<void> | null = null;
  waiting = 0;
  opened = 0;
  closed = 0;
  protected async hold(): Promise<void> {
    if (this.held !== null) {
      this.waiting++;
      await this.held;
    }
  }
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    this.opened++;
    return { ...h, close: () => (this.closed++, h.close()) };
  }
}

/**
 * A previous process's registry on `files` left a run open (it crashed): a start closes it as
 * abandoned. Answers what the files held then: runs.jsonl, the run's event file (its path and
 * text) and the count of append handles open.
 */
export async function runLeftOpen(files: HeldCountedFiles) {
  const earlier = registryOn(files);
  await earlier.start();
  const { run } = await earlier.open({ experiment_label: "left open" });
  const eventsFile = `/data/runs/${run.run_id.slice(-26)}.jsonl`;
  return {
    runsBefore: files.text("/data/runs.jsonl"),
    eventsFile,
    eventsBefore: files.text(eventsFile),
    handlesBefore: files.opened - files.closed,
  };
}

/** How many microtask flushes a held start is given to reach the hold, or to end after it. */
const START_FLUSHES_MAX = 100;

/**
 * Starts `registry` with `files` held (a hung mount) until the start waits there (`waiting()`
 * one: asserted, `what`); the registry is shut down then (the runtime stops while the start
 * waits; `beforeStop()` first, `afterStop()` after); the hung mount answers at last, the start
 * ends and settles.
 */
export async function stoppedWhileStartHeld(
  registry: RunRegistry,
  files: { held: Promise<void> | null },
  waiting: () => number,
  what: string,
  { beforeStop = () => {}, afterStop = () => {} }: {
    beforeStop?: () => void;
    afterStop?: () => void;
  } = {},
): Promise<void> {
  let release = () => {};
  files.held = new Promise((r) => (release = r));
  const starting = registry.start();
  for (let i = 0; i < START_FLUSHES_MAX && waiting() < 1; i++) await flushMicrotasks();
  assert.equal(waiting(), 1, what);
  beforeStop();
  await registry.shutdown();
  afterStop();
  files.held = null;
  release();
  await starting;
  for (let i = 0; i < START_FLUSHES_MAX; i++) await flushMicrotasks();
}
