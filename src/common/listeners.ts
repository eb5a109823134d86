/**
 * Tells every listener, in order, though one throws: a listener's error goes to `onError` and
 * never reaches the one telling (as EventBus.publish contains its subscribers). The fan-outs of
 * the provider layer use it: a bug in a peripheral subsystem's listener (the Sparkplug edge node
 * births devices from an inventory change) must not abort a provider's bring-up, nor keep the
 * listeners after it (the e-stop's safe state for a provider back up, the alarms' binding) from
 * being told. The list is copied first: a listener may unsubscribe while it is told.
 */
export function tellEach<A extends unknown[]>(
  listeners: Iterable<(...args: A) => void>,
  args: A,
  onError: (err: unknown) => void,
): void {
  for (const listener of [...listeners]) {
    try {
      listener(...args);
    } catch (err) {
      onError(err);
    }
  }
}
