/**
 * A file replaced whole through the journal file port (runs.jsonl's rewrite, the incident ids not
 * kept): the new text is written beside it (`<path>.tmp`), fsync'd, and renamed over it. The
 * port's rename makes the new name durable (host's fsyncs the folder after it), so a crash or a
 * power cut leaves the old file or the new one, never a torn one.
 */
import { errorMessage, type Logger } from "../common/mod.ts";
import { closeHandle, type JournalFiles } from "./journal_files.ts";

/** Appends text to the temporary file of replaceWhole (rejects when a write fails). */
export type ReplaceAppend = (text: string) => Promise<void>;

/** What replaceWhole tells its caller, and asks it. */
export interface ReplaceWholeOptions {
  /** Where a close of the temporary file that throws is said (one WARN naming it and the error). */
  readonly log: Pick<Logger, "warn">;
  /** Asked before each step that writes; throwing fails the replacement there (default: never). */
  readonly goesOn?: (() => void) | undefined;
  /** Told once goesOn let the rename go (default: nothing). */
  readonly renaming?: (() => void) | undefined;
}

/**
 * Replaces the file at `path` with `content`: a text, or a writer handed `append` for a content
 * too large to be one string (it streams its pieces). A temporary file left by a crash is removed
 * first. A failure (a full disk, a rename refused) leaves the old file as it was and no temporary
 * file beside it, and rejects with the error. `goesOn`, asked before each step that writes (the
 * temporary file opened, each append, the rename): throwing fails the replacement so, and the old
 * file is not replaced (a caller stopped while the disk hung). `renaming`, told once `goesOn` let
 * the rename go: from then on the new file may be in place whatever the caller does (a stop that
 * comes meanwhile cannot undo it). A close of the temporary file that throws is said in one WARN
 * (`log`) and changes none of this (closeHandle): it comes after the text's fsync answered, so
 * the text renamed over the file is whole and durable (the replacement goes on), and after a
 * failed write it hides nothing (the replacement rejects with the write's error).
 */
export async function replaceWhole(
  files: JournalFiles,
  path: string,
  content: string | ((append: ReplaceAppend) => Promise<void>),
  options: ReplaceWholeOptions,
): Promise<void> {
  const goesOn = options.goesOn ?? (() => {});
  const renaming = options.renaming ?? (() => {});
  const tmp = `${path}.tmp`;
  // Whether the temporary file may be this call's (not one a caller stopped before it leaves,
  // which may be another process's on the folder by then).
  let ours = false;
  try {
    await files.remove(tmp);
    goesOn();
    ours = true;
    const handle = await files.openAppend(tmp);
    try {
      const append = (text: string) => (goesOn(), handle.append(text));
      if (typeof content === "string") await append(content);
      else await content(append);
      await handle.sync();
    } finally {
      // A close that throws hides no failure of the writes, nor fails fsync'd text (closeHandle),
      // and is said: a handle let go with an error is a disk (or a port) to look at.
      closeHandle(handle, (err) => {
        options.log.warn(`closing ${tmp} failed (${errorMessage(err)}): it is let go`);
      });
    }
    goesOn();
    renaming();
    await files.rename(tmp, path);
  } catch (err) {
    if (ours) await files.remove(tmp).catch(() => {});
    throw err;
  }
}
