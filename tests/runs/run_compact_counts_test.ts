/**
 * A rewrite of runs.jsonl (#compactIfLong) writes the saved counts (`between_runs`, the open run's
 * `not_recorded`) as they were when it gathered its lines. A count saved while it wrote its new
 * file went to the file it replaces, and is lost with it: after the rename the registry saves
 * again whatever count the new file does not hold, so a restart (or a crash once that save is
 * written) loses none. Shutdown writes what is pending: the file it leaves is what a start reads.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { BETWEEN_RUNS_SAVE_MS, RUN_NOT_RECORDED_SAVE_MS } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { waitFor } from "../helpers/kernel.ts";
import { registryOn } from "./_run_fault_rig.ts";

/** In-memory files whose appends to the rewrite's new file (runs.jsonl.tmp) wait for `gate`. */
class HeldRewrite extends FaultyMemoryFiles {
  gate: Promise<void> | null = null;
  held = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    return {
      ...h,
      append: async (text: string) => {
        if (this.gate !== null && path.endsWith("/runs.jsonl.tmp")) {
          this.held++;
          await this.gate;
        }
        await h.append(text);
      },
    };
  }
}

function lines(files: FaultyMemoryFiles): string[] {
  return files.text("/data/runs.jsonl").split("\n").filter(Boolean);
}

/** runs.jsonl lines a running registry tolerates with `runs` runs kept (4 x runs + 64). */
const tolerated = (runs: number) => 4 * runs + 64;

Deno.test("a count of safety events between runs saved while runs.jsonl is rewritten is saved again to the new file: a restart loses none", async () => {
  const files = new HeldRewrite();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  let published = 0;
  /** A FAULT entry between runs, then the time of the next save of the count. */
  const fault = async () => {
    bus.publish({
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "FAULT",
      timestamp_ms: ++published,
    });
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
  };
  try {
    for (let i = 0; i < 200 && lines(files).length < tolerated(0); i++) {
      await fault();
      await waitFor("the count saved", () => lines(files).at(-1)!.includes(`"count":${published}`));
    }
    assert.equal(lines(files).length, tolerated(0));
    // The next save makes runs.jsonl long: its rewrite gathers its lines, its write is held.
    let release!: () => void;
    files.gate = new Promise((r) => release = r);
    await fault();
    await waitFor("the rewrite's write under way", () => files.held > 0);
    // One more while it writes: saved to the file being replaced.
    await fault();
    await waitFor("that count saved", () => lines(files).at(-1)!.includes(`"count":${published}`));
    files.gate = null;
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
      assert.equal(between.count, published, "every FAULT entry no run recorded is counted");
    } finally {
      await next.shutdown();
    }
  } finally {
    await registry.shutdown();
  }
});

Deno.test("an open run's count of events left out saved while runs.jsonl is rewritten is saved again to the new file: a restart loses none", async () => {
  const files = new HeldRewrite();
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
    for (let i = 0; i < 200 && lines(files).length < tolerated(1); i++) {
      await leftOut();
      await waitFor("the count saved", () => lines(files).at(-1)!.includes(`"count":${lost}`));
    }
    assert.equal(lines(files).length, tolerated(1));
    let release!: () => void;
    files.gate = new Promise((r) => release = r);
    await leftOut();
    await waitFor("the rewrite's write under way", () => files.held > 0);
    await leftOut();
    await waitFor("that count saved", () => lines(files).at(-1)!.includes(`"count":${lost}`));
    files.gate = null;
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
