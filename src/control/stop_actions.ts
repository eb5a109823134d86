/**
 * Stop actions (origin "safety": the e-stop ladder, the hooks of a transition into FAULT) and a
 * provider's call queue: a stop action is granted the provider before every call queued that is
 * not one (after the stop actions queued before it) and is never refused for a full queue
 * (CallRouter), so it waits only for the call on the wire, not for the calls admitted before the
 * stop, which the latch and FAULT let through when they do not actuate. It ends with its call's
 * answer: the device's post-call poll is made, not waited for (it may wait behind another poll of
 * the provider, then take up to timeout_ms of its own).
 */

/**
 * The longest one stop action to a provider whose timeout_ms is `timeoutMs` can take: the call on
 * the wire ahead of it, up to its deadline, then its own, up to its deadline: 2 x timeout_ms (the
 * stop actions queued ahead of it are counted as calls of their own; its post-call poll is not
 * waited for). What bounds a reload's wait for a provider's stop actions, per call
 * (Estop.stopActionsSettled).
 */
export function stopActionWorstCaseMs(timeoutMs: number): number {
  return 2 * timeoutMs;
}
