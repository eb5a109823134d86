/**
 * An open whose runs.jsonl record cannot be written (a full disk) is one failing spell of the run
 * journal: one ERROR, the registry's (`run journal: open run failed: <reason>`, the reason naming
 * runs.jsonl and the disk's error), not a second one from the writer of runs.jsonl for the same
 * failure (nor its INFO when it writes again); the next failures at DEBUG; one INFO once an open
 * is written again.
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

Deno.test("RunRegistry logs one ERROR for an open that fails on runs.jsonl, none for the next in the spell, one INFO when one is written", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const errors = () => lines.filter((l) => l.startsWith("ERROR"));
  try {
    files.journalFails = true;
    for (let i = 0; i < 3; i++) {
      await assert.rejects(registry.open({}), /open run.*No space left on device/);
    }
    assert.equal(files.journalAppendFailures, 3, "each open tried runs.jsonl");
    assert.equal(errors().length, 1, errors().join("\n"));
    assert.match(
      errors()[0]!,
      /run journal: open run failed: .*runs\.jsonl.*No space left on device/,
    );
    files.journalFails = false;
    const { run } = await registry.open({});
    assert.equal(run.state, "open");
    const again = lines.filter((l) => /^INFO .*written again/.test(l));
    assert.equal(again.length, 1, lines.join("\n"));
    assert.match(again[0]!, /run journal written again \(3 marker, open or close/);
    assert.equal(errors().length, 1, errors().join("\n"));
  } finally {
    await registry.shutdown();
  }
});
