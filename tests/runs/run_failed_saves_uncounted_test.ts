/**
 * runs.jsonl is rewritten once it holds twice the lines its runs need (#compactIfLong, counted in
 * #journalLines). A save of a count (`between_runs`, `not_recorded`) or of a failed close's
 * `in_flight` ids whose write fails, or that is passed by (a newer save writes), adds no line: it
 * must not count as one, or a disk that fails saves for a while makes runs.jsonl look long and
 * sets off rewrites of a file that has not grown (and, after a failed one, backs saves off).
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { BETWEEN_RUNS_SAVE_MS } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

class CountedRenames extends RunJournalFaultFiles {
  renames = 0;
  override rename(from: string, to: string): Promise<void> {
    this.renames++;
    return super.rename(from, to);
  }
}

/** Failed saves past the rewrite's threshold with no run kept (4 x 0 runs + 64 lines). */
const FAILED_SAVES = 100;

const lines = (files: RunJournalFaultFiles) =>
  files.text("/data/runs.jsonl").split("\n").filter(Boolean);

Deno.test("RunRegistry: failed saves of the count of safety events between runs do not count as lines of runs.jsonl (no rewrite)", async () => {
  const files = new CountedRenames();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  try {
    files.journalFails = true;
    bus.publish({
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "FAULT",
      timestamp_ms: clock.nowMs(),
    });
    // The save fails, and is tried again every BETWEEN_RUNS_SAVE_MS: FAILED_SAVES failures.
    for (let i = 0; i < FAILED_SAVES; i++) {
      const before = files.journalAppendFailures;
      await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
      await waitFor("the save tried again", () => files.journalAppendFailures > before);
    }
    assert.equal(files.renames, 0, "runs.jsonl, empty, was not rewritten");
    assert.deepEqual(lines(files), [], "nothing written");
    // Once the disk works again, the count is saved: one line.
    files.journalFails = false;
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    await waitFor("the count saved", () => lines(files).length === 1);
    assert.equal(files.renames, 0);
  } finally {
    await registry.shutdown();
  }
});

Deno.test("RunRegistry: failed in_flight saves of failed closes do not count as lines of runs.jsonl (no rewrite)", async () => {
  const files = new CountedRenames();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  const { run } = await registry.open({});
  const linesBefore = lines(files).length;
  try {
    for (let i = 0; i < FAILED_SAVES; i++) {
      // A new call in flight, on disk; the close fails (its run_closed), and so does the save of
      // the ids it listed in flight (runs.jsonl refuses appends).
      registry.recordCall({
        first_time_epoch_ms: clock.nowMs(),
        device_handle: "sim0/motorctl0",
        function: "set_motor_duty",
        outcome: "in_flight",
        intent: `w-${i}`,
      });
      await waitFor(
        "the in_flight event written",
        () => eventsOnDisk(files, run.run_id).filter((e) => e[1] === "call").length === i + 1,
      );
      files.eventAppendsToFail = 1;
      files.journalFails = true;
      const before = files.journalAppendFailures;
      await assert.rejects(registry.close(run.run_id, {}));
      await waitFor("the in_flight save failed", () => files.journalAppendFailures > before);
      files.journalFails = false;
    }
    assert.equal(lines(files).length, linesBefore, "no line added to runs.jsonl");
    assert.equal(files.renames, 0, "runs.jsonl, not grown, was not rewritten");
  } finally {
    await registry.shutdown();
  }
});
