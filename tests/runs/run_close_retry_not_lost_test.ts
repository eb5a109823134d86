/**
 * A close that fails is answered 503 and the run stays open: its run_closed (and its close record
 * in runs.jsonl) is written by the close tried next, so nothing is lost. The journal writers must
 * not count it among the lines lost (their "written again: N lines were lost before" WARN when the
 * retry writes): that WARN is for events that will never be recorded. Likewise a failed open's
 * record (the open answered 503: there is no run).
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

const lostLines = (lines: string[]) => lines.filter((l) => l.includes("lost"));

Deno.test("a close whose run_closed write failed is retried: its run_closed is not counted lost", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files, { logger: log });
  await registry.start();
  try {
    const { run } = await registry.open({});
    files.eventAppendsToFail = 1; // the run_closed write
    await assert.rejects(
      registry.close(run.run_id, { close_reason: "completed" }),
      /close run.*no space left on device/,
    );
    assert.equal(registry.info().open_run_id, run.run_id, "the run stays open");
    const { run: closed } = await registry.close(run.run_id, { close_reason: "completed" });
    assert.equal(closed.state, "closed");
    // Written by the retry (a hole at the failed try's sequence number): not lost.
    assert.deepEqual(eventsOnDisk(files, run.run_id).map(([, c]) => c), [
      "run_opened",
      "run_closed",
    ]);
    assert.deepEqual(lostLines(lines), [], lines.join("\n"));
  } finally {
    await registry.shutdown();
  }
});

Deno.test("a close and an open whose runs.jsonl record failed are retried: their records are not counted lost", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files, { logger: log });
  await registry.start();
  try {
    const { run } = await registry.open({});
    files.journalFails = true;
    await assert.rejects(
      registry.close(run.run_id, { close_reason: "completed" }),
      /close run.*No space left on device/,
    );
    await assert.rejects(registry.open({}), /Run already open/);
    files.journalFails = false;
    const { run: closed } = await registry.close(run.run_id, { close_reason: "completed" });
    assert.equal(closed.state, "closed");
    files.journalFails = true;
    await assert.rejects(registry.open({}), /open run.*No space left on device/);
    files.journalFails = false;
    const { run: next } = await registry.open({});
    assert.equal(next.state, "open");
    assert.equal(files.journalAppendFailures, 2);
    assert.deepEqual(lostLines(lines), [], lines.join("\n"));
  } finally {
    await registry.shutdown();
  }
});
