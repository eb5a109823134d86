/**
 * A start abandons the history disk tier's first open on a hung mount (Kernel #openFiles) and its
 * stop closes the tier without waiting for that open (DiskTier.close): should the mount answer at
 * last, after the stop, the open leaves nothing behind: no folder, no file it made (the kernel
 * keeps the runtime.data_dir lock until then: kernel_start_late_disk_lock_test). Real files under a temporary folder;
 * the calls on it held until the test lets them go (a hung mount answering late).
 */
import assert from "node:assert/strict";
import { systemClock } from "../../src/host/clock.ts";
import { LateFiles } from "../helpers/journal_files.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { diskTier } from "./_rig.ts";

for (const holding of ["every call", "the file's creation"] as const) {
  Deno.test(`DiskTier: a first open abandoned on a hung mount (${holding} held) that answers after close() leaves nothing it made late behind`, async () => {
    const dataDir = tempDir("disk-late-open-");
    const dir = `${dataDir}/history`;
    const files = new LateFiles(holding, "/history");
    const tier = diskTier({ files, dir, clock: systemClock });
    const opening = tier.open(); // abandoned by the start: never awaited by it
    await waitFor("a call on the folder held", () => files.held > 0);
    await tier.close(); // the stop after the failed start (the lock kept by the kernel)
    files.release(); // the hung mount answers at last
    await waitFor("the held calls answered", () => files.answered === files.held);
    await opening;
    // Every call held: the folder is the late call's (made after the close), gone again. Only the
    // file's creation held: the folder was made in time (before the close) and stays, empty.
    const where = holding === "every call" ? dataDir : dir;
    assert.deepEqual(
      [...Deno.readDirSync(where)].map((e) => e.name),
      [],
      `the late open left something in ${where}`,
    );
    await Deno.remove(dataDir, { recursive: true });
  });
}
