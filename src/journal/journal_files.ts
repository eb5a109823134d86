/**
 * The file port of every append-only JSONL journal (the run registry's files, the audit trail's
 * segments): what a journal needs from the host. host/journal_file.ts implements it with Deno.*;
 * tests wrap it to count reads, hold them, or fail writes (a full disk).
 */

/** An open append-only file. */
export interface JournalAppendHandle {
  /** Appends the text completely (loops over partial writes); rejects when a write fails. */
  append(text: string): Promise<void>;
  /** fsync: data and metadata reach the disk. */
  sync(): Promise<void>;
  /**
   * Cuts the file back to `size` bytes: what an append that failed part-way (a short write on a
   * full disk) left of its text goes.
   */
  truncate(size: number): Promise<void>;
  /**
   * Lets the file go. Should not throw (host's swallows a close's error); JournalWriter guards it
   * anyway: a throw when it drops a handle (after a failed write or fsync, at rotation) is one
   * WARN, and only at the writer's own close() does it reject that close.
   */
  close(): void;
}

/**
 * Lets a handle go in a `finally`, after the work done with it: a close that throws (a
 * JournalFiles against close's contract: host's never does) neither hides the work's own error
 * nor fails work that succeeded (what it wrote was fsync'd before); it is handed to `onError` (a
 * caller with a log says it in one WARN) and the handle counts as let go either way.
 */
export function closeHandle(
  handle: Pick<JournalAppendHandle, "close">,
  onError: (err: unknown) => void = () => {},
): void {
  try {
    handle.close();
  } catch (err) {
    onError(err);
  }
}

/** One line of a file and where it lies. */
export interface JournalLine {
  /** The line without its newline, cut to the reader's maxLineBytes. */
  readonly text: string;
  /** Byte offset of the line's first byte. */
  readonly start: number;
  /** Byte offset just past the line (past its newline when it has one). */
  readonly end: number;
  /** False for a last line without a newline (torn, or still being written). */
  readonly terminated: boolean;
}

/** The file operations of a journal; the composition root injects host's `journalFiles`. */
export interface JournalFiles {
  /** Creates the directory and its parents when missing. */
  ensureDir(path: string): Promise<void>;
  /** Opens (creating if needed) a file for appending. */
  openAppend(path: string): Promise<JournalAppendHandle>;
  /** True when the file is missing, empty or ends with a newline. */
  endsWithNewline(path: string): Promise<boolean>;
  /** Lines without newline; missing file yields nothing; long lines cut to maxLineBytes. */
  readLines(path: string, maxLineBytes: number): AsyncIterable<string>;
  /**
   * Lines with their byte positions from `startByte` to the end of the file (see JournalLine). A
   * `startByte` inside a line yields the rest of that line first.
   */
  readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncIterable<JournalLine>;
  /** Size in bytes; 0 for a missing file. */
  fileSize(path: string): Promise<number>;
  /** Removes a file; a missing file is not an error. */
  remove(path: string): Promise<void>;
  /**
   * Renames (moves) a file, replacing `to`; durable once it resolves (host's fsyncs the folder
   * after it, so a power cut cannot bring the old file back). replaceWhole builds on it.
   */
  rename(from: string, to: string): Promise<void>;
  /** Names of the entries of a directory ([] when it is missing). */
  listNames(dir: string): Promise<string[]>;
}

/** Bytes of the line as stored, without its newline (the text may be cut shorter). */
export function storedLineBytes(line: JournalLine): number {
  return line.end - line.start - (line.terminated ? 1 : 0);
}

/** True when the line was longer than the reader's `maxLineBytes` (its text is cut). */
export function isCutLine(line: JournalLine, maxLineBytes: number): boolean {
  return storedLineBytes(line) > maxLineBytes;
}
