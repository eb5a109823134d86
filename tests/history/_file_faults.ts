/**
 * Journal files with faults for history's tests: a folder locked as one of mode 0o000
 * (LockedFolderFiles), reads held open while the test acts (HeldReads), fsyncs that fail
 * (FailingSyncFiles). One copy of each, shared by the test files that need them.
 */
import type { JournalLine } from "../../src/journal/mod.ts";
import { type FilesCall, GatedFiles, InterceptedSyncs } from "../helpers/journal_files.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";

/**
 * Real files whose folder `folder` answers as one of mode 0o000 to a user other than root while
 * `locked` is set: nothing in it can be listed, read, sized, opened, made, removed nor renamed.
 */
export class LockedFolderFiles extends GatedFiles {
  locked = false;
  listings = 0;
  constructor(readonly folder: string) {
    super();
  }
  protected override gate<T>(
    call: FilesCall,
    [path]: readonly string[],
    run: () => Promise<T>,
  ): Promise<T> {
    const inFolder = path!.startsWith(this.folder);
    if (call === "listNames" && inFolder) this.listings++;
    if (!this.locked || !inFolder) return run();
    return Promise.reject(
      new Deno.errors.PermissionDenied(`Permission denied (os error 13): ${path}`),
    );
  }
}

/** Which reads HeldReads.hold() holds. */
export interface ReadHold {
  /** The call held: readLines (a whole file: an incident record) or readLinesAt (disk rows). */
  readonly call: "readLines" | "readLinesAt";
  /** The paths held. */
  readonly path: (path: string) => boolean;
  /** Only the next such read waits (else every one until the hold is released). */
  readonly once: boolean;
}

/** Memory files whose reads the test holds open (hold()) while it acts, then lets go on. */
export class HeldReads extends MemoryFiles {
  #hold: (ReadHold & { readonly released: Promise<void>; readonly began: () => void }) | null =
    null;
  /**
   * Holds the reads `h` names from now on: `reading` resolves once one waits, `release` lets it
   * (and every later one) go on.
   */
  hold(h: ReadHold): { reading: Promise<void>; release: () => void } {
    const released = Promise.withResolvers<void>();
    const began = Promise.withResolvers<void>();
    this.#hold = { ...h, released: released.promise, began: began.resolve };
    return { reading: began.promise, release: released.resolve };
  }
  async #wait(call: ReadHold["call"], path: string): Promise<void> {
    const h = this.#hold;
    if (h === null || h.call !== call || !h.path(path)) return;
    if (h.once) this.#hold = null;
    h.began();
    await h.released;
  }
  override async *readLines(path: string, maxLineBytes: number): AsyncGenerator<string> {
    await this.#wait("readLines", path);
    yield* super.readLines(path, maxLineBytes);
  }
  override async *readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncGenerator<JournalLine> {
    await this.#wait("readLinesAt", path);
    yield* super.readLinesAt(path, options);
  }
}

/** Real files whose fsync of a history file fails (EIO) while `syncFails` is set. */
export class FailingSyncFiles extends InterceptedSyncs {
  syncFails = false;
  failedSyncs = 0;
  constructor() {
    super("/history/");
  }
  protected override async interceptSync(sync: () => Promise<void>): Promise<void> {
    if (this.syncFails) {
      this.failedSyncs++;
      throw new Error("Input/output error (os error 5)");
    }
    await sync();
  }
}
