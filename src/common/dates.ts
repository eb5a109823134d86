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
