/**
 * The rows of the buckets that close while the disk tier's writes fail (a full disk, a read-only
 * folder) are kept, in order, in a bounded queue (DISK_OUTAGE_ROWS) and written once the disk works
 * again: an outage shorter than the bound loses no row. Past the bound the oldest are dropped and
 * counted (rowsDropped, the gap line) with one WARN per outage. We run as root (chmod does not stop
 * root's writes), so the failure is injected where the files are written, as the other disk-failure
 * tests do: the runtime test over real files (InterceptedAppends), the bound over in-memory ones.
 */
import assert from "node:assert/strict";
import { DISK_OUTAGE_ROWS, DISK_RETRY_MS, DiskTier } from "../../src/history/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { diskFullError, InterceptedAppends } from "../helpers/journal_files.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";
import { diskTier } from "./_rig.ts";

Deno.test("History keeps the rows of buckets closed during a disk outage and writes them, in order, when the disk works again", async () => {
  let full = false;
  const files = new InterceptedAppends("/history/", async (text, append) => {
    if (full) throw diskFullError();
    await append(text);
  });
  const clock = new TestClock();
  clock.wallMs = T0;
  clock.mono = 0;
  const rig = await startRig({
    history: { stepMs: 1000, memorySeconds: 5 },
    clock,
    host: { files },
  });
  try {
    await rig.poll(T0 + 1000, probeValues(1, 1));
    await rig.poll(T0 + 2000, probeValues(2, 2)); // bucket 1 closed: written
    await rig.rt.history!.flushDisk();
    full = true;
    // Buckets 2..20 close while the disk is full, through two failed retries.
    for (let i = 3; i <= 21; i++) {
      if (i === 9 || i === 15) clock.mono += DISK_RETRY_MS + 1000;
      await rig.poll(T0 + i * 1000, probeValues(i, i));
      await rig.rt.history!.flushDisk();
    }
    let disk = rig.rt.history!.status().disk;
    assert.equal(disk.state, "stopped");
    assert.equal(disk.rowsHeld, 19, "buckets 2..20 kept");
    // While rows are kept, a question reaching before the ring says its answer lacks them.
    const during = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0}`);
    assert.equal(during.incomplete, "disk_pending");
    full = false;
    clock.mono += DISK_RETRY_MS + 1000;
    await rig.poll(T0 + 22_000, probeValues(22, 22)); // bucket 21 closes: the retry
    await rig.rt.history!.flushDisk();
    disk = rig.rt.history!.status().disk;
    assert.equal(disk.state, "ok");
    assert.equal(disk.rowsHeld, 0);
    assert.equal(disk.rowsDropped, 0);
    assert.equal(disk.rowsWritten, 21, "buckets 1..21, none lost");
    // The ring holds 5 s: buckets 1..16 can only come from the disk, every one of them once.
    const answer = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&step_ms=1000`,
    );
    assert.equal(answer.incomplete, null);
    assert.equal(answer.source, "memory+disk");
    assert.deepEqual(
      answer.signals[0].points.map((p: { t_ms: number }) => (p.t_ms - T0) / 1000),
      Array.from({ length: 22 }, (_, k) => k + 1),
    );
    // In order on disk: rows ascend within the file (no new file was begun for them).
    const names = [...Deno.readDirSync(`${rig.dataDir}/history`)].map((e) => e.name).sort();
    assert.equal(names.length, 1, names.join(", "));
    const times = Deno.readTextFileSync(`${rig.dataDir}/history/${names[0]}`).split("\n")
      .filter((l) => l.startsWith('{"t"')).map((l) => (JSON.parse(l).t - T0) / 1000);
    assert.deepEqual(times, Array.from({ length: 21 }, (_, k) => k + 1));
  } finally {
    await rig.rt.stop();
  }
});

const row = (t: number) => JSON.stringify({ t, p: "p", d: "a", s: { x: [1, 1, 1, 1, 0] } });

function tierOn(files: FaultyMemoryFiles, clock: ManualClock, log = testLogger()): DiskTier {
  return diskTier({ files, maxBytes: 1 << 24, clock, log });
}

