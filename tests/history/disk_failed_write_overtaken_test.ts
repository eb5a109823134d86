/**
 * A write of the disk tier that fails while the next bucket's row is already queued behind it: the
 * journal writer goes on to that next write, which works (the disk had room again: another
 * process's files removed, a log vacuumed), while the failed row is kept for the tier's retry. The
 * retry wrote the kept row after the later one, in the same file: rows no longer ascended within
 * it (docs/history.md "The disk tier": the reader bisects each file by time and stops at a
 * device's first row past the range), and a question over the kept row's bucket did not get it.
 * The tier begins a new file for a row earlier than the newest one handed to the writer; a failed
 * row now counts as behind the rows handed after it.
 */
import assert from "node:assert/strict";
import { DISK_RETRY_MS } from "../../src/history/mod.ts";
import type { Logger } from "../../src/common/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { diskFullError, InterceptedAppends } from "../helpers/journal_files.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";

/**
 * The runtime with history on (1 s buckets, a 5 s ring) over files whose one append fails as a
 * full disk after the next row was queued behind it: bucket 1 written; bucket 2's row held, then
 * failed; bucket 3's, queued behind it, written. Returns once both writes settled (`onFailed`
 * runs just before bucket 2's row is handed to the writer), with `retryDue` to move the
 * monotonic clock past the tier's retry.
 */
async function overtakenWrite(log?: Logger, onFailed: () => void = () => {}) {
  // The next append waits for `release`, then fails as on a full disk; the ones after it work.
  let failNext = false;
  let release = () => {};
  const files = new InterceptedAppends("/history/", async (text, append) => {
    if (!failNext) return await append(text);
    failNext = false;
    await new Promise<void>((r) => (release = r));
    throw diskFullError();
  });
  const clock = new TestClock();
  clock.wallMs = T0;
  clock.mono = 0;
  const rig = await startRig({
    history: { stepMs: 1000, memorySeconds: 5 },
    clock,
    host: log === undefined ? { files } : { files, log },
  });
  try {
    await rig.poll(T0 + 1000, probeValues(1, 1));
    await rig.poll(T0 + 2000, probeValues(2, 2)); // bucket 1 closed: written
    await rig.rt.history!.flushDisk();
    onFailed();
    failNext = true;
    await rig.poll(T0 + 3000, probeValues(3, 3)); // bucket 2's row: its write waits, then fails
    await rig.poll(T0 + 4000, probeValues(4, 4)); // bucket 3's row, queued behind it: written
    release();
    await rig.rt.history!.flushDisk();
  } catch (err) {
    await rig.rt.stop();
    throw err;
  }
  // The tier's retry due: the monotonic clock past DISK_RETRY_MS.
  const retryDue = () => void (clock.mono = (clock.mono ?? 0) + DISK_RETRY_MS + 1000);
  return { rig, retryDue };
}

Deno.test("a row whose write failed while a later one was queued, then written at the retry, is answered, and rows ascend within each file", async () => {
  const { rig, retryDue } = await overtakenWrite();
  try {
    assert.equal(rig.rt.history!.status().disk.rowsHeld, 1, "bucket 2's row kept");
    retryDue();
    // Bucket 4 closes: the retry writes bucket 2's row and bucket 4's.
    for (let i = 5; i <= 12; i++) {
      await rig.poll(T0 + i * 1000, probeValues(i, i));
      await rig.rt.history!.flushDisk();
    }
    const disk = rig.rt.history!.status().disk;
    assert.equal(disk.rowsHeld, 0);
    assert.equal(disk.rowsDropped, 0);
    // The ring holds 5 s: bucket 2 can only come from the disk.
    const answer = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0 + 2000}&until_ms=${T0 + 2999}`,
    );
    assert.equal(answer.incomplete, null);
    assert.equal(answer.source, "disk");
    assert.deepEqual(
      answer.signals[0].points.map((p: { t_ms: number; last: number }) => [
        (p.t_ms - T0) / 1000,
        p.last,
      ]),
      [[2, 2]],
      "bucket 2 answered from the disk",
    );
    // Rows ascend within each file (a row behind the newest begins a new one).
    for (const e of Deno.readDirSync(`${rig.dataDir}/history`)) {
      if (!e.isFile) continue;
      const times = Deno.readTextFileSync(`${rig.dataDir}/history/${e.name}`).split("\n")
        .filter((l) => l.startsWith('{"t"')).map((l) => (JSON.parse(l).t - T0) / 1000);
      assert.deepEqual(times, [...times].sort((a, b) => a - b), `${e.name} ascends`);
    }
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("a later row written while the tier is stopped (its failed row kept for the retry) does not say the tier is written again: the outage goes on, one INFO at the retry", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  let before = 0;
  const { rig, retryDue } = await overtakenWrite(log, () => (before = lines.length));
  const said = (from: number) => lines.slice(from).filter((l) => l.includes("history disk tier"));
  try {
    const disk = rig.rt.history!.status().disk;
    assert.equal(disk.state, "stopped", "stopped until its retry");
    assert.equal(disk.rowsHeld, 1, "bucket 2's row kept");
    const during = said(before);
    assert.equal(during.length, 1, during.join("\n"));
    assert.match(during[0]!, /^WARN .*history disk tier stopped: /);
    retryDue();
    const atRetry = lines.length;
    await rig.poll(T0 + 5000, probeValues(5, 5)); // bucket 4 closes: the retry writes 2 and 4
    await rig.rt.history!.flushDisk();
    assert.equal(rig.rt.history!.status().disk.state, "ok");
    assert.equal(rig.rt.history!.status().disk.rowsHeld, 0);
    const again = said(atRetry);
    assert.equal(again.length, 1, again.join("\n"));
    assert.match(again[0]!, /^INFO .*history disk tier written again/);
  } finally {
    await rig.rt.stop();
  }
});
