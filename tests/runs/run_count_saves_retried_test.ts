/**
 * The saved counts of runs.jsonl (`between_runs`, an open run's `not_recorded`) are what a start
 * after a crash has. A save whose write fails is tried again (BETWEEN_RUNS_SAVE_MS,
 * RUN_NOT_RECORDED_SAVE_MS later) until one is written, not only at the next change of the count
 * or at a clean shutdown: once the disk works again, a crash loses no count.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { BETWEEN_RUNS_SAVE_MS, RUN_NOT_RECORDED_SAVE_MS } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

/** The fault rig, counting the appends to runs.jsonl that failed. */
class CountedJournalFaults extends RunJournalFaultFiles {
  journalFailures = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    if (!path.endsWith("/runs.jsonl")) return h;
    return {
      ...h,
      append: async (text: string) => {
        try {
          await h.append(text);
        } catch (err) {
          this.journalFailures++;
          throw err;
        }
      },
    };
  }
}

Deno.test("a count of safety events between runs whose saves failed is saved once the disk works again: a crash then loses none", async () => {
  const files = new CountedJournalFaults();
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
    await waitFor("the save failed", () => files.journalFailures === 1);
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    await waitFor("its retry failed", () => files.journalFailures === 2);
    files.journalFails = false;
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    await waitFor(
      "the count saved",
      () => files.text("/data/runs.jsonl").includes('"op":"between_runs"'),
    );
    // A crash now: the next start gives the count to the first run opened.
    const next = registryOn(files, { clock });
    await next.start();
    try {
      const { run } = await next.open({});
      const opened = (await next.listEvents(run.run_id, { limit: 1 })).events[0]!;
      assert.deepEqual(opened.payload.safety_events_between_runs, {
        count: 1,
        estop_triggers: 1,
        first_at_epoch_ms: 5,
        last_at_epoch_ms: 5,
      });
    } finally {
      await next.shutdown();
    }
  } finally {
    await registry.shutdown();
  }
});

Deno.test("an open run's count of events left out whose save failed is saved once the disk works again: a crash then loses none", async () => {
  const files = new CountedJournalFaults();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock, maxRunBytes: 400 });
  await registry.start();
  try {
    const { run } = await registry.open({});
    files.journalFails = true;
    // Past runs.max_run_bytes: counted, not recorded; the count's save fails.
    registry.recordCall({
      first_time_epoch_ms: clock.nowMs(),
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      outcome: "ok",
      args: { duty: "x".repeat(400) },
    });
    await waitFor("the save failed", () => files.journalFailures === 1);
    files.journalFails = false;
    await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
    await waitFor(
      "the count saved",
      () => files.text("/data/runs.jsonl").includes('"op":"not_recorded"'),
    );
    // A crash now: the next start closes the run with the count.
    const next = registryOn(files, { clock });
    await next.start();
    try {
      const closed = (await next.listEvents(run.run_id)).events.at(-1)!;
      assert.equal(closed.type, "abandoned");
      assert.equal(closed.payload.events_not_recorded, 1);
    } finally {
      await next.shutdown();
    }
  } finally {
    await registry.shutdown();
  }
});
