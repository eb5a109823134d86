import type { Logger } from "../common/mod.ts";

export interface RateLimitedLogOptions {
  /** Lines written per window; later lines in the window are only counted. */
  readonly lines: number;
  readonly windowMs: number;
  readonly monoMs: () => number;
}

/**
 * A warning log bounded to `lines` per window. What it suppressed is reported on the first line
 * of a later window ("N similar lines suppressed"), so nothing is lost silently and no timer runs.
 */
export class RateLimitedLog {
  readonly #log: Logger;
  readonly #opts: RateLimitedLogOptions;
  #windowStart = -Infinity;
  #written = 0;
  #suppressed = 0;

  constructor(log: Logger, opts: RateLimitedLogOptions) {
    this.#log = log;
    this.#opts = opts;
  }

  warn(line: string): void {
    const now = this.#opts.monoMs();
    if (now - this.#windowStart >= this.#opts.windowMs) {
      this.#windowStart = now;
      this.#written = 0;
    }
    if (this.#written >= this.#opts.lines) {
      this.#suppressed++;
      return;
    }
    this.#written++;
    if (this.#suppressed > 0) {
      this.#log.warn(`${line} (${this.#suppressed} similar lines suppressed before this one)`);
      this.#suppressed = 0;
    } else {
      this.#log.warn(line);
    }
  }
}
