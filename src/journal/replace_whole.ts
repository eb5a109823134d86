/**
 * A file replaced whole through the journal file port (runs.jsonl's rewrite, the incident ids not
 * kept): the new text is written beside it (`<path>.tmp`), fsync'd, and renamed over it. The
 * port's rename makes the new name durable (host's fsyncs the folder after it), so a crash or a
 * power cut leaves the old file or the new one, never a torn one.
 */
import type { JournalFiles } from "./journal_files.ts";

/** Appends text to the temporary file of replaceWhole (rejects when a write fails). */
export type ReplaceAppend = (text: string) => Promise<void>;

/**
 * Replaces the file at `path` with `content`: a text, or a writer handed `append` for a content
 * too large to be one string (it streams its pieces). A temporary file left by a crash is removed
 * first. A failure (a full disk, a rename refused) leaves the old file as it was and no temporary
 * file beside it, and rejects with the error.
 */
export async function replaceWhole(
  files: JournalFiles,
  path: string,
  content: string | ((append: ReplaceAppend) => Promise<void>),
): Promise<void> {
  const tmp = `${path}.tmp`;
  try {
    await files.remove(tmp);
    const handle = await files.openAppend(tmp);
    try {
      if (typeof content === "string") await handle.append(content);
      else await content((text) => handle.append(text));
      await handle.sync();
    } finally {
      handle.close();
    }
    await files.rename(tmp, path);
  } catch (err) {
    await files.remove(tmp).catch(() => {});
    throw err;
  }
}
