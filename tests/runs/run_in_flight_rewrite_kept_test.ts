/**
 * A close that failed saved the write-ahead ids of the calls it listed `in_flight` (an
 * `in_flight` record of runs.jsonl). A later close that failed too and could not save its own
 * record (a full disk for runs.jsonl) must not make a rewrite of runs.jsonl drop the record
 * already on disk: a start after a crash would then record those calls a second time, as
 * `interrupted`. The rewrite keeps the ids listed (and fsyncs the run's event file, which holds
 * their `in_flight` events, before it writes them).
 */
import assert from "node:assert/strict";
import { RUN_NOT_RECORDED_SAVE_MS } from "../../src/runs/mod.ts";
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

const inFlightRecords = (files: RunJournalFaultFiles) =>
  files.text("/data/runs.jsonl").split("\n").filter((l) => l.includes('"op":"in_flight"'))
    .map((l) => JSON.parse(l));

Deno.test("RunRegistry: a rewrite of runs.jsonl after an in_flight record that failed keeps the one saved before", async () => {
  const files = new CountedRenames();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const maxRunBytes = 4000;
  const registry = registryOn(files, { clock, maxRunBytes });
  await registry.start();
  try {
    const { run } = await registry.open({});
    const call = (intent: string) =>
      registry.recordCall({
        first_time_epoch_ms: clock.nowMs(),
        device_handle: "sim0/motorctl0",
        function: "set_motor_duty",
        outcome: "in_flight",
        intent,
      });
    /** A close that fails at its run_closed; with `journalFull`, runs.jsonl refuses writes too. */
    const failedClose = async (journalFull: boolean) => {
      files.eventAppendsToFail = 1;
      files.journalFails = journalFull;
      const err = await registry.close(run.run_id, {}).then(() => null, (e) => e);
      files.journalFails = false;
      assert.equal(err?.code, "UNAVAILABLE", "the close failed (503), the run stays open");
    };
    call("w-7");
    await waitFor(
      "w-7's in_flight event written",
      () => eventsOnDisk(files, run.run_id).length === 2,
    );
    await failedClose(false);
    assert.deepEqual(inFlightRecords(files).map((r) => r.intents), [["w-7"]], "saved");
    call("w-8");
    await waitFor(
      "w-8's in_flight event written",
      () => eventsOnDisk(files, run.run_id).length === 3,
    );
    await failedClose(true);
    assert.deepEqual(inFlightRecords(files).map((r) => r.intents), [["w-7"]], "not saved again");
    // Counts of events left out past runs.max_run_bytes, saved every period, make runs.jsonl
    // long (4 x 1 run + 64 lines): it is rewritten.
    for (let lost = 1; lost <= 200 && files.renames === 0; lost++) {
      registry.recordCall({
        first_time_epoch_ms: clock.nowMs(),
        device_handle: "sim0/motorctl0",
        function: "set_motor_duty",
        outcome: "ok",
        args: { duty: "x".repeat(maxRunBytes) },
      });
      await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
    }
    await waitFor("runs.jsonl rewritten", () => files.renames === 1);
    const kept = inFlightRecords(files).flatMap((r) => r.intents);
    assert.ok(
      kept.includes("w-7"),
      `the rewritten runs.jsonl still names w-7, listed in flight by the first failed close ` +
        `(in_flight records after the rewrite: ${JSON.stringify(inFlightRecords(files))})`,
    );
  } finally {
    await registry.shutdown();
  }
});
