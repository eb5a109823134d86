/**
 * The file-system questions reloads left waiting, counted for the whole process. A reload asks
 * its questions (a stat, a read of the configuration file, the behavior tree and its includes,
 * the TLS files) off the event loop's thread, each within RELOAD_FILE_READ_TIMEOUT_MS
 * (app/kernel.ts); one that does not answer by then is abandoned, but the stat or read itself
 * holds one of Deno's blocking worker threads until the kernel returns (a hung NFS mount: maybe
 * never). Deno's runtime caps that pool at 32 threads (runtime/tokio_util.rs,
 * max_blocking_threads), and the journals' writes (the audit trail, run records, history's disk
 * tier) run on it too: repeated SIGHUPs on a hung mount must not take all of it. So once
 * RELOAD_ABANDONED_READS_MAX questions are left waiting, no reload asks anything more until one
 * of them returns: it is refused at once, naming what still hangs.
 */
import { type Clock, raceTimeout } from "../common/mod.ts";

/**
 * Most file-system questions of reloads left waiting (past their bound, not returned yet) for
 * the whole process; at this count a reload asks nothing and is refused at once. The count grows
 * past it only by what the reload that reaches it has in flight at once (PATH_QUESTIONS_IN_FLIGHT
 * stats, its TLS files, or PATH_QUESTIONS_IN_FLIGHT reads of the tree's files): with 8 stats, 15
 * of Deno's 32 blocking threads, the journals' writes keeping the rest.
 */
export const RELOAD_ABANDONED_READS_MAX = 8;

/** Paths a refusal names, at most (the others are counted). */
export const RELOAD_ABANDONED_PATHS_NAMED = 3;

/** What a bounded question came to. */
export type ReloadAnswer<T> =
  | { readonly kind: "answered"; readonly value: T }
  /** No answer within the bound: the question is left waiting (and counted until it returns). */
  | { readonly kind: "late" }
  /** Not asked: RELOAD_ABANDONED_READS_MAX are left waiting; `why` says which. */
  | { readonly kind: "refused"; readonly why: string };

/**
 * The questions of reloads left waiting, process-wide: one instance for the configuration
 * file's checks (main.ts configReload) and the kernel's own reads (Kernel.reload).
 */
export class AbandonedReloadReads {
  /** Each question left waiting, by the path it was asking about when abandoned. */
  readonly #waiting = new Map<symbol, string>();

  /** Questions left waiting now. */
  get count(): number {
    return this.#waiting.size;
  }

  /**
   * Why a reload may not ask the file system now; null while fewer than
   * RELOAD_ABANDONED_READS_MAX are left waiting. Names the first RELOAD_ABANDONED_PATHS_NAMED
   * paths (with their count when more than one waits there) and counts the others.
   */
  refusal(): string | null {
    const n = this.#waiting.size;
    if (n < RELOAD_ABANDONED_READS_MAX) return null;
    const byPath = new Map<string, number>();
    for (const path of this.#waiting.values()) byPath.set(path, (byPath.get(path) ?? 0) + 1);
    const named = [...byPath].slice(0, RELOAD_ABANDONED_PATHS_NAMED).map(([path, count]) =>
      count > 1 ? `${path} (${count})` : path
    );
    const others = byPath.size - named.length;
    // Not "of earlier reloads": a question the asking reload left waiting itself counts too (its
    // later questions are then refused), and the count does not tell whose each one is.
    return `${n} file-system read(s) that reloads left waiting still hang, on ${named.join(", ")}` +
      (others > 0 ? ` and ${others} more path(s)` : "") +
      `: no reload asks the file system until one returns (at most ` +
      `${RELOAD_ABANDONED_READS_MAX} are left waiting, each holding a worker thread)`;
  }

  /**
   * Asks `question` unless RELOAD_ABANDONED_READS_MAX are left waiting (then `refused`, not
   * asked), and waits for its answer at most `timeoutMs` on `clock`. One that does not answer by
   * then is `late` and counted, under the path `path()` names at that moment, until it returns.
   */
  async ask<T>(
    clock: Pick<Clock, "setTimer" | "clearTimer">,
    timeoutMs: number,
    path: () => string,
    question: () => Promise<T>,
  ): Promise<ReloadAnswer<T>> {
    const why = this.refusal();
    if (why !== null) return { kind: "refused", why };
    const asked = question();
    const got = await raceTimeout(
      clock,
      asked.then((value) => ({ kind: "answered" as const, value })),
      timeoutMs,
      null,
    );
    if (got !== null) return got;
    const id = Symbol();
    this.#waiting.set(id, path());
    const free = () => void this.#waiting.delete(id);
    asked.then(free, free);
    return { kind: "late" };
  }
}