async function rowTimes(tier: DiskTier): Promise<number[]> {
  const got: number[] = [];
  await tier.read("p", "a", 0, Infinity, (r) => got.push(r.t));
  return got;
}

Deno.test("DiskTier keeps DISK_OUTAGE_ROWS rows through an outage, drops the oldest past it, and says so once per outage", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  const { log, lines } = capturingLogger({ level: "info" });
  const tier = tierOn(files, clock, log);
  await tier.open();
  files.full = true;
  let t = 0;
  // The failed write, then exactly the bound: nothing dropped yet.
  for (; t < DISK_OUTAGE_ROWS; t++) tier.write(row(t), t);
  await tier.flush();
  assert.equal(tier.status().rowsHeld, DISK_OUTAGE_ROWS);
  assert.equal(tier.status().rowsDropped, 0, "the bound itself is kept");
  tier.write(row(t), t++); // one past it: the oldest (t 0) goes
  await tier.flush();
  assert.equal(tier.status().rowsDropped, 1);
  // A retry that fails again, then two more past the bound: the same outage, no second WARN.
  clock.mono += DISK_RETRY_MS;
  tier.write(row(t), t++);
  await tier.flush();
  tier.write(row(t), t++);
  await tier.flush();
  let s = tier.status();
  assert.equal(s.state, "stopped");
  assert.equal(s.rowsDropped, 3);
  assert.equal(s.rowsHeld, DISK_OUTAGE_ROWS);
  const full = lines.filter((l) => l.includes("outage queue full"));
  assert.equal(full.length, 1, lines.join("\n"));
  assert.match(full[0]!, /^WARN .*DISK_OUTAGE_ROWS 4096/);
  // The disk works again: the retry's row is kept too (a fourth past the bound), then the kept
  // rows are written, in order, and the gap line for the 4.
  files.full = false;
  clock.mono += DISK_RETRY_MS;
  tier.write(row(t), t++);
  await tier.flush();
  s = tier.status();
  assert.equal(s.state, "ok");
  assert.equal(s.rowsDropped, 4);
  assert.equal(s.rowsHeld, 0);
  assert.equal(s.rowsWritten, DISK_OUTAGE_ROWS);
  assert.deepEqual(
    await rowTimes(tier),
    Array.from({ length: DISK_OUTAGE_ROWS }, (_, k) => k + 4),
    "the newest DISK_OUTAGE_ROWS, in order",
  );
  const gaps = files.text("/data/history/history-00000001.jsonl").split("\n")
    .filter((l) => l.startsWith('{"gap"')).map((l) => JSON.parse(l).gap.rows);
  assert.deepEqual(gaps, [4]);
  // A second outage past the bound is said again.
  files.full = true;
  tier.write(row(t), t++); // the failed write: stopped
  await tier.flush();
  for (let i = 0; i < DISK_OUTAGE_ROWS; i++) tier.write(row(t), t++);
  await tier.flush();
  assert.equal(tier.status().rowsDropped, 5);
  assert.equal(lines.filter((l) => l.includes("outage queue full")).length, 2);
  await tier.close();
});

Deno.test("DiskTier writes the rows kept through an outage at close when the disk works again before the retry", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  const tier = tierOn(files, clock);
  await tier.open();
  tier.write(row(1), 1);
  await tier.flush();
  files.full = true;
  tier.write(row(2), 2);
  await tier.flush();
  tier.write(row(3), 3); // kept: the retry is DISK_RETRY_MS away
  files.full = false;
  await tier.close();
  assert.equal(tier.status().rowsDropped, 0);
  assert.deepEqual(
    files.text("/data/history/history-00000001.jsonl").split("\n").filter((l) => l !== "")
      .map((l) => JSON.parse(l).t),
    [1, 2, 3],
  );
});

Deno.test("DiskTier counts the rows it still cannot write at close as dropped, in its gap count", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  const tier = tierOn(files, clock);
  await tier.open();
  files.full = true;
  tier.write(row(1), 1);
  await tier.flush();
  tier.write(row(2), 2);
  await tier.close();
  const s = tier.status();
  assert.equal(s.rowsHeld, 0);
  assert.equal(s.rowsDropped, 2);
});
