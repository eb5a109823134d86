/**
 * Host's journalFiles (real files) behind a switch: writes can be made to fail as on a full disk
 * (ENOSPC), reads counted and held. For the tests of src/journal/, src/runs/ and src/audit/.
 */
import { journalFiles, readRegularFile, type RegularFileRead } from "../../src/host/mod.ts";
import type { JournalAppendHandle, JournalFiles, JournalLine } from "../../src/journal/mod.ts";

/** The error a write to a full disk raises (as Deno reports ENOSPC). */
export function diskFullError(): Error {
  return new Error("No space left on device (os error 28)");
}

/**
 * Host's journalFiles (real files) as a class: a test's files extend it and override only the
 * calls they change (methods, so a subclass's own methods take their place).
 */
export class RealJournalFiles implements JournalFiles {
  ensureDir(path: string): Promise<void> {
    return journalFiles.ensureDir(path);
  }
  openAppend(path: string): Promise<JournalAppendHandle> {
    return journalFiles.openAppend(path);
  }
  endsWithNewline(path: string): Promise<boolean> {
    return journalFiles.endsWithNewline(path);
  }
  readLines(path: string, maxLineBytes: number): AsyncIterable<string> {
    return journalFiles.readLines(path, maxLineBytes);
  }
  readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncIterable<JournalLine> {
    return journalFiles.readLinesAt(path, options);
  }
  fileSize(path: string): Promise<number> {
    return journalFiles.fileSize(path);
  }
  remove(path: string): Promise<void> {
    return journalFiles.remove(path);
  }
  rename(from: string, to: string): Promise<void> {
    return journalFiles.rename(from, to);
  }
  listNames(dir: string): Promise<string[]> {
    return journalFiles.listNames(dir);
  }
}

/** journalFiles with writes that fail while `full` is set, and counters. */
export class SwitchableFiles extends RealJournalFiles {
  /** While true, every append and fsync rejects with ENOSPC (nothing is written). */
  full = false;
  appends = 0;
  syncs = 0;
  linesRead = 0;
  /** Bytes of the lines readLinesAt yielded (with their newlines). */
  bytesRead = 0;
  /** While set, every read waits for it before its first line. */
  gate: Promise<void> | null = null;
  readsWaiting = 0;
  /** Texts handed to append (whether or not they failed). */
  readonly appended: string[] = [];

  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await journalFiles.openAppend(path);
    return {
      append: async (text: string) => {
        this.appends++;
        this.appended.push(text);
        if (this.full) throw diskFullError();
        await handle.append(text);
      },
      sync: async () => {
        this.syncs++;
        if (this.full) throw diskFullError();
        await handle.sync();
      },
      truncate: (size: number) => handle.truncate(size),
      close: () => handle.close(),
    };
  }

  override async *readLines(path: string, maxLineBytes: number): AsyncGenerator<string> {
    await this.#wait();
    for await (const line of journalFiles.readLines(path, maxLineBytes)) {
      this.linesRead++;
      yield line;
    }
  }

  override async *readLinesAt(
    path: string,
    options: { maxLineBytes: number; startByte: number },
  ): AsyncGenerator<JournalLine> {
    await this.#wait();
    for await (const line of journalFiles.readLinesAt(path, options)) {
      this.linesRead++;
      this.bytesRead += line.end - line.start;
      yield line;
    }
  }

  async #wait(): Promise<void> {
    if (this.gate === null) return;
    this.readsWaiting++;
    await this.gate;
    this.readsWaiting--;
  }
}

/**
 * Host's journalFiles (real files) whose appends to a path holding `pathPart` go through
 * `intercept` (given the text and the real append): a disk that fills up, one slow to write.
 * Every other call, and appends elsewhere, are the real ones.
 */
