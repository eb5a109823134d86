/**
 * The saved counts of runs.jsonl (`between_runs`, an open run's `not_recorded`) are what a start
 * after a crash has. A save whose write fails is tried again (BETWEEN_RUNS_SAVE_MS,
 * RUN_NOT_RECORDED_SAVE_MS later) until one is written, not only at the next change of the count
 * or at a clean shutdown: once the disk works again, a crash loses no count.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { BETWEEN_RUNS_SAVE_MS, RUN_NOT_RECORDED_SAVE_MS } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  closedAfterRestart,
  openedAfterRestart,
  recordCallPastMaxRunBytes,
  registryOn,
  RunJournalFaultFiles,
  SMALL_MAX_RUN_BYTES,
} from "./_run_fault_rig.ts";

Deno.test("a count of safety events between runs whose saves failed is saved once the disk works again: a crash then loses none", async () => {
  const files = new RunJournalFaultFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  try {
    files.journalFails = true;
    bus.publish({
      kind: "estop_change",
      latched: true,
      reason: "x",
      cause: "api",
      timestamp_ms: 5,
    });
    await waitFor("the save failed", () => files.journalAppendFailures === 1);
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    await waitFor("its retry failed", () => files.journalAppendFailures === 2);
    files.journalFails = false;
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    await waitFor(
      "the count saved",
      () => files.text("/data/runs.jsonl").includes('"op":"between_runs"'),
    );
    // A crash now: the next start gives the count to the first run opened.
    const opened = await openedAfterRestart(files, clock);
    assert.deepEqual(opened.payload.safety_events_between_runs, {
      count: 1,
      estop_triggers: 1,
      first_at_epoch_ms: 5,
      last_at_epoch_ms: 5,
    });
  } finally {
    await registry.shutdown();
  }
});

Deno.test("an open run's count of events left out whose save failed is saved once the disk works again: a crash then loses none", async () => {
  const files = new RunJournalFaultFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock, maxRunBytes: SMALL_MAX_RUN_BYTES });
  await registry.start();
  try {
    const { run } = await registry.open({});
    files.journalFails = true;
    // Past runs.max_run_bytes: counted, not recorded; the count's save fails.
    recordCallPastMaxRunBytes(registry, clock);
    await waitFor("the save failed", () => files.journalAppendFailures === 1);
    files.journalFails = false;
    await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
    await waitFor(
      "the count saved",
      () => files.text("/data/runs.jsonl").includes('"op":"not_recorded"'),
    );
    // A crash now: the next start closes the run with the count.
    const closed = await closedAfterRestart(files, clock, run.run_id);
    assert.equal(closed.type, "abandoned");
    assert.equal(closed.payload.events_not_recorded, 1);
  } finally {
    await registry.shutdown();
  }
});
