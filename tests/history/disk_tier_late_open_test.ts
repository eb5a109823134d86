/**
 * A start abandons the history disk tier's first open on a hung mount (Kernel #openFiles) and its
 * stop closes the tier without waiting for that open (DiskTier.close): should the mount answer at
 * last -- after the runtime.data_dir lock's release, when a later runtime may own the folder --
 * the open leaves nothing behind: no folder, no file it made. Real files under a temporary folder;
 * the calls on it held until the test lets them go (a hung mount answering late).
 */
import assert from "node:assert/strict";
import { DiskTier } from "../../src/history/mod.ts";
import { systemClock } from "../../src/host/clock.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { RealJournalFiles } from "../helpers/journal_files.ts";
import { tempDir, testLogger, waitFor } from "../helpers/kernel.ts";

/** The calls a hung mount holds: every one on the folder, or only the file's creation. */
type Holding = "every call" | "the file's creation";

/**
 * Real files where the calls `holding` names on a path holding `/history` wait until release();
 * those after it go straight through. `held` and `answered` count the calls held.
 */
class LateFiles extends RealJournalFiles {
  readonly #holding: Holding;
  readonly #waiting: (() => void)[] = [];
  #released = false;
  held = 0;
  answered = 0;
  constructor(holding: Holding) {
    super();
    this.#holding = holding;
  }
  release(): void {
    this.#released = true;
    for (const go of this.#waiting.splice(0)) go();
  }
  async #late<T>(path: string, creates: boolean, call: () => Promise<T>): Promise<T> {
    const holds = this.#holding === "every call" || creates;
    if (this.#released || !holds || !path.includes("/history")) return call();
    this.held++;
    await new Promise<void>((r) => this.#waiting.push(r));
    try {
      return await call();
    } finally {
      this.answered++;
    }
  }
  override ensureDir(path: string): Promise<void> {
    return this.#late(path, false, () => super.ensureDir(path));
  }
  override listNames(dir: string): Promise<string[]> {
    return this.#late(dir, false, () => super.listNames(dir));
  }
  override fileSize(path: string): Promise<number> {
    return this.#late(path, false, () => super.fileSize(path));
  }
  override endsWithNewline(path: string): Promise<boolean> {
    return this.#late(path, false, () => super.endsWithNewline(path));
  }
  override openAppend(path: string): Promise<JournalAppendHandle> {
    return this.#late(path, true, () => super.openAppend(path));
  }
}

for (const holding of ["every call", "the file's creation"] as const) {
  Deno.test(`DiskTier: a first open abandoned on a hung mount (${holding} held) that answers after close() leaves nothing it made late behind`, async () => {
    const dataDir = tempDir("disk-late-open-");
    const dir = `${dataDir}/history`;
    const files = new LateFiles(holding);
    const tier = new DiskTier({
      files,
      dir,
      maxBytes: 1 << 20,
      clock: systemClock,
      log: testLogger(),
    });
    const opening = tier.open(); // abandoned by the start: never awaited by it
    await waitFor("a call on the folder held", () => files.held > 0);
    await tier.close(); // the stop after the failed start; then the lock is released
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
