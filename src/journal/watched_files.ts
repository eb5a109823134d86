/**
 * The file port with its calls under way kept in view, for as long as it is watched: at start-up
 * the opening of runtime.data_dir is bounded (runtime.startup_timeout_ms), and a call that never
 * returns there (an NFS mount gone, a dying SD card) is named by what it did and on which path.
 * Once unwatched, every call goes straight to the port it wraps (no bookkeeping while running).
 */
import type { JournalAppendHandle, JournalFiles, JournalLine } from "./journal_files.ts";

/** A call of the file port still under way. */
export interface FileCallUnderWay {
  /** What it does: mkdir, open, read, stat, remove, rename, list. */
  readonly op: string;
  readonly path: string;
}

/** JournalFiles whose calls under way are listed while it is watched (from construction). */
export class WatchedJournalFiles implements JournalFiles {
  readonly #inner: JournalFiles;
  #watching = true;
  /** Calls under way, oldest first (a Set keeps the order they were added in). */
  readonly #underWay = new Set<FileCallUnderWay>();

  constructor(inner: JournalFiles) {
    this.#inner = inner;
  }

  /** From now on calls are not kept (those under way are forgotten). */
  unwatch(): void {
    this.#watching = false;
    this.#underWay.clear();
  }

  /** The oldest call still under way while watched, or null. */
  oldestUnderWay(): FileCallUnderWay | null {
    for (const call of this.#underWay) return call;
    return null;
  }

  ensureDir(path: string): Promise<void> {
    return this.#kept("mkdir", path, () => this.#inner.ensureDir(path));
  }
  openAppend(path: string): Promise<JournalAppendHandle> {
    return this.#kept("open", path, () => this.#inner.openAppend(path));
  }
  endsWithNewline(path: string): Promise<boolean> {
    return this.#kept("read", path, () => this.#inner.endsWithNewline(path));
  }
  readLines(path: string, maxLineBytes: number): AsyncIterable<string> {
    return this.#keptLines(path, this.#inner.readLines(path, maxLineBytes));
  }
  readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncIterable<JournalLine> {
    return this.#keptLines(path, this.#inner.readLinesAt(path, options));
  }
  fileSize(path: string): Promise<number> {
    return this.#kept("stat", path, () => this.#inner.fileSize(path));
  }
  remove(path: string): Promise<void> {
    return this.#kept("remove", path, () => this.#inner.remove(path));
  }
  rename(from: string, to: string): Promise<void> {
    return this.#kept("rename", from, () => this.#inner.rename(from, to));
  }
  listNames(dir: string): Promise<string[]> {
    return this.#kept("list", dir, () => this.#inner.listNames(dir));
  }

  /** `run()`, kept under way until it settles while watched. */
  #kept<T>(op: string, path: string, run: () => Promise<T>): Promise<T> {
    if (!this.#watching) return run();
    const call: FileCallUnderWay = { op, path };
    this.#underWay.add(call);
    let p: Promise<T>;
    try {
      p = run();
    } catch (err) {
      this.#underWay.delete(call);
      throw err;
    }
    return p.finally(() => this.#underWay.delete(call));
  }

  /** The lines of `path`, each step kept under way (a read) while watched. */
  #keptLines<T>(path: string, lines: AsyncIterable<T>): AsyncIterable<T> {
    if (!this.#watching) return lines;
    return {
      [Symbol.asyncIterator]: () => {
        const it = lines[Symbol.asyncIterator]();
        const steps: AsyncIterator<T> = {
          next: () => this.#kept("read", path, () => it.next()),
        };
        if (it.return) steps.return = (value) => it.return!(value);
        return steps;
      },
    };
  }
}
