import { utf8Length } from "../common/mod.ts";

/** What a line adds to a write's body: its UTF-8 bytes and the newline. */
export function lineBytes(line: string): number {
  return utf8Length(line) + 1;
}

/**
 * The writer's batch: its lines, oldest first, and the body bytes they take ({@link lineBytes}
 * each), kept as a running total (added on push, subtracted on take), so the flush loop's "is it
 * due?" does not sum the whole batch again on every tick. Every change goes through it.
 */
export class LineBatch {
  #lines: string[] = [];
  #bytes = 0;

  /** The lines, oldest first (a view: change them through push and take only). */
  get lines(): readonly string[] {
    return this.#lines;
  }

  get length(): number {
    return this.#lines.length;
  }

  /** The body bytes of the lines: the sum of their {@link lineBytes}. */
  get bytes(): number {
    return this.#bytes;
  }

  push(line: string): void {
    this.#lines.push(line);
    this.#bytes += lineBytes(line);
  }

  /** Removes and returns the `n` oldest lines (all when `n` is past the length). */
  take(n: number): string[] {
    const taken = this.#lines.splice(0, Math.max(0, n));
    if (this.#lines.length === 0) this.#bytes = 0;
    else for (const line of taken) this.#bytes -= lineBytes(line);
    return taken;
  }

  /** Removes every line; returns how many there were. */
  clear(): number {
    return this.take(this.#lines.length).length;
  }
}
