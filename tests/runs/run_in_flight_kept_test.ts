/**
 * The open run remembers the write-ahead ids of its `in_flight` call events, at most
 * RUN_IN_FLIGHT_IDS_KEPT, for the `in_flight` record a close of it that fails saves. A repeat
 * (listed by an earlier failed close too) forgets nothing; past the bound the oldest are
 * forgotten and counted (`forgotten` in the record, and a WARN); a set changed by forgetting is
 * saved again by the next failed close, although its size did not change.
 */
import assert from "node:assert/strict";
import { RUN_IN_FLIGHT_IDS_KEPT } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

const inFlightRecords = (files: RunJournalFaultFiles) =>
  files.text("/data/runs.jsonl").split("\n").filter((l) => l.includes('"op":"in_flight"'))
    .map((l) => JSON.parse(l));

Deno.test("RunRegistry keeps RUN_IN_FLIGHT_IDS_KEPT ids listed in flight, forgets a repeat never, and counts those it forgets past the bound", async () => {
  const files = new RunJournalFaultFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  try {
    const { run } = await registry.open({});
    let written = 1; // run_opened
    /** In-flight call events of these ids, written (in batches the run's queue takes). */
    const listed = async (ids: string[]) => {
      for (let i = 0; i < ids.length; i += 500) {
        for (const intent of ids.slice(i, i + 500)) {
          registry.recordCall({
            first_time_epoch_ms: clock.nowMs(),
            device_handle: "sim0/motorctl0",
            function: "set_motor_duty",
            outcome: "in_flight",
            intent,
          });
          written++;
        }
        await waitFor(
          "the events written",
          () => eventsOnDisk(files, run.run_id).length === written,
        );
      }
    };
    const failedClose = async () => {
      files.eventAppendsToFail = 1; // its run_closed
      await assert.rejects(registry.close(run.run_id, {}));
    };
    const ids = Array.from({ length: RUN_IN_FLIGHT_IDS_KEPT }, (_, i) => `w-${i}`);
    // Exactly the bound, and a repeat of one of them (a failed close lists its calls again).
    await listed([...ids, ids.at(-1)!]);
    await failedClose();
    let records = inFlightRecords(files);
    assert.equal(records.length, 1);
    assert.deepEqual(records[0].intents, ids, "all kept, none forgotten by the repeat");
    assert.equal(records[0].forgotten, undefined, "none forgotten at the bound");
    // One past it: the oldest is forgotten and counted; the set, as large as before, is saved.
    await listed([`w-${RUN_IN_FLIGHT_IDS_KEPT}`]);
    await failedClose();
    records = inFlightRecords(files);
    assert.equal(records.length, 2, "the changed set is saved again");
    assert.deepEqual(records[1].intents, [...ids.slice(1), `w-${RUN_IN_FLIGHT_IDS_KEPT}`]);
    assert.equal(records[1].forgotten, 1, "the one forgotten is counted");
  } finally {
    await registry.shutdown();
  }
});
