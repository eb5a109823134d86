/**
 * Safety events keep coming while no run is open; their count is saved to runs.jsonl (a
 * `between_runs` line) at most every BETWEEN_RUNS_SAVE_MS while it grows, and the rewrite of
 * runs.jsonl (#compactIfLong) keeps the file bounded. While that rewrite keeps failing (a refused
 * rename; it is tried again only after closes, which come only when runs are opened), each save
 * is a line for good: 8,640 a day. The saves then back off as a run's count of events left out
 * does (run_not_recorded_save_backoff_test.ts), doubling up to BETWEEN_RUNS_SAVE_MAX_MS.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { BETWEEN_RUNS_SAVE_MAX_MS, BETWEEN_RUNS_SAVE_MS } from "../../src/runs/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { backedOffSaves, saveBackoffRig } from "./_save_backoff_rig.ts";

/** Periods of BETWEEN_RUNS_SAVE_MS in six hours. */
const PERIODS = (6 * 3_600_000) / BETWEEN_RUNS_SAVE_MS;

Deno.test("RunRegistry: while runs.jsonl's rewrite keeps failing, a growing count of safety events between runs is saved with a backoff up to BETWEEN_RUNS_SAVE_MAX_MS", async () => {
  const { files, clock, registry, records } = await saveBackoffRig();
  const bus = new EventBus();
  registry.attach(bus);
  const between = () => records("between_runs");
  let flaps = 0;
  /** One more safety event between runs (a FAULT), then half a save period. */
  const flap = async () => {
    bus.publish({
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "FAULT",
      timestamp_ms: clock.nowMs(),
    });
    flaps++;
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS / 2);
  };
  try {
    files.renameFails = true;
    // Saves make runs.jsonl long (4 x 0 runs + 64 lines): its rewrite is tried, and fails.
    for (let i = 0; i < 400 && files.renames === 0; i++) {
      await flap();
      await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS / 2);
      await waitFor("the count saved", () => between().at(-1)?.includes(`"count":${flaps}`));
    }
    assert.equal(files.renames, 1, "the rewrite was tried once and failed");
    const before = between().length;
    // Six hours of a FAULT every half period: the count changes twice a period.
    for (let i = 0; i < 2 * PERIODS; i++) await flap();
    // The shutdown saves the count reached and writes behind every save queued.
    await registry.shutdown();
    const added = between().length - before;
    const sixHours = PERIODS * BETWEEN_RUNS_SAVE_MS;
    // One more for the shutdown's save.
    const bound = backedOffSaves(sixHours, BETWEEN_RUNS_SAVE_MS, BETWEEN_RUNS_SAVE_MAX_MS) + 1;
    assert.ok(
      added <= bound,
      `${added} between_runs lines in ${PERIODS} periods of ${BETWEEN_RUNS_SAVE_MS} ms while ` +
        `the rewrite fails: at most ${bound} (backoff up to ${BETWEEN_RUNS_SAVE_MAX_MS} ms)`,
    );
    assert.ok(added >= 2, "the count is still saved");
    const last = JSON.parse(between().at(-1)!);
    assert.equal(last.count, flaps, "the shutdown saves the count reached");
    assert.equal(files.renames, 1, "saves alone did not retry the rewrite");
  } finally {
    await registry.shutdown();
  }
});
