/**
 * The date of a transition of one thing (an alarm, an interlock, the e-stop, the mode, a
 * provider's or a device's availability, a parameter, a device's loss latch): the wall clock's
 * `wall`, but never before `previous`, the date of that thing's transition before it (null or
 * undefined before its first). A step back of the wall clock (NTP on a Raspberry Pi without a
 * real-time clock) must not date a release before the latch it ends: the date stays at `previous`
 * until the clock passes it again. Only the date: nothing waits on it.
 */
export function transitionDate(wall: number, previous: number | null | undefined): number {
  return previous === null || previous === undefined || wall >= previous ? wall : previous;
}

/** The later of two dates (null: none). */
export function latestDate(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.max(a, b);
}

/**
 * The date of the last transition of each thing that went away (an alarm or interlock a reload
 * removed, a provider a reload stopped, the devices that left a provider), by key, for the thing
 * that comes back under the key: its transitions are dated no earlier (transitionDate), so its
 * return never comes before the departure it follows, whenever the wall clock steps back (NTP).
 *
 * A date is kept until taken, not let go of once the wall clock has passed it: nothing of the key
 * has been dated since, so a later step back would date the return before the departure all the
 * same. At most `max` keys are kept, the one kept longest ago let go of first (its return, after
 * `max` others went, is dated by the clock alone).
 */
export class DepartedDates {
  readonly #dates = new Map<string, number>();
  /** `max`: the bound on keys kept (a named constant of the owner). */
  constructor(readonly max: number) {}

  /** Keeps `at` for `key` (the later, if one is kept already), as the newest. */
  keep(key: string, at: number): void {
    const before = this.#dates.get(key);
    this.#dates.delete(key);
    this.#dates.set(key, before === undefined ? at : Math.max(before, at));
    for (const oldest of this.#dates.keys()) {
      if (this.#dates.size <= this.max) break;
      this.#dates.delete(oldest);
    }
  }

  /** The date kept for `key`, let go of (undefined: none). */
  take(key: string): number | undefined {
    const at = this.#dates.get(key);
    this.#dates.delete(key);
    return at;
  }

  /** How many keys are kept. */
  get size(): number {
    return this.#dates.size;
  }
}
