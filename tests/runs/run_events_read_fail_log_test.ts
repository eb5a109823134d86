/**
 * GET /v0/runs/{run_id}/events whose event file cannot be read: each request is answered
 * UNAVAILABLE as before, but logged once per failing spell (one ERROR, DEBUG for the next ones,
 * one INFO when a read works again), not an ERROR per request: a dashboard polling a run's
 * events every second on a failing disk must not write an ERROR a second.
 */
import assert from "node:assert/strict";
import type { JournalLine } from "../../src/journal/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

/** Reads of event files (not runs.jsonl) fail with EIO while `readFails`. */
class UnreadableEventFiles extends RunJournalFaultFiles {
  readFails = false;

  override async *readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncGenerator<JournalLine> {
    if (this.readFails && !path.endsWith("/runs.jsonl")) {
      throw new Deno.errors.Interrupted("Input/output error (os error 5)");
    }
    yield* super.readLinesAt(path, options);
  }
}

Deno.test("RunRegistry logs failed reads of a run's events once per failing spell (ERROR), answers each UNAVAILABLE, says when reads work again", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const files = new UnreadableEventFiles();
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const { run } = await registry.open({});
  await registry.close(run.run_id, { close_reason: "completed" });
  const errors = () => lines.filter((l) => l.startsWith("ERROR"));
  const failedRead = async () => {
    const err = await registry.listEvents(run.run_id).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof RuntimeError, String(err));
    assert.equal(err.code, "UNAVAILABLE");
    assert.match(err.message, /^Run journal I\/O failed \(read run events\): .*os error 5/);
  };
  try {
    files.readFails = true;
    for (let i = 0; i < 3; i++) await failedRead();
    assert.equal(errors().length, 1, errors().join("\n"));
    assert.match(errors()[0]!, /run journal: read run events failed: .*os error 5/);
    files.readFails = false;
    assert.equal((await registry.listEvents(run.run_id)).count, 2);
    const again = lines.filter((l) => l.includes("read again"));
    assert.equal(again.length, 1, lines.join("\n"));
    assert.match(again[0]!, /^INFO .*run events read again \(3 reads failed before\)/);
    assert.equal((await registry.listEvents(run.run_id)).count, 2);
    assert.equal(lines.filter((l) => l.includes("read again")).length, 1, "said once");
    files.readFails = true;
    await failedRead(); // a new spell: said again
    assert.equal(errors().length, 2, errors().join("\n"));
  } finally {
    await registry.shutdown();
  }
});
