/**
 * A disk that stays full: the history's disk tier says it stopped once (WARN) and tries again every
 * DISK_RETRY_MS without a line at INFO or above while it keeps failing, and once that it writes
 * again. Not a WARN and an INFO a minute (~2,900 lines a day) for as long as the disk is full
 * (docs/history.md: "logs one WARN").
 */
import assert from "node:assert/strict";
import { DISK_RETRY_MS } from "../../src/history/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { diskFullError, InterceptedAppends } from "../helpers/journal_files.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";
import { TestClock } from "../helpers/programmable_provider.ts";

Deno.test("a disk that stays full through several retries is logged once, and once when the tier writes again", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  let full = true;
  const files = new InterceptedAppends("/history/", async (text, append) => {
    if (full) throw diskFullError();
    await append(text);
  });
  const clock = new TestClock();
  clock.wallMs = T0;
  clock.mono = 0;
  const rig = await startRig({ history: { stepMs: 1000 }, clock, host: { files, log } });
  let second = 0;
  /** Two polls a second apart (a bucket closed: a row for the disk), then the disk's turn. */
  const rows = async () => {
    for (let i = 0; i < 2; i++) {
      second++;
      await rig.poll(T0 + second * 1000, probeValues(second, second));
    }
    await rig.rt.history!.flushDisk();
  };
  try {
    await rows();
    for (let retry = 0; retry < 3; retry++) {
      clock.mono += DISK_RETRY_MS + 1000; // past the retry: the next row is tried, and fails
      await rows();
    }
    full = false;
    clock.mono += DISK_RETRY_MS + 1000;
    await rows();
    const tier = lines.filter((l) => l.includes("history disk tier"));
    // The tier's WARN (it stopped; the journal writer adds no line of its own) and one INFO (it
    // writes again): two lines for the whole outage, however many retries it took.
    assert.equal(tier.length, 2, tier.join("\n"));
    assert.match(tier[0]!, /^WARN .*history disk tier stopped: .*No space left on device/);
    // No row was lost: the rows of the outage were kept and written (INFO, no gap).
    assert.match(tier[1]!, /^INFO .*history disk tier written again$/);
    const metrics = await (await rig.get("/metrics")).text();
    assert.match(metrics, /^runtime_history_disk_up 1$/m);
  } finally {
    await rig.rt.stop();
  }
});
