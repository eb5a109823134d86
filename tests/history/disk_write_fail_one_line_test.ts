/**
 * One failed write of the history's disk tier is one event: one WARN, the tier's own, naming what
 * failed and where (the file, the error) and the bound of the rows it keeps (DISK_OUTAGE_ROWS).
 * The journal writer under it adds no line of its own for the same failure (it said "lines
 * dropped", which the tier's rows are not: they are kept). Once it writes again: one INFO.
 */
import assert from "node:assert/strict";
import { DISK_OUTAGE_ROWS, DISK_RETRY_MS } from "../../src/history/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { diskFullError, InterceptedAppends } from "../helpers/journal_files.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";
import { TestClock } from "../helpers/programmable_provider.ts";

Deno.test("DiskTier logs one WARN for one failed write (the tier's, naming the file, the error and DISK_OUTAGE_ROWS), one INFO when it writes again", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  let full = false;
  const files = new InterceptedAppends("/history/", async (text, append) => {
    if (full) throw diskFullError();
    await append(text);
  });
  const clock = new TestClock();
  clock.wallMs = T0;
  clock.mono = 0;
  const rig = await startRig({ history: { stepMs: 1000 }, clock, host: { files, log } });
  try {
    await rig.poll(T0 + 1000, probeValues(1, 1));
    await rig.poll(T0 + 2000, probeValues(2, 2)); // bucket 1 closed: written
    await rig.rt.history!.flushDisk();
    const before = lines.length;
    full = true;
    await rig.poll(T0 + 3000, probeValues(3, 3)); // bucket 2 closed: its write fails
    await rig.rt.history!.flushDisk();
    assert.equal(rig.rt.history!.status().disk.state, "stopped");
    const failed = lines.slice(before).filter((l) => /^(WARN|ERROR)/.test(l));
    assert.equal(failed.length, 1, failed.join("\n"));
    assert.match(failed[0]!, /^WARN .*history disk tier stopped: /);
    assert.match(failed[0]!, /history-\d{8}\.jsonl/, "names the file");
    assert.match(failed[0]!, /No space left on device/, "names the error");
    assert.ok(failed[0]!.includes(`DISK_OUTAGE_ROWS ${DISK_OUTAGE_ROWS}`), failed[0]);
    full = false;
    clock.mono += DISK_RETRY_MS + 1000;
    const atRetry = lines.length;
    await rig.poll(T0 + 4000, probeValues(4, 4)); // bucket 3 closes: the retry writes 2 and 3
    await rig.rt.history!.flushDisk();
    assert.equal(rig.rt.history!.status().disk.state, "ok");
    const again = lines.slice(atRetry).filter((l) => l.includes("history disk tier"));
    assert.equal(again.length, 1, again.join("\n"));
    assert.match(again[0]!, /^INFO .*history disk tier written again/);
  } finally {
    await rig.rt.stop();
  }
});
