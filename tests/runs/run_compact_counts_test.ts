/**
 * A rewrite of runs.jsonl (#compactIfLong) writes the saved counts (`between_runs`, the open run's
 * `not_recorded`) as they were when it gathered its lines. A count saved while it wrote its new
 * file went to the file it replaces, and is lost with it: after the rename the registry saves
 * again whatever count the new file does not hold, so a restart (or a crash once that save is
 * written) loses none. Shutdown writes what is pending: the file it leaves is what a start reads.
 * The crash: a second registry started on the same files before any shutdown, reading what the
 * first one wrote (its save after the rename, not the shutdown's).
 */
import assert from "node:assert/strict";
import { RUN_NOT_RECORDED_SAVE_MS, type RunRegistry } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { untilTurns } from "../helpers/turns.ts";
import {
  closedAfterRestart,
  faultsBetweenRuns,
  fillRunsJsonl,
  HeldRewriteFiles,
  openedAfterRestart,
  recordCallPastMaxRunBytes,
  registryOn,
  runsJsonlLines as lines,
  SMALL_MAX_RUN_BYTES,
} from "./_run_fault_rig.ts";

/** runs.jsonl lines a running registry tolerates with `runs` runs kept (4 x runs + 64). */
const tolerated = (runs: number) => 4 * runs + 64;

/**
 * The rewrite of runs.jsonl, released, is done (a serial operation, refused: no such run, runs
 * after it), and its save after the rename (not awaited) is written: runs.jsonl, shorter than
 * `runs` runs tolerate, ends with `count`. No shutdown, no clock advanced: no other save is made.
 */
async function savedAgainAfterRewrite(
  registry: RunRegistry,
  files: HeldRewriteFiles,
  runs: number,
  count: number,
): Promise<void> {
  await assert.rejects(registry.close("lab1-no-such-run", {}));
  assert.ok(lines(files).length < tolerated(runs), "runs.jsonl rewritten");
  await untilTurns(
    () => lines(files).at(-1)!.includes(`"count":${count}`),
    `runs.jsonl ends with the count ${count}, saved again after its rewrite`,
  );
}

/** A registry whose rewrite of runs.jsonl was held while one more count was saved, then released. */
interface Rewritten {
  files: HeldRewriteFiles;
  clock: ManualClock;
  registry: RunRegistry;
  /** Runs kept (the open run of "not_recorded"). */
  runs: number;
  /** The count saved last (to the file the rewrite replaces). */
  count: number;
  /** The run open ("not_recorded"), else "". */
  runId: string;
}

/**
 * The saved count `which` (FAULT entries between runs, or an open run's events left out) fills
 * runs.jsonl to what a running registry tolerates; the next save makes it long and its rewrite's
 * write is held; one more is saved while it writes (to the file being replaced); the rewrite is
 * released, and `then` goes on. The registry is shut down after it.
 */
async function countSavedWhileRewritten(
  which: "between_runs" | "not_recorded",
  then: (r: Rewritten) => Promise<void>,
): Promise<void> {
  const files = new HeldRewriteFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(
    files,
    which === "not_recorded" ? { clock, maxRunBytes: SMALL_MAX_RUN_BYTES } : { clock },
  );
  await registry.start();
  let save: () => Promise<void>;
  let count: () => number;
  let runId = "";
  if (which === "between_runs") {
    const { fault, published } = faultsBetweenRuns(registry, clock);
    save = fault;
    count = published;
  } else {
    let lost = 0;
    /** A call past runs.max_run_bytes (counted, not recorded), then the time of the next save. */
    save = async () => {
      recordCallPastMaxRunBytes(registry, clock);
      lost++;
      await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
    };
    count = () => lost;
  }
  const runs = which === "not_recorded" ? 1 : 0;
  try {
    if (which === "not_recorded") runId = (await registry.open({})).run.run_id;
    await fillRunsJsonl(files, tolerated(runs), save, count);
    // The next save makes runs.jsonl long: its rewrite gathers its lines, its write is held.
    const release = files.holdRewrite();
    await save();
    await waitFor("the rewrite's write under way", () => files.tmpHeld > 0);
    // One more while it writes: saved to the file being replaced.
    await save();
    await waitFor(
      "that count saved",
      () => lines(files).at(-1)!.includes(`"count":${count()}`),
    );
    release();
    await then({ files, clock, registry, runs, count: count(), runId });
  } finally {
    await registry.shutdown();
  }
}

/** Shutdown, queued after the rewrite: saves what is not saved, and writes what is pending. */
async function shutdownAfterRewrite(r: Rewritten): Promise<void> {
  await r.registry.shutdown();
  assert.ok(lines(r.files).length < tolerated(r.runs), "runs.jsonl rewritten");
}

/** The next start gives the count of FAULT entries between runs to the first run opened. */
async function assertBetweenRunsCounted(r: Rewritten): Promise<void> {
  const opened = await openedAfterRestart(r.files, r.clock);
  const between = opened.payload.safety_events_between_runs as Record<string, unknown>;
  assert.equal(between.count, r.count, "every FAULT entry no run recorded is counted");
}

/**
 * The next start closes the run left open (by `by`), as abandoned, with the count left out, ended
 * where its last save says: at the shutdown's save (`end_basis` "shutdown", a save the rewrite's
 * save again alone does not make) or, after a crash, at its last event.
 */
async function assertLeftOutCounted(r: Rewritten, by: "the shutdown" | "the crash"): Promise<void> {
  const closed = await closedAfterRestart(r.files, r.clock, r.runId);
  assert.equal(closed.type, "abandoned", `left open by ${by}`);
  assert.equal(closed.payload.events_not_recorded, r.count, "every event left out is counted");
  assert.equal(
    closed.payload.end_basis,
    by === "the shutdown" ? "shutdown" : "last_event",
    `ended where ${by} left its count saved`,
  );
}

Deno.test("a count of safety events between runs saved while runs.jsonl is rewritten is saved again to the new file: a restart loses none", async () => {
  await countSavedWhileRewritten("between_runs", async (r) => {
    await shutdownAfterRewrite(r);
    await assertBetweenRunsCounted(r);
  });
});

Deno.test("an open run's count of events left out saved while runs.jsonl is rewritten is saved again to the new file: a restart loses none", async () => {
  await countSavedWhileRewritten("not_recorded", async (r) => {
    await shutdownAfterRewrite(r);
    await assertLeftOutCounted(r, "the shutdown");
  });
});

Deno.test("a count of safety events between runs saved while runs.jsonl is rewritten is saved again to the new file before any shutdown: a crash loses none", async () => {
  await countSavedWhileRewritten("between_runs", async (r) => {
    await savedAgainAfterRewrite(r.registry, r.files, r.runs, r.count);
    // A crash now: a new registry on the same files reads what the first one wrote.
    await assertBetweenRunsCounted(r);
  });
});

Deno.test("an open run's count of events left out saved while runs.jsonl is rewritten is saved again to the new file before any shutdown: a crash loses none", async () => {
  await countSavedWhileRewritten("not_recorded", async (r) => {
    await savedAgainAfterRewrite(r.registry, r.files, r.runs, r.count);
    // A crash now: a new registry on the same files closes the run left open, as abandoned.
    await assertLeftOutCounted(r, "the crash");
  });
});
