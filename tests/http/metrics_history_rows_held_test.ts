/**
 * GET /metrics carries the disk tier's outage queue (rowsHeld of the history status): the rows of
 * closed buckets kept while the disk fails (at most DISK_OUTAGE_ROWS), so a full disk is seen
 * filling it before rows are dropped. Scraped over real HTTP during an outage and after it.
 */
import assert from "node:assert/strict";
import { DISK_RETRY_MS } from "../../src/history/mod.ts";
import { diskFullError, InterceptedAppends } from "../helpers/journal_files.ts";
import { parsePrometheusText, sampleValue } from "../helpers/prometheus_text.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { probeValues, startRig, T0 } from "../history/_history_helpers.ts";

Deno.test("GET /metrics runtime_history_disk_rows_held counts the rows kept through a disk outage, 0 once written", async () => {
  let full = false;
  const files = new InterceptedAppends("/history/", async (text, append) => {
    if (full) throw diskFullError();
    await append(text);
  });
  const clock = new TestClock();
  clock.wallMs = T0;
  clock.mono = 0;
  const rig = await startRig({ history: { stepMs: 1000 }, clock, host: { files } });
  const held = async () => {
    const families = parsePrometheusText(await (await rig.get("/metrics")).text());
    assert.equal(families.get("runtime_history_disk_rows_held")?.type, "gauge");
    return sampleValue(families, "runtime_history_disk_rows_held", {});
  };
  try {
    await rig.poll(T0 + 1000, probeValues(1, 1));
    await rig.poll(T0 + 2000, probeValues(2, 2)); // bucket 1 closed: written
    await rig.rt.history!.flushDisk();
    assert.equal(await held(), 0);
    full = true;
    for (let i = 3; i <= 5; i++) { // buckets 2, 3 and 4 close while the disk is full
      await rig.poll(T0 + i * 1000, probeValues(i, i));
      await rig.rt.history!.flushDisk();
    }
    assert.equal(rig.rt.history!.status().disk.rowsHeld, 3);
    assert.equal(await held(), 3);
    full = false;
    clock.mono += DISK_RETRY_MS + 1000;
    await rig.poll(T0 + 6000, probeValues(6, 6)); // bucket 5 closes: the retry writes 2..5
    await rig.rt.history!.flushDisk();
    assert.equal(await held(), 0);
    assert.equal(rig.rt.history!.status().disk.rowsWritten, 5);
  } finally {
    await rig.rt.stop();
  }
});
