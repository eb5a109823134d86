/**
 * A journal kept as a numbered series of files (`<prefix>-00000001.jsonl`, ...): the newest is
 * appended to, a file that would grow past `maxFileBytes` is closed and the next begun, and beyond
 * `maxFiles` (or, with `maxTotalBytes`, past those bytes together) the oldest are removed. Numbers
 * never repeat, so a position (file number, byte offset) stays valid across rotation.
 */
import type { JournalFiles } from "./journal_files.ts";

/** Where a segmented journal lives and its bounds. */
export interface JournalSegments {
  /** Absolute folder. */
  readonly dir: string;
  /** File name prefix (`audit` -> `audit-00000001.jsonl`). */
  readonly prefix: string;
  readonly maxFileBytes: number;
  readonly maxFiles: number;
  /**
   * Bytes the files may take together (default: no bound but maxFiles): at a rotation the oldest
   * are removed until the others total at most this less maxFileBytes, the new file's share.
   */
  readonly maxTotalBytes?: number | undefined;
}

/** The path of segment `n`. */
export function segmentPath(s: Pick<JournalSegments, "dir" | "prefix">, n: number): string {
  return `${s.dir}/${s.prefix}-${String(n).padStart(8, "0")}.jsonl`;
}

/** The numbers of the segments on disk, oldest first ([] when the folder is missing). */
export async function segmentNumbers(
  files: JournalFiles,
  s: Pick<JournalSegments, "dir" | "prefix">,
): Promise<number[]> {
  const re = new RegExp(`^${s.prefix.replace(/[^A-Za-z0-9_]/g, "\\$&")}-(\\d{8})\\.jsonl$`);
  const out: number[] = [];
  for (const name of await files.listNames(s.dir)) {
    const m = re.exec(name);
    if (m) out.push(Number(m[1]));
  }
  return out.sort((a, b) => a - b);
}
