/**
 * A rewrite of runs.jsonl (#compactIfLong) while a run is open copies that run's count of events
 * left out (`not_recorded`) into the new file. Its time is that of the count it copies (when it
 * was saved, or when the last of its losses happened), never the time of the rewrite: a start
 * after a crash ends the run, closed as `abandoned`, at its last known activity, and a rewrite
 * that ran late (behind a slow marker) is no activity of the run.
 */
import assert from "node:assert/strict";
import { RUN_NOT_RECORDED_SAVE_MS } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

const T0 = 1_700_000_000_000;
/** runs.jsonl lines a running registry with one run tolerates (4 x runs + the slack of 64). */
const LONG_WITH_ONE_RUN = 4 * 1 + 64;
const HOUR = 3_600_000;

function lines(files: RunJournalFaultFiles): string[] {
  return files.text("/data/runs.jsonl").split("\n").filter(Boolean);
}

Deno.test("a rewrite of runs.jsonl that runs late keeps the time of the open run's saved count of events left out, not the rewrite's", async () => {
  const files = new RunJournalFaultFiles();
  const clock = new ManualClock(0, T0);
  const registry = registryOn(files, { clock });
  await registry.start();
  const { run } = await registry.open({});
  const call = () =>
    registry.recordCall({
      first_time_epoch_ms: clock.nowMs(),
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      outcome: "ok",
    });
  /** One event of the run lost on its way to the disk (its write fails), counted by the run. */
  const loseOne = async () => {
    const before = registry.info().dropped_bus_events;
    files.eventAppendsToFail = 1;
    call();
    await waitFor("the failed write counted", () => registry.info().dropped_bus_events > before);
  };
  try {
    // Losses 10 s apart: each new count is saved (a `not_recorded` line), until runs.jsonl holds
    // as many lines as one run tolerates: the next save makes it long.
    for (let i = 0; i < 200 && lines(files).length < LONG_WITH_ONE_RUN; i++) {
      await loseOne();
      await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
      await waitFor("the count saved", () => lines(files).at(-1)!.includes(`"count":${i + 1}`));
    }
    assert.equal(lines(files).length, LONG_WITH_ONE_RUN);
    // One more loss; its count is saved at the next RUN_NOT_RECORDED_SAVE_MS, while a marker's
    // write is under way (a slow disk): the rewrite that save asks for waits behind the marker.
    await loseOne();
    let release!: () => void;
    files.gate = new Promise((r) => release = r);
    const marker = registry.addMarker(run.run_id, { type: "slow" });
    await waitFor("the marker's write under way", () => files.held > 0);
    await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
    const savedAt = clock.nowMs();
    // The disk answers an hour later.
    await clock.advanceAsync(HOUR);
    files.gate = null;
    release();
    await marker;
    await waitFor("runs.jsonl rewritten", () => lines(files).length < LONG_WITH_ONE_RUN);
    const rewritten = lines(files).map((l) => JSON.parse(l)).find((r) => r.op === "not_recorded");
    assert.equal(rewritten?.count, LONG_WITH_ONE_RUN, "the count the rewrite copies");
    assert.equal(
      rewritten?.at_epoch_ms,
      savedAt,
      "the time of the count it copies (its save), not that of the rewrite",
    );
    // A crash now: the next start ends the run at its last known activity.
    const next = registryOn(files, { clock: new ManualClock(0, savedAt + 2 * HOUR) });
    await next.start();
    try {
      const closed = (await next.get(run.run_id)).run;
      assert.equal(closed.close_reason, "abandoned");
      assert.equal(closed.ended_at_epoch_ms, savedAt, "the last save of its count");
    } finally {
      await next.shutdown();
    }
  } finally {
    await registry.shutdown();
  }
});
