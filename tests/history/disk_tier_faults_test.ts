/**
 * The disk tier on in-memory files that fail as a full disk does (tests/helpers/
 * faulty_memory_files.ts): a short write is cut back (no torn row stays), the tier
 * stops, keeps the rows, and writes them when it tries again after DISK_RETRY_MS, and its write error counter counts the writes and
 * fsyncs that failed -- one per failed write, not one per row it held, and a failed fsync too.
 */
import assert from "node:assert/strict";
import { DISK_RETRY_MS } from "../../src/history/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { diskTier } from "./_rig.ts";

const T0 = 1_700_000_000_000;
const row = (t: number, d: string) => JSON.stringify({ t, p: "p", d, s: { x: [1, 1, 1, 1, 0] } });

Deno.test("the disk tier counts one write error per failed write (not per row) and a failed fsync, and recovers after a torn row", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  const tier = diskTier({ files, clock });
  await tier.open();
  tier.write(row(T0, "a"), T0);
  await tier.flush();
  // The disk fills in the middle of the next write: three rows of one bucket, one write.
  files.full = true;
  files.partialBytes = 10;
  for (const d of ["a", "b", "c"]) tier.write(row(T0 + 1000, d), T0 + 1000);
  await tier.flush();
  assert.equal(files.appendFailures, 1, "one write");
  let s = tier.status();
  assert.equal(s.state, "stopped");
  assert.equal(s.rowsDropped, 0, "kept through the outage, not dropped");
  assert.equal(s.rowsHeld, 3);
  assert.equal(s.writeErrors, 1, "one failed write, however many rows it held");
  // Room again: the tier writes after DISK_RETRY_MS, on a new line after the torn row.
  files.full = false;
  clock.mono += DISK_RETRY_MS;
  clock.wall += DISK_RETRY_MS;
  tier.write(row(T0 + 2000, "a"), T0 + 2000);
  await tier.flush();
  assert.equal(tier.status().state, "ok");
  const got: number[] = [];
  await tier.read("p", "a", T0, T0 + 10_000, (r) => got.push(r.t));
  assert.deepEqual(got, [T0, T0 + 1000, T0 + 2000], "the kept row first, then the new one");
  // The batched fsync fails (a file system that allocates blocks late): counted too.
  files.syncFails = true;
  tier.write(row(T0 + 3000, "a"), T0 + 3000);
  await tier.flush();
  await clock.advanceAsync(10_000);
  assert.equal(files.syncFailures, 1);
  s = tier.status();
  assert.equal(s.writeErrors, 2, "the failed fsync is a write error");
  await tier.close();
});
