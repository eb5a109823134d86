/**
 * A rewrite of runs.jsonl that keeps failing (a rename refused, a full disk) is not tried again at
 * every close: the tries back off (RUNS_COMPACT_RETRY_CLOSES, doubling up to
 * RUNS_COMPACT_RETRY_MAX_CLOSES closes between two), and a rewrite that succeeds again resets it.
 */
import assert from "node:assert/strict";
import { RUNS_COMPACT_RETRY_CLOSES, RUNS_COMPACT_RETRY_MAX_CLOSES } from "../../src/runs/mod.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

class RenameFaults extends RunJournalFaultFiles {
  renameFails = false;
  renames = 0;
  override rename(from: string, to: string): Promise<void> {
    this.renames++;
    if (this.renameFails) return Promise.reject(new Error("EIO: rename refused"));
    return super.rename(from, to);
  }
}

Deno.test("a runs.jsonl rewrite that keeps failing is tried again after a backoff of closes, not at every close", async () => {
  const files = new RenameFaults();
  const registry = registryOn(files, { maxRuns: 1 });
  await registry.start();
  const lines = () => files.text("/data/runs.jsonl").split("\n").filter(Boolean).length;
  const openClose = async () => {
    const { run } = await registry.open({});
    await registry.close(run.run_id, {});
  };
  files.renameFails = true;
  // Past the rewrite threshold (4 x 1 kept run + 64 lines): the first try fails.
  while (files.renames === 0) await openClose();
  const closes = 400;
  for (let i = 0; i < closes; i++) await openClose();
  // Doubling from RUNS_COMPACT_RETRY_CLOSES: a handful of tries in 400 closes (before: 400).
  let bound = 0;
  for (let gap = RUNS_COMPACT_RETRY_CLOSES, n = 0; n < closes; bound++) {
    n += gap;
    gap = Math.min(2 * gap, RUNS_COMPACT_RETRY_MAX_CLOSES);
  }
  assert.ok(files.renames - 1 <= bound, `${files.renames - 1} rewrites tried in ${closes} closes`);
  assert.ok(files.renames > 1, "it is tried again");
  // Once the rename works again, the next try rewrites the file.
  files.renameFails = false;
  const grown = lines();
  for (let i = 0; i < RUNS_COMPACT_RETRY_MAX_CLOSES && lines() >= grown; i++) await openClose();
  assert.ok(lines() < 10, `runs.jsonl rewritten to the kept run (${lines()} lines)`);
  await registry.shutdown();
});
