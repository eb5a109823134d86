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
  faultsBetweenRuns,
  fillRunsJsonl,
  HeldRewriteFiles,
  registryOn,
  runsJsonlLines as lines,
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

Deno.test("a count of safety events between runs saved while runs.jsonl is rewritten is saved again to the new file: a restart loses none", async () => {
  const files = new HeldRewriteFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  const { fault, published } = faultsBetweenRuns(registry, clock);
  try {
    await fillRunsJsonl(files, tolerated(0), fault, published);
    // The next save makes runs.jsonl long: its rewrite gathers its lines, its write is held.
    const release = files.holdRewrite();
    await fault();
    await waitFor("the rewrite's write under way", () => files.tmpHeld > 0);
    // One more while it writes: saved to the file being replaced.
    await fault();
    await waitFor(
      "that count saved",
      () => lines(files).at(-1)!.includes(`"count":${published()}`),
    );
    release();
    // Queued after the rewrite; saves what is not saved, and writes what is pending.
    await registry.shutdown();
    assert.ok(lines(files).length < tolerated(0), "runs.jsonl rewritten");
    const next = registryOn(files, { clock });
    await next.start();
    try {
      const { run } = await next.open({});
      const opened = (await next.listEvents(run.run_id, { limit: 1 })).events[0]!;
      const between = opened.payload.safety_events_between_runs as Record<string, unknown>;
      assert.equal(between.count, published(), "every FAULT entry no run recorded is counted");
    } finally {
      await next.shutdown();
    }
  } finally {
    await registry.shutdown();
  }
});

Deno.test("an open run's count of events left out saved while runs.jsonl is rewritten is saved again to the new file: a restart loses none", async () => {
  const files = new HeldRewriteFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock, maxRunBytes: 400 });
  await registry.start();
  let lost = 0;
  /** A call past runs.max_run_bytes (counted, not recorded), then the time of the next save. */
  const leftOut = async () => {
    registry.recordCall({
      first_time_epoch_ms: clock.nowMs(),
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      outcome: "ok",
      args: { duty: "x".repeat(400) },
    });
    lost++;
    await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
  };
  try {
    const { run } = await registry.open({});
    await fillRunsJsonl(files, tolerated(1), leftOut, () => lost);
    const release = files.holdRewrite();
    await leftOut();
    await waitFor("the rewrite's write under way", () => files.tmpHeld > 0);
    await leftOut();
    await waitFor("that count saved", () => lines(files).at(-1)!.includes(`"count":${lost}`));
    release();
    // Queued after the rewrite; saves what is not saved, and writes what is pending.
    await registry.shutdown();
    assert.ok(lines(files).length < tolerated(1), "runs.jsonl rewritten");
    const next = registryOn(files, { clock });
    await next.start();
    try {
      const closed = (await next.listEvents(run.run_id)).events.at(-1)!;
      assert.equal(closed.type, "abandoned", "left open by the shutdown");
      assert.equal(closed.payload.events_not_recorded, lost, "every event left out is counted");
    } finally {
      await next.shutdown();
    }
  } finally {
    await registry.shutdown();
  }
});

Deno.test("a count of safety events between runs saved while runs.jsonl is rewritten is saved again to the new file before any shutdown: a crash loses none", async () => {
  const files = new HeldRewriteFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  const { fault, published } = faultsBetweenRuns(registry, clock);
  try {
    await fillRunsJsonl(files, tolerated(0), fault, published);
    const release = files.holdRewrite();
    await fault();
    await waitFor("the rewrite's write under way", () => files.tmpHeld > 0);
    await fault();
    await waitFor(
      "that count saved",
      () => lines(files).at(-1)!.includes(`"count":${published()}`),
    );
    release();
    await savedAgainAfterRewrite(registry, files, 0, published());
    // A crash now: a new registry on the same files reads what the first one wrote.
    const next = registryOn(files, { clock });
    await next.start();
    try {
      const { run } = await next.open({});
      const opened = (await next.listEvents(run.run_id, { limit: 1 })).events[0]!;
      const between = opened.payload.safety_events_between_runs as Record<string, unknown>;
      assert.equal(between.count, published(), "every FAULT entry no run recorded is counted");
    } finally {
      await next.shutdown();
    }
  } finally {
    await registry.shutdown();
  }
});

Deno.test("an open run's count of events left out saved while runs.jsonl is rewritten is saved again to the new file before any shutdown: a crash loses none", async () => {
  const files = new HeldRewriteFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock, maxRunBytes: 400 });
  await registry.start();
  let lost = 0;
  /** A call past runs.max_run_bytes (counted, not recorded), then the time of the next save. */
  const leftOut = async () => {
    registry.recordCall({
      first_time_epoch_ms: clock.nowMs(),
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      outcome: "ok",
      args: { duty: "x".repeat(400) },
    });
    lost++;
    await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
  };
  try {
    const { run } = await registry.open({});
    await fillRunsJsonl(files, tolerated(1), leftOut, () => lost);
    const release = files.holdRewrite();
    await leftOut();
    await waitFor("the rewrite's write under way", () => files.tmpHeld > 0);
    await leftOut();
    await waitFor("that count saved", () => lines(files).at(-1)!.includes(`"count":${lost}`));
    release();
    await savedAgainAfterRewrite(registry, files, 1, lost);
    // A crash now: a new registry on the same files closes the run left open, as abandoned.
    const next = registryOn(files, { clock });
    await next.start();
    try {
      const closed = (await next.listEvents(run.run_id)).events.at(-1)!;
      assert.equal(closed.type, "abandoned", "left open by the crash");
      assert.equal(closed.payload.events_not_recorded, lost, "every event left out is counted");
    } finally {
      await next.shutdown();
    }
  } finally {
    await registry.shutdown();
  }
});
