/**
 * The file port of the run journal: what the registry needs from the host (host/journal_file.ts
 * implements it; tests may wrap it to count or delay reads).
 */

/** An open append-only file. */
export interface JournalAppendHandle {
  append(text: string): Promise<void>;
  sync(): Promise<void>;
  close(): void;
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

/** The file operations the registry needs; the runtime injects host's `journalFiles`. */
export interface JournalFiles {
  ensureDir(path: string): Promise<void>;
  openAppend(path: string): Promise<JournalAppendHandle>;
  /** True when the file is missing, empty or ends with a newline. */
  endsWithNewline(path: string): Promise<boolean>;
  /** Lines without newline; missing file yields nothing; long lines cut to maxLineBytes. */
  readLines(path: string, maxLineBytes: number): AsyncIterable<string>;
  /** Lines with their byte positions from `startByte` (a line start) to the end of the file. */
  readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncIterable<JournalLine>;
}
