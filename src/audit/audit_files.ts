/**
 * The file port of the audit journal: the run journal's port (runs/journal_files.ts, implemented
 * by host/journal_file.ts) plus what rotation needs (sizes, listing, removal).
 */
import type { JournalFiles } from "../journal/mod.ts";

/** The file operations the audit journal needs; the service injects host's `journalFiles`. */
export interface AuditFiles
  extends Pick<JournalFiles, "ensureDir" | "openAppend" | "endsWithNewline" | "readLinesAt"> {
  /** Size in bytes; 0 for a missing file. */
  fileSize(path: string): Promise<number>;
  /** Removes a file; a missing file is not an error. */
  remove(path: string): Promise<void>;
  /** Names of the entries of a directory ([] when it is missing). */
  listNames(dir: string): Promise<string[]>;
}
