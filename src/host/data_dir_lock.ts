/**
 * The lock of runtime.data_dir: one runtime per folder. Two runtimes on one folder (a second one
 * started by hand beside the systemd service, with the same configuration) would close each
 * other's open run as abandoned, rewrite runs.jsonl over each other and interleave the audit and
 * history journals -- and the second would spawn its providers against the same hardware before
 * it failed to bind the HTTP port. An exclusive advisory lock (flock) on a file in the folder is
 * held for the runtime's life; the kernel takes it before anything else at start and the kernel
 * refuses to start when another process holds it. The kernel releases it at stop; a process
 * that dies releases it with its file descriptors (no stale lock after a crash).
 */

/** The lock file's name in runtime.data_dir; it holds the holder's pid (for the refusal). */
export const DATA_DIR_LOCK_FILE = "runtime.lock";

/** Bytes of the lock file read to name its holder. */
const HOLDER_TEXT_MAX_BYTES = 64;

/**
 * The lock taken (`release` ends it; `holderNotWritten` says why the pid is not in the file: a
 * full disk), or who holds it.
 */
export type DataDirLock =
  | { readonly release: () => void; readonly holderNotWritten?: string }
  | { readonly heldBy: string };

/**
 * Takes the lock of `dir` (created when missing), writing this process's pid into the file. A
 * lock another process holds answers `heldBy` (its pid as it wrote it); an error other than
 * contention before the lock is taken (a read-only folder) throws. Once taken, the lock is kept
 * whatever writing the pid does (a full disk): a second runtime is refused all the same, naming
 * "another process" instead of the pid (`holderNotWritten` says why).
 */
export async function lockDataDir(dir: string): Promise<DataDirLock> {
  await Deno.mkdir(dir, { recursive: true });
  const file = await Deno.open(`${dir}/${DATA_DIR_LOCK_FILE}`, {
    read: true,
    write: true,
    create: true,
  });
  try {
    if (!(await file.tryLock(true))) {
      const buf = new Uint8Array(HOLDER_TEXT_MAX_BYTES);
      const n = (await file.read(buf)) ?? 0;
      const text = new TextDecoder().decode(buf.subarray(0, n)).trim();
      file.close();
      return { heldBy: /^pid \d{1,10}$/.test(text) ? text : "another process" };
    }
  } catch (err) {
    file.close();
    throw err;
  }
  let holderNotWritten: string | undefined;
  try {
    // Written before the cut (a cut first would leave the file empty when the write fails).
    const text = new TextEncoder().encode(`pid ${Deno.pid}\n`);
    await file.seek(0, Deno.SeekMode.Start);
    for (let at = 0; at < text.length;) at += await file.write(text.subarray(at));
    await file.truncate(text.length);
  } catch (err) {
    holderNotWritten = `pid not written to ${dir}/${DATA_DIR_LOCK_FILE}: ${
      err instanceof Error ? err.message : String(err)
    }`;
  }
  return {
    ...(holderNotWritten === undefined ? {} : { holderNotWritten }),
    // Never throws: the stop that calls it has nothing left to do but say it stopped (closing
    // the file releases the lock too).
    release: () => {
      try {
        file.unlockSync();
      } catch {
        // closed below: that releases it
      }
      try {
        file.close();
      } catch {
        // already closed
      }
    },
  };
}
