/**
 * Rigs shared by the history tests over a hand-fed History (tests/helpers/hand_fed_history.ts):
 * files whose history folder refuses to be made or written (a failed open, a read-only disk), and
 * per-bucket counts of samples to compare an answer with the polls.
 */
import { DiskTier, type DiskTierOptions } from "../../src/history/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";

/**
 * A disk tier alone, as History makes it: in /data/history (else `dir`), 1 MiB of disk (else
 * `maxBytes`), a test logger (else `log`).
 */
export function diskTier(
  o: Pick<DiskTierOptions, "files" | "clock"> & Partial<DiskTierOptions>,
): DiskTier {
  return new DiskTier({
    dir: "/data/history",
    maxBytes: 1 << 20,
    log: testLogger(),
    ...o,
  });
}

/** In-memory files whose history folder cannot be made nor written while `refuse` is set. */
export class RefusingFiles extends MemoryFiles {
  refuse = false;
  /** The refusal of `path` while `refuse` is set and it is in the history folder, else null. */
  #refused(path: string): Promise<never> | null {
    return this.refuse && path.startsWith("/data/history")
      ? Promise.reject(new Deno.errors.PermissionDenied(`read-only file system: ${path}`))
      : null;
  }
  override ensureDir(path: string): Promise<void> {
    return this.#refused(path) ?? super.ensureDir(path);
  }
  override openAppend(path: string): Promise<JournalAppendHandle> {
    return this.#refused(path) ?? super.openAppend(path);
  }
}

/**
 * Per bucket of `wide` (in the times' unit), the sum of the counts of `times` ([time, count]), as
 * [bucket start / `unit`, count] in time order.
 */
export function fold(
  times: Iterable<[number, number]>,
  wide: number,
  unit = 1,
): [number, number][] {
  const out = new Map<number, number>();
  for (const [t, n] of times) {
    const b = t - (t % wide);
    out.set(b, (out.get(b) ?? 0) + n);
  }
  return [...out].sort((x, y) => x[0] - y[0]).map(([b, n]) => [b / unit, n]);
}
