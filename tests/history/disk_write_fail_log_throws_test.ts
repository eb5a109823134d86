/**
 * A logger that throws (a custom sink that fails) loses its line only: the history's disk tier
 * says a failed write with a WARN before it keeps the write's rows for the retry, and a WARN that
 * threw there lost those rows uncounted and rejected the write's promise (an unhandled rejection
 * ends the runtime). The rows of the failed write are on disk once it works again.
 */
import assert from "node:assert/strict";
import { DISK_RETRY_MS } from "../../src/history/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { diskFullError, InterceptedAppends } from "../helpers/journal_files.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";
import { TestClock } from "../helpers/programmable_provider.ts";

Deno.test("History's disk tier keeps a failed write's rows for the retry when its logger throws on the failure's WARN", async () => {
  let threw = 0;
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => Date.now(),
    write: (line) => {
      if (line.includes("history disk tier stopped")) {
        threw++;
        throw new Error("log sink failed");
      }
    },
  });
  let full = false;
  const written: string[] = [];
  const files = new InterceptedAppends("/history/", async (text, append) => {
    if (full) throw diskFullError();
    written.push(text);
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
    full = true;
    await rig.poll(T0 + 3000, probeValues(3, 3)); // bucket 2 closed: its write fails
    await rig.rt.history!.flushDisk();
    assert.equal(threw, 1, "the failure's WARN was said (and threw)");
    assert.equal(rig.rt.history!.status().disk.state, "stopped");
    full = false;
    clock.mono += DISK_RETRY_MS + 1000;
    await rig.poll(T0 + 4000, probeValues(4, 4)); // bucket 3 closes: the retry writes 2 and 3
    await rig.rt.history!.flushDisk();
    assert.equal(rig.rt.history!.status().disk.state, "ok");
    const text = written.join("");
    assert.ok(text.includes(`${T0 + 2000}`), `bucket 2's rows written at the retry:\n${text}`);
  } finally {
    await rig.rt.stop();
  }
});
