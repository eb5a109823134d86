/**
 * File I/O for append-only JSONL journals (the run registry's `runs.jsonl` and per-run event
 * files, the audit journal's segments): the Deno implementation of journal/journal_files.ts's
 * port (restated here: host/ imports nothing above common/). Only Deno.* plumbing lives here;
 * src/journal/ receives `journalFiles` by injection.
 */
import { syncFolderOf } from "./files.ts";

/** An open append-only file. */
export interface JournalAppendHandle {
  /** Appends the text completely (loops over partial writes). */
  append(text: string): Promise<void>;
  /** fsync: data and metadata reach the disk. */
  sync(): Promise<void>;
  /** Cuts the file back to `size` bytes (what a failed append left of its text goes). */
  truncate(size: number): Promise<void>;
  close(): void;
}

/** One line of a file and where it lies (readLinesAt). */
export interface JournalLine {
  /** The line without its newline, cut to `maxLineBytes`. */
  readonly text: string;
  /** Byte offset of the line's first byte. */
  readonly start: number;
  /** Byte offset just past the line (past its newline when it has one). */
  readonly end: number;
  /** False for a last line without a newline (torn, or still being written). */
  readonly terminated: boolean;
}

const encoder = new TextEncoder();
const NEWLINE = 10;
const READ_CHUNK_BYTES = 64 * 1024;

/** The Deno implementation of the journal file port. */
export const journalFiles = {
  /** Creates the directory and its parents when missing. */
  async ensureDir(path: string): Promise<void> {
    await Deno.mkdir(path, { recursive: true });
  },

  /** Opens (creating if needed) a file for appending. */
  async openAppend(path: string): Promise<JournalAppendHandle> {
    const file = await Deno.open(path, { append: true, create: true });
    return {
      async append(text: string): Promise<void> {
        const bytes = encoder.encode(text);
        let off = 0;
        while (off < bytes.length) off += await file.write(bytes.subarray(off));
      },
      async sync(): Promise<void> {
        await file.sync();
      },
      async truncate(size: number): Promise<void> {
        await file.truncate(size);
      },
      close(): void {
        try {
          file.close();
        } catch {
          // already closed
        }
      },
    };
  },

  /** True when the file is missing, empty, or its last byte is a newline. */
  async endsWithNewline(path: string): Promise<boolean> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return true;
      throw err;
    }
    try {
      const size = (await file.stat()).size;
      if (size === 0) return true;
      await file.seek(size - 1, Deno.SeekMode.Start);
      const last = new Uint8Array(1);
      const n = await file.read(last);
      return n !== 1 || last[0] === NEWLINE;
    } finally {
      file.close();
    }
  },

  /**
   * Streams the lines of a file (without the newline; the last line may lack one). A missing
   * file yields nothing. Lines longer than `maxLineBytes` are cut to that length (a cut JSON
   * record no longer parses, so the reader reports it as corrupt) -- memory stays bounded.
   */
  async *readLines(path: string, maxLineBytes: number): AsyncGenerator<string> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return;
      throw err;
    }
    const decoder = new TextDecoder();
    const chunk = new Uint8Array(READ_CHUNK_BYTES);
    let parts: Uint8Array[] = [];
    let lineBytes = 0;
    const take = (): string => {
      const buf = new Uint8Array(Math.min(lineBytes, maxLineBytes));
      let off = 0;
      for (const p of parts) {
        const n = Math.min(p.length, buf.length - off);
        buf.set(p.subarray(0, n), off);
        off += n;
        if (off >= buf.length) break;
      }
      parts = [];
      lineBytes = 0;
      return decoder.decode(buf);
    };
    const keep = (bytes: Uint8Array): void => {
      if (lineBytes < maxLineBytes) {
        parts.push(bytes.slice(0, Math.min(bytes.length, maxLineBytes - lineBytes)));
      }
      lineBytes += bytes.length;
    };
    try {
      while (true) {
        const n = await file.read(chunk);
        if (n === null) break;
        const read = chunk.subarray(0, n);
        let start = 0;
        for (let i = read.indexOf(NEWLINE); i !== -1; i = read.indexOf(NEWLINE, start)) {
          if (lineBytes === 0) {
            // A line within this chunk: decoded from it, without a copy.
            yield decoder.decode(read.subarray(start, Math.min(i, start + maxLineBytes)));
          } else {
            keep(read.subarray(start, i));
            yield take();
          }
          start = i + 1;
        }
        if (start < n) keep(read.subarray(start, n));
      }
      if (lineBytes > 0) yield take();
    } finally {
      file.close();
    }
  },

  /**
   * Streams the lines of a file from byte `startByte` with their byte positions, so a reader can
   * come back to any line without rescanning the file (a `startByte` inside a line yields the
   * rest of that line first: a bisection starts anywhere). A missing file yields nothing; long
   * lines are cut as in readLines.
   */
  async *readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncGenerator<JournalLine> {
    const maxLineBytes = options.maxLineBytes;
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return;
      throw err;
    }
    const decoder = new TextDecoder();
    const chunk = new Uint8Array(READ_CHUNK_BYTES);
    let parts: Uint8Array[] = [];
    let kept = 0;
    let lineStart = options.startByte;
    let pos = options.startByte;
    const take = (end: number, terminated: boolean): JournalLine => {
      const buf = new Uint8Array(kept);
      let off = 0;
      for (const p of parts) {
        buf.set(p, off);
        off += p.length;
      }
      const line = { text: decoder.decode(buf), start: lineStart, end, terminated };
      parts = [];
      kept = 0;
      lineStart = end;
      return line;
    };
    const keep = (bytes: Uint8Array): void => {
      const n = Math.min(bytes.length, maxLineBytes - kept);
      if (n > 0) {
        parts.push(bytes.slice(0, n));
        kept += n;
      }
    };
    try {
      if (options.startByte > 0) await file.seek(options.startByte, Deno.SeekMode.Start);
      while (true) {
        const n = await file.read(chunk);
        if (n === null) break;
        const read = chunk.subarray(0, n);
        let start = 0;
        for (let i = read.indexOf(NEWLINE); i !== -1; i = read.indexOf(NEWLINE, start)) {
          if (pos + start === lineStart) {
            // A line within this chunk (none begun in an earlier one): decoded from it, no copy.
            const end = pos + i + 1;
            yield {
              text: decoder.decode(read.subarray(start, Math.min(i, start + maxLineBytes))),
              start: lineStart,
              end,
              terminated: true,
            };
            lineStart = end;
          } else {
            keep(read.subarray(start, i));
            yield take(pos + i + 1, true);
          }
          start = i + 1;
        }
        if (start < n) keep(read.subarray(start, n));
        pos += n;
      }
      if (pos > lineStart) yield take(pos, false);
    } finally {
      file.close();
    }
  },

  /** Renames (moves) a file; the new name is fsync'd with its folder (a power cut keeps it). */
  async rename(from: string, to: string): Promise<void> {
    await Deno.rename(from, to);
    await syncFolderOf(to);
  },

  /** Size in bytes; 0 for a missing file. */
  async fileSize(path: string): Promise<number> {
    try {
      return (await Deno.stat(path)).size;
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return 0;
      throw err;
    }
  },

  /** Removes a file; a missing one is not an error. */
  async remove(path: string): Promise<void> {
    try {
      await Deno.remove(path);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  },

  /** Names in a directory ([] when it is missing). */
  async listNames(dir: string): Promise<string[]> {
    const names: string[] = [];
    try {
      for await (const e of Deno.readDir(dir)) names.push(e.name);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return [];
      throw err;
    }
    return names;
  },
};
