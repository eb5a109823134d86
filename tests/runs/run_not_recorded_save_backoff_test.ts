/**
 * An open run past runs.max_run_bytes keeps leaving events out; its count is saved to runs.jsonl
 * (a `not_recorded` line) at most every RUN_NOT_RECORDED_SAVE_MS while it grows, and the rewrite
 * of runs.jsonl (#compactIfLong) keeps the file bounded. While that rewrite keeps failing (a
 * refused rename; it is tried again only after closes, which a long run does not make), each save
 * is a line for good: 8,640 a day. The saves then back off, doubling up to
 * RUN_NOT_RECORDED_SAVE_MAX_MS, so runs.jsonl grows by a bounded number of lines per hour.
 */
import assert from "node:assert/strict";
import { RUN_NOT_RECORDED_SAVE_MAX_MS, RUN_NOT_RECORDED_SAVE_MS } from "../../src/runs/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { backedOffSaves, saveBackoffRig } from "./_save_backoff_rig.ts";

/** Retry periods of RUN_NOT_RECORDED_SAVE_MS in six hours. */
const PERIODS = (6 * 3_600_000) / RUN_NOT_RECORDED_SAVE_MS;

Deno.test("RunRegistry: while runs.jsonl's rewrite keeps failing, a run's growing count of events left out is saved with a backoff up to RUN_NOT_RECORDED_SAVE_MAX_MS", async () => {
  const maxRunBytes = 2000;
  const { files, clock, registry, records } = await saveBackoffRig({ maxRunBytes });
  const notRecorded = () => records("not_recorded");
  let lost = 0;
  /** One more event left out past runs.max_run_bytes, then one retry period. */
  const loseOne = async () => {
    registry.recordCall({
      first_time_epoch_ms: clock.nowMs(),
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      outcome: "ok",
      args: { duty: "x".repeat(maxRunBytes) },
    });
    lost++;
    await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
  };
  try {
    const { run } = await registry.open({});
    files.renameFails = true;
    // Saves every period make runs.jsonl long (4 x 1 run + 64 lines): its rewrite is tried, fails.
    for (let i = 0; i < 200 && files.renames === 0; i++) {
      await loseOne();
      await waitFor("the count saved", () => notRecorded().at(-1)?.includes(`"count":${lost}`));
    }
    assert.equal(files.renames, 1, "the rewrite was tried once and failed");
    const before = notRecorded().length;
    // Six hours of events left out, the count changing every period.
    for (let i = 0; i < PERIODS; i++) await loseOne();
    // The close writes its record behind every save queued: all of them are in the file now.
    await registry.close(run.run_id, {});
    const added = notRecorded().length - before;
    const bound = backedOffSaves(
      PERIODS * RUN_NOT_RECORDED_SAVE_MS,
      RUN_NOT_RECORDED_SAVE_MS,
      RUN_NOT_RECORDED_SAVE_MAX_MS,
    );
    assert.ok(
      added <= bound,
      `${added} not_recorded lines in ${PERIODS} periods of ${RUN_NOT_RECORDED_SAVE_MS} ms while ` +
        `the rewrite fails: at most ${bound} (backoff up to ${RUN_NOT_RECORDED_SAVE_MAX_MS} ms)`,
    );
    assert.ok(added >= 2, "the count is still saved");
    // The count saved last is at most one backed-off period old.
    const last = JSON.parse(notRecorded().at(-1)!);
    const perPeriod = 1; // one event left out per period
    assert.ok(
      last.count >= lost - perPeriod * (RUN_NOT_RECORDED_SAVE_MAX_MS / RUN_NOT_RECORDED_SAVE_MS),
      `the count saved last (${last.count}) is at most ${RUN_NOT_RECORDED_SAVE_MAX_MS} ms behind ${lost}`,
    );
    assert.equal(files.renames, 1, "saves alone did not retry the rewrite");
  } finally {
    await registry.shutdown();
  }
});
