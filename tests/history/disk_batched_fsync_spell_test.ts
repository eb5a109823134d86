/**
 * A batched fsync of the history's disk tier (rows written without `sync`, fsync'd by the
 * writer's timer within DISK_SYNC_INTERVAL_MS) that keeps failing is one failing spell: one WARN
 * when it starts, naming the file and the error, none for the failures after it, and one INFO
 * once an fsync works again, as the tier's other failing spells say when they end. The disk tier
 * on in-memory files whose fsync fails while the test says so, on a manual clock.
 */
import assert from "node:assert/strict";
import { DISK_SYNC_INTERVAL_MS } from "../../src/history/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { diskTier } from "./_rig.ts";

const T0 = 1_700_000_000_000;
const row = (t: number) => JSON.stringify({ t, p: "p", d: "a", s: { x: [1, 1, 1, 1, 0] } });

Deno.test("DiskTier logs a failing batched fsync once (WARN) while it keeps failing, and one INFO when an fsync works again", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  const tier = diskTier({ files, clock, log });
  await tier.open();
  /** Writes one row of bucket `t`, then lets the batched fsync come. */
  const rowThenSync = async (t: number) => {
    tier.write(row(t), t);
    await tier.flush();
    await clock.advanceAsync(DISK_SYNC_INTERVAL_MS);
  };
  try {
    await rowThenSync(T0);
    assert.equal(lines.length, 0, lines.join("\n"));
    files.syncFails = true;
    for (let i = 1; i <= 3; i++) await rowThenSync(T0 + i * 1000);
    assert.equal(files.syncFailures, 3, "three batched fsyncs failed");
    // Before: three WARNs, one per failed fsync, and none of them ended.
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(
      lines[0]!,
      /^WARN .*history disk tier: fsync of \/data\/history\/history-00000001\.jsonl failed \(No space left on device \(os error 28\)\): the lines written to it since its last fsync may not survive a machine crash/,
    );
    files.syncFails = false;
    await rowThenSync(T0 + 4000);
    // Before: no line said the fsyncs work again.
    assert.equal(lines.length, 2, lines.join("\n"));
    assert.match(
      lines[1]!,
      /^INFO .*history disk tier: fsync of \/data\/history\/history-00000001\.jsonl works again \(3 failed before\)$/,
    );
    assert.equal(tier.status().state, "ok");
    assert.equal(tier.status().rowsWritten, 5, "every row written");
    await rowThenSync(T0 + 5000);
    assert.equal(lines.length, 2, "a spell ends once");
  } finally {
    await tier.close();
  }
});
