/**
 * An audit trail closed while its journal opens on a hung mount (a start abandoned, then
 * stopped): once the disk answers, the opening goes no further than its step -- no segment of
 * the folder removed, none begun, no file left open (a later runtime on the folder is not written
 * beside). In-memory files whose listing of the folder waits until the test lets it go.
 */
import assert from "node:assert/strict";
import { AuditTrail } from "../../src/audit/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { closeWhileOpening, writeSegments } from "../helpers/hung_mount.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { testLogger } from "../helpers/kernel.ts";

const DIR = "/data/audit";

/** Files whose folder listings wait while `held` is set (a hung mount); handles counted. */
class HeldListFiles extends FaultyMemoryFiles {
  held: Promise<void> | null = null;
  waiting = 0;
  opened = 0;
  closed = 0;
  override async listNames(dir: string): Promise<string[]> {
    if (this.held !== null) {
      this.waiting++;
      await this.held;
    }
    return await super.listNames(dir);
  }
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    this.opened++;
    return { ...h, close: () => (this.closed++, h.close()) };
  }
}

Deno.test("AuditTrail: closed while its journal waits on the disk, once the disk answers it removes no segment, begins none and holds no file", async () => {
  const files = new HeldListFiles();
  // Two segments of an earlier run, the newest full: an opening now would begin a third and
  // remove the first (maxFiles 2).
  await writeSegments(
    files,
    [1, 2].map((n) => [`${DIR}/audit-0000000${n}.jsonl`, { pad: "x".repeat(150) }] as const),
  );
  const before = (await files.listNames(DIR)).sort();
  const handlesBefore = files.opened - files.closed;
  const trail = new AuditTrail({
    clock: new ManualClock(0, 1_700_000_000_000),
    log: testLogger(),
    mode: () => "AUTO",
  });
  await closeWhileOpening(
    files,
    () => trail.openJournal({ dir: DIR, files, maxFileBytes: 100, maxFiles: 2 }),
    () => trail.close(), // the runtime stops while the journal opens
    "the opening waits on the disk",
  );
  assert.deepEqual(
    (await files.listNames(DIR)).sort(),
    before,
    "the closed trail's opening removed a segment or began one",
  );
  assert.equal(files.opened - files.closed, handlesBefore, "a file of the closed trail is open");
});
