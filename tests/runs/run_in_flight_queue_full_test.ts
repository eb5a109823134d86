/**
 * A close that fails saves the write-ahead ids of the calls it listed `in_flight` (an `in_flight`
 * record of runs.jsonl). When runs.jsonl's write queue is full (MAX_PENDING_RUN_RECORDS records
 * waiting for a slow disk) the record is not saved, and a start after a crash may record those
 * calls again as `interrupted`: that is said in one WARN naming the run and how many ids were not
 * saved, never skipped in silence.
 */
import assert from "node:assert/strict";
import type { Logger } from "../../src/common/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { MAX_PENDING_RUN_RECORDS, RUN_NOT_RECORDED_SAVE_MS } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

/** Fault files whose appends to runs.jsonl (only) wait for `journalGate`: a slow disk. */
class SlowJournal extends RunJournalFaultFiles {
  journalGate: Promise<void> | null = null;
  journalHeld = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    if (!path.endsWith("/runs.jsonl")) return h;
    return {
      ...h,
      append: async (text: string) => {
        if (this.journalGate !== null) {
          this.journalHeld++;
          await this.journalGate;
        }
        await h.append(text);
      },
    };
  }
}

function capture(lines: string[]): Logger {
  const l: Logger = {
    debug: (m) => lines.push(`debug ${m}`),
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
    child: () => l,
  };
  return l;
}

Deno.test("RunRegistry: a failed close whose in_flight record finds runs.jsonl's queue full says so in one WARN naming the run and the ids not saved", async () => {
  const files = new SlowJournal();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const logs: string[] = [];
  const registry = registryOn(files, { clock, logger: capture(logs) });
  await registry.start();
  let release!: () => void;
  try {
    const { run } = await registry.open({});
    for (const intent of ["w-7", "w-8"]) {
      registry.recordCall({
        first_time_epoch_ms: clock.nowMs(),
        device_handle: "sim0/motorctl0",
        function: "set_motor_duty",
        outcome: "in_flight",
        intent,
      });
    }
    await waitFor(
      "both in_flight events written",
      () => eventsOnDisk(files, run.run_id).length === 3,
    );
    // runs.jsonl's disk stalls; the run's counts of events lost on their way (one every
    // RUN_NOT_RECORDED_SAVE_MS) are saved behind the stalled write until its queue is full: one
    // write under way, MAX_PENDING_RUN_RECORDS queued.
    files.journalGate = new Promise((r) => release = r);
    for (let lost = 1; lost <= MAX_PENDING_RUN_RECORDS + 1; lost++) {
      const before = registry.info().dropped_bus_events;
      files.eventAppendsToFail = 1;
      registry.recordCall({
        first_time_epoch_ms: clock.nowMs(),
        device_handle: "sim0/motorctl0",
        function: "set_motor_duty",
        outcome: "ok",
      });
      await waitFor("the lost event counted", () => registry.info().dropped_bus_events > before);
      await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
    }
    assert.equal(files.journalHeld, 1, "one runs.jsonl write under way, the rest queued");
    files.eventAppendsToFail = 1; // the run_closed
    const err = await registry.close(run.run_id, {}).then(() => null, (e) => e);
    assert.equal(err?.code, "UNAVAILABLE", "the close failed (503), the run stays open");
    const warned = logs.filter((l) => l.includes("listed in flight not saved"));
    assert.deepEqual(warned, [
      `warn run ${run.run_id}: its 2 calls listed in flight not saved: /data/runs.jsonl has ` +
      `${MAX_PENDING_RUN_RECORDS} records waiting for the disk (a start after a crash may ` +
      `record them again as interrupted)`,
    ]);
  } finally {
    files.journalGate = null;
    release?.();
    await registry.shutdown();
  }
});
