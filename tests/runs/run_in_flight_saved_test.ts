/**
 * A close that fails (its run_closed refused: the run stays open) saves the write-ahead ids of the
 * calls it listed `in_flight` to runs.jsonl (an `in_flight` record), so that a start after a crash
 * does not record them again as `interrupted`. Its answer (503) waits for that record to be on
 * disk, at most RUN_IN_FLIGHT_SAVE_TIMEOUT_MS: a crash after the answer gives no call two endings.
 */
import assert from "node:assert/strict";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { RUN_IN_FLIGHT_SAVE_TIMEOUT_MS } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

/** Fault files whose appends of an `in_flight` record to runs.jsonl wait for `inFlightGate`. */
class HeldInFlightRecord extends RunJournalFaultFiles {
  inFlightGate: Promise<void> | null = null;
  inFlightHeld = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    return {
      ...h,
      append: async (text: string) => {
        if (this.inFlightGate !== null && text.includes('"op":"in_flight"')) {
          this.inFlightHeld++;
          await this.inFlightGate;
        }
        await h.append(text);
      },
    };
  }
}

const inFlightRecords = (files: RunJournalFaultFiles) =>
  files.text("/data/runs.jsonl").split("\n").filter((l) => l.includes('"op":"in_flight"'))
    .map((l) => JSON.parse(l));

/** A registry with an open run whose one call is in flight, written; its next close fails. */
async function runWithCallInFlight(files: HeldInFlightRecord, clock: ManualClock) {
  const registry = registryOn(files, { clock });
  await registry.start();
  const { run } = await registry.open({});
  registry.recordCall({
    first_time_epoch_ms: clock.nowMs(),
    device_handle: "sim0/motorctl0",
    function: "set_motor_duty",
    outcome: "in_flight",
    intent: "w-7",
  });
  await waitFor("the in_flight event written", () => eventsOnDisk(files, run.run_id).length === 2);
  files.eventAppendsToFail = 1; // the run_closed
  return { registry, run };
}

Deno.test("RunRegistry: a close that failed answers only once its in_flight record is on disk", async () => {
  const files = new HeldInFlightRecord();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const { registry, run } = await runWithCallInFlight(files, clock);
  let release!: () => void;
  files.inFlightGate = new Promise((r) => release = r);
  try {
    let answered = false;
    const closing = registry.close(run.run_id, {}).finally(() => answered = true);
    closing.catch(() => {});
    await waitFor("the in_flight record's write under way", () => files.inFlightHeld > 0);
    // Its ids are on their way to the disk, not on it: a crash now must not follow a 503.
    await Promise.resolve();
    assert.equal(answered, false, "the failed close has not answered before its in_flight record");
    release();
    const err = await closing.then(() => null, (e) => e);
    assert.equal(err?.code, "UNAVAILABLE", "the close failed (503)");
    assert.deepEqual(
      inFlightRecords(files).map((r) => [r.run_id, r.intents]),
      [[run.run_id, ["w-7"]]],
      "the in_flight record was on disk when it answered",
    );
  } finally {
    release();
    await registry.shutdown();
  }
});

Deno.test("RunRegistry: a failed close waits for its in_flight record at most RUN_IN_FLIGHT_SAVE_TIMEOUT_MS", async () => {
  const files = new HeldInFlightRecord();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const { registry, run } = await runWithCallInFlight(files, clock);
  let release!: () => void;
  files.inFlightGate = new Promise((r) => release = r);
  try {
    let answered = false;
    const closing = registry.close(run.run_id, {}).finally(() => answered = true);
    closing.catch(() => {});
    await waitFor("the in_flight record's write under way", () => files.inFlightHeld > 0);
    await clock.advanceAsync(RUN_IN_FLIGHT_SAVE_TIMEOUT_MS - 1);
    assert.equal(answered, false, "still waiting one ms before the bound");
    await clock.advanceAsync(1);
    // A bound that broke would leave the close waiting for the held record: fail, do not hang.
    await waitFor(
      `the failed close answered at RUN_IN_FLIGHT_SAVE_TIMEOUT_MS (${RUN_IN_FLIGHT_SAVE_TIMEOUT_MS} ms), its in_flight record still held`,
      () => answered,
    );
    const err = await closing.then(() => null, (e) => e);
    assert.equal(err?.code, "UNAVAILABLE", "answered at the bound, still a failed close");
  } finally {
    release();
    await registry.shutdown();
  }
});
