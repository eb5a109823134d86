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

/** A call on the files that a GatedFiles passes through its gate (JournalFiles' methods). */
export type FilesCall = keyof JournalFiles;

/**
 * Host's journalFiles (real files) with every call passed through `gate` (by default straight on):
 * a disk fault's double (HungFiles, LateFiles, LockedFolderFiles) says only what it does to which
 * call on which paths. A line reader passes the gate when asked for (its lines follow once it has).
 */
export class GatedFiles extends RealJournalFiles {
  /** `run` (the real call) for `call` on `paths`, or what the fault makes of it. */
  protected gate<T>(
    _call: FilesCall,
    _paths: readonly string[],
    run: () => Promise<T>,
  ): Promise<T> {
    return run();
  }
  #lines<L>(call: FilesCall, path: string, lines: () => AsyncIterable<L>): AsyncIterable<L> {
    const opened = this.gate(call, [path], () => Promise.resolve(lines()));
    opened.catch(() => {}); // the reader's first line rejects with it, below
    return (async function* () {
      yield* await opened;
    })();
  }
  override ensureDir(path: string): Promise<void> {
    return this.gate("ensureDir", [path], () => super.ensureDir(path));
  }
  override openAppend(path: string): Promise<JournalAppendHandle> {
    return this.gate("openAppend", [path], () => super.openAppend(path));
  }
  override endsWithNewline(path: string): Promise<boolean> {
    return this.gate("endsWithNewline", [path], () => super.endsWithNewline(path));
  }
  override readLines(path: string, maxLineBytes: number): AsyncIterable<string> {
    return this.#lines("readLines", path, () => super.readLines(path, maxLineBytes));
  }
  override readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncIterable<JournalLine> {
    return this.#lines("readLinesAt", path, () => super.readLinesAt(path, options));
  }
  override fileSize(path: string): Promise<number> {
    return this.gate("fileSize", [path], () => super.fileSize(path));
  }
  override remove(path: string): Promise<void> {
    return this.gate("remove", [path], () => super.remove(path));
  }
  override rename(from: string, to: string): Promise<void> {
    return this.gate("rename", [from, to], () => super.rename(from, to));
  }
  override listNames(dir: string): Promise<string[]> {
    return this.gate("listNames", [dir], () => super.listNames(dir));
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
export class HungFiles extends GatedFiles {
  readonly #pathPart: string;
  /** Calls on the hung path so far (each one waits forever). */
  hung = 0;
  constructor(pathPart: string) {
    super();
    this.#pathPart = pathPart;
  }
  protected override gate<T>(
    _call: FilesCall,
    paths: readonly string[],
    run: () => Promise<T>,
  ): Promise<T> {
    if (!paths.some((p) => p.includes(this.#pathPart))) return run();
    this.hung++;
    return new Promise<T>(() => {});
  }
}

/**
 * The calls a hung mount holds (LateFiles): every call of a journal's opening on the folder
 * (LATE_CALLS), or only a file's creation.
 */
export type LateHolding = "every call" | "the file's creation";

/** The calls LateFiles holds ("every call"): a journal's opening (its folder's, then its file's). */
export const LATE_CALLS: readonly FilesCall[] = [
  "ensureDir",
  "listNames",
  "fileSize",
  "endsWithNewline",
  "openAppend",
];

/**
 * Real files where the calls `holding` names on a path holding `pathPart` wait until release(), as
 * on a hung mount that answers at last; those after it go straight through. `held` and `answered`
 * count the calls held.
 */
export class LateFiles extends GatedFiles {
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
  protected override async gate<T>(
    call: FilesCall,
    [path]: readonly string[],
    run: () => Promise<T>,
  ): Promise<T> {
    const holds = this.#holding === "every call"
      ? LATE_CALLS.includes(call)
      : call === "openAppend";
    if (this.#released || !holds || !path!.includes(this.#pathPart)) return run();
    this.held++;
    await new Promise<void>((r) => this.#waiting.push(r));
    try {
      return await run();
    } finally {
      this.answered++;
    }
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
