import type { Logger } from "./host.ts";

/** How a SpellLog words and levels its lines. */
export interface SpellLogOptions {
  readonly log: Logger;
  /** Level of a spell's first failure (default `warn`). */
  readonly failLevel?: "warn" | "error";
  /**
   * Appended (after `; `) to a spell's first failure only: what goes on meanwhile and that the
   * recovery will be said (default none).
   */
  readonly firstNote?: string;
  /** The rest of a spell's failures: counted only (null, the default) or logged at DEBUG. */
  readonly restLevel?: "debug" | null;
  /**
   * The line ok() logs when a spell ends: `failed` is how many failures it had, `detail` what
   * ok() was given. Null (the default): a spell ends without a line.
   */
  readonly recovered?: ((failed: number, detail: string) => string) | null;
  /** Level of the recovery line (default `info`). */
  readonly recoveredLevel?: "info" | "warn";
}

/**
 * Once per failing spell, then one line when it works again: a store that fails on every try (a
 * full disk, a broker that flaps) would otherwise log a line per try, each taking more of what is
 * full. fail() logs the first failure of a spell and counts the rest; ok() ends the spell with one
 * recovery line naming how many failed.
 */
export class SpellLog {
  readonly #o: SpellLogOptions;
  #failures = 0;

  constructor(options: SpellLogOptions) {
    this.#o = options;
  }

  /** Failures in the current spell (0: none, the last try worked). */
  get failures(): number {
    return this.#failures;
  }

  /** Counts a failure (`detail`: what failed and why); logs it when it is its spell's first. */
  fail(detail: string): void {
    const o = this.#o;
    if (this.#failures++ === 0) {
      o.log[o.failLevel ?? "warn"](
        o.firstNote === undefined ? detail : `${detail}; ${o.firstNote}`,
      );
    } else if (o.restLevel === "debug") {
      o.log.debug(detail);
    }
  }

  /**
   * A try worked: ends a failing spell with its recovery line (`detail` given to `recovered`).
   * Returns how many failures the spell had (0: there was none, nothing is logged).
   */
  ok(detail = ""): number {
    const failed = this.#failures;
    if (failed === 0) return 0;
    this.#failures = 0;
    const line = this.#o.recovered?.(failed, detail);
    if (line !== undefined) this.#o.log[this.#o.recoveredLevel ?? "info"](line);
    return failed;
  }
}

/**
 * A SpellLog per key (a provider id): made at its key's first failure with the options `options`
 * gives for that key, dropped when its spell ends. As many as the keys whose spell runs: the caller
 * ends them (end, endAll) as its keys go.
 */
export class SpellLogs {
  readonly #options: (key: string) => SpellLogOptions;
  readonly #logs = new Map<string, SpellLog>();

  constructor(options: (key: string) => SpellLogOptions) {
    this.#options = options;
  }

  /** Counts a failure of `key`'s spell (`detail`: what failed); logs it when it is the first. */
  fail(key: string, detail: string): void {
    let log = this.#logs.get(key);
    if (log === undefined) {
      log = new SpellLog(this.#options(key));
      this.#logs.set(key, log);
    }
    log.fail(detail);
  }

  /** Ends `key`'s spell, if one runs, with its recovery line (SpellLog.ok). */
  end(key: string): void {
    this.#logs.get(key)?.ok();
    this.#logs.delete(key);
  }

  /** Ends every spell running, each with its recovery line. */
  endAll(): void {
    for (const key of [...this.#logs.keys()]) this.end(key);
  }
}
