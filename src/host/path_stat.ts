/**
 * What the configuration's checks ask of the file system (src/config's loader takes the answers):
 * what is at a path the file names, and whether a bare command is on PATH. Synchronous for the
 * start and `--check-config` (nothing runs yet); asynchronous -- off the event loop's thread, in
 * Deno's worker threads -- for a reload, which bounds each question (src/app/kernel.ts,
 * reloadPathAnswers): a stat on a hung mount (an NFS server gone, a dying SD card) would otherwise
 * freeze the whole runtime, its API and e-stop included.
 */
import { fileKind } from "./files.ts";

/** What is at a path (a stat, following symbolic links). */
export type PathStat =
  /** A regular file and its permission bits (null when the platform has none). */
  | { readonly kind: "file"; readonly mode: number | null }
  /** Something that is not a regular file: `what` says what ("a directory", "a FIFO", ...). */
  | { readonly kind: "other"; readonly what: string }
  /** Nothing (or nothing this process may see). */
  | { readonly kind: "none" };

function statOf(info: Deno.FileInfo): PathStat {
  return info.isFile ? { kind: "file", mode: info.mode } : { kind: "other", what: fileKind(info) };
}

/**
 * The process's working directory, which relative paths (on the command line, in the
 * configuration file) are resolved against and below which diagnostics name files relatively.
 */
export function workingDirectory(): string {
  return Deno.cwd();
}

/** What is at `path`, on the calling thread: for the start and `--check-config` only. */
export function statPathSync(path: string): PathStat {
  try {
    return statOf(Deno.statSync(path));
  } catch {
    return { kind: "none" };
  }
}

/** What is at `path`, asked off the event loop's thread. Never rejects. */
export async function statPath(path: string): Promise<PathStat> {
  try {
    return statOf(await Deno.stat(path));
  } catch {
    return { kind: "none" };
  }
}

/** The folders of PATH, or null when PATH cannot be read (a binary compiled without it). */
function pathFolders(): string[] | null {
  let path: string | undefined;
  try {
    path = Deno.env.get("PATH");
  } catch {
    return null;
  }
  return (path ?? "").split(":").filter((dir) => dir !== "");
}

/** Whether a stat says an executable regular file. */
function executable(stat: PathStat): boolean {
  return stat.kind === "file" && ((stat.mode ?? 0o111) & 0o111) !== 0;
}

/**
 * Whether `command` is an executable file in a PATH folder, on the calling thread (the start and
 * `--check-config`). True when PATH cannot be read: that cannot tell.
 */
export function commandOnPathSync(command: string): boolean {
  const folders = pathFolders();
  if (folders === null) return true;
  return folders.some((dir) => executable(statPathSync(`${dir}/${command}`)));
}

/**
 * As commandOnPathSync, each folder's stat asked off the event loop's thread, one after the other;
 * `asking` is told each path before its stat (a caller that bounds the whole lookup names the path
 * that did not answer). Never rejects.
 */
export async function commandOnPath(
  command: string,
  asking: (path: string) => void = () => {},
): Promise<boolean> {
  const folders = pathFolders();
  if (folders === null) return true;
  for (const dir of folders) {
    const path = `${dir}/${command}`;
    asking(path);
    if (executable(await statPath(path))) return true;
  }
  return false;
}
