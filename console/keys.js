// Keys for devices and signals that cannot collide. Device ids may contain `/` (a provider may
// name a device `m/x`), so joining ids with `/` is ambiguous: device `m` signal `x/speed` and
// device `m/x` signal `speed` would both be `s0/m/x/speed`. A key is the ids as a JSON array.

/** The key of a device. */
export function deviceKey(providerId, deviceId) {
  return JSON.stringify([providerId, deviceId]);
}

/** The key of a signal. */
export function signalKey(providerId, deviceId, signalId) {
  return JSON.stringify([providerId, deviceId, signalId]);
}

/**
 * The key of the signal a `provider/device/signal` handle names (an alarm's or an interlock
 * input's), read as the runtime reads it: provider and signal ids have no `/`, the device id is
 * everything between them. A handle of another shape gets a key no signal has.
 * @param {string} handle
 */
export function handleKey(handle) {
  const m = /^([^/]+)\/(.+)\/([^/]+)$/.exec(handle);
  return m === null ? JSON.stringify([handle]) : signalKey(m[1], m[2], m[3]);
}
