import type {
  Clock,
  Logger,
  PriorityResult,
  SetSessionPriorityFn,
  TimerId,
} from "../common/mod.ts";

/**
 * The autogroup nice the runtime's session runs at while a provider is starting or down: ~9x the
 * weight of a session at 0 (a provider's, a browser's) when both want a core.
 */
export const RUNTIME_AUTOGROUP_NICE = -10;

/** The session's nice while every provider is up: the default, no one else's share taken. */
export const SETTLED_AUTOGROUP_NICE = 0;

/**
 * How long after a setting the kernel refused for now (EAGAIN, "busy": another process setting
 * autogroups; the host's own quick retries spent) it is asked again, with no provider change.
 */
export const SESSION_PRIORITY_BUSY_RETRY_MS = 1000;

/**
 * Busy answers in a row after which no timer asks again: the next provider change does (a
 * restart storm is one); each change starts the count afresh.
 */
export const SESSION_PRIORITY_BUSY_RETRIES = 10;

/** What the policy needs of the providers: whether each is up, and word when that changes. */
export interface ProviderUpness {
  /** Whether some provider is not up (starting, restarting, down). */
  anyDown(): boolean;
  /** Calls `listener` whenever a provider's availability may have changed. */
  onChange(listener: () => void): void;
}

/**
 * The runtime's session ahead of the machine's others exactly while a provider is starting,
 * restarting or down (Linux autogroups; docs/deployment.md, "The runtime runs ahead of its
 * providers while they start").
 *
 * Every provider leads a session of its own and Linux gives every session the same share of a busy
 * core: 40 providers restarting at once (each compiling its code) left the runtime's loop, which
 * serves the e-stop, one share in 41, and a stop requested then latched up to ~200 ms late
 * (bench/README.md, "A restart storm's CPU: the runtime ahead of its providers"). Providers keep
 * the default weight (lowering theirs put them behind every busy process of the machine, past
 * their Hello deadline); the runtime's is raised only while providers start, restart or are down,
 * because raised all the time it cost +0.25 % of a core idle at 10 providers (its turns then batch
 * its providers' answers less). One setting at a time; a change asked for meanwhile is made after
 * it. The first result is said in one line (INFO, or WARN when not permitted: the fix named);
 * a refusal that will not change (not the session leader, not permitted, no autogroups) stops the
 * asking; one refused for now (busy) is asked again SESSION_PRIORITY_BUSY_RETRY_MS later, at most
 * SESSION_PRIORITY_BUSY_RETRIES times in a row, and at the next provider change.
 */
export class SessionPriority {
  readonly #set: SetSessionPriorityFn;
  readonly #log: Logger;
  readonly #providers: ProviderUpness;
  readonly #clock: Pick<Clock, "setTimer" | "clearTimer">;
  /** The busy retry due (null: none). */
  #retry: TimerId | null = null;
  /** Busy answers since the last provider change (SESSION_PRIORITY_BUSY_RETRIES). */
  #busyInRow = 0;
  /** The nice last set (null: never set). */
  #applied: number | null = null;
  #inFlight = false;
  #gaveUp = false;
  #said = false;

  constructor(
    set: SetSessionPriorityFn,
    providers: ProviderUpness,
    log: Logger,
    clock: Pick<Clock, "setTimer" | "clearTimer">,
  ) {
    this.#set = set;
    this.#providers = providers;
    this.#log = log;
    this.#clock = clock;
    providers.onChange(() => {
      this.#busyInRow = 0;
      this.#update();
    });
    this.#update();
  }

  /**
   * Asks for no setting from now on (the runtime stops: its providers going is its end, not a
   * provider down, and a fork to raise or settle then is spent for nothing).
   */
  stop(): void {
    this.#gaveUp = true;
    this.#clock.clearTimer(this.#retry);
    this.#retry = null;
  }

  /** The nice the session should have now. */
  get wanted(): number {
    return this.#providers.anyDown() ? RUNTIME_AUTOGROUP_NICE : SETTLED_AUTOGROUP_NICE;
  }

  /** The nice last set; null before the first setting (or when it was never allowed). */
  get applied(): number | null {
    return this.#applied;
  }

  #update(): void {
    this.#clock.clearTimer(this.#retry);
    this.#retry = null;
    if (this.#inFlight || this.#gaveUp) return;
    const nice = this.wanted;
    // Never set yet and nothing to raise: the session is at its default already.
    if (nice === (this.#applied ?? SETTLED_AUTOGROUP_NICE)) return;
    this.#inFlight = true;
    void this.#set(nice).then((result) => {
      this.#inFlight = false;
      if (result.outcome === "set" || result.outcome === "autogroups_off") this.#applied = nice;
      this.#say(nice, result);
      if (
        result.outcome === "not_session_leader" || result.outcome === "not_permitted" ||
        result.outcome === "no_autogroups"
      ) {
        this.#gaveUp = true;
        return;
      }
      if (result.outcome !== "busy") {
        this.#busyInRow = 0;
        return this.#update(); // a change asked for meanwhile
      }
      // EAGAIN to the end (host's retries spent): asked again a while later, and at the next
      // provider change.
      if (++this.#busyInRow > SESSION_PRIORITY_BUSY_RETRIES || this.#gaveUp) return;
      this.#retry = this.#clock.setTimer(() => {
        this.#retry = null;
        this.#update();
      }, SESSION_PRIORITY_BUSY_RETRY_MS);
    });
  }

  #say(nice: number, result: PriorityResult): void {
    if (this.#said) {
      this.#log.debug(`cpu priority: autogroup nice ${nice}: ${result.outcome}`);
      return;
    }
    this.#said = true;
    const line = priorityLine(result);
    this.#log[line.level](line.text);
  }
}

/** The line said for the first setting's result: its level and text. */
export function priorityLine(
  result: PriorityResult,
): { level: "info" | "warn"; text: string } {
  const nice = RUNTIME_AUTOGROUP_NICE;
  const detail = result.detail === undefined ? "" : ` (${result.detail})`;
  switch (result.outcome) {
    case "set":
      return {
        level: "info",
        text:
          `cpu priority: this runtime's session at autogroup nice ${nice} while providers start, restart or are down, ahead of them and of other sessions; back at 0 once all are up`,
      };
    case "autogroups_off":
      return {
        level: "info",
        text:
          `cpu priority: autogroup nice ${nice} set, without effect: autogroups are off (kernel.sched_autogroup_enabled = 0)`,
      };
    case "not_session_leader":
      return {
        level: "info",
        text:
          `cpu priority: not raised: this runtime does not lead its own session (started from a shell); under the systemd unit it does, and runs at autogroup nice ${nice} while providers start, so that they cannot delay an e-stop`,
      };
    case "not_permitted":
      return {
        level: "warn",
        text:
          `cpu priority: not raised: autogroup nice ${nice} needs LimitNICE=${nice} (as the systemd unit sets) or CAP_SYS_NICE${detail}; without it, providers restarting together can delay an e-stop by ~200 ms`,
      };
    case "no_autogroups":
      return {
        level: "info",
        text:
          "cpu priority: not raised: this kernel has no autogroups (/proc/self/autogroup); processes compete one by one",
      };
    case "busy":
      return {
        level: "warn",
        text:
          `cpu priority: not raised yet: the kernel refused autogroup nice ${nice} for now (EAGAIN: another process is setting autogroups); tried again in ${SESSION_PRIORITY_BUSY_RETRY_MS} ms (at most ${SESSION_PRIORITY_BUSY_RETRIES} times in a row) and at the next provider change`,
      };
  }
}
