import { type Clock, type TimerId, unavailable } from "../common/mod.ts";

/**
 * Provider starts waiting for their turn to spawn, at most (one per provider host at a time in
 * practice: a host waits for one spawn per start or restart attempt). A start beyond it fails
 * UNAVAILABLE like a failed spawn, and supervision handles it as one.
 */
export const MAX_QUEUED_SPAWNS = 1024;

/**
 * The share of the event loop's time that spawning may take while starts are queued: after a
 * spawn that took `d` ms the next one waits `d * (1 / SPAWN_LOOP_SHARE - 1)` ms (bounded by
 * MAX_SPAWN_PAUSE_MS), so the loop serves I/O in between.
 */
export const SPAWN_LOOP_SHARE = 0.5;

/** The longest pause between two queued spawns, however long the last one took. */
export const MAX_SPAWN_PAUSE_MS = 100;

/**
 * Spawns processes one per event-loop turn, paced. Spawning is synchronous in Deno
 * (`Deno.Command.spawn` forks and waits for the exec: 15-50 ms each on a loaded 2-core machine,
 * more from a process with a large heap), so 40 providers restarting at once held the event loop
 * for ~600 ms in one go, and an e-stop request arriving then waited for all of it (bench/README.md,
 * "E-stop under a restart storm"). Through this queue a loop turn runs at most one spawn and
 * spawns take at most SPAWN_LOOP_SHARE of the loop while starts queue; FIFO.
 */
export class SpawnQueue {
  readonly #clock: Pick<Clock, "monoMs" | "setTimer">;
  readonly #maxQueued: number;
  readonly #waiting: Array<() => void> = [];
  #timer: TimerId | undefined;
  /** Monotonic ms before which the next spawn does not start. */
  #nextAt = 0;

  /**
   * `clock` times the spawns and paces the turns; `maxQueued` (default MAX_QUEUED_SPAWNS) is for
   * tests of the bound.
   */
  constructor(
    clock: Pick<Clock, "monoMs" | "setTimer">,
    options: { maxQueued?: number } = {},
  ) {
    this.#clock = clock;
    this.#maxQueued = options.maxQueued ?? MAX_QUEUED_SPAWNS;
  }

  /** Spawns waiting for their turn now. */
  get queued(): number {
    return this.#waiting.length;
  }

  /**
   * Runs `spawn` (synchronous) in its turn, never in the caller's; resolves with its result or
   * rejects with what it threw. Rejects UNAVAILABLE when MAX_QUEUED_SPAWNS are waiting.
   */
  run<T>(spawn: () => T): Promise<T> {
    if (this.#waiting.length >= this.#maxQueued) {
      return Promise.reject(
        unavailable(`spawn queue full: ${this.#waiting.length} provider starts are waiting`),
      );
    }
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push(() => {
        try {
          resolve(spawn());
        } catch (err) {
          reject(err);
        }
      });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#waiting.length === 0) return;
    const wait = Math.max(0, this.#nextAt - this.#clock.monoMs());
    this.#timer = this.#clock.setTimer(() => this.#turn(), Math.ceil(wait));
  }

  /** One spawn, then the next one's turn is scheduled after the pause its duration sets. */
  #turn(): void {
    this.#timer = undefined;
    const next = this.#waiting.shift();
    if (!next) return;
    const started = this.#clock.monoMs();
    next();
    const ended = this.#clock.monoMs();
    const pause = Math.min((ended - started) * (1 / SPAWN_LOOP_SHARE - 1), MAX_SPAWN_PAUSE_MS);
    this.#nextAt = ended + pause;
    this.#schedule();
  }
}
