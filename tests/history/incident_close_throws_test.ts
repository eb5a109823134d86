/**
 * An incident record whose file's close throws after it was written and fsync'd (a JournalFiles
 * against JournalAppendHandle.close's contract) is kept and listed: the close's error does not
 * count the written record as failed, nor remove its file (journal/journal_files.ts closeHandle).
 * An IncidentRecorder over a hand-fed History on a manual clock; in-memory files.
 */
import assert from "node:assert/strict";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { incidentRig, INCIDENTS_DIR } from "./_incident_rig.ts";

/** MemoryFiles whose incident records' handles throw at close (once the file is let go). */
class RecordCloseThrows extends MemoryFiles {
  closes = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    if (!/\/inc-[^/]*\.jsonl$/.test(path)) return h;
    return {
      ...h,
      close: () => {
        h.close();
        this.closes++;
        throw new Error("EBADF: close failed");
      },
    };
  }
}

Deno.test("IncidentRecorder keeps and lists a record written and fsync'd whose file's close throws", async () => {
  const files = new RecordCloseThrows();
  const { log, lines } = capturingLogger({ level: "warn" });
  const rig = incidentRig({ files, log });
  const { clock, incidents, poll, loss } = rig;
  await rig.session(async () => {
    poll("p0", "d0", 1);
    loss("d0");
    clock.advance(5_000);
    await incidents.settled();
    assert.equal(files.closes, 1, "the record's file was closed once");
    const listed = incidents.list().map((h) => h.incident_id);
    assert.equal(listed.length, 1, `the record written is listed:\n${lines.join("\n")}`);
    const names = (await files.listNames(INCIDENTS_DIR)).filter((n) => n.startsWith("inc-"));
    assert.deepEqual(names, [`${listed[0]}.jsonl`], "the record's file is kept");
    assert.deepEqual(
      lines.filter((l) => l.includes("close failed")).map((l) => l.split(" ")[0]),
      ["WARN"],
      "the close's failure said once",
    );
  });
});