export class InterceptedAppends extends RealJournalFiles {
  readonly #pathPart: string;
  readonly #intercept: (text: string, append: (text: string) => Promise<void>) => Promise<void>;
  constructor(
    pathPart: string,
    intercept: (text: string, append: (text: string) => Promise<void>) => Promise<void>,
  ) {
    super();
    this.#pathPart = pathPart;
    this.#intercept = intercept;
  }
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await journalFiles.openAppend(path);
    if (!path.includes(this.#pathPart)) return handle;
    return {
      append: (text: string) => this.#intercept(text, (t) => handle.append(t)),
      sync: () => handle.sync(),
      truncate: (size: number) => handle.truncate(size),
      close: () => handle.close(),
    };
  }
}

/**
 * Host's journalFiles (real files) whose fsyncs of a path holding `pathPart` go through
 * `interceptSync` (given the real fsync; a test's class overrides it): a disk whose fsync fails or
 * never finishes. Every other call, and fsyncs elsewhere, are the real ones.
 */
export class InterceptedSyncs extends RealJournalFiles {
  readonly #pathPart: string;
  constructor(pathPart: string) {
    super();
    this.#pathPart = pathPart;
  }
  /** One fsync of a matched file; `sync` is the real one. */
  protected interceptSync(sync: () => Promise<void>): Promise<void> {
    return sync();
  }
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await journalFiles.openAppend(path);
    if (!path.includes(this.#pathPart)) return handle;
    return {
      append: (text: string) => handle.append(text),
      sync: () => this.interceptSync(() => handle.sync()),
      truncate: (size: number) => handle.truncate(size),
      close: () => handle.close(),
    };
  }
}

/**
 * Host's journalFiles (real files) where every call on a path holding `pathPart` never returns,
 * as on a disk that hangs (an NFS mount gone, a dying SD card: open/read/stat that never come
 * back): its promise never settles, its line reader never yields. `hung` counts those calls.
 */
export class HungFiles extends RealJournalFiles {
  readonly #pathPart: string;
  /** Calls on the hung path so far (each one waits forever). */
  hung = 0;
  constructor(pathPart: string) {
    super();
    this.#pathPart = pathPart;
  }
  #hangs(...paths: string[]): boolean {
    if (!paths.some((p) => p.includes(this.#pathPart))) return false;
    this.hung++;
    return true;
  }
  #never<T>(): Promise<T> {
    return new Promise<T>(() => {});
  }
  override ensureDir(path: string): Promise<void> {
    return this.#hangs(path) ? this.#never() : super.ensureDir(path);
  }
  override openAppend(path: string): Promise<JournalAppendHandle> {
    return this.#hangs(path) ? this.#never() : super.openAppend(path);
  }
  override endsWithNewline(path: string): Promise<boolean> {
    return this.#hangs(path) ? this.#never() : super.endsWithNewline(path);
  }
  override readLines(path: string, maxLineBytes: number): AsyncIterable<string> {
    return this.#hangs(path) ? this.#neverYields() : super.readLines(path, maxLineBytes);
  }
  override readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncIterable<JournalLine> {
    return this.#hangs(path) ? this.#neverYields() : super.readLinesAt(path, options);
  }
  override fileSize(path: string): Promise<number> {
    return this.#hangs(path) ? this.#never() : super.fileSize(path);
  }
  override remove(path: string): Promise<void> {
    return this.#hangs(path) ? this.#never() : super.remove(path);
  }
  override rename(from: string, to: string): Promise<void> {
    return this.#hangs(from, to) ? this.#never() : super.rename(from, to);
  }
  override listNames(dir: string): Promise<string[]> {
    return this.#hangs(dir) ? this.#never() : super.listNames(dir);
  }
  #neverYields<T>(): AsyncIterable<T> {
    const never = () => this.#never<IteratorResult<T>>();
    return { [Symbol.asyncIterator]: () => ({ next: never }) };
  }
}

/** The calls a hung mount holds (LateFiles): every one on the folder, or only a file's creation. */
export type LateHolding = "every call" | "the file's creation";

/**
 * Real files where the calls `holding` names on a path holding `pathPart` wait until release(), as
 * on a hung mount that answers at last; those after it go straight through. `held` and `answered`
 * count the calls held.
 */
export class LateFiles extends RealJournalFiles {
  readonly #holding: LateHolding;
  readonly #pathPart: string;
  readonly #waiting: (() => void)[] = [];
  #released = false;
  held = 0;
  answered = 0;
  constructor(holding: LateHolding, pathPart: string) {
    super();
    this.#holding = holding;
    this.#pathPart = pathPart;
  }
  release(): void {
    this.#released = true;
    for (const go of this.#waiting.splice(0)) go();
  }
  async #late<T>(path: string, creates: boolean, call: () => Promise<T>): Promise<T> {
    const holds = this.#holding === "every call" || creates;
    if (this.#released || !holds || !path.includes(this.#pathPart)) return call();
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

/**
 * The host's readRegularFile (real files) where a read of a path holding `pathPart` never returns,
 * as on a hung mount: its promise never settles. `pathPart` may be set later (null: none hangs).
 * `hung` counts those reads.
 */
export class HungReads {
  pathPart: string | null;
  /** Reads of the hung path so far (each one waits forever). */
  hung = 0;
  /** Reads of other paths finished so far (real reads: they take real time). */
  done = 0;
  constructor(pathPart: string | null = null) {
    this.pathPart = pathPart;
  }
  readonly read = (path: string, maxBytes: number): Promise<RegularFileRead> => {
    if (this.pathPart === null || !path.includes(this.pathPart)) {
      return readRegularFile(path, maxBytes).finally(() => this.done++);
    }
    this.hung++;
    return new Promise<RegularFileRead>(() => {});
  };
}
