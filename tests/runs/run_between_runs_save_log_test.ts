/**
 * A save of the count of safety events between runs that keeps failing (a full disk) is WARNed
 * once per failing spell, not once per try (every BETWEEN_RUNS_SAVE_MS); a spell after a save
 * that worked is WARNed again.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { BETWEEN_RUNS_SAVE_MS } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

const TRIES = 5;

Deno.test("RunRegistry WARNs a failing save of the count of safety events between runs once per failing spell", async () => {
  const files = new RunJournalFaultFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { clock, logger: log });
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const notSaved = () =>
    lines.filter((l) => l.includes("count of safety events between runs not saved"));
  const fault = () =>
    bus.publish({
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "FAULT",
      timestamp_ms: clock.nowMs(),
    });
  const failTries = async () => {
    for (let i = 0; i < TRIES; i++) {
      const before = files.journalAppendFailures;
      await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
      await waitFor("the save tried again", () => files.journalAppendFailures > before);
    }
  };
  try {
    files.journalFails = true;
    fault();
    await failTries();
    assert.ok(files.journalAppendFailures >= TRIES);
    assert.equal(notSaved().length, 1, lines.join("\n"));
    assert.match(notSaved()[0]!, /^WARN .*not saved: .*; tried again every \d+ ms$/);

    // The disk works again: the count is saved, without a line of its own.
    files.journalFails = false;
    const saved = files.text("/data/runs.jsonl").split("\n").filter(Boolean).length;
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    await waitFor(
      "the count saved",
      () => files.text("/data/runs.jsonl").split("\n").filter(Boolean).length > saved,
    );
    assert.equal(notSaved().length, 1);

    // A new spell is said again, once.
    files.journalFails = true;
    fault();
    await failTries();
    assert.equal(notSaved().length, 2, lines.join("\n"));
  } finally {
    await registry.shutdown();
  }
});
