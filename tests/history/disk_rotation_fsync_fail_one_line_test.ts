/**
 * A failed fsync of a history file before the disk tier rotates to a new one (here: the wall clock
 * stepped back, so the next row begins a new file) is one event: one WARN, the tier's "stopped"
 * line, naming the file, the error and what the failed fsync means. The journal writer under it
 * adds no "fsync before rotation failed" line of its own. The real runtime and the programmable
 * provider as a child process; real files, whose fsync fails while the test says so.
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { FailingSyncFiles } from "./_file_faults.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";

Deno.test("DiskTier logs one WARN when the fsync before rotating a file fails: the tier's, naming the file, the error and that the fsync failed", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const files = new FailingSyncFiles();
  const clock = new TestClock();
  clock.wallMs = T0;
  clock.mono = 0;
  const rig = await startRig({ history: { stepMs: 1000 }, clock, host: { files, log } });
  try {
    await rig.poll(T0 + 1000, probeValues(1, 1));
    await rig.poll(T0 + 2000, probeValues(2, 2));
    await rig.poll(T0 + 3000, probeValues(3, 3)); // buckets 1 and 2 closed: written
    await rig.rt.history!.flushDisk();
    const before = lines.length;
    files.syncFails = true;
    // The wall clock stepped back: the open bucket is written, and rows older than the last
    // written begin a new file, which first fsyncs the current one.
    await rig.poll(T0 - 5000, probeValues(4, 4));
    await rig.poll(T0 - 4000, probeValues(5, 5));
    await rig.rt.history!.flushDisk();
    assert.ok(files.failedSyncs >= 1, `no fsync failed:\n${lines.slice(before).join("\n")}`);
    assert.equal(rig.rt.history!.status().disk.state, "stopped");
    const said = lines.slice(before).filter((l) => /^(WARN|ERROR)/.test(l));
    assert.equal(said.length, 1, said.join("\n"));
    assert.match(said[0]!, /^WARN .*history disk tier stopped: /);
    assert.match(said[0]!, /history-\d{8}\.jsonl/, "names the file");
    assert.match(said[0]!, /Input\/output error \(os error 5\)/, "names the error");
    assert.match(said[0]!, /fsync before rotation failed/, "names what failed");
  } finally {
    files.syncFails = false;
    await rig.rt.stop();
  }
});
