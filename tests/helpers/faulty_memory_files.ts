/**
 * MemoryFiles (tests/helpers/memory_files.ts) whose appends and fsyncs can fail as on a full disk:
 * `full` makes an append write only its first `partialBytes` bytes (a short write, as write(2)
 * does when the disk fills mid-line) and then reject with ENOSPC; `syncFails` makes every fsync
 * reject (ENOSPC at fsync: a file system allocating blocks late); `truncateFails` makes cutting a
 * file back reject. `durableText` is what an fsync made durable (the whole file, as fsync(2) does). Promise callbacks only, for a
 * ManualClock.
 */
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { diskFullError } from "./journal_files.ts";
import { MemoryFiles } from "./memory_files.ts";

export class FaultyMemoryFiles extends MemoryFiles {
  /** While true, every append writes `partialBytes` bytes of its text, then rejects (ENOSPC). */
  full = false;
  /** Bytes an append writes before it fails while `full`. */
  partialBytes = 0;
  /** While true, every fsync rejects (ENOSPC). */
  syncFails = false;
  /** While true, cutting a file back rejects (the cut of a failed write fails too). */
  truncateFails = false;
  appendFailures = 0;
  syncFailures = 0;
  /** Per path, the file's text at its last successful fsync: what a machine crash leaves. */
  readonly #synced = new Map<string, string>();

  /** The text of the file at its last successful fsync ("" when never fsync'd). */
  durableText(path: string): string {
    return this.#synced.get(path) ?? "";
  }

  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await super.openAppend(path);
    return {
      append: async (text: string) => {
        if (!this.full) return await handle.append(text);
        this.appendFailures++;
        if (this.partialBytes > 0) await handle.append(text.slice(0, this.partialBytes));
        throw diskFullError();
      },
      sync: async () => {
        if (this.syncFails) {
          this.syncFailures++;
          throw diskFullError();
        }
        await handle.sync();
        this.#synced.set(path, this.text(path));
      },
      truncate: async (size: number) => {
        if (this.truncateFails) throw diskFullError();
        await handle.truncate(size);
      },
      close: () => handle.close(),
    };
  }
}
