/**
 * What a device's last read says of it, from its cached samples: shared by DeviceOutages (a
 * device whose reads fail) and the cache's poll plan (a device polled every cycle until a read
 * answers well), so the two judge a read alike. Both allocate nothing: they run after every poll.
 */

/** The parts of a device's cached state these read (StateCache's DeviceState has them). */
export interface AnsweringDevice {
  readonly pollable: readonly string[];
  readonly signals: ReadonlyMap<
    string,
    { readonly quality: string; readonly receivedMono: number }
  >;
  readonly lastPollMono: number;
}

/**
 * No polled signal of an answering device has an OK sample: each is STALE, UNAVAILABLE, FAULT or
 * never answered. A signal the provider itself reports STALE delivers nothing usable, as one it
 * reports FAULT: a device answering only such samples answers none of its polled signals.
 */
export function signalsFail(dev: AnsweringDevice): boolean {
  const pollable = dev.pollable;
  for (let i = 0; i < pollable.length; i++) {
    if (dev.signals.get(pollable[i]!)?.quality === "OK") return false;
  }
  return true;
}

/**
 * Whether the device's last answered read carried none of its polled signals (never any, or no
 * longer: its samples are only kept ones, none received at that read).
 */
export function noneAnswered(dev: AnsweringDevice): boolean {
  const pollable = dev.pollable;
  for (let i = 0; i < pollable.length; i++) {
    if (dev.signals.get(pollable[i]!)?.receivedMono === dev.lastPollMono) return false;
  }
  return true;
}
