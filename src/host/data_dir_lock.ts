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

/** The lock taken (`release` ends it), or who holds it. */
export type DataDirLock = { readonly release: () => void } | { readonly heldBy: string };

/**
 * Takes the lock of `dir` (created when missing), writing this process's pid into the file. A
 * lock another process holds answers `heldBy` (its pid as it wrote it); an error other than
 * contention (a read-only folder) throws.
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
    await file.truncate(0);
    await file.write(new TextEncoder().encode(`pid ${Deno.pid}\n`));
  } catch (err) {
    file.close();
    throw err;
  }
  return {
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
