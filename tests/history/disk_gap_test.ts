/**
 * The disk tier's gap line (written once writing works again) counts every row lost since the
 * last one written: those dropped past the outage queue's bound (DISK_OUTAGE_ROWS) while the tier
 * stayed stopped (DISK_RETRY_MS), as rowsDropped does.
 */
import assert from "node:assert/strict";
import { DISK_OUTAGE_ROWS, DISK_RETRY_MS } from "../../src/history/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { diskTier } from "./_rig.ts";

const T0 = 1_700_000_000_000;
const row = (t: number) => JSON.stringify({ t, p: "p", d: "a", s: { x: [1, 1, 1, 1, 0] } });

Deno.test("DiskTier's gap line counts the rows dropped while it was stopped, not only those of the failed write", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  const tier = diskTier({ files, clock });
  await tier.open();
  tier.write(row(T0), T0);
  await tier.flush();
  files.full = true;
  tier.write(row(T0 + 1000), T0 + 1000); // the failed write: the tier stops
  await tier.flush();
  assert.equal(tier.status().state, "stopped");
  files.full = false;
  // Kept while stopped, 11 past the bound: the oldest 11 (the failed write's row first) dropped.
  for (let i = 2; i < DISK_OUTAGE_ROWS + 12; i++) tier.write(row(T0 + i * 1000), T0 + i * 1000);
  clock.mono += DISK_RETRY_MS;
  clock.wall += DISK_RETRY_MS;
  tier.write(row(T0 + 10_000_000), T0 + 10_000_000);
  await tier.flush();
  const dropped = tier.status().rowsDropped;
  assert.equal(dropped, 12, "the 11 past the bound, and the retry's own row");
  const gaps = (await Promise.all(
    (await files.listNames("/data/history")).map((n) => files.text(`/data/history/${n}`)),
  )).join("").split("\n").filter((l) => l.startsWith('{"gap"')).map((l) => JSON.parse(l).gap);
  assert.equal(gaps.length, 1);
  assert.equal(gaps[0].rows, dropped, "the gap line counts fewer rows than were lost");
  await tier.close();
});
